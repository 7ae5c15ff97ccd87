//! Many Streamable HTTP sessions at once, sharing the loaded plugins: each has
//! its own subscriptions, tasks, log level and negotiated version, and
//! nothing of one reaches another. Messages with no related request
//! (resource updates, task status) arrive on the session's standalone GET
//! stream.

use serde_json::{Value, json};
use wasm_mcp_tests::PluginDir;
use wasm_mcp_tests::http::{HttpServer, McpClient, Sse, read_until};

fn updated(uri: &'static str) -> impl Fn(&Value) -> bool {
    move |m| m["method"] == "notifications/resources/updated" && m["params"]["uri"] == uri
}

/// Reads `stream` up to the update of `uri` (`what`): nothing may come before it.
fn hears_next(stream: &mut Sse, what: &str, uri: &'static str) {
    let (before, _) = read_until(stream, what, updated(uri));
    assert!(before.is_empty(), "before {what}, heard {before:?}");
}

#[test]
fn two_sessions_cannot_see_each_others_subscriptions() {
    let server = HttpServer::start(PluginDir::with(&["probe"]), &[]);
    let mut a = server.session(json!({}));
    let mut b = server.session(json!({}));
    let mut a_stream = a.get_stream(None);
    let mut b_stream = b.get_stream(None);
    a.request("resources/subscribe", json!({"uri": "test://only-a"}));
    b.request("resources/subscribe", json!({"uri": "test://only-b"}));
    // Either session's plugin call announces both; each hears only its own.
    a.call_tool("announce", json!({"uri": "test://only-b"}));
    b.call_tool("announce", json!({"uri": "test://only-a"}));
    b.call_tool("announce", json!({"uri": "test://only-b"}));
    a.call_tool("announce", json!({"uri": "test://only-a"}));
    hears_next(&mut a_stream, "A's first update", "test://only-a");
    hears_next(&mut a_stream, "A's second update", "test://only-a");
    hears_next(&mut b_stream, "B's first update", "test://only-b");
    hears_next(&mut b_stream, "B's second update", "test://only-b");

    // After A unsubscribes, only B's marker arrives.
    a.request("resources/unsubscribe", json!({"uri": "test://only-a"}));
    a.request("resources/subscribe", json!({"uri": "test://marker"}));
    b.call_tool("announce", json!({"uri": "test://only-a"}));
    b.call_tool("announce", json!({"uri": "test://marker"}));
    // Nothing before the marker: A no longer hears test://only-a.
    hears_next(&mut a_stream, "A's marker", "test://marker");

    // Ending A leaves B untouched.
    a.delete();
    assert!(a_stream.rest().is_empty(), "A's stream goes on after the session ended");
    b.call_tool("announce", json!({"uri": "test://only-b"}));
    read_until(&mut b_stream, "B's update after A ended", updated("test://only-b"));
}

#[test]
fn two_sessions_cannot_see_each_others_tasks() {
    let server = HttpServer::start(PluginDir::with(&["batch-digest"]), &[]);
    let mut a = server.session(json!({}));
    let mut b = server.session(json!({}));
    let mut a_stream = a.get_stream(None);
    let arguments = json!({"items": ["one", "two"], "rounds": 1000});
    let created = a.request(
        "tools/call",
        json!({"name": "digest_batch", "arguments": arguments, "task": {}}),
    );
    let task_id = created.result()["task"]["taskId"].as_str().unwrap().to_string();

    // B can neither list, read, await nor cancel A's task.
    assert_eq!(b.request("tasks/list", json!({})).result()["tasks"], json!([]));
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let refused = b.request(method, json!({"taskId": task_id}));
        assert_eq!(
            refused.response["error"]["code"], -32602,
            "{method}: {}",
            refused.response
        );
    }
    // A can, and hears of its task's end on its own standalone stream.
    let listed = a.request("tasks/list", json!({}));
    assert!(
        listed.result()["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["taskId"] == task_id.as_str())
    );
    let outcome = a.request("tasks/result", json!({"taskId": task_id}));
    assert_eq!(
        outcome.result()["structuredContent"]["completed"],
        2,
        "{}",
        outcome.response
    );
    read_until(&mut a_stream, "A's task status", |m| {
        m["method"] == "notifications/tasks/status" && m["params"]["taskId"] == task_id.as_str()
    });
}

#[test]
fn each_session_has_its_own_log_level_and_version() {
    let server = HttpServer::start(PluginDir::with(&["probe"]), &[]);
    let mut quiet = server.session(json!({}));
    let mut chatty = server.session(json!({}));
    let mut old = McpClient::new(&server.url);
    let response = old.post(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}},
    }));
    old.session = Some(response.headers()["mcp-session-id"].to_str().unwrap().into());
    let answer: Value = serde_json::from_str(&response.text().unwrap()).unwrap();
    assert_eq!(answer["result"]["protocolVersion"], "2025-03-26");

    quiet.request("logging/setLevel", json!({"level": "emergency"}));
    chatty.request("logging/setLevel", json!({"level": "debug"}));
    let logs = |client: &mut McpClient| {
        client
            .call_tool("log_levels", json!({}))
            .notifications("notifications/message")
            .len()
    };
    assert_eq!(logs(&mut quiet), 1);
    assert_eq!(logs(&mut chatty), 8);
    assert_eq!(logs(&mut quiet), 1);
    // A 2025-03-26 client gets no priming event (it would not understand one).
    let exchange = old.call_tool("log_levels", json!({}));
    assert!(
        exchange.events.iter().all(|e| !e.data.is_empty()),
        "{:?}",
        exchange.events
    );
    assert_eq!(
        exchange.notifications("notifications/message").len(),
        7,
        "info and above by default"
    );
}

#[test]
fn many_sessions_work_at_once() {
    let server = HttpServer::start(PluginDir::with(&["conformance"]), &[]);
    let threads: Vec<_> = (0..16)
        .map(|n| {
            let url = server.url.clone();
            std::thread::spawn(move || {
                let mut client = McpClient::new(&url);
                client.initialize(json!({}));
                for _ in 0..5 {
                    let exchange = client.request(
                        "prompts/get",
                        json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": format!("s{n}"), "arg2": "x"}}),
                    );
                    let text = exchange.result()["messages"][0]["content"]["text"].as_str().unwrap().to_string();
                    assert!(text.contains(&format!("arg1='s{n}'")), "{text}");
                }
                assert_eq!(client.delete().status(), reqwest::StatusCode::NO_CONTENT);
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("a session's thread failed");
    }
}
