//! Lists one tool, `vanish`, that answers every call with the contract's
//! `not-found` error, which the host turns into a JSON-RPC error (not an
//! `isError` result). Written against the raw WIT bindings: the SDK cannot
//! return contract errors from a tool. The tool may run as a task, so the
//! tests can check that a task's JSON-RPC error stays an error.

wit_bindgen::generate!({
    world: "tools-plugin",
    path: "../../../wit",
});

use exports::wasm_mcp::plugin::tools::{CallToolResult, Guest, TaskSupport, Tool};
use wasm_mcp::plugin::types::Error;

struct Vanishing;

impl Guest for Vanishing {
    fn list_tools() -> Vec<Tool> {
        vec![Tool {
            name: "vanish".to_string(),
            title: None,
            description: Some("Listed, but every call answers that no such tool exists.".to_string()),
            input_schema: r#"{"type":"object","properties":{}}"#.to_string(),
            output_schema: None,
            annotations: None,
            icons: Vec::new(),
            task_support: TaskSupport::Optional,
            meta: None,
        }]
    }

    fn call_tool(name: String, _arguments: String) -> Result<CallToolResult, Error> {
        Err(Error::NotFound(format!("{name} has vanished")))
    }
}

export!(Vanishing);
