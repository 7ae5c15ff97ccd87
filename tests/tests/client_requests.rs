//! Requests a plugin makes to the client from inside a call (sampling,
//! elicitation, roots), their round trips, and what a plugin gets when the
//! client did not declare the capability or refuses: a clear tool error,
//! never a hang.

use serde_json::{Value, json};
use wasm_mcp_tests::expect::{is_tool_error, single_text, texts, tool_ok};
use wasm_mcp_tests::{PluginDir, RpcError, StdioServer};

const CONFORMANCE: &str = "conformance";

fn server_with(capabilities: Value) -> StdioServer {
    let mut server = StdioServer::start(PluginDir::with(&[CONFORMANCE]));
    server.initialize(capabilities);
    server
}

fn sampled(text: &str) -> Value {
    json!({"role": "assistant", "content": {"type": "text", "text": text},
           "model": "test-model", "stopReason": "endTurn"})
}

#[test]
fn sampling_request_reaches_the_client_and_its_answer_reaches_the_plugin() {
    let mut server = server_with(json!({"sampling": {}}));
    // Answer by hand to check the request while the call waits for it.
    let id = server.start_request(
        "tools/call",
        json!({"name": "test_sampling", "arguments": {"prompt": "What is 2+2?"}}),
    );
    let request = server.wait_for_client_request("sampling/createMessage");
    assert_eq!(
        request["params"]["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "What is 2+2?"}}])
    );
    assert!(
        request["params"].get("tools").is_none() && request["params"].get("toolChoice").is_none(),
        "no tools in sampling unless the client declared sampling.tools: {request}"
    );
    server.respond(&request["id"], sampled("four"));
    let result = server.wait_response(&id, "tools/call").result().clone();
    tool_ok(&result);
    assert_eq!(single_text(&result), "LLM response: four");
    server.shutdown();
}

#[test]
fn elicitation_request_reaches_the_client_and_its_answer_reaches_the_plugin() {
    let mut server = server_with(json!({"elicitation": {}}));
    let id = server.start_request(
        "tools/call",
        json!({"name": "test_elicitation", "arguments": {"message": "Who are you?"}}),
    );
    let request = server.wait_for_client_request("elicitation/create");
    assert_eq!(request["params"]["message"], "Who are you?");
    let schema = &request["params"]["requestedSchema"];
    assert_eq!(schema["type"], "object", "{request}");
    server.respond(
        &request["id"],
        json!({"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}),
    );
    let result = server.wait_response(&id, "tools/call").result().clone();
    tool_ok(&result);
    let text = single_text(&result);
    let content = text
        .strip_prefix("User response: action=accept, content=")
        .unwrap_or_else(|| panic!("unexpected text {text:?}"));
    assert_eq!(
        serde_json::from_str::<Value>(content).expect("JSON content"),
        json!({"username": "ada", "email": "ada@example.com"})
    );
    server.shutdown();
}

#[test]
fn elicitation_decline_and_cancel_reach_the_plugin() {
    let mut server = server_with(json!({"elicitation": {}}));
    for action in ["decline", "cancel"] {
        let id = server.start_request(
            "tools/call",
            json!({"name": "test_elicitation", "arguments": {"message": "Share?"}}),
        );
        let request = server.wait_for_client_request("elicitation/create");
        server.respond(&request["id"], json!({"action": action}));
        let result = server.wait_response(&id, "tools/call").result().clone();
        let text = texts(&result).join(" ");
        assert!(
            text.starts_with(&format!("User response: action={action}")),
            "the plugin sees action={action}: {text:?}"
        );
    }
    server.shutdown();
}

/// Calls `tool` on a server whose client declared `capabilities` but not
/// `capability`: the call fails with a tool error that names the missing
/// capability, and no `method` request reaches the client.
fn assert_fails_without_capability(capabilities: Value, tool: &str, arguments: Value, capability: &str, method: &str) {
    let mut server = server_with(capabilities);
    let result = server.call_tool(tool, arguments).result().clone();
    assert!(
        is_tool_error(&result),
        "no {capability} capability: expected isError, got {result}"
    );
    let text = texts(&result).join(" ").to_lowercase();
    assert!(
        text.contains(capability) && text.contains("capability"),
        "the error says the {capability} capability is missing: {text:?}"
    );
    assert!(
        server.client_requests().iter().all(|r| r["method"] != method),
        "no {capability} request may be sent to a client that did not declare it"
    );
    server.shutdown();
}

#[test]
fn without_the_sampling_capability_the_tool_fails_clearly_instead_of_hanging() {
    assert_fails_without_capability(
        json!({}),
        "test_sampling",
        json!({"prompt": "hello"}),
        "sampling",
        "sampling/createMessage",
    );
}

#[test]
fn without_the_elicitation_capability_the_tool_fails_clearly_instead_of_hanging() {
    assert_fails_without_capability(
        json!({"sampling": {}}),
        "test_elicitation",
        json!({"message": "hello"}),
        "elicitation",
        "elicitation/create",
    );
}

/// Calls `test_sampling`, which must fail (`failure` names the cause) with a
/// tool error whose text contains `needle`.
fn assert_sampling_fails(server: &mut StdioServer, failure: &str, needle: &str) {
    let result = server
        .call_tool("test_sampling", json!({"prompt": "hello"}))
        .result()
        .clone();
    assert!(is_tool_error(&result), "{failure} fails the tool: {result}");
    let text = texts(&result).join(" ");
    assert!(text.contains(needle), "the error carries {needle:?}: {text:?}");
}

#[test]
fn a_client_that_rejects_sampling_gives_the_plugin_an_error_not_a_hang() {
    let mut server = server_with(json!({"sampling": {}}));
    server.on_request("sampling/createMessage", |_| {
        Err(RpcError {
            code: -1,
            message: "User rejected sampling request".into(),
            data: None,
        })
    });
    // The client's reason comes through.
    assert_sampling_fails(
        &mut server,
        "a rejected sampling request",
        "User rejected sampling request",
    );
    server.shutdown();
}

#[test]
fn server_to_client_requests_use_ids_of_their_own() {
    let mut server = server_with(json!({"sampling": {}}));
    server.on_request("sampling/createMessage", |_| Ok(sampled("ok")));
    for _ in 0..3 {
        server.call_tool("test_sampling", json!({"prompt": "x"})).result();
    }
    let ids: Vec<String> = server.client_requests().iter().map(|r| r["id"].to_string()).collect();
    let unique: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "each server request has its own id: {ids:?}");
    server.shutdown();
}

// ---- the probe plugin: roots, sampling with tools, URL-mode elicitation -----

const PROBE: &str = "probe";

fn probe_with(capabilities: Value) -> StdioServer {
    let mut server = StdioServer::start(PluginDir::with(&[PROBE]));
    server.initialize(capabilities);
    server
}

#[test]
fn roots_round_trip_and_list_changed_is_seen_by_the_next_call() {
    use std::cell::RefCell;
    use std::rc::Rc;

    let mut server = probe_with(json!({"roots": {"listChanged": true}}));
    let roots = Rc::new(RefCell::new(json!([{"uri": "file:///workspace/one", "name": "one"}])));
    let served = roots.clone();
    server.on_request("roots/list", move |_| Ok(json!({"roots": served.borrow().clone()})));

    let first = server.call_tool("list_roots", json!({})).result().clone();
    tool_ok(&first);
    let listed: Value = serde_json::from_str(&single_text(&first)).expect("JSON roots");
    assert_eq!(listed, json!([{"uri": "file:///workspace/one", "name": "one"}]));

    *roots.borrow_mut() = json!([{"uri": "file:///workspace/two"}, {"uri": "file:///tmp/three", "name": "three"}]);
    server.notify("notifications/roots/list_changed", Value::Null);
    let second = server.call_tool("list_roots", json!({})).result().clone();
    let listed: Value = serde_json::from_str(&single_text(&second)).expect("JSON roots");
    assert_eq!(
        listed,
        json!([{"uri": "file:///workspace/two"}, {"uri": "file:///tmp/three", "name": "three"}]),
        "after roots/list_changed the plugin sees the new roots"
    );
    server.shutdown();
}

#[test]
fn without_the_roots_capability_the_tool_fails_clearly() {
    let mut server = probe_with(json!({"sampling": {}}));
    let result = server.call_tool("list_roots", json!({})).result().clone();
    assert!(is_tool_error(&result), "expected isError without roots: {result}");
    let text = texts(&result).join(" ").to_lowercase();
    assert!(text.contains("roots") && text.contains("capability"), "{text:?}");
    assert!(server.client_requests().iter().all(|r| r["method"] != "roots/list"));
    server.shutdown();
}

#[test]
fn sampling_with_tools_needs_the_sampling_tools_capability() {
    // Declared: the tools and toolChoice reach the client.
    let mut server = probe_with(json!({"sampling": {"tools": {}}}));
    server.on_request("sampling/createMessage", |_| {
        Ok(
            json!({"role": "assistant", "model": "test-model", "stopReason": "toolUse",
                  "content": [{"type": "tool_use", "id": "call-1", "name": "get_weather",
                               "input": {"city": "Paris"}}]}),
        )
    });
    let result = server.call_tool("sample_with_tools", json!({})).result().clone();
    tool_ok(&result);
    let request = server
        .client_requests_of("sampling/createMessage")
        .into_iter()
        .next()
        .expect("a sampling request");
    assert_eq!(request["params"]["tools"][0]["name"], "get_weather", "{request}");
    assert_eq!(request["params"]["toolChoice"], json!({"mode": "auto"}), "{request}");
    let text = single_text(&result);
    assert!(
        text.starts_with("tool_use call-1 get_weather"),
        "the tool use reaches the plugin: {text:?}"
    );
    let input: Value = serde_json::from_str(text.splitn(4, ' ').nth(3).unwrap()).unwrap();
    assert_eq!(input, json!({"city": "Paris"}));
    server.shutdown();

    // Not declared: refused before reaching the client.
    let mut server = probe_with(json!({"sampling": {}}));
    let result = server.call_tool("sample_with_tools", json!({})).result().clone();
    assert!(
        is_tool_error(&result),
        "sampling with tools needs sampling.tools: {result}"
    );
    assert!(texts(&result).join(" ").contains("sampling.tools"), "{result}");
    assert!(
        server
            .client_requests()
            .iter()
            .all(|r| r["method"] != "sampling/createMessage")
    );
    server.shutdown();
}

#[test]
fn url_mode_elicitation_and_its_completion_notification() {
    let mut server = probe_with(json!({"elicitation": {"form": {}, "url": {}}}));
    server.on_request("elicitation/create", |_| Ok(json!({"action": "accept"})));
    let result = server
        .call_tool("elicit_url", json!({"url": "https://example.com/authorize"}))
        .result()
        .clone();
    tool_ok(&result);
    let request = server
        .client_requests_of("elicitation/create")
        .into_iter()
        .next()
        .expect("an elicitation request");
    let params = &request["params"];
    assert_eq!(params["mode"], "url", "{request}");
    assert_eq!(params["url"], "https://example.com/authorize", "{request}");
    let elicitation_id = params["elicitationId"].as_str().expect("elicitationId").to_string();
    assert_eq!(
        single_text(&result),
        format!("action=accept, elicitationId={elicitation_id}")
    );
    let complete = server.wait_for_notification("notifications/elicitation/complete", |n| {
        n["method"] == "notifications/elicitation/complete"
    });
    assert_eq!(
        complete["params"]["elicitationId"],
        elicitation_id.as_str(),
        "{complete}"
    );
    server.shutdown();

    // A client with form mode only refuses URL mode.
    let mut server = probe_with(json!({"elicitation": {}}));
    let result = server
        .call_tool("elicit_url", json!({"url": "https://example.com/authorize"}))
        .result()
        .clone();
    assert!(is_tool_error(&result), "URL mode needs elicitation.url: {result}");
    assert!(texts(&result).join(" ").contains("elicitation.url"), "{result}");
    server.shutdown();
}

#[test]
fn a_client_that_never_answers_times_out_into_a_tool_error() {
    // The host waits --client-timeout seconds for the client's answer.
    let mut server = StdioServer::start_with_args(PluginDir::with(&[CONFORMANCE]), &["--client-timeout", "1"]);
    server.initialize(json!({"sampling": {}}));
    // No handler: the sampling request stays unanswered.
    // The error says the client timed out.
    assert_sampling_fails(&mut server, "an unanswered sampling request", "did not answer in time");
    server.wait_for_client_request("sampling/createMessage");
    server.shutdown();
}

#[test]
fn cancelling_a_call_cancels_its_pending_request_to_the_client() {
    let mut server = server_with(json!({"elicitation": {}}));
    let id = server.start_request(
        "tools/call",
        json!({"name": "test_elicitation", "arguments": {"message": "never answered"}}),
    );
    let elicitation = server.wait_for_client_request("elicitation/create");
    server.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "user gave up"}),
    );
    server.wait_for_notification("notifications/cancelled for the pending elicitation", |n| {
        n["method"] == "notifications/cancelled" && n["params"]["requestId"] == elicitation["id"]
    });
    assert_eq!(server.request("ping", Value::Null).result(), &json!({}));
    let status = server.close_and_wait();
    assert!(status.success(), "exit status {status}");
    assert!(!server.has_response_for(&id), "the cancelled call gets no response");
}
