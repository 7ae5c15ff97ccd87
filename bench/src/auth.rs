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
//!
//! Then the OAuth server's issuer hangs (accepts connections, never
//! answers) while tokens naming keys it does not publish arrive at
//! [`UNKNOWN_KEYS_PER_SEC`]: the latency of the valid tokens' calls (the
//! clients' cached token, and new tokens of the known key) against the
//! same calls with the issuer answering and no such tokens.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasm_mcp_tests::PluginDir;
use wasm_mcp_tests::http::{HttpServer, LeanHttpClient, LeanHttpSession};
use wasm_mcp_tests::issuer::{self, Issuer};

use crate::http::{measure, run_time};
use crate::settings::quick;
use crate::stats::{median, median_rate, ms, percentile};

const ROUNDS: usize = 3;
const CLIENTS: usize = 16;
const STATIC_TOKEN: &str = "bench-static-token-0123456789";
/// The rate of tokens naming unknown keys sent while the issuer hangs.
const UNKNOWN_KEYS_PER_SEC: u64 = 100;
/// New valid tokens (of the known key) sent one after another, in each phase.
const NEW_TOKENS: usize = 200;

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
    hung_issuer(&runtime, &call);
}

/// A phase's latencies: the cached token's calls, and new tokens' calls.
struct Phase {
    cached: Vec<Duration>,
    new: Vec<Duration>,
}

impl Phase {
    async fn measure(
        clients: &[Arc<LeanHttpSession>],
        call: &Value,
        run: Duration,
        issuer: &Issuer,
        audience: &str,
    ) -> Self {
        let tokens: Vec<String> = (0..NEW_TOKENS)
            .map(|n| {
                issuer.token(
                    &format!("new-{n}-{}", fastrand_id()),
                    audience,
                    "mcp",
                    Duration::from_secs(3600),
                )
            })
            .collect();
        let prober = clients[0].clone();
        let call_again = call.clone();
        let new = tokio::spawn(async move {
            let mut took = Vec::new();
            for (n, token) in tokens.iter().enumerate() {
                let start = Instant::now();
                let status = prober.status_with(token, n as u64 + 1, "tools/call", &call_again).await;
                took.push(start.elapsed());
                assert!(status.is_success(), "a new valid token: {status}");
            }
            took
        });
        let cached = measure(&clients[1..], "tools/call", call.clone(), run).await;
        Phase {
            cached,
            new: new.await.expect("the new tokens' calls"),
        }
    }

    fn print(&self, name: &str) {
        let line = |samples: &[Duration]| {
            format!(
                "p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} calls)",
                ms(percentile(samples, 50.0)),
                ms(percentile(samples, 99.0)),
                ms(percentile(samples, 100.0)),
                samples.len()
            )
        };
        println!("{name}");
        println!(
            "  cached token, {} clients back to back: {}",
            CLIENTS - 1,
            line(&self.cached)
        );
        println!("  a new valid token per call, one at a time: {}", line(&self.new));
    }
}

/// A number for telling tokens apart.
fn fastrand_id() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(Instant::now())
}

/// Valid tokens against a hung issuer while tokens of unknown keys arrive.
fn hung_issuer(runtime: &tokio::runtime::Runtime, call: &Value) {
    let issuer = Issuer::start();
    let server = HttpServer::start(PluginDir::with(&["conformance"]), &["--auth-issuer", &issuer.url]);
    let jwt = issuer.token("bench", &server.url, "mcp", Duration::from_secs(3600));
    let client = LeanHttpClient::with_bearer(&server.url, CLIENTS, Some(&jwt));
    let clients: Vec<_> = (0..CLIENTS).map(|_| Arc::new(client.stateless())).collect();
    // Long enough to span the hung fetch's tries (three of 5 s).
    let run = if quick() {
        Duration::from_secs(2)
    } else {
        Duration::from_secs(12)
    };
    runtime.block_on(async {
        let answering = Phase::measure(&clients, call, run, &issuer, &server.url).await;

        issuer.hang();
        let before = issuer.connections();
        let stop = Arc::new(AtomicBool::new(false));
        let unknown = {
            let (stop, prober) = (stop.clone(), clients[0].clone());
            let (issuer_url, audience, call) = (issuer.url.clone(), server.url.clone(), call.clone());
            tokio::spawn(async move {
                let mut every = tokio::time::interval(Duration::from_secs(1) / UNKNOWN_KEYS_PER_SEC as u32);
                let mut sent = Vec::new();
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    every.tick().await;
                    n += 1;
                    let token = issuer::forged_token(&issuer_url, &format!("random-{n}-{}", fastrand_id()), &audience);
                    let (prober, call) = (prober.clone(), call.clone());
                    sent.push(tokio::spawn(async move {
                        let start = Instant::now();
                        let status = prober.status_with(&token, n, "tools/call", &call).await;
                        (status.as_u16(), start.elapsed())
                    }));
                }
                let mut answers = Vec::new();
                for request in sent {
                    answers.push(request.await.expect("an unknown key's request"));
                }
                answers
            })
        };
        // Measured once a fetch for an unknown key hangs at the issuer (within
        // 10 s of the last fetch, unknown keys are refused for what it found).
        while issuer.connections() == before {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let hung = Phase::measure(&clients, call, run, &issuer, &server.url).await;
        stop.store(true, Ordering::Relaxed);
        let unknown = unknown.await.expect("the unknown keys' requests");

        answering.print("OAuth, the issuer answering, no unknown keys:");
        hung.print(&format!(
            "OAuth, the issuer hung, tokens of unknown keys arriving at {UNKNOWN_KEYS_PER_SEC}/s:"
        ));
        let mut statuses = std::collections::BTreeMap::<u16, Vec<Duration>>::new();
        for (status, took) in unknown {
            statuses.entry(status).or_default().push(took);
        }
        for (status, took) in statuses {
            println!(
                "  unknown keys answered {status}: {} (p50 {:.0} ms, max {:.0} ms)",
                took.len(),
                ms(percentile(&took, 50.0)),
                ms(percentile(&took, 100.0))
            );
        }
    });
}
