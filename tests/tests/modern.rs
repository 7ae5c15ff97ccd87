//! The 2026-07-28 revision beside 2025-11-25, from the outside: stateless
//! requests over stdio and HTTP (no `initialize`, everything in `_meta`),
//! `server/discover`, the revision's errors, multi round-trip requests (a
//! suspended call resumed; a call replayed after a restart, its earlier
//! answers taken from the sealed `requestState`), `subscriptions/listen`
//! seeing a plugin file land, and a component built before `host::ask`
//! existed. Results are checked against the 2026-07-28 schema.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use wasm_mcp_tests::modern::{MODERN_VERSION, ModernStdio, meta, with_meta};
use wasm_mcp_tests::process::serve_command;
use wasm_mcp_tests::schema::{checked_result, validate_modern};
use wasm_mcp_tests::{PluginDir, workspace_root};

const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

#[track_caller]
fn result_as(def: &str, response: &Value) -> Value {
    checked_result(validate_modern, def, response)
}

#[track_caller]
fn error_of(response: &Value) -> (i64, String) {
    let error = response
        .get("error")
        .unwrap_or_else(|| panic!("expected an error, got {response}"));
    (
        error["code"].as_i64().unwrap(),
        error["message"].as_str().unwrap().to_owned(),
    )
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

fn elicited(content: Value) -> Value {
    json!({ "action": "accept", "content": content })
}

#[test]
fn a_modern_client_is_served_without_initialize_and_a_legacy_one_as_before() {
    let plugins = PluginDir::with(&["conformance"]);
    let mut server = ModernStdio::serve(&plugins, &[]);
    let m = meta(json!({}), None);

    let discover = result_as(
        "DiscoverResult",
        &server.request("server/discover", with_meta(json!({}), &m)),
    );
    assert!(
        discover["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!(MODERN_VERSION))
    );
    assert!(
        discover["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2025-11-25"))
    );
    assert_eq!(discover["_meta"][SERVER_INFO]["name"], "wasm-mcp");
    assert_eq!(
        discover["capabilities"]["tools"]["listChanged"], true,
        "list changes are served through subscriptions/listen: {discover}"
    );
    assert_eq!(discover["capabilities"]["resources"]["subscribe"], true, "{discover}");
    assert!(
        discover["capabilities"].get("tasks").is_none(),
        "2025-11-25 tasks are not offered: {discover}"
    );
    assert!(
        discover["ttlMs"].as_u64().is_some() && discover["cacheScope"] == "public",
        "{discover}"
    );

    let tools = result_as(
        "ListToolsResult",
        &server.request("tools/list", with_meta(json!({}), &m)),
    );
    assert_eq!(tools["resultType"], "complete");
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "test_simple_text")
    );
    assert!(tools["ttlMs"].as_u64().is_some(), "lists carry a caching hint: {tools}");
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "a deterministic (sorted) order");

    let call = server.request(
        "tools/call",
        with_meta(json!({ "name": "test_simple_text", "arguments": {} }), &m),
    );
    let call = result_as("CallToolResult", &call);
    assert_eq!(text_of(&call), "This is a simple text response for testing.");

    let read = server.request("resources/read", with_meta(json!({ "uri": "test://static-text" }), &m));
    let read = result_as("ReadResourceResult", &read);
    assert_eq!(read["cacheScope"], "private");
    let missing = server.request("resources/read", with_meta(json!({ "uri": "test://no-such" }), &m));
    assert_eq!(
        error_of(&missing).0,
        -32602,
        "resource not found is invalid params in 2026-07-28"
    );

    // The revision's errors.
    let no_caps = json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": MODERN_VERSION } });
    let (code, message) = error_of(&server.request("tools/list", no_caps));
    assert_eq!(code, -32602);
    assert!(message.contains("clientCapabilities"), "{message}");
    let mut old = m.clone();
    old["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let unsupported = server.request("tools/list", with_meta(json!({}), &old));
    assert_eq!(error_of(&unsupported).0, -32022);
    assert!(
        unsupported["error"]["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!(MODERN_VERSION))
    );
    for removed in ["ping", "logging/setLevel", "resources/subscribe", "initialize"] {
        let response = server.request(removed, with_meta(json!({ "uri": "test://static-text" }), &m));
        assert_eq!(error_of(&response).0, -32601, "{removed}: {response}");
    }
    let needs_sampling = server.request(
        "tools/call",
        with_meta(json!({ "name": "test_missing_capability", "arguments": {} }), &m),
    );
    assert_eq!(error_of(&needs_sampling).0, -32021);
    assert_eq!(
        needs_sampling["error"]["data"]["requiredCapabilities"],
        json!({ "sampling": {} })
    );

    // Logs follow each request's logLevel: none without one.
    let quiet = server.request(
        "tools/call",
        with_meta(json!({ "name": "test_logging_tool", "arguments": {} }), &m),
    );
    result_as("CallToolResult", &quiet);
    assert!(server.seen_of("notifications/message").is_empty());
    let loud = meta(json!({}), Some("info"));
    let logged = server.request(
        "tools/call",
        with_meta(json!({ "name": "test_logging_tool", "arguments": {} }), &loud),
    );
    result_as("CallToolResult", &logged);
    assert_eq!(server.seen_of("notifications/message").len(), 3);

    // A legacy client on the same binary: the session opened by initialize,
    // with results exactly as before (no resultType, no _meta).
    let legacy = server.request(
        "initialize",
        json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "old", "version": "1" } }),
    );
    assert_eq!(legacy["result"]["protocolVersion"], "2025-11-25");
    server.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    let listed = server.request("tools/list", json!({}));
    assert!(
        listed["result"].get("resultType").is_none() && listed["result"].get("ttlMs").is_none(),
        "{listed}"
    );
    let called = server.request("tools/call", json!({ "name": "test_simple_text", "arguments": {} }));
    assert_eq!(
        called["result"],
        json!({ "content": [{ "type": "text", "text": "This is a simple text response for testing." }] })
    );
    server.close();
}

