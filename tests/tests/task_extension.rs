//! The 2026-07-28 tasks extension from the outside, over stdio: a call of a
//! task-supporting tool becomes a task when the plugin says so or when it
//! runs long (never for a client without the extension), `tasks/get` shows
//! it with its result, error or questions inlined, `tasks/update` answers
//! the questions (one at a time if the client likes), `tasks/cancel` stops
//! the plugin at once, a listen stream that asked for the task sees every
//! change, and a tool that requires a task asks for the extension. Shapes
//! are checked against the extension's schema.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasm_mcp_tests::PluginDir;
use wasm_mcp_tests::modern::{ModernStdio, TASKS, is_terminal, meta, task_id, with_meta, with_tasks};
use wasm_mcp_tests::schema::{checked_result, validate_modern, validate_tasks};

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

#[track_caller]
fn checked(def: &str, response: &Value) -> Value {
    checked_result(validate_tasks, def, response)
}

#[track_caller]
fn error_code(response: &Value) -> i64 {
    response["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error, got {response}"))
}

#[test]
fn a_call_that_says_it_takes_a_while_is_a_task_polled_to_its_inlined_result() {
    let plugins = PluginDir::with(&["conformance"]);
    let mut server = ModernStdio::serve(&plugins, &[]);
    let m = with_tasks();

    let quick = server.call_tool(&m, "greet", json!({ "name": "Ada" }));
    assert_eq!(quick["result"]["resultType"], "complete", "{quick}");
    assert_eq!(quick["result"]["content"][0]["text"], "Hello, Ada!");
    validate_modern("CallToolResult", &quick["result"]).unwrap();

    let created = checked(
        "CreateTaskResult",
        &server.call_tool(&m, "slow_compute", json!({ "seconds": 0.3, "label": "x" })),
    );
    assert_eq!(created["resultType"], "task");
    assert_eq!(created["status"], "working");
    assert!(created["ttlMs"].as_u64().unwrap() > 0 && created["pollIntervalMs"].as_u64().unwrap() > 0);
    for absent in ["result", "error", "inputRequests", "requestState", "task"] {
        assert!(created.get(absent).is_none(), "{absent} in {created}");
    }
    let id = task_id(&created);
    // Known the moment the answer leaves.
    assert_eq!(server.get_task(&m, &id)["taskId"], json!(id));
    let done = server.poll_task_until(&m, &id, is_terminal);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["resultType"], "complete");
    assert_eq!(done["result"]["content"][0]["text"], "Computed x after 0.3 s");
    assert!(
        done["result"]
            .pointer("/_meta/io.modelcontextprotocol~1related-task")
            .is_none(),
        "{done}"
    );

    let failing = task_id(&checked(
        "CreateTaskResult",
        &server.call_tool(&m, "failing_job", json!({})),
    ));
    let failed = server.poll_task_until(&m, &failing, is_terminal);
    assert_eq!(failed["status"], "completed", "a tool error is a result: {failed:#}");
    assert_eq!(failed["result"]["isError"], true);

    let broken = task_id(&checked(
        "CreateTaskResult",
        &server.call_tool(&m, "protocol_error_job", json!({})),
    ));
    let broken = server.poll_task_until(&m, &broken, is_terminal);
    assert_eq!(broken["status"], "failed", "{broken:#}");
    assert_eq!(broken["error"]["code"], -32603);
    assert!(
        broken["error"]["message"]
            .as_str()
            .unwrap()
            .contains("protocol_error_job"),
        "{broken}"
    );
    assert!(broken.get("result").is_none());

    let unknown = server.request("tasks/get", with_meta(json!({ "taskId": "nope" }), &m));
    assert_eq!(error_code(&unknown), -32602);
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Unknown task nope")
    );
    for removed in ["tasks/result", "tasks/list"] {
        let response = server.request(removed, with_meta(json!({ "taskId": id }), &m));
        assert_eq!(error_code(&response), -32601, "{removed}: {response}");
    }
    server.close();
}

#[test]
fn a_call_that_runs_past_task_after_becomes_a_task_by_itself() {
    let plugins = PluginDir::with(&["spinner"]);
    plugins.add_file("spinner.toml", b"[tools.sleep]\ntask_support = \"optional\"\n");
    let mut server = ModernStdio::serve(&plugins, &["--task-after", "200"]);
    let m = with_tasks();

    let short = server.call_tool(&m, "sleep", json!({ "ms": 10 }));
    assert_eq!(short["result"]["content"][0]["text"], "slept 10 ms", "{short}");

    let long = checked("CreateTaskResult", &server.call_tool(&m, "sleep", json!({ "ms": 900 })));
    let done = server.poll_task_until(&m, &task_id(&long), is_terminal);
    assert_eq!(done["result"]["content"][0]["text"], "slept 900 ms", "{done:#}");

    // A client without the extension waits for the result, however long.
    let plain = meta(json!({}), None);
    let waited = server.call_tool(&plain, "sleep", json!({ "ms": 400 }));
    assert_eq!(waited["result"]["resultType"], "complete", "{waited}");
    assert_eq!(waited["result"]["content"][0]["text"], "slept 400 ms");
    server.close();
}

