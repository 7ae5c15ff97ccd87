//! The wasm-mcp benchmarks (`make bench`), in one binary.
//!
//! - `wasm-mcp-bench` (or `run`): the performance suite; every measurement,
//!   the report written to `bench/results.md`.
//! - `wasm-mcp-bench http`: Streamable HTTP with many sessions.
//! - `wasm-mcp-bench reload [languages]`: a file landing → `list_changed`,
//!   and startup with a cold and a warm cache.
//! - `wasm-mcp-bench limits`: the cost of fuel (and epochs) on CPU-bound tools.
//! - `wasm-mcp-bench replicas`: 1 and 3 replicas behind HAProxy sharing a
//!   Redis, and task create-to-result with the embedded store and Redis.
//! - `wasm-mcp-bench keyvalue`: `wasi:keyvalue` get and set from a plugin,
//!   p50 and p99, with the embedded store and with Redis.
//! - `wasm-mcp-bench registry`: `add` of the Python plugin from a real
//!   registry, and start with ten locked plugins from a warm store against
//!   ten files.
//! - `wasm-mcp-bench telemetry`: echo with traces exported over OTLP
//!   against the same binary without an endpoint.
//! - `wasm-mcp-bench cpu-check [--write-baseline]` (`make bench-check`):
//!   wasm-mcp's server CPU per echo call against `bench/baseline.json`;
//!   fails when it grew more than 25 %.
//! - `wasm-mcp-bench native-server` and `wasm-mcp-bench rmcp-server`: the
//!   two native MCP servers the suite compares against, started by the suite.

mod auth;
mod cpu;
mod http;
mod keyvalue;
mod limits;
mod machine;
mod native_server;
mod registry;
mod reload;
mod replicas;
mod report;
mod rmcp_server;
mod settings;
mod stats;
mod suite;
mod telemetry;
mod workloads;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None | Some("run") => {
            let results = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results.md");
            suite::run(&results);
        }
        Some("http") => http::run(),
        Some("reload") => reload::run(args.get(1).is_some_and(|a| a == "languages")),
        Some("limits") => limits::run(),
        Some("replicas") => replicas::run(),
        Some("telemetry") => telemetry::run(),
        Some("auth") => auth::run(),
        Some("registry") => registry::run(),
        Some("keyvalue") => keyvalue::run(),
        Some("cpu-check") => {
            let baseline = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("baseline.json");
            let cache = tempfile::tempdir().expect("a cache directory");
            let plugins = suite::bench_plugins();
            let servers = suite::subjects(&plugins, cache.path())
                .into_iter()
                .map(|s| (s.name, s.client))
                .collect();
            return cpu::check(&baseline, args.get(1).is_some_and(|a| a == "--write-baseline"), servers);
        }
        Some("native-server") => native_server::serve(),
        Some("rmcp-server") => rmcp_server::serve(),
        Some(other) => {
            eprintln!(
                "unknown command {other:?}: use `run` (the default), `http`, `reload [languages]`, `limits`, \
                 `replicas`, `telemetry`, `auth`, `registry`, `keyvalue`, `cpu-check [--write-baseline]`, `native-server` or `rmcp-server`"
            );
            std::process::exit(2);
        }
    }
    std::process::ExitCode::SUCCESS
}
