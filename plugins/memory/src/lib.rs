//! A memory for the model: notes it remembers, recalls, appends to and
//! forgets, kept per caller (one caller never sees another's), and counters
//! shared by every caller. The state lives in the host's state store through
//! `wasi:keyvalue` ([`wasm_mcp_sdk::state`]): it outlives every call and
//! restarts, and replicas sharing a Redis store see the same.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wasm_mcp_sdk::state::{Bucket, StateError};
use wasm_mcp_sdk::{Plugin, Structured, Tool};

/// Each caller's notes.
const NOTES: &str = "notes";
/// Counters every caller shares.
const COUNTERS: &str = "counters";

#[derive(Deserialize, JsonSchema)]
struct RememberArgs {
    /// The name to remember it under.
    key: String,
    /// What to remember.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct KeyArgs {
    /// The name it was remembered under.
    key: String,
}

#[derive(Deserialize, JsonSchema)]
struct ListArgs {
    /// The cursor a previous page returned; none for the first page.
    #[serde(default)]
    cursor: Option<String>,
}

#[derive(Serialize, JsonSchema)]
struct Page {
    /// Names of remembered notes.
    keys: Vec<String>,
    /// Pass it back for the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// The counter.
    name: String,
    /// What to add (1 if absent; negative counts down).
    #[serde(default)]
    by: Option<i64>,
}

#[derive(Serialize, JsonSchema)]
struct Count {
    name: String,
    value: i64,
}

fn remember(args: RememberArgs) -> Result<String, StateError> {
    Bucket::open(NOTES)?.set(&args.key, &args.text)?;
    Ok(format!("Remembered {:?}.", args.key))
}

fn recall(args: KeyArgs) -> Result<String, StateError> {
    match Bucket::open(NOTES)?.get_string(&args.key)? {
        Some(text) => Ok(text),
        None => Err(StateError(format!("Nothing is remembered under {:?}.", args.key))),
    }
}

/// Adds a line to a note by compare-and-swap: appends from any number of
/// calls at once, on any replica, all land.
fn append(args: RememberArgs) -> Result<String, StateError> {
    let written = Bucket::open(NOTES)?.update(&args.key, |now| {
        let mut note = now.map(<[u8]>::to_vec).unwrap_or_default();
        if !note.is_empty() {
            note.push(b'\n');
        }
        note.extend_from_slice(args.text.as_bytes());
        note
    })?;
    let lines = written.split(|&b| b == b'\n').count();
    Ok(format!("{:?} now has {lines} line(s).", args.key))
}

fn forget(args: KeyArgs) -> Result<String, StateError> {
    Bucket::open(NOTES)?.delete(&args.key)?;
    Ok(format!("Forgot {:?}.", args.key))
}

fn list(args: ListArgs) -> Result<Structured<Page>, StateError> {
    let (keys, next_cursor) = Bucket::open(NOTES)?.keys_page(args.cursor.as_deref())?;
    Ok(Structured(Page { keys, next_cursor }))
}

fn count(args: CountArgs) -> Result<Structured<Count>, StateError> {
    let value = Bucket::open(COUNTERS)?.increment(&args.name, args.by.unwrap_or(1))?;
    Ok(Structured(Count { name: args.name, value }))
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool(
            Tool::new("remember", remember)
                .description("Remembers a text under a name, for this caller only (replaces what was there)")
                .idempotent_hint(true),
        )
        .tool(
            Tool::new("recall", recall)
                .description("Recalls the text remembered under a name")
                .read_only_hint(true),
        )
        .tool(Tool::new("append", append).description("Adds a line to the text remembered under a name"))
        .tool(
            Tool::new("forget", forget)
                .description("Forgets the text remembered under a name")
                .idempotent_hint(true),
        )
        .tool(
            Tool::new("list_memories", list)
                .description("Lists the names this caller remembered texts under, a page at a time")
                .read_only_hint(true),
        )
        .tool(Tool::new("count", count).description("Adds to a counter every caller shares and returns its value"))
}

wasm_mcp_sdk::export!(plugin);
