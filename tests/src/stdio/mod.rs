//! The stdio side of the harness: `wasm-mcp serve` driven over its stdin and
//! stdout. Two clients for two uses, on the same process handling
//! ([`crate::process`]) and message building ([`crate::jsonrpc`]):
//! [`StdioServer`], the end-to-end tests' client, checking every message
//! against the MCP schema; and [`ConcurrentStdioClient`], shared by many
//! threads at once (the soak test).

mod checked;
mod concurrent;

pub use checked::{Handler, StdioServer};
pub use concurrent::{ConcurrentStdioClient, ProblemSink};
