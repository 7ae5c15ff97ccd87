//! `cargo bench -p wasm-mcp-tests --bench http`: request latency and
//! throughput of `wasm-mcp serve --http` with many concurrent sessions.
//!
//! Starts the real server (release build) on an ephemeral loopback port with
//! the conformance plugin, opens N sessions, and has every session send
//! requests back to back for a fixed time: `ping` (transport and session
//! only) and `tools/call test_simple_text` (a fresh wasm instance per call).
//! Prints throughput and latency percentiles. Traffic goes to 127.0.0.1 only,
//! and every loop is bounded in time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasm_mcp_tests::PluginDir;
use wasm_mcp_tests::http::HttpServer;

/// How long each measurement runs.
const RUN: Duration = Duration::from_secs(3);
/// Session counts measured.
const SESSIONS: [usize; 3] = [1, 64, 256];

struct Session {
    http: reqwest::Client,
    url: String,
    id: String,
}

impl Session {
    async fn open(http: reqwest::Client, url: String) -> Self {
        let response = http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "0"}}})
                .to_string(),
            )
            .send()
            .await
            .expect("initialize");
        let id = response.headers()["mcp-session-id"].to_str().unwrap().to_string();
        response.bytes().await.unwrap();
        let session = Session { http, url, id };
        session
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        session
    }

    async fn post(&self, message: &Value) -> String {
        let response = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .body(message.to_string())
            .send()
            .await
            .expect("POST");
        assert!(response.status().is_success(), "{}", response.status());
        response.text().await.expect("read the answer")
    }

    /// One request, read to the end of its stream; checks the response came.
    async fn request(&self, id: u64, method: &str, params: &Value) {
        let body = self
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        assert!(body.contains(&format!("\"id\":{id},\"result\"")), "no result in {body}");
    }

    async fn close(&self) {
        let response = self
            .http
            .delete(&self.url)
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .expect("DELETE");
        assert_eq!(response.status(), reqwest::StatusCode::NO_CONTENT);
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index].as_secs_f64() * 1000.0
}

/// Every session sends `method` back to back for `RUN`; returns the latencies.
async fn measure(sessions: &[Arc<Session>], method: &'static str, params: Value) -> Vec<Duration> {
    let params = Arc::new(params);
    let until = Instant::now() + RUN;
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
    all.sort();
    all
}

fn report(what: &str, sessions: usize, latencies: &[Duration], elapsed: Duration) {
    println!(
        "{what:<28} {sessions:>4} sessions: {:>7} requests, {:>8.0} req/s; latency ms p50 {:>6.2}  p90 {:>6.2}  p99 {:>6.2}  max {:>7.2}",
        latencies.len(),
        latencies.len() as f64 / elapsed.as_secs_f64(),
        percentile(latencies, 0.50),
        percentile(latencies, 0.90),
        percentile(latencies, 0.99),
        percentile(latencies, 1.0),
    );
}

fn main() {
    let server = HttpServer::start(PluginDir::with(&["conformance"]), &["--max-sessions", "100000"]);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "wasm-mcp serve --http at {} ({} s per measurement)",
        server.url,
        RUN.as_secs()
    );
    runtime.block_on(async {
        let http = reqwest::Client::builder().pool_max_idle_per_host(1024).build().unwrap();
        for count in SESSIONS {
            let start = Instant::now();
            let mut opening = Vec::new();
            for _ in 0..count {
                opening.push(tokio::spawn(Session::open(http.clone(), server.url.clone())));
            }
            let mut sessions = Vec::new();
            for session in opening {
                sessions.push(Arc::new(session.await.unwrap()));
            }
            println!(
                "open {count} sessions (initialize + initialized): {:.1} ms",
                start.elapsed().as_secs_f64() * 1000.0
            );
            let start = Instant::now();
            let latencies = measure(&sessions, "ping", json!({})).await;
            report("ping", count, &latencies, start.elapsed());
            let start = Instant::now();
            let call = json!({"name": "test_simple_text", "arguments": {}});
            let latencies = measure(&sessions, "tools/call", call).await;
            report("tools/call test_simple_text", count, &latencies, start.elapsed());
            for session in &sessions {
                session.close().await;
            }
        }
    });
}
