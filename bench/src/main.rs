//! The wasm-mcp performance suite (`make bench`).
//!
//! `wasm-mcp-bench` runs every measurement and writes the report to
//! `bench/results.md`; `wasm-mcp-bench native-server` and `wasm-mcp-bench
//! rmcp-server` are the two native MCP servers it compares against, started
//! by the suite itself.

mod client;
mod machine;
mod native_server;
mod report;
mod rmcp_server;
mod stats;
mod suite;
mod workloads;

fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("native-server") => native_server::serve(),
        Some("rmcp-server") => rmcp_server::serve(),
        None | Some("run") => {
            let results = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results.md");
            suite::run(&results);
        }
        Some(other) => {
            eprintln!("unknown command {other:?}: use `run` (the default), `native-server` or `rmcp-server`");
            std::process::exit(2);
        }
    }
}
