//! The session lifecycle and JSON-RPC framing over stdio: initialize and
//! version negotiation, ordering rules, ping, notifications, the JSON-RPC
//! error codes, ids echoed exactly, stdout carrying protocol only, and a
//! clean exit when stdin closes.

use serde_json::{Value, json};
use wasm_mcp_tests::expect::{by_name, single_text};
use wasm_mcp_tests::{LATEST_PROTOCOL_VERSION, PluginDir, SUPPORTED_PROTOCOL_VERSIONS, StdioServer};

/// A plugin whose tool names are fixed by the conformance suite.
const PLUGIN: &str = "conformance";

fn server() -> StdioServer {
    StdioServer::start(PluginDir::with(&[PLUGIN]))
}

fn initialize_params(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "wasm-mcp-tests", "version": "0.1.0"}
    })
}

#[test]
fn initialize_echoes_every_supported_version() {
    for version in SUPPORTED_PROTOCOL_VERSIONS {
        let mut server = server();
        let response = server.request("initialize", initialize_params(version));
        let result = response.result();
        assert_eq!(
            result["protocolVersion"], version,
            "a client offering {version} must get {version} back: {result}"
        );
        server.notify("notifications/initialized", Value::Null);
        // The session works at that version.
        let tools = server.list_all("tools/list", "tools");
        by_name(&tools, "test_simple_text");
        server.shutdown();
    }
}

#[test]
fn initialize_with_an_unknown_version_gets_the_latest() {
    let mut server = server();
    let response = server.request("initialize", initialize_params("1999-01-01"));
    assert_eq!(response.result()["protocolVersion"], LATEST_PROTOCOL_VERSION);
    server.shutdown();
}

#[test]
fn initialize_result_describes_the_server() {
    let mut server = server();
    let result = server.initialize(json!({}));
    let info = &result["serverInfo"];
    assert!(
        info["name"].as_str().is_some_and(|s| !s.is_empty()),
        "serverInfo.name: {info}"
    );
    assert!(
        info["version"].as_str().is_some_and(|s| !s.is_empty()),
        "serverInfo.version: {info}"
    );
    assert!(
        result["capabilities"]["tools"].is_object(),
        "tools capability: {result}"
    );
    let icons = info["icons"]
        .as_array()
        .unwrap_or_else(|| panic!("serverInfo.icons: {info}"));
    assert!(
        !icons.is_empty() && icons.iter().all(|i| i["src"].as_str().is_some_and(|s| !s.is_empty())),
        "serverInfo carries icons with a src: {info}"
    );
    server.shutdown();
}

#[test]
fn a_second_initialize_is_an_error_and_the_session_goes_on() {
    let mut server = server();
    server.initialize(json!({}));
    let again = server.request("initialize", initialize_params(LATEST_PROTOCOL_VERSION));
    let error = again.error();
    assert!(error.code < 0, "a second initialize must be refused: {}", again.raw);
    let result = server.call_tool("test_simple_text", json!({})).result().clone();
    assert_eq!(single_text(&result), "This is a simple text response for testing.");
    server.shutdown();
}

#[test]
fn a_request_before_initialize_is_an_error_and_the_server_still_serves() {
    let mut server = server();
    let early = server.request("tools/list", json!({}));
    let error = early.error();
    assert!(
        error.code < 0,
        "tools/list before initialize must be refused: {}",
        early.raw
    );
    let early_call = server.call_tool("test_simple_text", json!({}));
    early_call.error();

    server.initialize(json!({}));
    let tools = server.list_all("tools/list", "tools");
    by_name(&tools, "test_simple_text");
    server.shutdown();
}

#[test]
fn ping_answers_an_empty_object_before_and_after_initialize() {
    let mut server = server();
    // The spec lets a client ping before initialization.
    assert_eq!(server.request("ping", Value::Null).result(), &json!({}));
    server.initialize(json!({}));
    assert_eq!(server.request("ping", Value::Null).result(), &json!({}));
    assert_eq!(server.request("ping", json!({})).result(), &json!({}));
    server.shutdown();
}

