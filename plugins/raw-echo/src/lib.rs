//! A tools-only plugin written against the raw WIT bindings, without the
//! SDK: proof that the contract stands on its own. Schemas are hand-written
//! JSON here; with the SDK they are derived from Rust types.

use serde_json::{Map, Value, json};

wit_bindgen::generate!({
    world: "tools-plugin",
    path: "../../wit",
});

use exports::wasm_mcp::plugin::tools::{CallToolResult, Guest, TaskSupport, Tool, ToolAnnotations};
use wasm_mcp::plugin::types::{ContentBlock, Error, TextContent};

struct RawEcho;

impl Guest for RawEcho {
    fn list_tools() -> Vec<Tool> {
        vec![
            tool(
                "echo",
                "Echo",
                "Returns the message it is given.",
                r#"{"type":"object","properties":{"message":{"type":"string","description":"The text to echo back"}},"required":["message"]}"#,
                None,
            ),
            tool(
                "add",
                "Add",
                "Adds two numbers and returns the sum, also as structured content.",
                r#"{"type":"object","properties":{"a":{"type":"number","description":"The first addend"},"b":{"type":"number","description":"The second addend"}},"required":["a","b"]}"#,
                Some(r#"{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}"#),
            ),
        ]
    }

    fn call_tool(name: String, arguments: String) -> Result<CallToolResult, Error> {
        let args: Map<String, Value> = match serde_json::from_str(&arguments) {
            Ok(Value::Object(args)) => args,
            _ if arguments.trim().is_empty() => Map::new(),
            _ => return Ok(error("the arguments must be a JSON object")),
        };
        match name.as_str() {
            "echo" => Ok(match args.get("message").and_then(Value::as_str) {
                Some(message) => result(message.to_string(), None),
                None => error("`message` must be a string"),
            }),
            "add" => Ok(match (number(&args, "a"), number(&args, "b")) {
                (Some(a), Some(b)) => {
                    let sum = json!({ "sum": plain_number(a + b) }).to_string();
                    result(sum.clone(), Some(sum))
                }
                _ => error("`a` and `b` must both be numbers"),
            }),
            _ => Err(Error::NotFound(format!("no tool named `{name}`"))),
        }
    }
}

fn tool(name: &str, title: &str, description: &str, input: &str, output: Option<&str>) -> Tool {
    Tool {
        name: name.to_string(),
        title: Some(title.to_string()),
        description: Some(description.to_string()),
        input_schema: input.to_string(),
        output_schema: output.map(str::to_string),
        annotations: Some(ToolAnnotations {
            title: None,
            read_only_hint: Some(true),
            destructive_hint: Some(false),
            idempotent_hint: Some(true),
            open_world_hint: Some(false),
        }),
        icons: Vec::new(),
        task_support: TaskSupport::Forbidden,
        meta: None,
    }
}

fn number(args: &Map<String, Value>, key: &str) -> Option<f64> {
    args.get(key).and_then(Value::as_f64)
}

/// `5` rather than `5.0` for whole numbers that JSON readers hold exactly.
fn plain_number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

fn result(text: String, structured: Option<String>) -> CallToolResult {
    CallToolResult {
        content: vec![ContentBlock::Text(TextContent {
            text,
            annotations: None,
            meta: None,
        })],
        structured_content: structured,
        is_error: false,
        meta: None,
    }
}

fn error(message: &str) -> CallToolResult {
    CallToolResult {
        is_error: true,
        ..result(message.to_string(), None)
    }
}

export!(RawEcho);