#[test]
fn the_trace_context_in_meta_is_on_the_request_log_lines_in_both_eras() {
    let plugins = PluginDir::with(&["conformance"]);
    let mut command = serve_command(plugins.path());
    command.args(["--no-watch"]).env("WASM_MCP_LOG", "debug");
    let mut server = ModernStdio::spawn(command);
    let traced = |traceparent: &str| json!({ "name": "test_simple_text", "arguments": {}, "_meta": { "traceparent": traceparent, "tracestate": "vendor=7" } });
    let modern = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut m = meta(json!({}), None);
    m["traceparent"] = json!(modern);
    m["tracestate"] = json!("vendor=7");
    result_as(
        "CallToolResult",
        &server.request("tools/call", with_meta(traced(modern), &m)),
    );
    let legacy = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    server.request(
        "initialize",
        json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }),
    );
    server.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    let call = server.request("tools/call", traced(legacy));
    assert!(call.get("result").is_some(), "{call}");
    server.close();
    let stderr = server.stderr();
    for traceparent in [modern, legacy] {
        assert!(
            stderr.lines().any(
                |line| line.contains(&format!("traceparent=\"{traceparent}\" tracestate=\"vendor=7\""))
                    && line.contains("plugin call finished")
            ),
            "no log line of the call carries {traceparent}:\n{stderr}"
        );
    }
}

#[test]
fn a_manifest_sets_how_long_a_resource_may_be_cached() {
    let plugins = PluginDir::with(&["conformance"]);
    plugins.add_file(
        "conformance.toml",
        br#"
[resources."test://static-text"]
ttl_ms = 60000
cache_scope = "public"
[resources."test://template/{id}/data"]
ttl_ms = 5000
"#,
    );
    let mut server = ModernStdio::serve(&plugins, &[]);
    let m = meta(json!({}), None);
    let mut read = |uri: &str| {
        let response = server.request("resources/read", with_meta(json!({ "uri": uri }), &m));
        let result = result_as("ReadResourceResult", &response);
        (result["ttlMs"].clone(), result["cacheScope"].clone())
    };
    assert_eq!(read("test://static-text"), (json!(60000), json!("public")));
    assert_eq!(
        read("test://template/7/data"),
        (json!(5000), json!("private")),
        "a template's setting covers every URI it matches; the scope defaults to private"
    );
    assert_eq!(
        read("test://static-binary"),
        (json!(0), json!("private")),
        "a resource the manifest does not name is not cached"
    );
}

