//! The measurements, in one run so that their ratios share the machine's load:
//! the real `wasm-mcp` binary over stdio with real plugins, against the native
//! server of this crate and the official Rust SDK serving the same tools.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasm_mcp::{CallScope, PluginRuntime, Settings, StateStore};
use wasm_mcp_tests::process::serve_command;
use wasm_mcp_tests::stdio::{LeanStdioClient, ToolCall};
use wasm_mcp_tests::{PluginDir, plugin_wasm};

use crate::machine::{peak_rss_bytes, rss_bytes};
use crate::report::Report;
use crate::settings::quick;
use crate::stats::{median, median_rate, micros, millis, percentile, ratio};
use crate::workloads::{count_primes_call, division_call, echo_call};

/// How much work each measurement does; `WASM_MCP_BENCH_QUICK=1` makes a
/// short run for trying the suite out.
struct Sizes {
    echo_rounds: usize,
    echo_calls_per_round: usize,
    throughput_rounds: usize,
    throughput_calls: usize,
    cpu_calls: usize,
    fresh_instances: usize,
    memory_calls: usize,
    task_calls: usize,
    cold_starts: usize,
}

impl Sizes {
    fn from_env() -> Self {
        let quick = quick();
        let scale = |full: usize| if quick { (full / 20).max(2) } else { full };
        Self {
            echo_rounds: 5,
            echo_calls_per_round: scale(2000),
            throughput_rounds: 3,
            throughput_calls: scale(10_000),
            cpu_calls: scale(15),
            fresh_instances: scale(20_000),
            memory_calls: scale(100_000),
            task_calls: scale(1000),
            cold_starts: if quick { 1 } else { 3 },
        }
    }
}

/// Whether `section` runs: all do, unless `WASM_MCP_BENCH_ONLY` lists some
/// (comma-separated: echo, throughput, percall, cpu, busy, fresh, tasks, memory, start, idle, cold).
fn wanted(section: &str) -> bool {
    std::env::var("WASM_MCP_BENCH_ONLY").map_or(true, |only| only.split(',').any(|s| s.trim() == section))
}

/// A server under test.
pub struct Subject {
    pub name: &'static str,
    pub client: LeanStdioClient,
}

fn wasm_mcp(plugins: &Path, cache: &Path, extra: &[&str]) -> LeanStdioClient {
    let mut command = serve_command(plugins);
    command.arg("--cache-dir").arg(cache).args(extra);
    LeanStdioClient::spawn(command)
}

fn this_binary(role: &str) -> LeanStdioClient {
    let mut command = Command::new(std::env::current_exe().expect("the bench binary's path"));
    command.arg(role);
    LeanStdioClient::spawn(command)
}

/// The plugins the comparison serves: raw-echo (echo, its task support made
/// optional by a manifest) and the spinner (count_primes).
pub fn bench_plugins() -> PluginDir {
    let plugins = PluginDir::with(&["raw-echo", "spinner"]);
    plugins.add_file("raw-echo.toml", b"[tools.echo]\ntask_support = \"optional\"\n");
    plugins
}

/// The three servers of the comparison, initialized: wasm-mcp serving
/// [`bench_plugins`], our native server, and rmcp's.
pub fn subjects(plugins: &PluginDir, cache: &Path) -> Vec<Subject> {
    let mut subjects = vec![
        Subject {
            name: "wasm-mcp",
            client: wasm_mcp(plugins.path(), cache, &[]),
        },
        Subject {
            name: "native (this crate)",
            client: this_binary("native-server"),
        },
        Subject {
            name: "rmcp 3.11",
            client: this_binary("rmcp-server"),
        },
    ];
    for subject in &mut subjects {
        subject.client.initialize();
    }
    subjects
}

