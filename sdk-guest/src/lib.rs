//! Write wasm-mcp plugins in Rust: MCP tools, resources, prompts and
//! completion as plain Rust functions over serde types, compiled to a
//! WebAssembly component (`wasm32-wasip2`).
//!
//! A plugin crate is a `cdylib` that builds a [`Plugin`] in a function and
//! exports it with one line, [`export!`]:
//!
//! ```no_run
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use wasm_mcp_sdk::{Plugin, Structured, Tool};
//!
//! /// Arguments of `word_count` (doc comments become schema descriptions).
//! #[derive(Deserialize, JsonSchema)]
//! struct CountArgs {
//!     /// The text to count.
//!     text: String,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Counts {
//!     words: usize,
//! }
//!
//! // A structured result: the output schema is derived from `Counts`.
//! fn word_count(args: CountArgs) -> Structured<Counts> {
//!     Structured(Counts { words: args.text.split_whitespace().count() })
//! }
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct ParseArgs {
//!     number: String,
//! }
//!
//! // `Err` becomes a result with `isError: true` and the error's text.
//! fn parse(args: ParseArgs) -> Result<String, std::num::ParseIntError> {
//!     Ok(args.number.trim().parse::<i64>()?.to_string())
//! }
//!
//! fn plugin() -> Plugin {
//!     Plugin::new()
//!         .tool(
//!             Tool::new("word_count", word_count)
//!                 .title("Word count")
//!                 .description("Counts the words in a text")
//!                 .read_only_hint(true),
//!         )
//!         .tool(Tool::new("parse", parse).description("Parses an integer"))
//! }
//!
//! wasm_mcp_sdk::export!(plugin);
//! ```
//!
//! with this `Cargo.toml`, built by `cargo build --release --target
//! wasm32-wasip2` into `target/wasm32-wasip2/release/my_tools.wasm`:
//!
//! ```toml
//! [package]
//! name = "my-tools"
//! version = "0.1.0"
//! edition = "2024"
//!
//! [lib]
//! crate-type = ["cdylib"]
//!
//! [dependencies]
//! wasm-mcp-sdk = { path = "../wasm-mcp/sdk-guest" }
//! serde = { version = "1", features = ["derive"] }
//! schemars = "1"
//! ```
//!
//! Resources, templates, prompts, completion and the host imports fit the
//! same mould:
//!
//! ```no_run
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use wasm_mcp_sdk::host::{self, LogLevel};
//! use wasm_mcp_sdk::{
//!     ContentBlock, Error, NoArgs, Plugin, Prompt, PromptMessage, Resource, ResourceContents,
//!     ResourceTemplate, Tool, completion,
//! };
//!
//! const CITIES: [&str; 3] = ["berlin", "lisbon", "paris"];
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct CityArgs {
//!     /// The city to describe
//!     city: String,
//! }
//!
//! fn plugin() -> Plugin {
//!     Plugin::new()
//!         .resource(Resource::text("cities://all", "all", "text/plain", CITIES.join("\n")))
//!         .resource_template(
//!             ResourceTemplate::new("cities://city/{name}", "city", |uri, vars| {
//!                 let name = vars.get("name").unwrap_or_default();
//!                 if !CITIES.contains(&name) {
//!                     return Err(Error::NotFound(uri.to_string()));
//!                 }
//!                 Ok(vec![ResourceContents::text(uri, "text/plain", format!("About {name}"))])
//!             })
//!             .complete("name", |typed, _| completion::starting_with(CITIES, typed)),
//!         )
//!         .prompt(
//!             Prompt::new("describe_city", |args: CityArgs| {
//!                 let text = format!("Describe {} in two sentences.", args.city);
//!                 Ok::<_, Error>(vec![PromptMessage::user(ContentBlock::text(text))])
//!             })
//!             .description("Asks for a short description of a city")
//!             .complete("city", |typed, _| completion::starting_with(CITIES, typed)),
//!         )
//!         .tool(Tool::new("refresh", |_: NoArgs| {
//!             host::log(LogLevel::Info, "refreshing");
//!             host::progress(1.0, Some(1.0), None);
//!             host::resource_updated("cities://all");
//!             "refreshed"
//!         }))
//! }
//!
//! wasm_mcp_sdk::export!(plugin);
//! ```
//!
//! Drop the `.wasm` into the host's plugins directory, or run one call of it
//! with `wasm-mcp call my-tools.wasm word_count --args '{"text": "a b"}'`.
//!
//! - Tools: [`Tool`]; what they return: [`IntoToolResult`], [`Structured`],
//!   [`CallToolResult`], [`ContentBlock`].
//! - Resources: [`Resource`] and [`ResourceTemplate`] (with `{var}` routing).
//! - Prompts: [`Prompt`], [`PromptMessage`].
//! - Completion: `complete` on [`Prompt`] and [`ResourceTemplate`], and
//!   [`completion::starting_with`].
//! - Skills: files in the plugin's skills folder (`NAME.skills/`), or
//!   [`Skill`] for those the plugin makes as they are read.
//! - Requests to the host and the client (logging, progress, cancellation,
//!   sampling, elicitation, roots, resource updates): [`host`].
//! - State kept between calls, across restarts and replicas, in the buckets
//!   the manifest grants: [`state::Bucket`].
//!
//! - Unit tests on your machine, without wasm: [`testing::FakeHost`] stands
//!   in for the host (records logs and progress, cancels when told, answers
//!   sampling, elicitation and roots as scripted), and [`Plugin::call_tool`]
//!   serves a tool by name as the component would.
//!
//! Examples, each built by `make plugins` and tested by `make test`:
//! `plugins/text-tools` (tools, structured output, errors), `plugins/notes`
//! (resources, templates, prompts, completion, resource updates),
//! `plugins/batch-digest` (progress, cancellation, tasks, native tests) and
//! `sdk-guest/examples/ask_the_client.rs` (sampling, elicitation, roots,
//! native tests), `plugins/memory` (state in buckets: notes per caller, shared
//! counters). The plugin author's guide is `docs/plugin-guide.md`.
//!
//! Every call may run in a fresh instance: keep no state in memory between
//! calls; keep it in a bucket ([`state`]).
//! Parts a plugin does not use are served empty, and unknown names or URIs
//! get [`Error::NotFound`].

#![warn(missing_docs)]

extern crate self as wasm_mcp_sdk;

mod args;
pub mod bindings;
mod builder;
pub mod completion;
mod content;
pub mod host;
mod plugin;
mod prompt;
mod resource;
mod result;
mod schema;
mod skill;
pub mod state;
pub mod testing;
mod tool;
mod uri_template;

pub use args::{Arguments, NoArgs};
pub use bindings::exports::wasm_mcp::plugin::prompts::{GetPromptResult, PromptMessage};
pub use bindings::exports::wasm_mcp::plugin::tools::{CallToolResult, TaskSupport, ToolAnnotations};
pub use bindings::wasm_mcp::plugin::types::{
    Annotations, ContentBlock, ContentsBody, EmbeddedResource, Error, Icon, IconTheme, MediaContent, ResourceContents,
    ResourceLink, Role, TextContent,
};
pub use plugin::Plugin;
pub use prompt::Prompt;
pub use resource::{Resource, ResourceTemplate};
pub use result::{IntoToolResult, Structured};
pub use skill::Skill;
pub use tool::Tool;

#[doc(hidden)]
pub use plugin::Export as __Export;

/// Exports a plugin from a plugin crate: `wasm_mcp_sdk::export!(plugin);`
/// where `plugin` is a `fn() -> Plugin`. Use it once, at the crate root.
#[macro_export]
macro_rules! export {
    ($plugin:path) => {
        #[doc(hidden)]
        struct __WasmMcpPlugin;

        impl $crate::__Export for __WasmMcpPlugin {
            fn plugin() -> $crate::Plugin {
                $plugin()
            }
        }

        $crate::bindings::__export_bindings!(__WasmMcpPlugin with_types_in $crate::bindings);
    };
}
