//! A plugin that floods its client on purpose, for the host's bounds on what
//! a plugin sends toward the client: log messages of any size, progress as
//! fast as it can, resource updates and list changes in a loop. It also
//! holds memory for a while, for the host-wide memory budget, and echoes,
//! so a test can time an unrelated call during a flood.

use std::hint::black_box;
use std::thread::sleep;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use wasm_mcp_sdk::host::{self, ListKind, LogLevel};
use wasm_mcp_sdk::{Plugin, Tool};

#[derive(Deserialize, JsonSchema)]
struct LogArgs {
    /// How many messages to log.
    count: u32,
    /// The size of each message, in bytes.
    bytes: u32,
    /// Log each as JSON (`log-json`, an object with the text) instead of text.
    #[serde(default)]
    json: bool,
}

/// Logs `count` messages of `bytes` bytes each, as fast as it can.
fn log_flood(args: LogArgs) -> String {
    let text = "x".repeat(args.bytes as usize);
    for _ in 0..args.count {
        if args.json {
            host::log_json(LogLevel::Info, &serde_json::json!({ "text": text }));
        } else {
            host::log(LogLevel::Info, &text);
        }
    }
    format!("logged {} messages of {} bytes", args.count, args.bytes)
}

#[derive(Deserialize, JsonSchema)]
struct ProgressArgs {
    /// How many progress notifications to send: 1, 2, … `count` of `count`.
    count: u32,
    /// The size of each progress message, in bytes (0: no message).
    #[serde(default)]
    message_bytes: u32,
}

/// Sends progress 1..=`count` of `count` as fast as it can.
fn progress_flood(args: ProgressArgs) -> String {
    let message = (args.message_bytes > 0).then(|| "p".repeat(args.message_bytes as usize));
    let total = f64::from(args.count);
    for step in 1..=args.count {
        host::progress(f64::from(step), Some(total), message.as_deref());
    }
    format!("sent {} progress", args.count)
}

#[derive(Deserialize, JsonSchema)]
struct UpdatesArgs {
    /// How many updates to announce.
    count: u32,
    /// Cycle through this many URIs, `flood://r/0` … (at least 1).
    uris: u32,
}

/// Announces `count` resource updates, cycling through `uris` URIs.
fn updates_flood(args: UpdatesArgs) -> String {
    let uris = args.uris.max(1);
    for n in 0..args.count {
        host::resource_updated(&format!("flood://r/{}", n % uris));
    }
    format!("announced {} updates", args.count)
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// How many times.
    count: u32,
}

/// Says its lists changed `count` times.
fn relist_flood(args: CountArgs) -> String {
    for _ in 0..args.count {
        host::lists_changed(&[ListKind::Tools, ListKind::Prompts, ListKind::Resources]);
    }
    format!("said its lists changed {} times", args.count)
}

#[derive(Deserialize, JsonSchema)]
struct HoldArgs {
    /// How many MiB to allocate and touch.
    mb: u64,
    /// How long to hold them, in milliseconds.
    ms: u64,
}

/// Allocates `mb` MiB, touches every page, logs "holding <mb> MiB", and
/// holds them `ms` milliseconds.
fn hold(args: HoldArgs) -> String {
    let mut block = vec![0u8; (args.mb as usize) << 20];
    for page in block.chunks_mut(4096) {
        page[0] = 1;
    }
    host::log(LogLevel::Info, &format!("holding {} MiB", args.mb));
    sleep(Duration::from_millis(args.ms));
    black_box(&block);
    format!("held {} MiB for {} ms", args.mb, args.ms)
}

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

fn echo(args: EchoArgs) -> String {
    args.text
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool(
            Tool::new("log_flood", log_flood).description("Logs `count` messages of `bytes` bytes as fast as it can."),
        )
        .tool(
            Tool::new("progress_flood", progress_flood)
                .description("Sends progress 1..=count of count as fast as it can."),
        )
        .tool(
            Tool::new("updates_flood", updates_flood)
                .description("Announces `count` resource updates over `uris` URIs."),
        )
        .tool(Tool::new("relist_flood", relist_flood).description("Says its lists changed `count` times."))
        .tool(Tool::new("hold", hold).description("Allocates and touches `mb` MiB and holds them `ms` milliseconds."))
        .tool(Tool::new("echo", echo).description("Returns `text`."))
}

wasm_mcp_sdk::export!(plugin);