pub fn run(results: &Path) {
    let sizes = Sizes::from_env();
    let mut report = Report::default();
    report.paragraph("## Results");
    report.section("Machine", "Where and what was measured.", &["", ""]);
    for (what, value) in crate::machine::description() {
        report.row(&[what.to_string(), value]);
    }
    report.end_section();

    let cache = tempfile::tempdir().expect("a cache directory");
    let plugins = bench_plugins();
    let mut subjects = subjects(&plugins, cache.path());
    let echo = echo_call();

    if wanted("echo") {
        echo_latency(&mut report, &mut subjects, &echo, &sizes);
    }
    if wanted("throughput") {
        echo_throughput(&mut report, &mut subjects, &echo, &sizes);
    }
    if wanted("percall") {
        let names: Vec<&str> = subjects.iter().map(|s| s.name).collect();
        let mut clients: Vec<&mut LeanStdioClient> = subjects.iter_mut().map(|s| &mut s.client).collect();
        let per_call = crate::cpu::measure(&mut clients);
        crate::cpu::section(&mut report, &names, &per_call);
    }
    if wanted("cpu") {
        cpu_bound(&mut report, &mut subjects, &sizes);
    }
    if wanted("busy") {
        echo_beside_cpu(&mut report, &mut subjects, &echo, &sizes);
    }
    if wanted("fresh") {
        fresh_instance(&mut report, &sizes);
    }
    if wanted("tasks") {
        tasks(&mut report, &mut subjects[0].client, &sizes);
    }
    if wanted("memory") {
        memory(&mut report, &mut subjects, &echo, &sizes);
    }
    drop(subjects);
    if wanted("start") {
        first_answer(&mut report, &plugins, &sizes);
    }
    if wanted("idle") {
        idle_memory(&mut report);
    }
    if wanted("cold") {
        cold_start(&mut report, &sizes);
    }
    let full = std::env::var_os("WASM_MCP_BENCH_ONLY").is_none() && !quick();
    report.finish(full.then_some(results));
}

fn echo_latency(report: &mut Report, subjects: &mut [Subject], echo: &ToolCall, sizes: &Sizes) {
    report.section(
        "Echo round trip, one call at a time (stdio)",
        &format!(
            "`tools/call echo` sent, answer read, then the next; {} rounds of {} calls per server, the servers taking turns. Latency as the client sees it.",
            sizes.echo_rounds, sizes.echo_calls_per_round
        ),
        &["server", "p50", "p90", "p99", "p50 vs native", "p99 vs native"],
    );
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); subjects.len()];
    for subject in subjects.iter_mut() {
        subject.client.latencies(echo, sizes.echo_calls_per_round / 4);
    }
    for _ in 0..sizes.echo_rounds {
        for (i, subject) in subjects.iter_mut().enumerate() {
            samples[i].extend(subject.client.latencies(echo, sizes.echo_calls_per_round));
        }
    }
    let p = |i: usize, q: f64| percentile(&samples[i], q);
    for (i, subject) in subjects.iter().enumerate() {
        report.row(&[
            subject.name.to_string(),
            micros(p(i, 50.0)),
            micros(p(i, 90.0)),
            micros(p(i, 99.0)),
            ratio(p(i, 50.0).as_secs_f64(), p(1, 50.0).as_secs_f64()),
            ratio(p(i, 99.0).as_secs_f64(), p(1, 99.0).as_secs_f64()),
        ]);
    }
    report.end_section();
    let vs = |i: usize, j: usize, q: f64| p(i, q).as_secs_f64() / p(j, q).as_secs_f64();
    report.target(
        "echo p50 ≤ 0.8× rmcp",
        format!("{:.2}×", vs(0, 2, 50.0)),
        vs(0, 2, 50.0) <= 0.8,
    );
}

