//! The stdio side of the harness: `wasm-mcp serve` driven over its stdin and
//! stdout, on the harness's process handling ([`crate::process`]) and message
//! building ([`crate::jsonrpc`]): [`StdioServer`], the end-to-end tests'
//! client, checking every message against the MCP schema.

mod checked;

pub use checked::{Handler, StdioServer};
