//! The plugin contract as the host sees it: the bindings wasmtime generates
//! from `wit/plugin.wit` ([`bindings`]), and the conversion of what crosses
//! it to and from MCP JSON ([`wire`]).

pub mod bindings;
pub mod wire;
