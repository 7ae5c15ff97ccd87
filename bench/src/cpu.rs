//! Server CPU time per call: what the server process spent on the CPU (user +
//! system, all threads, from `/proc/<pid>/stat`) over a run of `echo` calls,
//! divided by the calls. Wall-clock latency and throughput move by a third
//! from run to run on this kind of machine; CPU per call moves far less, so it
//! is what `make bench-check` holds against the committed baseline
//! (`bench/baseline.json`) and what the suite reports beside the wall clock.
//! What is left of the machine's state (one call at a time costs a third more
//! CPU on an idle machine than on a busy one, for every server alike) cancels
//! out against rmcp measured in the same run: the check judges wasm-mcp's CPU
//! per call as a multiple of rmcp's, against the same multiple in the baseline.

use std::path::Path;
use std::process::ExitCode;

use serde_json::{Value, json};
use wasm_mcp_tests::proc_stat::{TICKS_PER_SECOND, cpu_ticks};
use wasm_mcp_tests::stdio::{LeanStdioClient, ToolCall};

use crate::report::Report;
use crate::settings::quick;
use crate::workloads::echo_call;

/// How many calls one CPU measurement makes: enough for about a second of a
/// wasm-mcp core, so that the 10 ms ticks of `/proc` are about 1 % of it.
fn calls_per_run() -> usize {
    if quick() { 2_000 } else { 20_000 }
}

/// Runs per server and window, the servers taking turns; the median is kept.
const RUNS: usize = 3;

/// How far over the baseline wasm-mcp's CPU per call, as a multiple of rmcp's
/// in the same run, may go before `bench-check` fails.
const ALLOWED_GROWTH: f64 = 1.25;

/// The windows measured: one call at a time, and 16 kept in flight.
pub const WINDOWS: [usize; 2] = [1, 16];

/// Server CPU per call in µs, for each of [`WINDOWS`].
pub type PerCall = [f64; 2];

/// The server CPU per call of `calls` echo calls with `in_flight` of them sent
/// and not yet answered at every moment.
fn one_run(client: &mut LeanStdioClient, echo: &ToolCall, in_flight: usize, calls: usize) -> f64 {
    client.check(echo);
    let before = cpu_ticks(client.pid());
    if in_flight == 1 {
        client.latencies(echo, calls);
    } else {
        client.throughput(echo, in_flight, calls);
    }
    micros_per_call(cpu_ticks(client.pid()) - before, calls)
}

/// `ticks` of `/proc` CPU time spread over `calls`, in µs per call.
pub fn micros_per_call(ticks: u64, calls: usize) -> f64 {
    ticks as f64 * 1e6 / TICKS_PER_SECOND as f64 / calls as f64
}

/// The median server CPU per echo call of each client, for each window,
/// over [`RUNS`] runs taken in turns.
pub fn measure(clients: &mut [&mut LeanStdioClient]) -> Vec<PerCall> {
    let echo = echo_call();
    let calls = calls_per_run();
    let mut per_call = vec![[0.0; 2]; clients.len()];
    for (w, &window) in WINDOWS.iter().enumerate() {
        let mut runs = vec![Vec::new(); clients.len()];
        for _ in 0..RUNS {
            for (i, client) in clients.iter_mut().enumerate() {
                runs[i].push(one_run(client, &echo, window, calls));
            }
        }
        for (i, mut samples) in runs.into_iter().enumerate() {
            samples.sort_by(f64::total_cmp);
            per_call[i][w] = samples[samples.len() / 2];
        }
    }
    per_call
}

/// The suite's section: each server's CPU per call, against the native server and rmcp.
pub fn section(report: &mut Report, names: &[&str], per_call: &[PerCall]) {
    report.section(
        "Server CPU per call (stdio)",
        &format!(
            "CPU time the server process spent (user + system, every thread, from `/proc/<pid>/stat`) over {} `echo` calls, divided by the calls; median of {RUNS} runs, the servers taking turns. Unlike the wall clock, it does not move with the machine's load: `make bench-check` compares it with `bench/baseline.json`.",
            calls_per_run()
        ),
        &["server", "one at a time", "16 in flight", "16 in flight vs native", "16 in flight vs rmcp"],
    );
    for (name, cpu) in names.iter().zip(per_call) {
        report.row(&[
            name.to_string(),
            format!("{:.1} µs", cpu[0]),
            format!("{:.1} µs", cpu[1]),
            format!("{:.2}×", cpu[1] / per_call[1][1]),
            format!("{:.2}×", cpu[1] / per_call[2][1]),
        ]);
    }
    report.end_section();
    report.target(
        "server CPU per call at 16 in flight ≤ rmcp's",
        format!("{:.2}×", per_call[0][1] / per_call[2][1]),
        per_call[0][1] <= per_call[2][1],
    );
}

