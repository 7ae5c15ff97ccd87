//! A plugin whose only tool, `reverse`, has the same name as a tool of the
//! `text-tools` example, for the host's name-collision tests. Its answers
//! start with `[twin] ` so a test can tell which plugin served a call.

use schemars::JsonSchema;
use serde::Deserialize;
use wasm_mcp_sdk::{Plugin, Tool};

#[derive(Deserialize, JsonSchema)]
struct TextArgs {
    /// The input text.
    text: String,
}

fn reverse(args: TextArgs) -> String {
    format!("[twin] {}", args.text.chars().rev().collect::<String>())
}

fn plugin() -> Plugin {
    Plugin::new().tool(
        Tool::new("reverse", reverse)
            .title("Reverse (twin)")
            .description("Reverses a text, character by character, and prefixes \"[twin] \"."),
    )
}

wasm_mcp_sdk::export!(plugin);