fn echo_throughput(report: &mut Report, subjects: &mut [Subject], echo: &ToolCall, sizes: &Sizes) {
    const WINDOWS: [usize; 3] = [1, 16, 64];
    report.section(
        "Echo throughput (stdio)",
        &format!(
            "{} calls with 1, 16 or 64 sent and not yet answered at every moment; median of {} rounds, the servers taking turns.",
            sizes.throughput_calls, sizes.throughput_rounds
        ),
        &["server", "1 in flight", "16 in flight", "64 in flight", "p99 at 16", "16 vs 1"],
    );
    let mut rates = vec![[0.0; 3]; subjects.len()];
    let mut p99_at_16 = vec![Duration::ZERO; subjects.len()];
    for (w, &window) in WINDOWS.iter().enumerate() {
        let mut runs: Vec<Vec<f64>> = vec![Vec::new(); subjects.len()];
        let mut latencies: Vec<Vec<Duration>> = vec![Vec::new(); subjects.len()];
        for _ in 0..sizes.throughput_rounds {
            for (i, subject) in subjects.iter_mut().enumerate() {
                let run = subject.client.throughput(echo, window, sizes.throughput_calls);
                runs[i].push(sizes.throughput_calls as f64 / run.elapsed.as_secs_f64());
                latencies[i].extend(run.latencies);
            }
        }
        for (i, r) in runs.into_iter().enumerate() {
            rates[i][w] = median_rate(&r);
            if window == 16 {
                p99_at_16[i] = percentile(&latencies[i], 99.0);
            }
        }
    }
    for (i, subject) in subjects.iter().enumerate() {
        report.row(&[
            subject.name.to_string(),
            format!("{:.0}/s", rates[i][0]),
            format!("{:.0}/s", rates[i][1]),
            format!("{:.0}/s", rates[i][2]),
            micros(p99_at_16[i]),
            ratio(rates[i][1], rates[i][0]),
        ]);
    }
    report.end_section();
    report.target(
        "echo calls/s at 16 in flight ≥ 4× rmcp",
        ratio(rates[0][1], rates[2][1]),
        rates[0][1] >= 4.0 * rates[2][1],
    );
}

/// A CPU-bound tool every server serves, and the same code called natively.
struct CpuWorkload {
    call: ToolCall,
    native: fn(&Value) -> Option<String>,
    what: &'static str,
}

fn cpu_bound(report: &mut Report, subjects: &mut [Subject], sizes: &Sizes) {
    let workloads = [
        CpuWorkload {
            call: count_primes_call(),
            native: crate::workloads::count_primes,
            what: "a sieve of Eratosthenes: tight loops over one array",
        },
        CpuWorkload {
            call: division_call(),
            native: crate::workloads::count_primes_by_division,
            what: "trial division: a loop of divisions, no memory",
        },
    ];
    report.section(
        "CPU-bound tools (stdio)",
        &format!(
            "The spinner test plugin's CPU-bound tools (no host calls) in wasm-mcp (fuel on, yielding every million units, as always in the host) against the same Rust code compiled natively, served by each server and called in-process; {} calls each, one at a time, taking turns. `count_primes` below {}: {}. `count_primes_by_division` below {}: {}. `make bench` also runs `wasm-mcp-bench limits`, which measures the sieve's wasm without fuel, and with epoch interruption instead.",
            sizes.cpu_calls,
            crate::workloads::PRIMES_BELOW,
            workloads[0].what,
            crate::workloads::DIVISION_BELOW,
            workloads[1].what,
        ),
        &["tool", "runs on", "p50", "vs native function", "vs rmcp"],
    );
    for workload in &workloads {
        let call = &workload.call;
        for subject in subjects.iter_mut() {
            subject.client.check(call);
        }
        let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); subjects.len() + 1];
        for _ in 0..sizes.cpu_calls {
            for (i, subject) in subjects.iter_mut().enumerate() {
                samples[i].extend(subject.client.latencies(call, 1));
            }
            let started = Instant::now();
            let text = (workload.native)(&call.arguments);
            samples[subjects.len()].push(started.elapsed());
            assert_eq!(text.as_deref(), Some(call.expected.as_str()));
        }
        let native_fn = median(&samples[subjects.len()]).as_secs_f64();
        let rmcp = median(&samples[2]).as_secs_f64();
        for (i, subject) in subjects.iter().enumerate() {
            let p50 = median(&samples[i]);
            report.row(&[
                call.tool.to_string(),
                subject.name.to_string(),
                millis(p50),
                ratio(p50.as_secs_f64(), native_fn),
                ratio(p50.as_secs_f64(), rmcp),
            ]);
        }
        report.row(&[
            call.tool.to_string(),
            "native function, in-process".into(),
            millis(Duration::from_secs_f64(native_fn)),
            "1.00×".into(),
            ratio(native_fn, rmcp),
        ]);
        let ours = median(&samples[0]).as_secs_f64() / rmcp;
        report.target(
            &format!("{} p50 ≤ 1.15× rmcp, fuel on", call.tool),
            format!("{ours:.2}×"),
            ours <= 1.15,
        );
    }
    report.end_section();
}

