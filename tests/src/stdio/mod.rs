//! The stdio side of the harness: `wasm-mcp serve` driven over its stdin and
//! stdout. Three clients for three uses, on the same process handling
//! ([`crate::process`]) and message building ([`crate::jsonrpc`]):
//! [`StdioServer`], the end-to-end tests' client, checking every message
//! against the MCP schema; [`ConcurrentStdioClient`], shared by many threads
//! at once (the soak test); and [`LeanStdioClient`], the benchmarks' client,
//! which checks nothing on its measured path.

mod checked;
mod concurrent;
mod lean;

pub use checked::{Handler, StdioServer};
pub use concurrent::{ConcurrentStdioClient, ProblemSink};
pub use lean::{LeanStdioClient, Run, ToolCall};