#[test]
fn notifications_never_get_a_response() {
    let mut server = server();
    server.initialize(json!({}));
    server.notify("notifications/initialized", Value::Null);
    server.notify("notifications/roots/list_changed", Value::Null);
    server.notify(
        "notifications/cancelled",
        json!({"requestId": 4242, "reason": "no such request"}),
    );
    server.notify("notifications/progress", json!({"progressToken": "x", "progress": 1}));
    server.notify("notifications/no_such_notification", json!({"anything": [1, 2, 3]}));
    server.notify("notifications/no_params_expected", Value::Null);
    assert_eq!(server.request("ping", Value::Null).result(), &json!({}));
    let status = server.close_and_wait();
    assert!(status.success(), "exit status {status}");
    // Read to the end of stdout: exactly one response per request, nothing else.
    assert_eq!(
        server.all_responses().len(),
        server.requests_sent(),
        "only requests get responses: {:?}",
        server.all_responses()
    );
}

#[test]
fn malformed_json_is_a_parse_error_with_a_null_id_and_the_server_goes_on() {
    let mut server = server();
    server.initialize(json!({}));
    for garbage in [
        r#"{"jsonrpc": "2.0", "id": 1, "method": "#,
        "this is not json",
        r#"{"jsonrpc":"2.0","id":2,"method":"ping""#,
    ] {
        server.send_raw(garbage);
        let error = server.wait_null_id_error();
        assert_eq!(error["error"]["code"], -32700, "parse error for {garbage:?}: {error}");
        // No request id could be read, so none is echoed (the MCP schema
        // leaves `id` out; the harness rejects anything else).
        assert!(
            error.get("id").is_none_or(Value::is_null),
            "a parse error cannot carry a request id: {error}"
        );
        // Still serving.
        assert_eq!(server.request("ping", Value::Null).result(), &json!({}));
    }
    let result = server.call_tool("test_simple_text", json!({})).result().clone();
    assert_eq!(single_text(&result), "This is a simple text response for testing.");
    server.shutdown();
}

