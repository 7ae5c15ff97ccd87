//! A wasm-mcp plugin: MCP tools as plain Rust functions over serde types.

use schemars::JsonSchema;
use serde::Deserialize;
use wasm_mcp_sdk::{Plugin, Tool};

/// Arguments of `{{crate}}_shout` (doc comments become schema descriptions).
#[derive(Deserialize, JsonSchema)]
struct ShoutArgs {
    /// The text to shout.
    text: String,
    /// How many times to repeat it (default 1).
    times: Option<usize>,
}

/// The text upper-cased, repeated `times` times.
fn shout(args: ShoutArgs) -> String {
    vec![args.text.to_uppercase(); args.times.unwrap_or(1)].join(" ")
}

/// The tools, named after the plugin so that they never collide with another plugin's.
fn plugin() -> Plugin {
    Plugin::new().tool(
        Tool::new("{{crate}}_shout", shout)
            .description("Upper-cases text, repeated as often as asked")
            .read_only_hint(true),
    )
}

wasm_mcp_sdk::export!(plugin);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shout_upper_cases_and_repeats() {
        let args = ShoutArgs { text: "hi".into(), times: Some(2) };
        assert_eq!(shout(args), "HI HI");
    }
}
