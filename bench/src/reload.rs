//! `wasm-mcp-bench reload`: how fast the plugins directory is live, measured
//! from the outside on the real binary.
//!
//! - Landing: a built plugin is copied in under a hidden name, then renamed
//!   into place; the time runs from the rename to the client receiving
//!   `notifications/tools/list_changed`. Measured with every landing compiled
//!   (`--no-cache`) and with the compiled code already cached. The watcher's
//!   debounce and settle check are part of it, as a user sees them.
//! - Startup: process start to the first `tools/list` answered with every
//!   tool (a list waits for the plugins present at start), for 1 and 20
//!   plugins (copies of `text-tools` under different names), with a cold
//!   cache (a fresh, empty `--cache-dir` each run) and a warm one (the same
//!   directory after a priming run). Identical copies share one compiled
//!   entry (the cache is keyed by content), so 20 copies made distinct by a
//!   custom section are measured too: 20 real compilations when cold.
//! - Languages: the same startup with one Python (`stats`, ~19 MB) or
//!   JavaScript (`textkit`, ~13 MB) plugin, against the Rust `text-tools`:
//!   large components compile slowly once and load fast from the cache.
//!   `wasm-mcp-bench reload languages` runs only these.
//!
//! Every message still goes through the test harness's schema check (the
//! checked [`StdioServer`]), so the numbers include a little client-side
//! work. `WASM_MCP_BENCH_RUNS` sets the runs per row (default 5, or 1 with
//! `WASM_MCP_BENCH_QUICK=1`; landings use twice as many).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasm_mcp_tests::{PluginDir, StdioServer, compile_timeout, plugin_wasm};

use crate::settings::{number, quick};
use crate::stats::{fastest, median, ms, slowest};

/// The plugin landed and copied: six tools, no resources or prompts.
const PLUGIN: &str = "text-tools";
const TOOLS_PER_PLUGIN: usize = 6;

fn runs() -> usize {
    number("WASM_MCP_BENCH_RUNS", if quick() { 1 } else { 5 }) as usize
}

fn tools_changed(n: &Value) -> bool {
    n["method"] == "notifications/tools/list_changed"
}

/// A table row: the runs, and the fastest, median and slowest of `samples`.
fn row(label: &str, samples: &[Duration]) {
    println!(
        "| {label:<34} | {:>4} | {:>9.1} | {:>9.1} | {:>9.1} |",
        samples.len(),
        ms(fastest(samples)),
        ms(median(samples)),
        ms(slowest(samples))
    );
}

fn header(title: &str) {
    println!();
    println!("{title}");
    println!(
        "| {:<34} | {:>4} | {:>9} | {:>9} | {:>9} |",
        "case", "runs", "min ms", "median ms", "max ms"
    );
    println!("|{:-<36}|{:-<6}|{:-<11}|{:-<11}|{:-<11}|", "", "", "", "", "");
}

// ---- landing → list_changed --------------------------------------------------

/// Lands `PLUGIN` as `landed.wasm` `count` times (removing it in between) on
/// a server started with `args`; returns the time from each rename to the
/// tools/list_changed it causes.
fn landings(args: &[&str], prime: bool, count: usize) -> Vec<Duration> {
    let dir = PluginDir::empty();
    let mut server = StdioServer::spawn(dir.path(), args);
    server.initialize(json!({}));
    server.list_all("tools/list", "tools");
    let source = plugin_wasm(PLUGIN);
    let staged = dir.path().join(".landed.wasm.partial");
    let target = dir.path().join("landed.wasm");
    let mut samples = Vec::new();
    for i in 0..count + usize::from(prime) {
        std::fs::copy(&source, &staged).expect("stage the plugin");
        let started = Instant::now();
        std::fs::rename(&staged, &target).expect("rename the plugin into place");
        server.wait_for_notification("tools/list_changed after a landing", tools_changed);
        let took = started.elapsed();
        if !(prime && i == 0) {
            samples.push(took);
        }
        std::fs::remove_file(&target).expect("remove the plugin");
        server.wait_for_notification("tools/list_changed after a removal", tools_changed);
    }
    server.shutdown();
    drop(dir);
    samples
}

// ---- startup -----------------------------------------------------------------

/// A directory with `count` copies of `PLUGIN` (`p00`, `p01`, ...). With
/// `distinct`, each copy gets a custom section naming it, so every copy has
/// its own content hash and is compiled (and cached) on its own; identical
/// copies share one cache entry.
fn copies(count: usize, distinct: bool) -> PluginDir {
    let dir = PluginDir::empty();
    let bytes = std::fs::read(plugin_wasm(PLUGIN)).expect("read the plugin");
    for i in 0..count {
        let name = format!("p{i:02}");
        let mut copy = bytes.clone();
        if distinct {
            copy.extend(custom_section("wasm-mcp-bench", name.as_bytes()));
        }
        dir.add_file(&format!("{name}.wasm"), &copy);
    }
    dir
}

