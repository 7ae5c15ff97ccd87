//! wasm-mcp: an MCP server whose tools, resources and prompts are served by
//! sandboxed WebAssembly components.
//!
//! The modules stack in layers, and each imports only those below it (a test
//! checks this; `docs/architecture.md` draws the map):
//!
//! | layer | owns |
//! |---|---|
//! | [`cli`] | the command line: `serve`, `check`, `call`, `new`, the registry and signing commands |
//! | [`transport`] | stdio and Streamable HTTP: moving messages between a client and a session |
//! | `auth` | who may use the server over HTTP, and for what: host and origin checks, tokens, OAuth, scopes |
//! | [`reload`] | the plugins directory and the set of plugins loaded from it |
//! | [`registry`] | plugins from OCI registries: the lockfile, the content-addressed store, the client |
//! | [`trust`] | signatures of pulled plugins and the operator's trust policy |
//! | [`session`] | one client's conversation: lifecycle, typed dispatch, requests to the client |
//! | `request` | one request's answer, typed until rendered once, and its metric and span |
//! | [`tasks`] | long calls the client polls |
//! | [`state`] | what replicas share and restarts keep: task records, leases, events |
//! | [`catalog`] | every tool, resource and prompt under the names the client sees |
//! | [`runtime`] | the process: engine, linker, compiled-code cache, shared call slots |
//! | [`plugin`] | one loaded version of a plugin and its instances |
//! | [`skills`] | the skills a plugin ships (the skills extension): files, digests, frontmatter, limits |
//! | [`call`] | one call: its store, its request, host imports, the guard of its limits |
//! | [`secrets`] | the operator's secrets, bound to plugins' outgoing HTTP requests by the host |
//! | [`sandbox`] | grants turned into WASI contexts, network policy |
//! | [`manifest`] | a plugin's manifest, parsed and checked |
//! | [`contract`] | the WIT bindings and the conversion of what crosses them |
//! | [`config`] | the resolved settings |
//! | [`telemetry`] | traces over OTLP, when an endpoint is configured |
//! | [`metrics`] | what the process counts for operators (`/metrics`) |
//! | [`limits`] | the bounds of a call and how hitting one is reported |
//! | [`principal`] | who a request acts for, and the scopes it was granted |
//! | [`protocol`] | JSON-RPC framing, typed requests, versions |
//! | [`settings`] | every setting, declared once |
//!
//! The command line sits on top of them all; the binary (`src/main.rs`) only
//! calls [`cli::main`].

pub(crate) mod auth;
pub mod call;
pub mod catalog;
pub mod cli;
pub mod config;
pub mod contract;
pub mod limits;
pub mod manifest;
pub mod metrics;
pub mod plugin;
pub mod principal;
pub mod protocol;
pub mod registry;
pub mod reload;
pub(crate) mod request;
pub mod runtime;
pub mod sandbox;
pub mod secrets;
pub mod session;
pub mod settings;
pub mod skills;
pub mod state;
pub mod tasks;
pub mod telemetry;
pub mod transport;
pub mod trust;