/// Runs the multi-round fixture's first round and returns (its requestState, the step1 key).
fn first_round(server: &mut ModernStdio, m: &Value) -> Value {
    let response = server.request(
        "tools/call",
        with_meta(
            json!({ "name": "test_input_required_result_multi_round", "arguments": {} }),
            m,
        ),
    );
    let round = result_as("InputRequiredResult", &response);
    assert_eq!(round["resultType"], "input_required");
    assert_eq!(round["inputRequests"]["step1"]["method"], "elicitation/create");
    round
}

fn answer_round(server: &mut ModernStdio, m: &Value, state: &Value, responses: Value) -> Value {
    server.request(
        "tools/call",
        with_meta(
            json!({
                "name": "test_input_required_result_multi_round",
                "arguments": {},
                "inputResponses": responses,
                "requestState": state,
            }),
            m,
        ),
    )
}

fn logged(server: &ModernStdio, text: &str) -> usize {
    server
        .seen_of("notifications/message")
        .iter()
        .filter(|message| message["params"]["data"] == text)
        .count()
}

#[test]
fn a_suspended_call_resumes_where_it_asked() {
    let plugins = PluginDir::with(&["conformance"]);
    let mut server = ModernStdio::serve(&plugins, &[]);
    let m = meta(json!({ "elicitation": {} }), Some("info"));
    let round = first_round(&mut server, &m);
    assert_eq!(logged(&server, "asking step1"), 1);

    // Missing keys ask again, extra keys are ignored.
    let again = answer_round(&mut server, &m, &round["requestState"], json!({ "unrelated": {} }));
    let again = result_as("InputRequiredResult", &again);
    assert!(again["inputRequests"].get("step1").is_some(), "{again}");

    let second = answer_round(
        &mut server,
        &m,
        &again["requestState"],
        json!({ "step1": elicited(json!({ "name": "Ada" })) }),
    );
    let second = result_as("InputRequiredResult", &second);
    assert_eq!(second["inputRequests"]["step2"]["method"], "elicitation/create");
    assert_eq!(
        logged(&server, "asking step1"),
        1,
        "resumed, not replayed: step1 is not asked again"
    );
    assert_eq!(logged(&server, "asking step2"), 1);

    let done = answer_round(
        &mut server,
        &m,
        &second["requestState"],
        json!({ "step2": elicited(json!({ "color": "green" })) }),
    );
    let done = result_as("CallToolResult", &done);
    assert_eq!(text_of(&done), "Ada likes green");

    // A changed requestState is refused.
    let mut tampered = second["requestState"].as_str().unwrap().to_owned();
    tampered.replace_range(10..11, if &tampered[10..11] == "A" { "B" } else { "A" });
    let refused = answer_round(&mut server, &m, &json!(tampered), json!({}));
    let (code, message) = error_of(&refused);
    assert_eq!(code, -32602);
    assert!(message.contains("requestState"), "{message}");
    // And a state is bound to its request.
    let other = server.request(
        "tools/call",
        with_meta(
            json!({ "name": "test_input_required_result_elicitation", "arguments": {}, "requestState": second["requestState"] }),
            &m,
        ),
    );
    assert!(error_of(&other).1.contains("different request"), "{other}");
    server.close();
}

#[test]
fn a_call_not_held_here_is_replayed_from_its_answers() {
    let plugins = PluginDir::with(&["conformance"]);
    let key = plugins.path().join("state.key");
    std::fs::write(&key, [42u8; 32]).unwrap();
    let key = key.to_str().unwrap();
    let m = meta(json!({ "elicitation": {} }), Some("info"));

    let mut first = ModernStdio::serve(&plugins, &["--request-state-key", key]);
    let round = first_round(&mut first, &m);
    let second = answer_round(
        &mut first,
        &m,
        &round["requestState"],
        json!({ "step1": elicited(json!({ "name": "Ada" })) }),
    );
    let second = result_as("InputRequiredResult", &second);
    first.close();

    // Another process with the same key: the call is replayed; step1 is
    // asked again by the plugin and answered from the state, with no round trip.
    let mut replica = ModernStdio::serve(&plugins, &["--request-state-key", key]);
    let done = answer_round(
        &mut replica,
        &m,
        &second["requestState"],
        json!({ "step2": elicited(json!({ "color": "blue" })) }),
    );
    let done = result_as("CallToolResult", &done);
    assert_eq!(text_of(&done), "Ada likes blue");
    assert_eq!(logged(&replica, "asking step1"), 1, "replayed from the start");
    assert_eq!(logged(&replica, "asking step2"), 1);
    replica.close();

    // Without the key, another process cannot open the state.
    let mut stranger = ModernStdio::serve(&plugins, &[]);
    let refused = answer_round(&mut stranger, &m, &second["requestState"], json!({}));
    assert_eq!(error_of(&refused).0, -32602);
    stranger.close();
}

