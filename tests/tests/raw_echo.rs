//! The raw-echo plugin, written against the raw WIT bindings without the SDK:
//! the contract stands on its own, and its hand-written metadata comes
//! through verbatim.

use serde_json::{Value, json};
use wasm_mcp_tests::StdioServer;
use wasm_mcp_tests::expect::{by_name, is_tool_error, names, names_field, single_text, texts, tool_ok};

fn server() -> StdioServer {
    StdioServer::start_initialized(&["raw-echo"])
}

#[test]
fn raw_echo_lists_its_hand_written_tools_verbatim() {
    let mut server = server();
    let tools = server.list_all("tools/list", "tools");
    let mut listed = names(&tools);
    listed.sort();
    assert_eq!(listed, ["add", "echo"]);
    let echo = by_name(&tools, "echo");
    assert_eq!(echo["title"], "Echo");
    assert_eq!(echo["description"], "Returns the message it is given.");
    assert_eq!(
        echo["inputSchema"],
        json!({"type": "object", "properties": {"message": {"type": "string",
            "description": "The text to echo back"}}, "required": ["message"]})
    );
    assert_eq!(
        echo["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true,
               "openWorldHint": false})
    );
    let add = by_name(&tools, "add");
    assert_eq!(
        add["outputSchema"],
        json!({"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]})
    );
    server.shutdown();
}

#[test]
fn raw_echo_serves_calls() {
    let mut server = server();
    let message = "héllo, wörld — \"quoted\" \\ and\nnewline";
    let echoed = server.call_tool("echo", json!({"message": message})).result().clone();
    tool_ok(&echoed);
    assert_eq!(
        single_text(&echoed),
        message,
        "the message survives the round trip exactly"
    );

    let sum = server.call_tool("add", json!({"a": 2, "b": 3.5})).result().clone();
    tool_ok(&sum);
    assert_eq!(sum["structuredContent"], json!({"sum": 5.5}));
    let text: Value = serde_json::from_str(&single_text(&sum)).expect("JSON text");
    assert_eq!(text, json!({"sum": 5.5}));

    let wrong = server.call_tool("add", json!({"a": "two", "b": 3})).result().clone();
    assert!(is_tool_error(&wrong), "{wrong}");
    assert!(
        names_field(&texts(&wrong).join(" "), "a"),
        "the error names `a`: {wrong}"
    );
    server.shutdown();
}
