//! `wasm-mcp-bench replicas`: one server as many processes.
//!
//! - 2026-07-28 `tools/call` throughput through HAProxy (round robin) to one
//!   and to three `wasm-mcp serve --http` replicas sharing a Redis, from 64
//!   stateless clients, taking turns: the ratio of the two is the figure (on this machine
//!   the replicas share its cores, so it says what the load balancer and
//!   the shared store cost, not what more machines would give).
//! - Task create-to-result latency with the embedded store (a redb file)
//!   and with Redis: from sending a `tools/call` that becomes a task to the
//!   `tasks/get` that first shows it completed, polling without pause.
//!
//! Needs `redis-server` and `haproxy` (`make bench` installs them with apt).
//! Everything listens on 127.0.0.1 and is stopped at the end.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasm_mcp_tests::PluginDir;
use wasm_mcp_tests::http::{HttpServer, LeanHttpClient};

use crate::http::{measure, report, run_time};
use crate::settings::quick;
use crate::stats::{ms, percentile};

/// Clients sending calls at once.
const CLIENTS: usize = 64;

/// A process of the benchmark, killed when dropped.
struct Service(Child);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}

/// Waits until something accepts connections on `port`.
fn wait_for_port(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{what} does not listen on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn start(command: &mut Command, what: &str) -> Service {
    let child = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot start {what} ({error}); `make bench` installs it with apt"));
    Service(child)
}

fn redis(dir: &Path) -> (Service, u16) {
    let port = free_port();
    let service = start(
        Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .current_dir(dir),
        "redis-server",
    );
    wait_for_port(port, "redis-server");
    (service, port)
}

/// HAProxy on a free port, round robin over `replicas`; the URL of its MCP endpoint.
fn haproxy(dir: &Path, replicas: &[&HttpServer]) -> (Service, String) {
    let port = free_port();
    let servers: String = replicas
        .iter()
        .enumerate()
        .map(|(i, replica)| {
            let address = replica.url.trim_start_matches("http://").trim_end_matches("/mcp");
            format!("    server r{i} {address}\n")
        })
        .collect();
    let config = format!(
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 60s\n    timeout server 60s\n\
         frontend mcp\n    bind 127.0.0.1:{port}\n    default_backend replicas\n\
         backend replicas\n    balance roundrobin\n{servers}"
    );
    let path = dir.join(format!("haproxy-{port}.cfg"));
    std::fs::write(&path, config).expect("write the HAProxy config");
    let service = start(Command::new("haproxy").arg("-f").arg(&path).arg("-db"), "haproxy");
    wait_for_port(port, "haproxy");
    (service, format!("http://127.0.0.1:{port}/mcp"))
}

fn replica(state: &str) -> HttpServer {
    HttpServer::start(PluginDir::with(&["conformance"]), &["--state", state])
}

/// Calls/s of `test_simple_text` through the load balancer at `url`.
async fn throughput(url: &str, replicas: usize) -> f64 {
    let client = LeanHttpClient::new(url, 1024);
    let clients: Vec<_> = (0..CLIENTS).map(|_| Arc::new(client.stateless())).collect();
    let call = json!({"name": "test_simple_text", "arguments": {}});
    let start = Instant::now();
    let latencies = measure(&clients, "tools/call", call, run_time()).await;
    let elapsed = start.elapsed();
    report(
        &format!("via HAProxy, {replicas} replica(s)"),
        CLIENTS,
        &latencies,
        elapsed,
    );
    latencies.len() as f64 / elapsed.as_secs_f64()
}

/// Create-to-result latencies of `count` tasks of the server at `url`, one at a time.
async fn task_latencies(url: &str, count: usize) -> Vec<Duration> {
    let client = LeanHttpClient::new(url, 8).stateless();
    let capabilities = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    let call = json!({"name": "slow_compute", "arguments": {"seconds": 0.001}});
    let mut id = 0;
    let mut latencies = Vec::with_capacity(count);
    for _ in 0..count {
        let start = Instant::now();
        id += 1;
        let created = client.result(id, "tools/call", &call, &capabilities).await;
        assert_eq!(created["resultType"], "task", "{created}");
        let task = json!({ "taskId": created["taskId"] });
        loop {
            id += 1;
            let now: Value = client.result(id, "tasks/get", &task, &capabilities).await;
            if now["status"] == "completed" {
                break;
            }
            assert_eq!(now["status"], "working", "{now}");
        }
        latencies.push(start.elapsed());
    }
    latencies
}

fn report_tasks(store: &str, latencies: &[Duration]) {
    println!(
        "task create-to-result, {store:<16} {:>4} tasks: p50 {:>6.2} ms  p90 {:>6.2} ms  p99 {:>6.2} ms",
        latencies.len(),
        ms(percentile(latencies, 50.0)),
        ms(percentile(latencies, 90.0)),
        ms(percentile(latencies, 99.0)),
    );
}

pub fn run() {
    let work = tempfile::tempdir().expect("a scratch directory");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let (_redis, redis_port) = redis(work.path());
    let shared = format!("redis://127.0.0.1:{redis_port}");
    println!(
        "{CLIENTS} stateless clients, 2026-07-28 tools/call test_simple_text, {:.1} s per measurement",
        run_time().as_secs_f64()
    );
    let replicas: Vec<HttpServer> = (0..3).map(|_| replica(&shared)).collect();
    let (one_lb, one_url) = haproxy(work.path(), &[&replicas[0]]);
    let (three_lb, three_url) = haproxy(work.path(), &replicas.iter().collect::<Vec<_>>());
    // The two take turns, so that both see the machine's load alike.
    let rounds = if quick() { 1 } else { 3 };
    let (mut one, mut three) = (0.0, 0.0);
    runtime.block_on(async {
        for _ in 0..rounds {
            one += throughput(&one_url, 1).await;
            three += throughput(&three_url, 3).await;
        }
    });
    println!(
        "3 replicas / 1 replica: {:.2}x ({:.0} against {:.0} calls/s, the mean of {rounds} turns each)",
        three / one,
        three / rounds as f64,
        one / rounds as f64
    );
    drop((one_lb, three_lb, replicas));

    let count = if quick() { 20 } else { 300 };
    let file = work.path().join("state.redb");
    let embedded = replica(file.to_str().expect("a UTF-8 path"));
    let with_redis = replica(&shared);
    runtime.block_on(async {
        report_tasks("embedded (redb)", &task_latencies(&embedded.url, count).await);
        report_tasks("Redis", &task_latencies(&with_redis.url, count).await);
    });
}