#[test]
fn questions_of_a_task_are_answered_with_tasks_update_and_seen_on_a_listen_stream() {
    let plugins = PluginDir::with(&["conformance"]);
    let mut server = ModernStdio::serve(&plugins, &[]);
    let m = with_tasks();

    let created = checked("CreateTaskResult", &server.call_tool(&m, "multi_input", json!({})));
    let id = task_id(&created);
    let listen = server.start(
        "subscriptions/listen",
        with_meta(json!({ "notifications": { "taskIds": [id] } }), &m),
    );
    let acknowledged = server.wait_for("the acknowledgement", |message| {
        message["method"] == "notifications/subscriptions/acknowledged"
    });
    assert_eq!(acknowledged["params"]["notifications"]["taskIds"], json!([id]));

    let waiting = server.poll_task_until(&m, &id, |task| task["status"] == "input_required");
    let keys: Vec<&String> = waiting["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["first", "second"], "{waiting:#}");
    assert_eq!(waiting["inputRequests"]["first"]["method"], "elicitation/create");

    let answer = |name: &str| json!({ "action": "accept", "content": { "name": name, "confirm": true } });
    let ack = server.request(
        "tasks/update",
        with_meta(
            json!({ "taskId": id, "inputResponses": { "first": answer("a"), "stranger": answer("z") } }),
            &m,
        ),
    );
    let ack = checked("UpdateTaskResult", &ack);
    assert_eq!(ack["resultType"], "complete");
    assert!(ack.get("status").is_none() && ack.get("taskId").is_none(), "{ack}");
    let half = server.get_task(&m, &id);
    assert_eq!(half["status"], "input_required", "{half:#}");
    assert_eq!(
        half["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(),
        ["second"]
    );

    server.request(
        "tasks/update",
        with_meta(json!({ "taskId": id, "inputResponses": { "second": answer("b") } }), &m),
    );
    let done = server.poll_task_until(&m, &id, is_terminal);
    assert_eq!(done["result"]["content"][0]["text"], "Got a and b", "{done:#}");

    // The stream saw the task wait and end, each change as tasks/get shows it.
    let ended = server.wait_for("the task's end on the listen stream", |message| {
        message["method"] == "notifications/tasks" && message["params"]["status"] == "completed"
    });
    assert_eq!(ended["params"]["taskId"], json!(id));
    assert_eq!(ended["params"]["_meta"][SUBSCRIPTION_ID], listen);
    assert_eq!(ended["params"]["result"]["content"][0]["text"], "Got a and b");
    let statuses: Vec<&str> = server
        .seen_of("notifications/tasks")
        .iter()
        .map(|n| n["params"]["status"].as_str().unwrap())
        .collect();
    assert!(statuses.starts_with(&["input_required"]), "{statuses:?}");
    for notification in server.seen_of("notifications/tasks") {
        let mut params = notification["params"].clone();
        params.as_object_mut().unwrap().remove("_meta");
        validate_tasks("DetailedTask", &params).unwrap();
    }
    server.close();
}

#[test]
fn a_tool_asks_first_then_finishes_as_a_task_with_the_answer() {
    let plugins = PluginDir::with(&["conformance"]);
    let mut server = ModernStdio::serve(&plugins, &[]);
    let m = with_tasks();

    let first = server.call_tool(&m, "test_tool_with_task", json!({}));
    let round = &first["result"];
    assert_eq!(round["resultType"], "input_required", "{first}");
    assert!(round.get("taskId").is_none());
    let retry = json!({
        "name": "test_tool_with_task",
        "arguments": {},
        "inputResponses": { "user_name": { "action": "accept", "content": { "name": "Alice" } } },
        "requestState": round["requestState"],
    });
    let created = checked("CreateTaskResult", &server.request("tools/call", with_meta(retry, &m)));
    assert!(created.get("requestState").is_none(), "{created}");
    let done = server.poll_task_until(&m, &task_id(&created), is_terminal);
    assert_eq!(
        done["result"]["content"][0]["text"],
        "Hello, Alice! (finished as a task)"
    );
    server.close();
}

#[test]
fn cancelling_a_task_stops_its_plugin_at_once_and_says_the_same_twice() {
    let plugins = PluginDir::with(&["conformance"]);
    // One call of the plugin at a time, and a deadline far away: the next
    // call runs only once the cancelled one has really stopped.
    let mut server = ModernStdio::serve(&plugins, &["--max-calls-per-plugin", "1", "--timeout", "300"]);
    let m = with_tasks();

    let created = checked(
        "CreateTaskResult",
        &server.call_tool(&m, "slow_compute", json!({ "seconds": 120 })),
    );
    let id = task_id(&created);
    let cancel = |server: &mut ModernStdio| {
        let ack = server.request("tasks/cancel", with_meta(json!({ "taskId": id }), &m));
        checked("CancelTaskResult", &ack);
        assert_eq!(ack["result"]["resultType"], "complete");
        assert!(ack["result"].get("status").is_none(), "{ack}");
    };
    cancel(&mut server);
    assert_eq!(server.get_task(&m, &id)["status"], "cancelled");
    cancel(&mut server);
    let started = Instant::now();
    let next = server.call_tool(&m, "greet", json!({ "name": "next" }));
    assert_eq!(next["result"]["content"][0]["text"], "Hello, next!", "{next}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the cancelled call held the plugin's only slot"
    );
    let unknown = server.request("tasks/cancel", with_meta(json!({ "taskId": "nope" }), &m));
    assert_eq!(error_code(&unknown), -32602);
    server.close();
}

#[test]
fn without_the_extension_no_task_is_made_and_a_required_one_is_asked_for() {
    let plugins = PluginDir::with(&["conformance"]);
    let mut server = ModernStdio::serve(&plugins, &[]);
    let plain = meta(json!({ "elicitation": {} }), None);

    let synchronous = server.call_tool(&plain, "slow_compute", json!({ "seconds": 0.3 }));
    assert_eq!(synchronous["result"]["resultType"], "complete", "{synchronous}");
    assert_eq!(
        synchronous["result"]["content"][0]["text"],
        "Computed a result after 0.3 s"
    );

    let required = server.call_tool(&plain, "failing_job", json!({}));
    assert_eq!(error_code(&required), -32021, "{required}");
    assert_eq!(
        required["error"]["data"]["requiredCapabilities"]["extensions"][TASKS],
        json!({})
    );
    let message = required["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Missing required client capability") && message.contains("failing_job"),
        "the wording of -32021 in the tasks extension: {required}"
    );
    for (method, params) in [
        ("tasks/get", json!({ "taskId": "t" })),
        ("tasks/update", json!({ "taskId": "t", "inputResponses": {} })),
        ("tasks/cancel", json!({ "taskId": "t" })),
        ("subscriptions/listen", json!({ "notifications": { "taskIds": ["t"] } })),
    ] {
        let response = server.request(method, with_meta(params, &plain));
        assert_eq!(error_code(&response), -32021, "{method}: {response}");
        assert_eq!(
            response["error"]["data"]["requiredCapabilities"]["extensions"][TASKS],
            json!({}),
            "{method}: the error names the extension: {response}"
        );
    }
    server.close();
}

/// With the embedded store (a file), the server's tasks outlive it: a task
/// that completed is still there with its result after a restart; one that
/// was running when the server was killed ends as failed, saying why, rather
/// than staying `working` forever; and one of a tool declared idempotent
/// runs again from the start and completes.
#[test]
fn tasks_outlive_a_restart_and_a_killed_servers_running_tasks_end_as_failed() {
    let plugins = PluginDir::with(&["conformance"]);
    let state = plugins.path().join("state.redb");
    let state = state.to_str().expect("a UTF-8 path");
    let m = with_tasks();

    let mut server = ModernStdio::serve(&plugins, &["--state", state]);
    let quick = server.call_tool(&m, "slow_compute", json!({ "seconds": 0.1, "label": "kept" }));
    let done = task_id(&quick["result"]);
    server.poll_task_until(&m, &done, is_terminal);
    let long = server.call_tool(&m, "slow_compute", json!({ "seconds": 600 }));
    let running = task_id(&long["result"]);
    assert_eq!(server.get_task(&m, &running)["status"], "working");
    let again = server.call_tool(&m, "recompute", json!({ "seconds": 0.5, "label": "again" }));
    let again = task_id(&again["result"]);
    server.kill();

    let mut server = ModernStdio::serve(&plugins, &["--state", state]);
    let kept = server.get_task(&m, &done);
    assert_eq!(kept["status"], "completed", "{kept:#}");
    assert_eq!(
        kept["result"]["content"][0]["text"], "Computed kept after 0.1 s",
        "{kept:#}"
    );
    let lost = server.poll_task_until(&m, &running, is_terminal);
    assert_eq!(lost["status"], "failed", "{lost:#}");
    let message = lost["statusMessage"].as_str().unwrap_or_default();
    assert!(message.contains("the server running it stopped"), "{lost:#}");
    assert!(
        lost["error"]["message"].as_str().is_some(),
        "a failed task carries its error: {lost:#}"
    );
    let seen = std::cell::RefCell::new(Vec::new());
    let redone = server.poll_task_until(&m, &again, |task| {
        seen.borrow_mut().push(task["statusMessage"].clone());
        is_terminal(task)
    });
    assert_eq!(redone["status"], "completed", "{redone:#}");
    let said_why = seen.borrow().iter().any(|message| {
        message
            .as_str()
            .is_some_and(|m| m.starts_with("running again from the start"))
    });
    assert!(said_why, "while it ran again it said why: {:?}", seen.borrow());
    assert_eq!(redone["result"]["content"][0]["text"], "Computed again after 0.5 s");
    server.close();
}
