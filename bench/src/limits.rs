//! The cost of the limits on CPU-bound tools: fuel metering (and epoch
//! interruption, which the host used before fuel's yields replaced it),
//! against running the same wasm without them.
//!
//! Every host call runs with fuel on, yielding to the runtime every million
//! units (compiled into the code), so "without limits" is measured with a
//! small wasmtime embedding here: the same component and the same call,
//! compiled by engines that differ only in `consume_fuel` and
//! `epoch_interruption` (the epoch ticking every 10 ms and the call yielding on
//! each tick). A fresh instance serves each call, as in the host. Then the
//! same call through the real `wasm-mcp` binary over stdio with its default
//! limits, and the same Rust code compiled natively, for scale.
//!
//! Two workloads, no host imports used: `digest` of the example plugin
//! batch-digest (chained SHA-256: long straight-line blocks) and
//! `count_primes` of the spinner test plugin (a sieve: tight loops, where
//! per-block fuel accounting costs the most).
//!
//! `wasm-mcp-bench limits` (after `make build plugins`).
//! `WASM_MCP_BENCH_RUNS` (default 7) sets the timed calls per configuration,
//! `WASM_MCP_BENCH_ROUNDS` (default 300000) and `WASM_MCP_BENCH_PRIMES_BELOW`
//! (default 40000000) the work per call; `WASM_MCP_BENCH_QUICK=1` makes each
//! default small (1 call of 1000 rounds, primes below 1000), to try it out.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use wasm_mcp_tests::{PluginDir, StdioServer, plugin_wasm};
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Linker, ResourceTable, Val};
use wasmtime::{Config, Engine, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::settings::{number, quick};
use crate::stats::{fastest, median, ms};
use crate::workloads::primes_below;

/// The epoch tick the host used.
const EPOCH_TICK: Duration = Duration::from_millis(10);

/// The fuel between two yields in the host (`FUEL_YIELD_INTERVAL`).
const FUEL_YIELD_INTERVAL: u64 = 1_000_000;

struct State {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// A CPU-bound tool call, and the text it must answer (computed natively).
struct Workload {
    plugin: &'static str,
    tool: &'static str,
    what: String,
    arguments: Value,
    expected: String,
    native: Box<dyn Fn() -> String>,
}

/// Which limits an engine of the embedding compiles in.
#[derive(Clone, Copy)]
enum Instrumented {
    Nothing,
    Epochs,
    Fuel,
    FuelAndEpochs,
    /// Fuel that makes the call yield every [`FUEL_YIELD_INTERVAL`] units.
    FuelYielding,
}

impl Instrumented {
    const ALL: [Self; 5] = [
        Self::Nothing,
        Self::Epochs,
        Self::Fuel,
        Self::FuelAndEpochs,
        Self::FuelYielding,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::Nothing => "embedded: no fuel, no epochs",
            Self::Epochs => "embedded: epochs only",
            Self::Fuel => "embedded: fuel only",
            Self::FuelAndEpochs => "embedded: fuel + epochs",
            Self::FuelYielding => "embedded: fuel, yielding (as the host)",
        }
    }

    fn fuel(self) -> bool {
        matches!(self, Self::Fuel | Self::FuelAndEpochs | Self::FuelYielding)
    }

    fn epochs(self) -> bool {
        matches!(self, Self::Epochs | Self::FuelAndEpochs)
    }
}

/// One engine configuration of the embedding, for one plugin.
struct Embedded {
    instrumented: Instrumented,
    engine: Engine,
    linker: Linker<State>,
    component: Component,
    ticker_stop: Arc<AtomicBool>,
}

impl Embedded {
    fn new(instrumented: Instrumented, wasm: &[u8]) -> Self {
        let mut config = Config::new();
        config
            .wasm_component_model(true)
            .consume_fuel(instrumented.fuel())
            .epoch_interruption(instrumented.epochs());
        let engine = Engine::new(&config).expect("an engine");
        let component = Component::new(&engine, wasm).expect("the plugin compiles");
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("WASI links");
        // The wasm-mcp host imports, as traps: the tools measured call none.
        let ty = component.component_type();
        for (name, item) in ty.imports(&engine) {
            let ComponentItem::ComponentInstance(instance) = item.ty else {
                continue;
            };
            if !name.starts_with("wasm-mcp:") {
                continue;
            }
            let mut host = linker.instance(name).expect("a linker instance");
            for (func, item) in instance.exports(&engine) {
                if matches!(item.ty, ComponentItem::ComponentFunc(_)) {
                    host.func_new(func, |_, _, _, _| {
                        Err(wasmtime::Error::msg("not provided by the bench"))
                    })
                    .expect("stub a host import");
                }
            }
        }
        let ticker_stop = Arc::new(AtomicBool::new(false));
        if instrumented.epochs() {
            // The ticker the host had: the epoch advances every 10 ms.
            let stop = ticker_stop.clone();
            let ticking = engine.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    ticking.increment_epoch();
                }
            });
        }
        Self {
            instrumented,
            engine,
            linker,
            component,
            ticker_stop,
        }
    }

    /// One call of `tool` in a fresh instance, as the host runs a call: fuel
    /// set to the host's default budget, the epoch callback (where epochs are
    /// on) yielding once per tick. Returns the text of the result's first
    /// content block.
    async fn call(&self, tool: &str, arguments: &str) -> String {
        let state = State {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
        };
        let mut store = Store::new(&self.engine, state);
        if let Instrumented::FuelYielding = self.instrumented {
            store
                .fuel_async_yield_interval(Some(FUEL_YIELD_INTERVAL))
                .expect("fuel is on");
        }
        if self.instrumented.fuel() {
            store.set_fuel(20_000_000_000).expect("fuel is on");
        }
        if self.instrumented.epochs() {
            store.epoch_deadline_callback(|_| Ok(UpdateDeadline::Yield(1)));
            store.set_epoch_deadline(1);
        }
        let instance = self
            .linker
            .instantiate_async(&mut store, &self.component)
            .await
            .expect("instantiate");
        let tools = instance
            .get_export_index(&mut store, None, "wasm-mcp:plugin/tools@0.1.0")
            .expect("exports wasm-mcp:plugin/tools");
        let call_tool = instance
            .get_export_index(&mut store, Some(&tools), "call-tool")
            .expect("exports call-tool");
        let func = instance
            .get_func(&mut store, call_tool)
            .expect("call-tool is a function");
        let mut results = [Val::Bool(false)];
        func.call_async(
            &mut store,
            &[Val::String(tool.into()), Val::String(arguments.into())],
            &mut results,
        )
        .await
        .expect("the call succeeds");
        first_text(&results[0])
    }
}

