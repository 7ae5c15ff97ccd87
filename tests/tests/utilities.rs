//! The protocol utilities a plugin drives from inside a call: logging
//! (setLevel filtering, logger = plugin name), progress (tokens echoed
//! exactly, strictly increasing, nothing without a token) and completion
//! (routed to the owning plugin, at most 100 values).

use serde_json::{Value, json};
use wasm_mcp_tests::expect::tool_ok;
use wasm_mcp_tests::{PluginDir, StdioServer};

const CONFORMANCE: &str = "conformance";

fn server() -> StdioServer {
    StdioServer::start_initialized(&[CONFORMANCE])
}

/// Calls the conformance logging tool and returns how many log messages
/// arrived before its result.
fn logged_during_call(server: &mut StdioServer) -> usize {
    let before = server.notifications_of("notifications/message").len();
    let result = server.call_tool("test_tool_with_logging", json!({})).result().clone();
    tool_ok(&result);
    server.notifications_of("notifications/message").len() - before
}

#[test]
fn set_level_filters_plugin_log_messages() {
    let mut server = server();
    // The tool logs three messages at `info`.
    let mut expected_total = 0;
    for (level, passes) in [
        ("warning", false),
        ("info", true),
        ("notice", false),
        ("emergency", false),
        ("debug", true),
    ] {
        assert_eq!(
            server.request("logging/setLevel", json!({"level": level})).result(),
            &json!({})
        );
        let seen = logged_during_call(&mut server);
        let expected = if passes { 3 } else { 0 };
        assert_eq!(
            seen, expected,
            "info messages at level {level}: expected {expected}, got {seen}"
        );
        expected_total += expected;
    }
    // Nothing arrives late either: read stdout to its end.
    let status = server.close_and_wait();
    assert!(status.success(), "exit status {status}");
    let all = server.notifications_of("notifications/message");
    assert_eq!(all.len(), expected_total, "{all:?}");
    for message in all {
        assert_eq!(message["params"]["level"], "info");
    }
}

#[test]
fn an_invalid_log_level_is_invalid_params() {
    let mut server = server();
    server
        .request("logging/setLevel", json!({"level": "verbose"}))
        .expect_error_code(-32602);
    server.request("logging/setLevel", json!({})).expect_error_code(-32602);
    server.shutdown();
}

#[test]
fn the_logger_is_the_plugins_name() {
    let plugins = PluginDir::empty();
    plugins.add_plugin_as(CONFORMANCE, "renamed-plugin");
    let mut server = StdioServer::start(plugins);
    server.initialize(json!({}));
    server.request("logging/setLevel", json!({"level": "debug"})).result();
    server.call_tool("test_tool_with_logging", json!({})).result();
    let messages = server.notifications_of("notifications/message");
    assert_eq!(messages.len(), 3, "{messages:?}");
    for message in messages {
        assert_eq!(message["params"]["logger"], "renamed-plugin", "{message}");
    }
    server.shutdown();
}

/// Calls the progress tool with `token` (none when null) and returns the
/// progress notifications that arrived before its result, for any token.
fn progress_of_call(server: &mut StdioServer, token: Value) -> Vec<Value> {
    let before = server.notifications_of("notifications/progress").len();
    let mut params = json!({"name": "test_tool_with_progress", "arguments": {}});
    if !token.is_null() {
        params["_meta"] = json!({"progressToken": token});
    }
    let result = server.request("tools/call", params).result().clone();
    tool_ok(&result);
    server.notifications_of("notifications/progress")[before..].to_vec()
}

#[test]
fn progress_echoes_string_and_number_tokens_exactly_and_strictly_increases() {
    let mut server = server();
    for token in [json!("progress-test-1"), json!(""), json!(42), json!(0), json!("42")] {
        let progress = progress_of_call(&mut server, token.clone());
        assert_eq!(
            progress.len(),
            3,
            "three progress notifications for token {token}: {progress:?}"
        );
        let mut last = f64::NEG_INFINITY;
        for n in &progress {
            assert_eq!(
                n["params"]["progressToken"], token,
                "the token must be echoed with its value and JSON type: {n}"
            );
            let value = n["params"]["progress"].as_f64().expect("progress is a number");
            assert!(value > last, "progress must strictly increase: {progress:?}");
            last = value;
        }
    }
    server.shutdown();
}