/// Calls of `count_primes` kept in flight beside the echo calls of [`echo_beside_cpu`].
const BUSY_CALLS: usize = 4;

fn echo_beside_cpu(report: &mut Report, subjects: &mut [Subject], echo: &ToolCall, sizes: &Sizes) {
    let primes = count_primes_call();
    let count = sizes.echo_calls_per_round / 4;
    report.section(
        "Echo beside CPU-bound calls (stdio)",
        &format!(
            "{count} `echo` calls one at a time while {BUSY_CALLS} `count_primes` calls are kept in flight on the same server (more than the 2 cores): how long a trivial call waits behind busy plugins."
        ),
        &["server", "p50", "p90", "p99"],
    );
    for subject in subjects.iter_mut() {
        let samples = subject.client.latencies_beside(echo, &primes, BUSY_CALLS, count);
        report.row(&[
            subject.name.to_string(),
            micros(median(&samples)),
            micros(percentile(&samples, 90.0)),
            micros(percentile(&samples, 99.0)),
        ]);
    }
    report.end_section();
}

fn fresh_instance(report: &mut Report, sizes: &Sizes) {
    // One thread: the work a call leaves behind (dropping its instance, making
    // the next one ahead) runs on it too, before the next call.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let cache = tempfile::tempdir().expect("a cache directory");
    let (calls, cycles) = runtime.block_on(async {
        let plugins = PluginRuntime::new(
            &Settings::default(),
            Some(cache.path().to_owned()),
            StateStore::in_memory(),
        )
        .expect("the plugin runtime starts");
        let plugin = plugins.load(&plugin_wasm("raw-echo")).await.expect("raw-echo loads");
        let (name, arguments) = ("echo".to_string(), r#"{"message":"hi"}"#.to_string());
        let (mut calls, mut cycles) = (Vec::new(), Vec::new());
        for i in 0..sizes.fresh_instances + sizes.fresh_instances / 10 {
            let started = Instant::now();
            let scope = Arc::new(CallScope::detached());
            let result = plugin.call_tool(scope, &name, &arguments).await.expect("echo answers");
            let answered = started.elapsed();
            tokio::task::yield_now().await;
            let cycle = started.elapsed();
            assert_eq!(result.content.len(), 1);
            if i >= sizes.fresh_instances / 10 {
                calls.push(answered);
                cycles.push(cycle);
            }
        }
        (calls, cycles)
    });
    report.section(
        "Fresh instance per call (in-process)",
        &format!(
            "Through the host library (`Plugin::call_tool`, pooling allocator), on one thread; {} calls of raw-echo's `echo` after a warm-up, each in an instance no call has used. \
             *Answered*: until the call returns, on the instance made ahead of it. *Whole cycle*: until the work it leaves behind is done too (its instance dropped, the next one made): \
             instantiate + call + drop.",
            sizes.fresh_instances
        ),
        &["", "p50", "p90", "p99", "mean"],
    );
    for (what, samples) in [("answered", &calls), ("whole cycle", &cycles)] {
        let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
        report.row(&[
            what.to_string(),
            micros(median(samples)),
            micros(percentile(samples, 90.0)),
            micros(percentile(samples, 99.0)),
            micros(mean),
        ]);
    }
    report.end_section();
    let p50 = median(&cycles);
    report.target(
        "fresh instance + trivial call ≤ 20 µs (p50 of the whole cycle)",
        micros(p50),
        p50 <= Duration::from_micros(20),
    );
}

fn tasks(report: &mut Report, client: &mut LeanStdioClient, sizes: &Sizes) {
    let plain = json!({ "name": "echo", "arguments": { "message": "hi" } });
    let as_task = json!({ "name": "echo", "arguments": { "message": "hi" }, "task": {} });
    let (mut plain_samples, mut task_samples) = (Vec::new(), Vec::new());
    for _ in 0..sizes.task_calls {
        let started = Instant::now();
        client.request("tools/call", plain.clone());
        plain_samples.push(started.elapsed());
        let started = Instant::now();
        let created = client.request("tools/call", as_task.clone());
        let id = created["task"]["taskId"].clone();
        let result = client.request("tasks/result", json!({ "taskId": id }));
        task_samples.push(started.elapsed());
        assert_eq!(result["content"][0]["text"], "hi", "the task's result");
    }
    report.section(
        "Tasks (wasm-mcp, stdio)",
        &format!(
            "`echo` called plainly, against called as a task (`tools/call` with `task`, then `tasks/result`): two round trips instead of one; {} of each, alternating.",
            sizes.task_calls
        ),
        &["", "p50", "p99"],
    );
    for (what, samples) in [("plain call", &plain_samples), ("task: create + result", &task_samples)] {
        report.row(&[what.into(), micros(median(samples)), micros(percentile(samples, 99.0))]);
    }
    report.row(&[
        "task overhead".into(),
        micros(median(&task_samples).saturating_sub(median(&plain_samples))),
        String::new(),
    ]);
    report.end_section();
}

fn memory(report: &mut Report, subjects: &mut [Subject], echo: &ToolCall, sizes: &Sizes) {
    report.section(
        "Memory: resident set over many calls (stdio)",
        &format!(
            "RSS after initialize and the runs above, then after every quarter of {} more `echo` calls with 16 in flight; last, a server with raw-echo alone (started on a warm compiled-code cache) after as many calls from its start.",
            sizes.memory_calls
        ),
        &["server", "before", "¼", "½", "¾", "all", "peak", "growth over the second half"],
    );
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / (1 << 20) as f64);
    let mut growth = 0.0;
    for (i, subject) in subjects.iter_mut().enumerate() {
        let mut rss = vec![rss_bytes(subject.client.pid())];
        for _ in 0..4 {
            subject.client.throughput(echo, 16, sizes.memory_calls / 4);
            rss.push(rss_bytes(subject.client.pid()));
        }
        let half = rss[4] as f64 / (1 << 20) as f64 - rss[2] as f64 / (1 << 20) as f64;
        if i == 0 {
            growth = half;
        }
        let peak = peak_rss_bytes(subject.client.pid());
        let mut row = vec![subject.name.to_string()];
        row.extend(rss.iter().map(|&b| mib(b)));
        row.push(mib(peak));
        row.push(format!("{half:+.1} MiB"));
        report.row(&row);
    }
    // The peak of a server with one plugin, under the same load from its
    // start, with the compiled-code cache a first start filled (the
    // compiler's code and working memory are not part of a warm start).
    let one_plugin = PluginDir::with(&["raw-echo"]);
    let cache = tempfile::tempdir().expect("a cache directory");
    let mut first = wasm_mcp(one_plugin.path(), cache.path(), &[]);
    first.initialize();
    first.check(echo);
    drop(first);
    let mut alone = wasm_mcp(one_plugin.path(), cache.path(), &[]);
    alone.initialize();
    alone.throughput(echo, 16, sizes.memory_calls);
    let peak_alone = peak_rss_bytes(alone.pid());
    // Only its resident set after the calls and its peak apply.
    let none = String::new;
    report.row(&[
        "wasm-mcp, raw-echo alone".to_string(),
        none(),
        none(),
        none(),
        none(),
        mib(rss_bytes(alone.pid())),
        mib(peak_alone),
        none(),
    ]);
    report.end_section();
    report.target(
        "RSS flat over 100k calls (second half grows < 1 MiB)",
        format!("{growth:+.1} MiB"),
        growth < 1.0,
    );
    let peak_mib = peak_alone as f64 / (1 << 20) as f64;
    report.target(
        "peak RSS under load ≤ 16 MiB with one plugin",
        format!("{peak_mib:.1} MiB"),
        peak_mib <= 16.0,
    );
}

