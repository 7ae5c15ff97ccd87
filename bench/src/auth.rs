//! `wasm-mcp-bench auth`: what authenticating every request costs, against
//! the same server with none.
//!
//! Three `serve --http` servers of the conformance plugin take turns, three
//! rounds each: no authentication, a static bearer token, and OAuth
//! (`--auth-issuer`, RS256 JWTs of an issuer on loopback, see
//! `wasm_mcp_tests::issuer`; every client presents the same token, as a
//! client does between refreshes). Each round has 16 stateless 2026-07-28
//! clients call `test_simple_text` back to back; the medians of the rounds
//! are printed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use wasm_mcp_tests::PluginDir;
use wasm_mcp_tests::http::{HttpServer, LeanHttpClient};
use wasm_mcp_tests::issuer::Issuer;

use crate::http::{measure, run_time};
use crate::stats::{median, median_rate, ms, percentile};

const ROUNDS: usize = 3;
const CLIENTS: usize = 16;
const STATIC_TOKEN: &str = "bench-static-token-0123456789";

pub fn run() {
    let issuer = Issuer::start();
    let plugins = || PluginDir::with(&["conformance"]);
    let open = HttpServer::start(plugins(), &[]);
    let token = HttpServer::start_with_env(plugins(), &[], &[("WASM_MCP_AUTH_TOKEN", STATIC_TOKEN)]);
    let oauth = HttpServer::start(plugins(), &["--auth-issuer", &issuer.url]);
    let jwt = issuer.token("bench", &oauth.url, "mcp", Duration::from_secs(3600));
    let setups = [
        ("no authentication", &open, None),
        ("static bearer token", &token, Some(STATIC_TOKEN)),
        ("OAuth JWT (RS256)", &oauth, Some(jwt.as_str())),
    ];
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let run = run_time();
    let call = json!({ "name": "test_simple_text", "arguments": {} });
    let mut measured: Vec<(Vec<f64>, Vec<Duration>)> = vec![Default::default(); setups.len()];
    runtime.block_on(async {
        for _ in 0..ROUNDS {
            for ((_, server, bearer), (rates, p50s)) in setups.iter().zip(&mut measured) {
                let client = LeanHttpClient::with_bearer(&server.url, CLIENTS, *bearer);
                let clients: Vec<_> = (0..CLIENTS).map(|_| Arc::new(client.stateless())).collect();
                let start = Instant::now();
                let latencies = measure(&clients, "tools/call", call.clone(), run).await;
                rates.push(latencies.len() as f64 / start.elapsed().as_secs_f64());
                p50s.push(percentile(&latencies, 50.0));
            }
        }
    });
    println!(
        "stateless tools/call test_simple_text from {CLIENTS} clients, medians of {ROUNDS} rounds taken in turns:"
    );
    let base = median_rate(&measured[0].0);
    for ((name, _, _), (rates, p50s)) in setups.iter().zip(&measured) {
        let rate = median_rate(rates);
        println!(
            "{name:<22} {rate:>7.0} calls/s ({:.2}× of none)   latency p50 {:>6.2} ms",
            rate / base,
            ms(median(p50s))
        );
    }
}
