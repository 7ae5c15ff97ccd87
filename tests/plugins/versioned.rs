// The body of the `versioned` test plugin, shared by `versioned-v1` and
// `versioned-v2` (each defines `VERSION` and `include!`s this file). Both
// versions list exactly the same tools and resource; only their answers
// differ, so the hot-reload tests can tell which version served a call.
//
// `VERSIONED_START_DELAY_MS` (granted through a manifest's `[env]`) makes
// every instance sleep before it answers anything, listing included: a
// plugin that is slow to load.

use std::thread::sleep;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use wasm_mcp_sdk::{NoArgs, Plugin, Resource, ResourceContents, Tool, host};

/// The resource both versions serve; its text is the version.
const VERSION_URI: &str = "versioned://version";

fn version(_: NoArgs) -> &'static str {
    VERSION
}

#[derive(Deserialize, JsonSchema)]
struct SlowArgs {
    /// How long to sleep before answering, in milliseconds.
    ms: u64,
}

fn slow_version(args: SlowArgs) -> String {
    sleep(Duration::from_millis(args.ms));
    format!("{VERSION} after {} ms", args.ms)
}

/// Asks the client for its roots first, so a test can hold the call open
/// (by not answering `roots/list` yet) for as long as it likes.
fn held_version(_: NoArgs) -> Result<&'static str, String> {
    host::list_roots().map_err(|e| format!("roots/list failed: {e:?}"))?;
    Ok(VERSION)
}

fn start_delay() {
    let delay = std::env::var("VERSIONED_START_DELAY_MS")
        .ok()
        .and_then(|ms| ms.parse::<u64>().ok());
    if let Some(ms) = delay {
        sleep(Duration::from_millis(ms));
    }
}

fn plugin() -> Plugin {
    start_delay();
    Plugin::new()
        .tool(Tool::new("version", version).description("Answers which version of the plugin is serving."))
        .tool(
            Tool::new("slow_version", slow_version)
                .description("Sleeps `ms` milliseconds, then answers which version served the call."),
        )
        .tool(
            Tool::new("held_version", held_version)
                .description("Asks the client for its roots, then answers which version served the call."),
        )
        .resource(
            Resource::new(VERSION_URI, "version", |uri| {
                Ok(vec![ResourceContents::text(uri, "text/plain", VERSION)])
            })
            .mime_type("text/plain")
            .description("Which version of the plugin is serving."),
        )
}

wasm_mcp_sdk::export!(plugin);
