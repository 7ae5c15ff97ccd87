//! The test harness of wasm-mcp: the end-to-end tests, the soak test and the
//! benchmarks drive the real `wasm-mcp` binary over real plugins built from
//! source through the clients here, and speak JSON-RPC to it as a client
//! would. Nothing is mocked. The tests' clients check every message the
//! server emits against the official MCP 2025-11-25 JSON Schema (see
//! [`schema`]); the benchmarks' lean clients check nothing on the measured path.

pub mod command;
pub mod expect;
pub mod http;
pub mod http2;
pub mod https;
pub mod issuer;
pub mod jsonrpc;
pub mod loopback;
pub mod modern;
pub mod otlp;
pub mod paths;
pub mod plugin_dir;
pub mod proc_stat;
pub mod process;
pub mod recorder;
pub mod redis;
pub mod registry;
pub mod registry_token;
pub mod schema;
pub mod sigstore;
pub mod stdio;
pub mod wait;
pub mod wasi_http;

pub use jsonrpc::{Response, RpcError};
pub use paths::{binary, plugin_wasm, plugins_dist, test_plugins_dist, workspace_root};
pub use plugin_dir::PluginDir;
pub use stdio::StdioServer;
pub use wait::{compile_timeout, timeout};

/// Makes ring the process's rustls provider (once), before any HTTP client
/// is made. reqwest is one build in the workspace, and the host's registry
/// client has it use rustls with no provider of its own, as the binary
/// (which installs ring at start) does: a client made without one panics.
pub fn tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The protocol revision this host implements.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Every protocol revision the host must accept and echo in `initialize`.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// A `--fuel` that never runs out, for tests that must end on another limit:
/// a tight loop burns the default 20 billion units in about a second.
pub const NO_FUEL_LIMIT: &str = "18446744073709551615";

/// Flags that lift fuel and the deadline, for calls that run until stopped.
pub const NO_LIMITS: [&str; 4] = ["--fuel", NO_FUEL_LIMIT, "--timeout", "86400"];