/// Spawn to the first initialize answer of each server of the comparison
/// (wasm-mcp serving [`bench_plugins`] from a warm cache), median of
/// several starts taken in turns.
fn first_answer(report: &mut Report, plugins: &PluginDir, sizes: &Sizes) {
    let starts = sizes.cold_starts * 5;
    let cache = tempfile::tempdir().expect("a cache directory");
    wasm_mcp(plugins.path(), cache.path(), &[]).initialize();
    type Spawn<'a> = Box<dyn Fn() -> LeanStdioClient + 'a>;
    let spawners: [(&str, Spawn); 3] = [
        ("wasm-mcp", Box::new(|| wasm_mcp(plugins.path(), cache.path(), &[]))),
        ("native (this crate)", Box::new(|| this_binary("native-server"))),
        ("rmcp 3.11", Box::new(|| this_binary("rmcp-server"))),
    ];
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); spawners.len()];
    for _ in 0..starts {
        for (i, (_, spawn)) in spawners.iter().enumerate() {
            let started = Instant::now();
            let mut client = spawn();
            client.initialize();
            samples[i].push(started.elapsed());
        }
    }
    report.section(
        "Start to first answer (stdio)",
        &format!(
            "From spawning the server to its answer to `initialize`; wasm-mcp with the two plugins of the comparison and a warm compiled-code cache. Median of {starts} starts, the servers taking turns."
        ),
        &["server", "p50", "slowest", "vs rmcp"],
    );
    for (i, (name, _)) in spawners.iter().enumerate() {
        report.row(&[
            name.to_string(),
            millis(median(&samples[i])),
            millis(crate::stats::slowest(&samples[i])),
            ratio(median(&samples[i]).as_secs_f64(), median(&samples[2]).as_secs_f64()),
        ]);
    }
    report.end_section();
    let vs_rmcp = median(&samples[0]).as_secs_f64() / median(&samples[2]).as_secs_f64();
    report.target(
        "start to first answer ≤ 2.5× rmcp",
        format!("{vs_rmcp:.2}×"),
        vs_rmcp <= 2.5,
    );
}