/// A custom section (id 0): valid anywhere in a component, ignored when run.
fn custom_section(name: &str, payload: &[u8]) -> Vec<u8> {
    fn leb128(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    let mut body = Vec::new();
    leb128(name.len(), &mut body);
    body.extend(name.as_bytes());
    body.extend(payload);
    let mut section = vec![0];
    leb128(body.len(), &mut section);
    section.extend(body);
    section
}

/// How many tools `plugins` serve, listed once their load is over.
fn tools_once_loaded(plugins: &PluginDir) -> usize {
    let cache = tempfile::tempdir().expect("a cache directory");
    let cache = cache.path().to_str().expect("a UTF-8 cache path");
    let mut server = StdioServer::spawn(plugins.path(), &["--cache-dir", cache]);
    server.wait_until_loaded();
    server.initialize(json!({}));
    server.list_all("tools/list", "tools").len()
}

/// Process start → initialize → the first tools/list holding every tool.
fn start_once(plugins: &Path, cache: &Path, expected_tools: usize) -> Duration {
    let cache = cache.to_str().expect("a UTF-8 cache path");
    let started = Instant::now();
    let mut server = StdioServer::spawn(plugins, &["--cache-dir", cache]);
    server.initialize(json!({}));
    let mut tools = server.list_all("tools/list", "tools");
    // A compile that outlasts the host's start-up wait for lists ends in list_changed.
    while tools.len() < expected_tools {
        server.wait_for_notification_within(compile_timeout(), "tools/list_changed", tools_changed);
        tools = server.list_all("tools/list", "tools");
    }
    let took = started.elapsed();
    assert_eq!(
        tools.len(),
        expected_tools,
        "the first tools/list holds every tool; stderr:\n{}",
        server.stderr()
    );
    server.shutdown();
    took
}

fn startups(plugin_count: usize, distinct: bool, warm: bool, runs: usize) -> Vec<Duration> {
    let plugins = copies(plugin_count, distinct);
    startups_of(&plugins, plugin_count * TOOLS_PER_PLUGIN, warm, runs)
}

/// `runs` startups over `plugins`, each with a fresh cache (cold) or with one
/// cache primed by a first start (warm).
fn startups_of(plugins: &PluginDir, expected: usize, warm: bool, runs: usize) -> Vec<Duration> {
    let caches = tempfile::tempdir().expect("a directory for caches");
    let warm_cache = caches.path().join("warm");
    if warm {
        start_once(plugins.path(), &warm_cache, expected);
    }
    (0..runs)
        .map(|run| {
            let cache = if warm {
                warm_cache.clone()
            } else {
                caches.path().join(format!("cold-{run}"))
            };
            start_once(plugins.path(), &cache, expected)
        })
        .collect()
}

/// Every table, or with `only_languages` the first.
pub fn run(only_languages: bool) {
    let runs = runs();
    println!(
        "wasm-mcp reload benchmark ({} CPUs, binary {})",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        wasm_mcp_tests::binary().display()
    );

    header("startup by plugin language: process start -> first tools/list, one plugin");
    for (plugin, language) in [(PLUGIN, "Rust"), ("stats", "Python"), ("textkit", "JavaScript")] {
        let plugins = PluginDir::with(&[plugin]);
        let tools = tools_once_loaded(&plugins);
        for warm in [false, true] {
            let label = format!("{language} ({plugin}), {} cache", if warm { "warm" } else { "cold" });
            row(&label, &startups_of(&plugins, tools, warm, runs));
        }
    }
    if only_languages {
        return;
    }

    header(&format!(
        "file landing (rename into place) -> tools/list_changed, plugin {PLUGIN}"
    ));
    row(
        "compiled each time (--no-cache)",
        &landings(&["--no-cache"], false, runs * 2),
    );
    let cache = tempfile::tempdir().expect("a cache directory");
    let cache_arg = cache.path().to_str().expect("a UTF-8 cache path");
    row(
        "compiled code cached",
        &landings(&["--cache-dir", cache_arg], true, runs * 2),
    );

    header(&format!(
        "startup: process start -> first tools/list with every tool ({PLUGIN} copies)"
    ));
    let cases = [
        (1, false, "1 plugin"),
        (20, false, "20 identical copies"),
        (20, true, "20 distinct plugins"),
    ];
    for (count, distinct, what) in cases {
        for warm in [false, true] {
            let label = format!("{what}, {} cache", if warm { "warm" } else { "cold" });
            row(&label, &startups(count, distinct, warm, runs));
        }
    }
}