#[test]
fn several_questions_go_out_in_one_round_and_only_what_the_client_declared() {
    let plugins = PluginDir::with(&["conformance"]);
    let mut server = ModernStdio::serve(&plugins, &[]);
    let all = meta(json!({ "elicitation": {}, "sampling": {}, "roots": {} }), None);
    let name = "test_input_required_result_multiple_inputs";
    let round = server.request("tools/call", with_meta(json!({ "name": name, "arguments": {} }), &all));
    let round = result_as("InputRequiredResult", &round);
    let keys: Vec<&String> = round["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["user_name", "greeting", "client_roots"]);
    let answers = json!({
        "user_name": elicited(json!({ "name": "Ada" })),
        "greeting": { "role": "assistant", "content": { "type": "text", "text": "Hi!" }, "model": "m" },
        "client_roots": { "roots": [{ "uri": "file:///work" }] },
    });
    let done = server.request(
        "tools/call",
        with_meta(
            json!({ "name": name, "arguments": {}, "inputResponses": answers, "requestState": round["requestState"] }),
            &all,
        ),
    );
    assert_eq!(
        text_of(&result_as("CallToolResult", &done)),
        "Name: Ada; greeting: Hi!; Roots: file:///work"
    );

    let sampling_only = meta(json!({ "sampling": {} }), None);
    let round = server.request(
        "tools/call",
        with_meta(
            json!({ "name": "test_input_required_result_capabilities", "arguments": {} }),
            &sampling_only,
        ),
    );
    let round = result_as("InputRequiredResult", &round);
    assert_eq!(
        round["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(),
        ["model_input"]
    );
    server.close();
}

/// One round of `tool` with `arguments`: the keys and methods it asks, and
/// the answer to a retry with `answers`.
fn ask_and_answer(server: &mut ModernStdio, tool: &str, arguments: Value, answers: Value) -> (Vec<String>, Value) {
    let m = meta(json!({ "elicitation": {}, "sampling": {} }), None);
    let params = json!({ "name": tool, "arguments": arguments });
    let round = server.request("tools/call", with_meta(params.clone(), &m));
    let round = result_as("InputRequiredResult", &round);
    let asked = round["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(key, request)| format!("{key}: {}", request["method"].as_str().unwrap()))
        .collect();
    let mut retry = params;
    retry["inputResponses"] = answers;
    retry["requestState"] = round["requestState"].clone();
    let done = server.request("tools/call", with_meta(retry, &m));
    (asked, result_as("CallToolResult", &done))
}

fn sampled(text: &str) -> Value {
    json!({ "role": "assistant", "content": { "type": "text", "text": text }, "model": "m" })
}

#[test]
fn python_and_javascript_plugins_ask_several_things_in_one_round() {
    let plugins = PluginDir::with(&["stats", "textkit"]);
    let mut server = ModernStdio::serve(&plugins, &[]);

    let (asked, result) = ask_and_answer(
        &mut server,
        "explain_numbers",
        json!({ "numbers": [1, 2, 3, 4] }),
        json!({
            "audience": elicited(json!({ "audience": "a nurse" })),
            "explanation": sampled("They are evenly spread."),
        }),
    );
    assert_eq!(
        asked,
        ["audience: elicitation/create", "explanation: sampling/createMessage"]
    );
    assert_ne!(result["isError"], true, "{result}");
    assert_eq!(result["structuredContent"]["audience"], "a nurse");
    assert_eq!(result["structuredContent"]["explanation"], "They are evenly spread.");
    assert_eq!(result["structuredContent"]["mean"], 2.5);

    let (asked, result) = ask_and_answer(
        &mut server,
        "suggest_name",
        json!({ "description": "the number of retries left" }),
        json!({
            "style": elicited(json!({ "case": "constant" })),
            "words": sampled("retries left"),
        }),
    );
    assert_eq!(asked, ["style: elicitation/create", "words: sampling/createMessage"]);
    assert_eq!(text_of(&result), "RETRIES_LEFT", "{result}");

    // A declined form reaches the plugin as such.
    let (_, result) = ask_and_answer(
        &mut server,
        "suggest_name",
        json!({ "description": "x" }),
        json!({ "style": { "action": "decline" }, "words": sampled("x") }),
    );
    assert_eq!(result["isError"], true);
    assert_eq!(text_of(&result), "the user chose to decline the question");
}

#[test]
fn a_component_built_before_ask_loads_and_asks_in_both_eras() {
    let plugins = PluginDir::empty();
    let old = std::fs::read(workspace_root().join("tests/fixtures/conformance-before-ask.wasm")).unwrap();
    plugins.add_file("conformance.wasm", &old);
    let mut server = ModernStdio::serve(&plugins, &[]);
    let m = meta(json!({ "elicitation": {} }), None);
    let params = json!({ "name": "test_elicitation", "arguments": { "message": "Who?" } });
    let round = server.request("tools/call", with_meta(params.clone(), &m));
    let round = result_as("InputRequiredResult", &round);
    let key = round["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    assert_eq!(
        key, "elicitation-1",
        "host::elicit's question gets a key the host names"
    );
    let mut retry = with_meta(params.clone(), &m);
    retry["inputResponses"] = json!({ key: elicited(json!({ "username": "ada", "email": "a@example.com" })) });
    retry["requestState"] = round["requestState"].clone();
    let done = result_as("CallToolResult", &server.request("tools/call", retry));
    assert!(text_of(&done).starts_with("User response: action=accept"), "{done}");

    server.request(
        "initialize",
        json!({ "protocolVersion": "2025-11-25", "capabilities": { "elicitation": {} }, "clientInfo": { "name": "old", "version": "1" } }),
    );
    server.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    let id = server.start("tools/call", params);
    let asked = server.wait_for("an elicitation/create request", |message| {
        message["method"] == "elicitation/create"
    });
    server.send(&json!({ "jsonrpc": "2.0", "id": asked["id"], "result": elicited(json!({ "username": "bo", "email": "b@example.com" })) }));
    let legacy = server.response(&id);
    assert!(text_of(&legacy["result"]).contains("\"username\":\"bo\""), "{legacy}");
    server.close();
}

#[test]
fn a_listen_stream_sees_a_plugin_file_land_and_ends_gracefully() {
    let plugins = PluginDir::with(&["conformance"]);
    let mut command = serve_command(plugins.path());
    command.args(["--list-cache-ttl", "500"]);
    let mut server = ModernStdio::spawn(command);
    let m = meta(json!({}), None);
    // Once the directory is loaded (a list waits for it), a new file is a change.
    result_as(
        "ListToolsResult",
        &server.request("tools/list", with_meta(json!({}), &m)),
    );
    let listen = server.start(
        "subscriptions/listen",
        with_meta(json!({ "notifications": { "toolsListChanged": true } }), &m),
    );
    let ack = server.wait_for("the acknowledgement", |message| {
        message["method"] == "notifications/subscriptions/acknowledged"
    });
    assert_eq!(ack["params"]["notifications"], json!({ "toolsListChanged": true }));
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], listen);
    assert_eq!(
        server.seen.len(),
        2,
        "the acknowledgement comes first: {:?}",
        server.seen
    );

    plugins.add_plugin("text-tools");
    let changed = server.wait_for("tools/list_changed", |message| {
        message["method"] == "notifications/tools/list_changed"
    });
    assert_eq!(changed["params"]["_meta"][SUBSCRIPTION_ID], listen);
    let tools = result_as(
        "ListToolsResult",
        &server.request("tools/list", with_meta(json!({}), &m)),
    );
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "word_count"),
        "{tools}"
    );
    assert!(
        server.seen_of("notifications/prompts/list_changed").is_empty(),
        "only what the filter asked for"
    );

    // Closing stdin ends the session: the stream gets its final result.
    server.close();
    let end = server
        .seen
        .iter()
        .find(|message| message["id"] == listen)
        .unwrap_or_else(|| panic!("no final result on the listen stream: {:?}", server.seen));
    let end = result_as("SubscriptionsListenResult", end);
    assert_eq!(end["_meta"][SUBSCRIPTION_ID], listen);
}

