//! `wasm-mcp-bench registry`: plugins from an OCI registry, against a real
//! one (Debian's `docker-registry` over HTTPS from a test CA, with a
//! password, as the tests run it; `make registry-deps` installs it).
//!
//! - Add: `wasm-mcp add` of the Python plugin (`stats`, ~19 MB), from the
//!   command's start to its exit: the tag resolved, the artifact pulled and
//!   checked against its digests, the component compiled and listed, the
//!   lockfile written. Each run into an empty cache: a first add.
//! - Start: process start → the first `tools/list` holding every tool, with
//!   ten plugins pinned in `plugins.lock` and served from a warm store (the
//!   registry stopped: nothing is pulled), against the same ten components
//!   as files in the folder; both with their compiled code cached.
//!
//! `WASM_MCP_BENCH_RUNS` sets the runs per row (default 5, or 1 with
//! `WASM_MCP_BENCH_QUICK=1`).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use wasm_mcp_tests::process::serve_command;
use wasm_mcp_tests::registry::TestRegistry;
use wasm_mcp_tests::{PluginDir, StdioServer, plugin_wasm};

use crate::settings::{number, quick};
use crate::stats::{fastest, median, ms, slowest};

/// The large plugin `add` is timed with.
const PYTHON: &str = "stats";
/// Ten Rust plugins without manifests, for the start.
const TEN: [&str; 10] = [
    "text-tools",
    "raw-echo",
    "notes",
    "conformance",
    "text-tools-twin",
    "versioned-v1",
    "probe",
    "spinner",
    "flood",
    "http-client",
];

fn runs() -> usize {
    number("WASM_MCP_BENCH_RUNS", if quick() { 1 } else { 5 }) as usize
}

fn print_row(case: &str, samples: &[Duration]) {
    let (low, mid, high) = (ms(fastest(samples)), ms(median(samples)), ms(slowest(samples)));
    println!(
        "| {case:<48} | {:>4} | {low:>9.1} | {mid:>9.1} | {high:>9.1} |",
        samples.len()
    );
}

/// Runs a `wasm-mcp` command to its end; how long it took.
#[track_caller]
fn timed(mut command: Command) -> Duration {
    let started = Instant::now();
    let output = command.output().expect("run wasm-mcp");
    let took = started.elapsed();
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    took
}

fn push(registry: &TestRegistry, cache: &Path, plugin: &str) -> String {
    let reference = registry.reference(&format!("bench/{plugin}:1"));
    let mut command = registry.wasm_mcp(cache);
    command.arg("push").arg(plugin_wasm(plugin)).arg(&reference);
    timed(command);
    reference
}

fn add(registry: &TestRegistry, cache: &Path, plugins: &Path, reference: &str) -> Command {
    let mut command = registry.wasm_mcp(cache);
    command.arg("add").arg(reference).arg("--plugins").arg(plugins);
    command
}

/// Process start → initialize → a tools/list of `expected` tools (the first
/// list waits for the plugins present at start).
fn start(registry: &TestRegistry, cache: &Path, plugins: &Path, expected: Option<usize>) -> (Duration, usize) {
    let mut command = serve_command(plugins);
    registry.configure(&mut command, cache);
    let started = Instant::now();
    let mut server = StdioServer::spawn_command(command);
    server.initialize(json!({}));
    let listed = server.list_all("tools/list", "tools").len();
    let took = started.elapsed();
    if let Some(expected) = expected {
        assert_eq!(listed, expected, "every tool at once; stderr:\n{}", server.stderr());
    }
    server.shutdown();
    (took, listed)
}

pub fn run() {
    let runs = runs();
    let mut registry = TestRegistry::start();
    let scratch = tempfile::tempdir().expect("a scratch directory");
    println!(
        "wasm-mcp registry benchmark ({} CPUs, registry {} over HTTPS)",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        registry.addr
    );
    println!();
    println!("| {:<48} | runs | min ms    | median ms | max ms    |", "case");
    println!("|{:-<50}|------|-----------|-----------|-----------|", "");

    let python = push(&registry, scratch.path(), PYTHON);
    let adds: Vec<Duration> = (0..runs)
        .map(|_| {
            let (cache, plugins) = (tempfile::tempdir().unwrap(), PluginDir::empty());
            timed(add(&registry, cache.path(), plugins.path(), &python))
        })
        .collect();
    let size = std::fs::metadata(plugin_wasm(PYTHON)).map_or(0, |m| m.len() >> 20);
    print_row(&format!("add {PYTHON} ({size} MiB): pull, check, compile"), &adds);

    let warm = scratch.path().join("warm");
    let (locked, files) = (PluginDir::empty(), PluginDir::empty());
    for plugin in TEN {
        let reference = push(&registry, scratch.path(), plugin);
        timed(add(&registry, &warm, locked.path(), &reference));
        files.add_plugin(plugin);
    }
    // Primes the compiled code of the files, and counts the tools.
    let (_, tools) = start(&registry, &warm, files.path(), None);
    registry.stop();
    for (case, plugins) in [
        ("start, 10 plugins locked, warm store (offline)", &locked),
        ("start, 10 plugins as files, warm cache", &files),
    ] {
        let samples: Vec<Duration> = (0..runs)
            .map(|_| start(&registry, &warm, plugins.path(), Some(tools)).0)
            .collect();
        print_row(case, &samples);
    }
}