#[test]
fn no_progress_without_a_token() {
    let mut server = server();
    let progress = progress_of_call(&mut server, Value::Null);
    assert!(progress.is_empty(), "{progress:?}");
    // A request with other _meta but no token.
    let result = server
        .request(
            "tools/call",
            json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": {"other": 1}}),
        )
        .result()
        .clone();
    tool_ok(&result);
    let status = server.close_and_wait();
    assert!(status.success(), "exit status {status}");
    let all = server.notifications_of("notifications/progress");
    assert!(all.is_empty(), "no progress may be sent without a token: {all:?}");
}

#[test]
fn completion_is_routed_to_the_plugin_that_owns_the_prompt_or_template() {
    let plugins = PluginDir::with(&[CONFORMANCE, "text-tools"]);
    let mut server = StdioServer::start(plugins);
    server.initialize(json!({}));
    // A prompt argument: the plugin filters its candidates by prefix.
    let prompt = server.request(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
               "argument": {"name": "arg2", "value": "testV"}}),
    );
    let completion = &prompt.result()["completion"];
    assert_eq!(completion["values"], json!(["testValue2"]), "{completion}");
    assert_eq!(completion["total"], 1, "{completion}");
    assert_ne!(completion["hasMore"], true, "{completion}");

    // A resource-template variable.
    let template = server.request(
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": "test://template/{id}/data"},
               "argument": {"name": "id", "value": "12"},
               "context": {"arguments": {}}}),
    );
    assert_eq!(
        template.result()["completion"]["values"],
        json!(["123"]),
        "{}",
        template.raw
    );

    // Every candidate for an empty prefix, never more than 100.
    let all = server.request(
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": "test://template/{id}/data"},
               "argument": {"name": "id", "value": ""}}),
    );
    let values = all.result()["completion"]["values"].as_array().unwrap().clone();
    assert_eq!(values, vec![json!("1"), json!("2"), json!("3"), json!("123")]);
    server.shutdown();
}

#[test]
fn completion_for_an_unknown_prompt_or_template_is_invalid_params() {
    let mut server = server();
    server
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "no_such_prompt"},
                   "argument": {"name": "x", "value": ""}}),
        )
        .expect_error_code(-32602);
    server
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "test://nope/{x}"},
                   "argument": {"name": "x", "value": ""}}),
        )
        .expect_error_code(-32602);
    server.shutdown();
}

/// RFC 5424 severities, lowest first.
const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

#[test]
fn set_level_lets_through_that_level_and_above() {
    let mut server = StdioServer::start_initialized(&["probe"]);
    for (rank, level) in LEVELS.iter().enumerate() {
        server.request("logging/setLevel", json!({"level": level})).result();
        let before = server.notifications_of("notifications/message").len();
        let result = server.call_tool("log_levels", json!({})).result().clone();
        tool_ok(&result);
        let received: Vec<Value> = server.notifications_of("notifications/message")[before..].to_vec();
        let levels: Vec<&str> = received
            .iter()
            .map(|n| n["params"]["level"].as_str().unwrap())
            .collect();
        assert_eq!(levels, LEVELS[rank..].to_vec(), "at level {level}");
        for n in &received {
            let level = n["params"]["level"].as_str().unwrap();
            assert_eq!(n["params"]["data"], format!("{level} message"), "{n}");
            assert_eq!(n["params"]["logger"], "probe", "{n}");
        }
    }
    server.shutdown();
}

#[test]
fn many_progress_steps_arrive_in_strictly_increasing_order() {
    let mut server = StdioServer::start_initialized(&["probe"]);
    let result = server
        .request(
            "tools/call",
            json!({"name": "progress_steps", "arguments": {"steps": 25},
                   "_meta": {"progressToken": "steps"}}),
        )
        .result()
        .clone();
    tool_ok(&result);
    let progress = server.notifications_of("notifications/progress");
    let values: Vec<f64> = progress
        .iter()
        .map(|n| n["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(values, (1..=25).map(f64::from).collect::<Vec<_>>());
    for n in &progress {
        assert_eq!(n["params"]["progressToken"], "steps");
        assert_eq!(n["params"]["total"].as_f64(), Some(25.0));
    }
    assert_eq!(progress[4]["params"]["message"], "step 5 of 25");
    server.shutdown();
}