#[test]
fn a_plugin_that_says_its_lists_changed_is_listed_again_and_listeners_are_told_once_per_burst() {
    let plugins = PluginDir::with(&["conformance"]);
    let mut server = ModernStdio::serve(&plugins, &[]);
    let m = meta(json!({}), None);
    let listen = server.start(
        "subscriptions/listen",
        with_meta(json!({ "notifications": { "promptsListChanged": true } }), &m),
    );
    server.wait_for("the acknowledgement", |message| {
        message["method"] == "notifications/subscriptions/acknowledged"
    });
    let call = |tool: &str| with_meta(json!({ "name": tool, "arguments": {} }), &m);

    result_as(
        "CallToolResult",
        &server.request("tools/call", call("test_trigger_prompt_change")),
    );
    let changed = server.wait_for("prompts/list_changed", |message| {
        message["method"] == "notifications/prompts/list_changed"
    });
    assert_eq!(changed["params"]["_meta"][SUBSCRIPTION_ID], listen);

    // Fifty in a row are handled in a few rounds, not fifty.
    let ids: Vec<Value> = (0..50)
        .map(|_| server.start("tools/call", call("test_trigger_prompt_change")))
        .collect();
    for id in &ids {
        result_as("CallToolResult", &server.response(id));
    }
    server.read_for(Duration::from_secs(1));
    let told = server.seen_of("notifications/prompts/list_changed").len();
    assert!((2..=10).contains(&told), "{told} notifications for 51 calls");

    // A tools change is not what this stream asked for.
    result_as(
        "CallToolResult",
        &server.request("tools/call", call("test_trigger_tool_change")),
    );
    server.read_for(Duration::from_millis(500));
    assert!(server.seen_of("notifications/tools/list_changed").is_empty());
    let prompts = result_as(
        "ListPromptsResult",
        &server.request("prompts/list", with_meta(json!({}), &m)),
    );
    assert!(
        prompts["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "test_input_required_result_prompt"),
        "the plugin is served after being listed again: {prompts}"
    );
}

/// POSTs a 2026-07-28 message with the headers that mirror it; `extra`
/// adds headers or replaces those of the same name.
fn post(url: &str, body: &Value, extra: &[(&str, &str)]) -> reqwest::blocking::Response {
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", MODERN_VERSION),
    ];
    if let Some(method) = body["method"].as_str() {
        headers.push(("Mcp-Method", method));
    }
    if let Some(name) = body["params"]["name"].as_str().or(body["params"]["uri"].as_str()) {
        headers.push(("Mcp-Name", name));
    }
    headers.retain(|(name, _)| !extra.iter().any(|(replaced, _)| replaced.eq_ignore_ascii_case(name)));
    headers.extend_from_slice(extra);
    let mut request = wasm_mcp_tests::http::blocking_client()
        .post(url)
        .timeout(Duration::from_secs(30));
    for (name, value) in headers {
        request = request.header(name, value);
    }
    request.body(body.to_string()).send().expect("POST")
}

