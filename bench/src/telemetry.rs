//! `wasm-mcp-bench telemetry`: what exporting traces costs a call, against
//! the same binary with no endpoint (no exporter, no span made).
//!
//! Three stdio servers of raw-echo take turns, five rounds each: one with no
//! OTLP endpoint, one exporting every span to an OTLP/HTTP receiver of this
//! process on loopback (the tests' receiver: it decodes and keeps each batch),
//! and one sampling 1 % of requests (`OTEL_TRACES_SAMPLER=traceidratio`,
//! `OTEL_TRACES_SAMPLER_ARG=0.01`). Each round times echo round trips one at
//! a time, and calls/s with 16 in flight with the server's CPU time per call
//! (the exporting thread's included); the medians of the rounds are printed. The cost of the code being there
//! at all (off against a build without it) is an A/B of two binaries
//! (`WASM_MCP_BIN`); bench/HISTORY.md has that one.

use std::time::Duration;

use wasm_mcp_tests::PluginDir;
use wasm_mcp_tests::otlp::OtlpReceiver;
use wasm_mcp_tests::proc_stat::cpu_ticks;
use wasm_mcp_tests::process::serve_command;
use wasm_mcp_tests::stdio::LeanStdioClient;

use crate::settings::quick;
use crate::stats::{median, median_rate, micros, percentile};
use crate::workloads::echo_call;

const ROUNDS: usize = 5;

pub fn run() {
    let plugins = PluginDir::with(&["raw-echo"]);
    let receiver = OtlpReceiver::start();
    let endpoint = receiver.url();
    let server = |extra: &[&str], ratio: Option<&str>| {
        let mut command = serve_command(plugins.path());
        command
            .args(extra)
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_TRACES_SAMPLER")
            .env_remove("OTEL_TRACES_SAMPLER_ARG");
        if let Some(ratio) = ratio {
            command
                .env("OTEL_TRACES_SAMPLER", "traceidratio")
                .env("OTEL_TRACES_SAMPLER_ARG", ratio);
        }
        let mut client = LeanStdioClient::spawn(command);
        client.initialize();
        client
    };
    let exported = ["--otlp-endpoint", endpoint.as_str()];
    let mut servers = [
        ("traces off", server(&[], None)),
        ("every call traced", server(&exported, None)),
        ("1 % sampled", server(&exported, Some("0.01"))),
    ];
    let call = echo_call();
    let (trips, flood) = if quick() { (200, 1000) } else { (2000, 10_000) };
    type Rounds = (Vec<Duration>, Vec<Duration>, Vec<f64>, Vec<f64>);
    let mut measured: Vec<Rounds> = vec![Default::default(); servers.len()];
    for _ in 0..ROUNDS {
        for ((_, client), (p50s, p99s, rates, cpu)) in servers.iter_mut().zip(&mut measured) {
            let latencies = client.latencies(&call, trips);
            p50s.push(percentile(&latencies, 50.0));
            p99s.push(percentile(&latencies, 99.0));
            let before = cpu_ticks(client.pid());
            let run = client.throughput(&call, 16, flood);
            let ticks = cpu_ticks(client.pid()) - before;
            rates.push(flood as f64 / run.elapsed.as_secs_f64());
            cpu.push(crate::cpu::micros_per_call(ticks, flood));
        }
    }
    println!("echo over stdio, medians of {ROUNDS} rounds taken in turns:");
    let off_rate = median_rate(&measured[0].2);
    for ((name, _), (p50s, p99s, rates, cpu)) in servers.iter().zip(&measured) {
        let rate = median_rate(rates);
        println!(
            "{name:<18} round trip p50 {:>10}  p99 {:>10}   calls/s with 16 in flight {rate:>7.0}/s ({:.2}× of off), \
             server CPU {:.1} µs per call",
            micros(median(p50s)),
            micros(median(p99s)),
            rate / off_rate,
            median_rate(cpu)
        );
    }
}
