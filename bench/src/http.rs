//! `wasm-mcp-bench http`: request latency and throughput of `wasm-mcp serve
//! --http` with many concurrent sessions.
//!
//! Starts the real server (release build) on an ephemeral loopback port with
//! the conformance plugin, opens N sessions, and has every session send
//! requests back to back for a fixed time: `ping` (transport and session
//! only) and `tools/call test_simple_text` (a fresh wasm instance per call).
//! Then the same call as 2026-07-28 stateless requests (no session: every
//! POST carries its `_meta` and the headers that mirror it) from as many
//! concurrent clients.
//! Prints throughput and latency percentiles. Traffic goes to 127.0.0.1 only,
//! and every loop is bounded in time. `WASM_MCP_BENCH_QUICK=1` measures for
//! half a second with 1 and 8 sessions.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasm_mcp_tests::PluginDir;
use wasm_mcp_tests::http::{HttpServer, LeanHttpClient, LeanHttpSession};

use crate::settings::quick;
use crate::stats::{ms, percentile, slowest};

/// How long each measurement runs.
pub(crate) fn run_time() -> Duration {
    if quick() {
        Duration::from_millis(500)
    } else {
        Duration::from_secs(3)
    }
}

/// Session counts measured.
fn session_counts() -> &'static [usize] {
    if quick() { &[1, 8] } else { &[1, 64, 256] }
}

/// Every session sends `method` back to back for `run`; returns the latencies.
pub(crate) async fn measure(
    sessions: &[Arc<LeanHttpSession>],
    method: &'static str,
    params: Value,
    run: Duration,
) -> Vec<Duration> {
    let params = Arc::new(params);
    let until = Instant::now() + run;
    let tasks: Vec<_> = sessions
        .iter()
        .cloned()
        .map(|session| {
            let params = params.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut id = 1;
                while Instant::now() < until {
                    let start = Instant::now();
                    session.request(id, method, &params).await;
                    latencies.push(start.elapsed());
                    id += 1;
                }
                latencies
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("a session task failed"));
    }
    all
}

pub(crate) fn report(what: &str, sessions: usize, latencies: &[Duration], elapsed: Duration) {
    println!(
        "{what:<28} {sessions:>4} sessions: {:>7} requests, {:>8.0} req/s; latency ms p50 {:>6.2}  p90 {:>6.2}  p99 {:>6.2}  max {:>7.2}",
        latencies.len(),
        latencies.len() as f64 / elapsed.as_secs_f64(),
        ms(percentile(latencies, 50.0)),
        ms(percentile(latencies, 90.0)),
        ms(percentile(latencies, 99.0)),
        ms(slowest(latencies)),
    );
}

pub fn run() {
    let server = HttpServer::start(PluginDir::with(&["conformance"]), &["--max-sessions", "100000"]);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let run = run_time();
    println!(
        "wasm-mcp serve --http at {} ({:.1} s per measurement)",
        server.url,
        run.as_secs_f64()
    );
    runtime.block_on(async {
        let client = LeanHttpClient::new(&server.url, 1024);
        for &count in session_counts() {
            let start = Instant::now();
            let opening: Vec<_> = (0..count).map(|_| tokio::spawn(client.open_session())).collect();
            let mut sessions = Vec::new();
            for session in opening {
                sessions.push(Arc::new(session.await.expect("a session opens")));
            }
            println!(
                "open {count} sessions (initialize + initialized): {:.1} ms",
                ms(start.elapsed())
            );
            let start = Instant::now();
            let latencies = measure(&sessions, "ping", json!({}), run).await;
            report("ping", count, &latencies, start.elapsed());
            let start = Instant::now();
            let call = json!({"name": "test_simple_text", "arguments": {}});
            let latencies = measure(&sessions, "tools/call", call.clone(), run).await;
            report("tools/call test_simple_text", count, &latencies, start.elapsed());
            for session in &sessions {
                session.close().await;
            }
            let clients: Vec<_> = (0..count).map(|_| Arc::new(client.stateless())).collect();
            let start = Instant::now();
            let latencies = measure(&clients, "tools/call", call, run).await;
            report("stateless tools/call", count, &latencies, start.elapsed());
        }
    });
}