/// The JSON-RPC messages of a response, JSON or SSE.
fn messages(response: reqwest::blocking::Response) -> Vec<Value> {
    let sse = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap().starts_with("text/event-stream"));
    let text = response.text().unwrap();
    if !sse {
        return vec![serde_json::from_str(&text).unwrap()];
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

#[test]
fn over_http_a_modern_request_is_one_post_with_checked_headers() {
    let plugins = PluginDir::with(&["conformance"]);
    let server = wasm_mcp_tests::http::HttpServer::start(plugins, &[]);
    let url = server.url.clone();
    let m = meta(json!({ "elicitation": {} }), None);
    let call = |id: i64, params: Value| json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": with_meta(params, &m) });

    let response = post(
        &url,
        &call(1, json!({ "name": "test_simple_text", "arguments": {} })),
        &[],
    );
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers().get("mcp-session-id").is_none(),
        "no session in 2026-07-28"
    );
    let answer = messages(response).pop().unwrap();
    assert_eq!(
        text_of(&result_as("CallToolResult", &answer)),
        "This is a simple text response for testing."
    );

    // Multi round trip over two independent POSTs.
    let first = messages(post(
        &url,
        &call(
            2,
            json!({ "name": "test_input_required_result_elicitation", "arguments": {} }),
        ),
        &[],
    ));
    let round = result_as("InputRequiredResult", first.last().unwrap());
    let retry = call(
        3,
        json!({
            "name": "test_input_required_result_elicitation", "arguments": {},
            "inputResponses": { "user_name": elicited(json!({ "name": "Grace" })) },
            "requestState": round["requestState"],
        }),
    );
    let done = messages(post(&url, &retry, &[]));
    assert_eq!(
        text_of(&result_as("CallToolResult", done.last().unwrap())),
        "Hello, Grace!"
    );

    // Headers that disagree with the body, and an x-mcp-header parameter.
    let mismatch = post(
        &url,
        &call(4, json!({ "name": "test_simple_text", "arguments": {} })),
        &[("Mcp-Method", "tools/list")],
    );
    assert_eq!(mismatch.status(), StatusCode::BAD_REQUEST);
    assert_eq!(error_of(&messages(mismatch)[0]).0, -32020);
    let region = call(
        5,
        json!({ "name": "test_header_param", "arguments": { "region": "eu-west", "query": "q" } }),
    );
    let missing = post(&url, &region, &[]);
    assert_eq!(missing.status(), StatusCode::BAD_REQUEST);
    assert!(error_of(&messages(missing)[0]).1.contains("Mcp-Param-Region"));
    let mirrored = post(&url, &region, &[("Mcp-Param-Region", "=?base64?ZXUtd2VzdA==?=")]);
    assert_eq!(mirrored.status(), StatusCode::OK);
    assert_eq!(
        text_of(&result_as("CallToolResult", &messages(mirrored)[0])),
        "Ran \"q\" in eu-west"
    );

    // A removed method is 404; a notification is 202.
    let ping = json!({ "jsonrpc": "2.0", "id": 6, "method": "ping", "params": with_meta(json!({}), &m) });
    assert_eq!(post(&url, &ping, &[]).status(), StatusCode::NOT_FOUND);
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 1 } });
    assert_eq!(post(&url, &note, &[]).status(), StatusCode::ACCEPTED);
}