/// The resident memory of an idle server (warm cache, every plugin listed):
/// with no plugin, then each example plugin alone, then all of them; what a
/// plugin adds is its row less the empty one.
fn idle_memory(report: &mut Report) {
    let resident = |plugins: &PluginDir, cache: &Path| {
        let mut client = wasm_mcp(plugins.path(), cache, &["--page-size", "1000"]);
        client.initialize();
        client.request("tools/list", json!({}));
        // The instance made ahead of each plugin's next call is made once it was listed.
        std::thread::sleep(Duration::from_millis(200));
        rss_bytes(client.pid())
    };
    let cache = tempfile::tempdir().expect("a cache directory");
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    report.section(
        "Memory of an idle server (stdio)",
        "Resident set after `initialize` and a `tools/list` (every plugin loaded, warm compiled-code cache, the instance made ahead of each plugin's next call in place): with no plugin (the process, the engine, the runtime), then each example plugin alone, then all of them together.",
        &["plugins", "RSS", "added to the empty server"],
    );
    let empty = resident(&PluginDir::empty(), cache.path());
    report.row(&["none".into(), format!("{:.1} MiB", mib(empty)), String::new()]);
    let all = PluginDir::with_all_built(false);
    for name in all.plugin_names() {
        let alone = PluginDir::with(&[name.as_str()]);
        resident(&alone, cache.path());
        let rss = resident(&alone, cache.path());
        report.row(&[
            name,
            format!("{:.1} MiB", mib(rss)),
            format!("{:+.1} MiB", mib(rss) - mib(empty)),
        ]);
    }
    let rss = resident(&all, cache.path());
    report.row(&[
        format!("all {} together", all.plugin_names().len()),
        format!("{:.1} MiB", mib(rss)),
        format!("{:+.1} MiB", mib(rss) - mib(empty)),
    ]);
    report.end_section();
}

