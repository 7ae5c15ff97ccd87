//! wasm-mcp: an MCP server whose tools, resources and prompts are served by
//! sandboxed WebAssembly components.
//!
//! The modules stack in layers, and each imports only those below it (a test
//! checks this; `docs/architecture.md` draws the map):
//!
//! | layer | owns |
//! |---|---|
//! | `cli` | the command line: `serve`, `check`, `call`, `new`, the registry and signing commands |
//! | `transport` | stdio and Streamable HTTP: moving messages between a client and a session |
//! | `auth` | who may use the server over HTTP, and for what: host and origin checks, tokens, OAuth, scopes |
//! | `reload` | the plugins directory and the set of plugins loaded from it |
//! | `registry` | plugins from OCI registries: the lockfile, the content-addressed store, the client |
//! | `trust` | signatures of pulled plugins and the operator's trust policy |
//! | `session` | a 2025-11-25 session: lifecycle, log level, subscriptions, requests to its client, its tasks |
//! | `request` | one request over a peer: its era, dispatch, call scope, rounds, tasks, listening, and its answer, typed until rendered once |
//! | `server` | the process: the hub every client shares, the status snapshot |
//! | `tasks` | long calls the client polls |
//! | `state` | what replicas share and restarts keep: task records, leases, events |
//! | `catalog` | every tool, resource and prompt under the names the client sees |
//! | `runtime` | the process: engine, linker, compiled-code cache, shared call slots |
//! | `plugin` | one loaded version of a plugin and its instances |
//! | `skills` | the skills a plugin ships (the skills extension): files, digests, frontmatter, limits |
//! | `call` | one call: its store, its request, host imports, the guard of its limits |
//! | `secrets` | the operator's secrets, bound to plugins' outgoing HTTP requests by the host |
//! | `sandbox` | grants turned into WASI contexts, network policy |
//! | `manifest` | a plugin's manifest, parsed and checked |
//! | `contract` | the WIT bindings and the conversion of what crosses them |
//! | `config` | the resolved settings |
//! | `telemetry` | traces over OTLP, when an endpoint is configured |
//! | `metrics` | what the process counts for operators (`/metrics`) |
//! | `limits` | the bounds of a call and how hitting one is reported |
//! | `principal` | who a request acts for, and the scopes it was granted |
//! | `protocol` | JSON-RPC framing, typed requests, versions |
//! | `settings` | every setting, declared once |
//!
//! The command line sits on top of them all; the binary (`src/main.rs`) only
//! calls [`cli::main`].
//!
//! # What is public
//!
//! Every layer is a private module but `cli`, whose one public item is
//! [`cli::main`]. Outside the crate the library exposes only what the binary,
//! the benchmarks and the fuzz targets need, each on purpose:
//!
//! - [`cli::main`]: the binary's one entry point.
//! - At the root, running plugins in-process without a client, as the
//!   benchmarks do: [`Settings`], [`StateStore`] (and its [`Location`]),
//!   [`PluginRuntime`] to compile and load a [`Plugin`] (with its
//!   [`Manifest`]), and a [`CallScope`] to call it under.
//! - [`fuzzing`]: what the fuzz targets (`fuzz/`) drive below that: the
//!   parsers of what arrives from outside (JSON-RPC messages, typed requests,
//!   list cursors, manifests and config files), the conversion of plugin
//!   output (`contract::wire`) and one session over a hub.
//!
//! Public items are documented, with `# Errors` where they return a `Result`;
//! the crate's lints keep it so.

#![warn(missing_docs, clippy::missing_errors_doc)]

mod auth;
mod call;
mod catalog;
pub mod cli;
mod config;
mod contract;
mod limits;
mod manifest;
mod metrics;
mod plugin;
mod principal;
mod protocol;
mod registry;
mod reload;
mod request;
mod runtime;
mod sandbox;
mod secrets;
mod server;
mod session;
mod settings;
mod skills;
mod state;
mod tasks;
mod telemetry;
mod transport;
mod trust;

pub use call::CallScope;
pub use config::Settings;
pub use manifest::Manifest;
pub use plugin::Plugin;
pub use runtime::PluginRuntime;
pub use state::{Location, StateStore};

/// What the fuzz targets (`fuzz/`) reach below the in-process API at the
/// crate's root: each item is the host's own, re-exported as it is, so a
/// target exercises exactly the code the server runs.
pub mod fuzzing {
    pub use crate::call::{BoxFuture, ChangedLists, ClientLink, ClientRequestError};
    pub use crate::catalog::pagination::page;
    pub use crate::catalog::{Catalog, ToolSchemas};
    pub use crate::config::ConfigFile;
    pub use crate::contract::wire;
    pub use crate::limits::{Limits, NotificationBounds};
    pub use crate::manifest::is_scope_token;
    pub use crate::protocol::requests::{ListKind, Request};
    pub use crate::protocol::{Incoming, LogLevel, Method, RequestId, RpcError, jsonrpc};
    pub use crate::sandbox::{Channel, Grants};
    pub use crate::server::Hub;
    pub use crate::session::{Outgoing, Session};
    pub use crate::settings::ServerValues;
    pub use crate::tasks::{TaskSettings, TaskStore};

    /// The WIT types a plugin's output is made of, as the host's bindings
    /// generate them.
    pub mod bindings {
        pub use crate::contract::bindings::{host, prompts, resources, tools, types};
    }
}