/// `wasm-mcp-bench cpu-check [--write-baseline]`: measures wasm-mcp's CPU per
/// echo call beside the native server and rmcp, and fails when, in either
/// window, its multiple of rmcp's grew more than [`ALLOWED_GROWTH`] times the
/// baseline's; with `--write-baseline`, records this run as the new baseline
/// instead.
pub fn check(baseline: &Path, write: bool, mut servers: Vec<(&'static str, LeanStdioClient)>) -> ExitCode {
    let names: Vec<&str> = servers.iter().map(|(name, _)| *name).collect();
    let mut clients: Vec<&mut LeanStdioClient> = servers.iter_mut().map(|(_, client)| client).collect();
    let per_call = measure(&mut clients);
    for (name, cpu) in names.iter().zip(&per_call) {
        println!(
            "{name:<22} CPU per echo call: {:>7.1} µs one at a time, {:>7.1} µs with 16 in flight",
            cpu[0], cpu[1]
        );
    }
    let ours = per_call[0];
    if write {
        let record = json!({
            "what": "wasm-mcp's and rmcp's server CPU per echo call (µs) in one run of `wasm-mcp-bench cpu-check`; `make bench-check` fails when wasm-mcp's, as a multiple of rmcp's in its own run, grows more than 25 % over the multiple here",
            "one_at_a_time_us": round(ours[0]),
            "in_flight_16_us": round(ours[1]),
            "native_then": [round(per_call[1][0]), round(per_call[1][1])],
            "rmcp_then": [round(per_call[2][0]), round(per_call[2][1])],
            "machine": crate::machine::description().into_iter().map(|(k, v)| (k.to_string(), Value::from(v))).collect::<serde_json::Map<_, _>>(),
        });
        let text = serde_json::to_string_pretty(&record).expect("JSON") + "\n";
        std::fs::write(baseline, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", baseline.display()));
        println!("baseline written to {}", baseline.display());
        return ExitCode::SUCCESS;
    }
    let text = std::fs::read_to_string(baseline).unwrap_or_else(|e| {
        panic!(
            "cannot read the baseline {}: {e} (make one with `target/release/wasm-mcp-bench cpu-check --write-baseline`)",
            baseline.display()
        )
    });
    let recorded: Value = serde_json::from_str(&text).expect("the baseline is JSON");
    let number = |value: &Value, what: &str| {
        value
            .as_f64()
            .unwrap_or_else(|| panic!("the baseline has no number {what}"))
    };
    let mut failed = false;
    for (w, key) in ["one_at_a_time_us", "in_flight_16_us"].into_iter().enumerate() {
        let was = number(&recorded[key], key);
        let rmcp_was = number(&recorded["rmcp_then"][w], "rmcp_then");
        let (multiple, multiple_was) = (ours[w] / per_call[2][w], was / rmcp_was);
        let growth = multiple / multiple_was;
        let verdict = if growth > ALLOWED_GROWTH {
            failed = true;
            "FAIL"
        } else {
            "ok"
        };
        println!(
            "{verdict}: {} window: {:.1} µs, {multiple:.2}× rmcp's, against a baseline of {was:.1} µs, \
             {multiple_was:.2}× rmcp's ({:+.0} % as a multiple of rmcp's, allowed +{:.0} %; {:+.0} % in µs)",
            if w == 0 { "one-at-a-time" } else { "16-in-flight" },
            ours[w],
            (growth - 1.0) * 100.0,
            (ALLOWED_GROWTH - 1.0) * 100.0,
            (ours[w] / was - 1.0) * 100.0
        );
    }
    if failed {
        println!(
            "bench-check: FAILED: wasm-mcp's CPU per call grew past the baseline; profile it (`perf record -g -p PID`) before it lands"
        );
        ExitCode::FAILURE
    } else {
        println!("bench-check: ok");
        ExitCode::SUCCESS
    }
}

fn round(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}