/// Spawns wasm-mcp over `plugins` and times the first initialize answer and
/// the first tools/list (which waits for the plugins present at start);
/// returns both and the RSS once listed.
fn start_once(plugins: &Path, cache: &Path, expected_tools: Option<usize>) -> (Duration, Duration, usize, u64) {
    let started = Instant::now();
    let mut client = wasm_mcp(plugins, cache, &["--page-size", "1000"]);
    client.initialize();
    let initialized = started.elapsed();
    let listed = client.request("tools/list", json!({}));
    let listed_after = started.elapsed();
    let tools = listed["tools"].as_array().map_or(0, Vec::len);
    if let Some(expected) = expected_tools {
        assert_eq!(tools, expected, "the first tools/list has every tool");
    }
    (initialized, listed_after, tools, rss_bytes(client.pid()))
}

fn cold_start(report: &mut Report, sizes: &Sizes) {
    report.section(
        "Cold start (stdio)",
        &format!(
            "From spawning `wasm-mcp serve` to the first initialize answer, and to the first tools/list (it waits for the plugins present at start, so it has every tool). Copies of the text-tools example plugin; cold = empty compiled-code cache, warm = the cache the cold start filled. Median of {}.",
            sizes.cold_starts
        ),
        &["plugins", "cache", "initialize answered", "tools/list with every tool", "RSS then"],
    );
    let mut per_plugin_rss = Vec::new();
    let mut tools_per_plugin = None;
    let mut warm_20_initialize = Duration::ZERO;
    for count in [1usize, 20] {
        let plugins = PluginDir::empty();
        for i in 0..count {
            plugins.add_plugin_as("text-tools", &format!("text-tools-{i}"));
        }
        let expected = tools_per_plugin.map(|n: usize| n * count);
        for warm in [false, true] {
            let mut runs = Vec::new();
            for _ in 0..sizes.cold_starts {
                let cache = tempfile::tempdir().expect("a cache directory");
                if warm {
                    start_once(plugins.path(), cache.path(), expected);
                }
                runs.push(start_once(plugins.path(), cache.path(), expected));
            }
            runs.sort_by_key(|r| r.0);
            let (initialized, listed, tools, rss) = runs[runs.len() / 2];
            tools_per_plugin.get_or_insert(tools / count);
            if warm {
                per_plugin_rss.push(rss);
                if count == 20 {
                    warm_20_initialize = initialized;
                }
            }
            report.row(&[
                count.to_string(),
                if warm { "warm" } else { "cold" }.into(),
                millis(initialized),
                millis(listed),
                format!("{:.1} MiB", rss as f64 / (1 << 20) as f64),
            ]);
        }
    }
    report.end_section();
    let per_plugin = (per_plugin_rss[1] as f64 - per_plugin_rss[0] as f64) / 19.0 / (1 << 20) as f64;
    report.paragraph(&format!(
        "RSS per loaded plugin (20 against 1, warm cache): {per_plugin:.2} MiB."
    ));
    report.target(
        "cold start, 20 cached plugins: initialize answered ≤ 50 ms",
        millis(warm_20_initialize),
        warm_20_initialize <= Duration::from_millis(50),
    );
}