#[test]
fn a_protocol_version_header_the_body_does_not_carry_is_invalid_params() {
    let plugins = PluginDir::with(&["conformance"]);
    let server = wasm_mcp_tests::http::HttpServer::start(plugins, &[]);
    // The header says 2026-07-28; the body has no `_meta` at all, or one without the version.
    let bare = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {} });
    let without_version = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "test_simple_text", "arguments": {},
        "_meta": { "io.modelcontextprotocol/clientCapabilities": {} },
    }});
    for body in [bare, without_version] {
        let response = post(&server.url, &body, &[]);
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
        let (code, message) = error_of(&messages(response)[0]);
        // Not -32600 "Server not initialized" (the 2025-11-25 answer): the
        // request is of 2026-07-28 and lacks a required `_meta` field.
        assert_eq!(code, -32602, "{message}");
        assert!(
            message.contains("MCP-Protocol-Version") && message.contains("io.modelcontextprotocol/protocolVersion"),
            "{message}"
        );
    }
}

#[test]
fn parameter_headers_are_checked_while_the_plugins_still_load() {
    // A plugin that takes seconds to load comes first in name order, so the
    // catalog is still empty when the request arrives.
    let plugins = PluginDir::with(&["conformance"]);
    plugins.add_plugin_as("versioned-v1", "aaa-slow");
    plugins.add_file("aaa-slow.toml", b"[env]\nVERSIONED_START_DELAY_MS = \"1500\"\n");
    let mut command = serve_command(plugins.path());
    command
        .args(["--no-watch", "--no-cache", "--http", "127.0.0.1:0"])
        .env("WASM_MCP_LOG", "info,wasm_mcp::transport::http=debug");
    let server = wasm_mcp_tests::http::HttpServer::spawn(command, wasm_mcp_tests::process::Stderr::Captured);
    assert!(
        !server.stderr().contains("plugins directory loaded"),
        "the request must arrive while the plugins load"
    );
    let m = meta(json!({}), None);
    let region = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": with_meta(
        json!({ "name": "test_header_param", "arguments": { "region": "eu-west", "query": "q" } }), &m) });
    let missing = post(&server.url, &region, &[]);
    assert_eq!(missing.status(), StatusCode::BAD_REQUEST);
    let (code, message) = error_of(&messages(missing)[0]);
    assert_eq!(code, -32020, "{message}");
    assert!(message.contains("Mcp-Param-Region"), "{message}");
    let mirrored = post(&server.url, &region, &[("Mcp-Param-Region", "eu-west")]);
    assert_eq!(mirrored.status(), StatusCode::OK);
    assert_eq!(
        text_of(&result_as("CallToolResult", &messages(mirrored)[0])),
        "Ran \"q\" in eu-west"
    );
}
