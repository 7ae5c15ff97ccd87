//! A plugin whose listing breaks MCP's naming rule on purpose: an empty tool
//! name, one with a space, one with a non-ASCII letter, one 129 characters
//! long, a tool listed twice and a prompt listed twice. The host must refuse
//! each of those entries at load, naming the plugin and the entry, and serve
//! the rest (`fine` and `greet`, once each).

use wasm_mcp_sdk::{ContentBlock, Error, NoArgs, Plugin, Prompt, PromptMessage, Tool};

fn answer(text: &'static str) -> impl Fn(NoArgs) -> &'static str {
    move |_| text
}

fn greet(text: &'static str) -> impl Fn(NoArgs) -> Result<Vec<PromptMessage>, Error> {
    move |_| Ok(vec![PromptMessage::user(ContentBlock::text(text))])
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool(Tool::new("", answer("empty")).description("An empty name."))
        .tool(Tool::new("has space", answer("space")).description("A name with a space."))
        .tool(Tool::new("naïve", answer("non-ascii")).description("A name with a non-ASCII letter."))
        .tool(Tool::new("x".repeat(129), answer("long")).description("A name one character too long."))
        .tool(Tool::new("fine", answer("first fine")).description("A valid name, listed first."))
        .tool(Tool::new("fine", answer("second fine")).description("The same name again."))
        .prompt(Prompt::new("greet", greet("first greet")).description("A valid prompt."))
        .prompt(Prompt::new("greet", greet("second greet")).description("The same prompt name again."))
        .prompt(Prompt::new("", greet("empty")).description("An empty prompt name."))
}

wasm_mcp_sdk::export!(plugin);