/// Regression (found with the jsonrpc_message fuzz target's framing): a line that is not UTF-8 used to end
/// the stdio transport, and the server with it.
#[test]
fn a_line_that_is_not_utf8_is_a_parse_error_and_the_server_goes_on() {
    let mut server = server();
    server.initialize(json!({}));
    for garbage in [
        &b"\xff\xfe"[..],
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"\xc3\x28\"}",
    ] {
        server.send_bytes(garbage);
        let error = server.wait_null_id_error();
        assert_eq!(error["error"]["code"], -32700, "parse error for {garbage:?}: {error}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("UTF-8"), "the error says what was wrong: {message}");
        assert_eq!(server.request("ping", Value::Null).result(), &json!({}));
    }
    server.shutdown();
}

#[test]
fn an_invalid_request_is_an_error_and_the_server_goes_on() {
    let mut server = server();
    server.initialize(json!({}));
    // Valid JSON, but the method is not a string.
    server.send_raw(r#"{"jsonrpc":"2.0","id":"bad-1","method":42}"#);
    let response = server.wait_response(&json!("bad-1"), "<invalid request>");
    response.expect_error_code(-32600);
    assert_eq!(server.request("ping", Value::Null).result(), &json!({}));
    server.shutdown();
}

#[test]
fn an_unknown_method_is_method_not_found() {
    let mut server = server();
    server.initialize(json!({}));
    server.request("tools/frobnicate", json!({})).expect_error_code(-32601);
    server.request("no_such_method", Value::Null).expect_error_code(-32601);
    assert_eq!(server.request("ping", Value::Null).result(), &json!({}));
    server.shutdown();
}

#[test]
fn request_ids_are_echoed_exactly() {
    let mut server = server();
    server.initialize(json!({}));
    // "7" and 7 are different ids; both in flight at once.
    let ids = [
        json!("7"),
        json!(7),
        json!("an id with spaces ✓"),
        json!(0),
        json!(9007199254740991_i64),
    ];
    for id in &ids {
        server.start_request_with_id(id.clone(), "ping", Value::Null);
    }
    for id in &ids {
        let response = server.wait_response(id, "ping");
        assert_eq!(&response.id, id, "the id must come back with the same value and type");
        assert_eq!(response.result(), &json!({}));
    }
    server.shutdown();
}

#[test]
fn stdin_closed_exits_zero() {
    // Before any message at all.
    let mut idle = server();
    let status = idle.close_and_wait();
    assert!(status.success(), "exit status {status}; stderr:\n{}", idle.stderr());

    // After a session.
    let mut server = server();
    server.initialize(json!({}));
    server.call_tool("test_simple_text", json!({})).result();
    server.shutdown();
}

#[test]
fn stdout_carries_only_responses_to_requests_and_notifications() {
    // Diagnostics (here: a plugin that fails to load) go to stderr, never stdout.
    let plugins = PluginDir::with(&[PLUGIN]);
    let broken = plugins
        .add_file("broken.wasm", b"not a component")
        .display()
        .to_string();
    let mut server = StdioServer::start(plugins);
    server.initialize(json!({}));
    server.request("logging/setLevel", json!({"level": "debug"})).result();
    server.call_tool("test_tool_with_logging", json!({})).result();
    server.call_tool("no_such_tool", json!({})).error();
    server.send_raw("garbage");
    server.wait_null_id_error();
    let status = server.close_and_wait();
    assert!(status.success(), "exit status {status}");
    // Every line parsed as JSON and validated (checked by the harness); every
    // response answers one of our requests (one was a parse error).
    assert_eq!(server.all_responses().len(), server.requests_sent() + 1);
    assert!(
        server.stderr().contains(&broken),
        "the broken plugin must be reported on stderr, naming {broken}:\n{}",
        server.stderr()
    );
}

#[test]
fn plugin_stdout_never_reaches_the_protocol_stream() {
    let mut server = StdioServer::start_initialized(&["spinner"]);
    let marker = "PLUGIN-PRINTED-THIS {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}";
    let result = server.call_tool("print", json!({"text": marker})).result().clone();
    assert_eq!(single_text(&result), "printed");
    assert_eq!(server.request("ping", Value::Null).result(), &json!({}));
    let status = server.close_and_wait();
    assert!(status.success(), "exit status {status}");
    // Every stdout line was a valid message (checked by the harness), and
    // none of them carries the plugin's output.
    assert_eq!(server.all_responses().len(), server.requests_sent());
    for n in server.notifications() {
        if n["method"] != "notifications/message" {
            assert!(!n.to_string().contains("PLUGIN-PRINTED-THIS"), "{n}");
        }
    }
}

#[test]
fn a_plugin_that_traps_is_a_tool_error_and_the_server_goes_on() {
    let mut server = StdioServer::start_initialized(&["spinner"]);
    let result = server.call_tool("panic", json!({})).result().clone();
    assert!(
        wasm_mcp_tests::expect::is_tool_error(&result),
        "a trapped call is an isError result: {result}"
    );
    let slept = server.call_tool("sleep", json!({"ms": 1})).result().clone();
    assert_eq!(single_text(&slept), "slept 1 ms");
    server.shutdown();
}

#[test]
fn the_server_pings_the_client_when_asked_to_and_goes_on_serving() {
    let mut server = StdioServer::start_with_args(PluginDir::with(&["text-tools"]), &["--ping-interval", "0.2"]);
    server.initialize(json!({}));
    // The harness answers pings itself; wait until two have come (each after
    // the previous was answered), then check the server still serves.
    let deadline = std::time::Instant::now() + wasm_mcp_tests::timeout();
    while server.client_requests_of("ping").len() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the server sent no pings; stderr:\n{}",
            server.stderr()
        );
        server.drain_until(std::time::Instant::now() + std::time::Duration::from_millis(100));
    }
    let sent = server.client_requests_of("ping");
    assert_eq!(
        sent[0]["params"],
        json!({}),
        "a ping carries no parameters: {}",
        sent[0]
    );
    assert_ne!(sent[0]["id"], sent[1]["id"], "each ping has its own id");
    let reversed = server.call_tool("reverse", json!({"text": "abc"}));
    assert_eq!(single_text(reversed.result()), "cba");
    server.shutdown();
}