impl Drop for Embedded {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}

/// The text of the first content block of a `result<call-tool-result, error>`.
fn first_text(result: &Val) -> String {
    let Val::Result(Ok(Some(record))) = result else {
        panic!("call-tool failed: {result:?}");
    };
    let Val::Record(fields) = &**record else {
        panic!("call-tool-result is a record: {record:?}");
    };
    let content = fields
        .iter()
        .find(|(name, _)| name == "content")
        .map(|(_, value)| value)
        .expect("a content field");
    let Val::List(blocks) = content else {
        panic!("content is a list: {content:?}");
    };
    let Some(Val::Variant(case, Some(text_content))) = blocks.first() else {
        panic!("a first content block: {blocks:?}");
    };
    assert_eq!(case, "text", "the first block is text");
    let Val::Record(fields) = &**text_content else {
        panic!("text-content is a record: {text_content:?}");
    };
    match fields.iter().find(|(name, _)| name == "text") {
        Some((_, Val::String(text))) => text.clone(),
        other => panic!("text-content has text: {other:?}"),
    }
}

/// `digest` of batch-digest, compiled natively.
fn native_digest(text: &str, rounds: u64) -> String {
    let mut digest: [u8; 32] = Sha256::digest(text.as_bytes()).into();
    for _ in 1..rounds {
        digest = Sha256::digest(digest).into();
    }
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!(r#"{{"digest":"{hex}","rounds":{rounds}}}"#)
}

/// One way of running a workload's call.
type Runner<'a> = Box<dyn FnMut() -> String + 'a>;

fn bench(workload: &Workload, runs: u64, runtime: &tokio::runtime::Runtime) {
    let wasm = std::fs::read(plugin_wasm(workload.plugin)).expect("read the plugin");
    let arguments = workload.arguments.to_string();
    let embedded: Vec<Embedded> = Instrumented::ALL
        .into_iter()
        .map(|instrumented| Embedded::new(instrumented, &wasm))
        .collect();
    // The real binary, default limits, over stdio.
    let mut server = StdioServer::start(PluginDir::with(&[workload.plugin]));
    server.initialize(json!({}));
    let server = std::cell::RefCell::new(server);
    let call_binary = |arguments: &Value| {
        let result = server
            .borrow_mut()
            .call_tool(workload.tool, arguments.clone())
            .result()
            .clone();
        wasm_mcp_tests::expect::texts(&result).remove(0)
    };

    let mut runners: Vec<(String, Runner)> = Vec::new();
    for engine in &embedded {
        let arguments = arguments.clone();
        runners.push((
            engine.instrumented.name().to_string(),
            Box::new(move || runtime.block_on(engine.call(workload.tool, &arguments))),
        ));
    }
    runners.push((
        "wasm-mcp binary: tools/call over stdio".to_string(),
        Box::new(|| call_binary(&workload.arguments)),
    ));
    runners.push(("native Rust, no wasm".to_string(), Box::new(|| (workload.native)())));

    // A warm-up call each, checked; then the runs, interleaved so that a
    // change in the machine's load touches every configuration alike.
    for (name, run) in &mut runners {
        assert_eq!(run(), workload.expected, "{name} computes the right answer");
    }
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); runners.len()];
    for _ in 0..runs {
        for (i, (name, run)) in runners.iter_mut().enumerate() {
            let started = Instant::now();
            let answer = run();
            samples[i].push(started.elapsed());
            assert_eq!(answer, workload.expected, "{name}");
        }
    }
    let names: Vec<String> = runners.into_iter().map(|(name, _)| name).collect();
    server.into_inner().shutdown();

    let baseline = median(&samples[0]);
    let baseline_min = fastest(&samples[0]);
    println!();
    println!(
        "limits: {} `{}` ({}), {runs} timed calls each, interleaved",
        workload.plugin, workload.tool, workload.what
    );
    println!(
        "  {:<42} {:>10} {:>10} {:>13} {:>13}",
        "configuration", "median ms", "min ms", "median vs no", "min vs no"
    );
    for (name, samples) in names.iter().zip(&samples) {
        let med = median(samples);
        let min = fastest(samples);
        println!(
            "  {:<42} {:>10.1} {:>10.1} {:>+12.1}% {:>+12.1}%",
            name,
            ms(med),
            ms(min),
            (med.as_secs_f64() / baseline.as_secs_f64() - 1.0) * 100.0,
            (min.as_secs_f64() / baseline_min.as_secs_f64() - 1.0) * 100.0
        );
    }
}

pub fn run() {
    let quick = quick();
    let runs = number("WASM_MCP_BENCH_RUNS", if quick { 1 } else { 7 });
    let rounds = number("WASM_MCP_BENCH_ROUNDS", if quick { 1000 } else { 300_000 });
    let below = number("WASM_MCP_BENCH_PRIMES_BELOW", if quick { 1000 } else { 40_000_000 }) as u32;
    let text = "wasm-mcp bench";
    let workloads = [
        Workload {
            plugin: "batch-digest",
            tool: "digest",
            what: format!("{rounds} chained SHA-256 rounds"),
            arguments: json!({"text": text, "rounds": rounds}),
            expected: native_digest(text, rounds),
            native: Box::new(move || native_digest(text, rounds)),
        },
        Workload {
            plugin: "spinner",
            tool: "count_primes",
            what: format!("sieve below {below}: tight loops"),
            arguments: json!({"below": below}),
            expected: primes_below(below),
            native: Box::new(move || primes_below(below)),
        },
    ];
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    for workload in &workloads {
        bench(workload, runs, &runtime);
    }
    println!();
    println!(
        "(each call is a fresh instance; the binary's time includes JSON-RPC over stdio and the harness's schema check of every message)"
    );
}
