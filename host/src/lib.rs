//! wasm-mcp: an MCP server whose tools, resources and prompts are served by
//! sandboxed WebAssembly components.
//!
//! Data flows one way: transport → session → catalog → plugin instance, and
//! answers flow back through the same session.

pub mod call;
pub mod catalog;
pub mod config;
pub mod inspect;
pub mod manifest;
pub mod plugins;
pub mod protocol;
pub mod reload;
pub mod sandbox;
pub mod scaffold;
pub mod session;
pub mod tasks;
pub mod transport;
