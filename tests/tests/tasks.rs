//! MCP tasks (2025-11-25) over stdio: a task-augmented tools/call answers at
//! once with CreateTaskResult and runs in the background under the same
//! limits; tasks/get, tasks/result, tasks/list and tasks/cancel; status
//! notifications on every change; progress on the original token; ttl and its
//! cap; input_required while the task waits on the client; queueing under the
//! concurrency limits; cancel stopping the wasm and its CPU use.
//!
//! The example plugin `batch-digest` (`digest_batch`: optional task support,
//! `digest`: forbidden) and, with manifests written here, `spinner` and
//! `conformance` are the real plugins. Every wait is bounded by the harness
//! timeout; nothing asserts a duration.

use std::collections::{BTreeSet, HashSet};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasm_mcp_tests::expect::{by_name, is_tool_error, single_text, texts, tool_ok};
use wasm_mcp_tests::proc_stat::full_core;
use wasm_mcp_tests::{NO_FUEL_LIMIT, NO_LIMITS, PluginDir, StdioServer, timeout};

const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The spinner, with `spin` and `sleep` made task-capable by its manifest.
const SPINNER_TASKS: &[u8] = br#"
[tools.spin]
task_support = "optional"

[tools.spin_checked]
task_support = "optional"

[tools.sleep]
task_support = "optional"
"#;

fn spinner_dir() -> PluginDir {
    let dir = PluginDir::with(&["spinner"]);
    dir.add_file("spinner.toml", SPINNER_TASKS);
    dir
}

fn batch_server(args: &[&str]) -> StdioServer {
    let mut server = StdioServer::start_with_args(PluginDir::with(&["batch-digest"]), args);
    server.initialize(json!({}));
    server
}

/// Arguments that make `digest_batch` finish at once.
fn quick_batch() -> Value {
    json!({"items": ["a"], "rounds": 1})
}

/// Starts a quick `digest_batch` task (see [`start_task`]) with task
/// parameters `task`.
fn start_quick_task(server: &mut StdioServer, task: Value) -> Value {
    start_task(server, "digest_batch", quick_batch(), task)
}

/// Starts `tool` as a task; returns the Task of its CreateTaskResult.
fn start_task(server: &mut StdioServer, tool: &str, arguments: Value, task: Value) -> Value {
    let result = server
        .request(
            "tools/call",
            json!({"name": tool, "arguments": arguments, "task": task}),
        )
        .result()
        .clone();
    let created = result["task"].clone();
    assert_eq!(created["status"], "working", "a new task is working: {result}");
    created
}

fn task_id(task: &Value) -> String {
    task["taskId"].as_str().expect("a task has a taskId").to_string()
}

/// tasks/get of `id`, which must succeed.
fn get_task(server: &mut StdioServer, id: &str) -> Value {
    server.request("tasks/get", json!({"taskId": id})).result().clone()
}

/// Waits for a notifications/tasks/status of task `id` with `status` (and,
/// if given, that statusMessage) that no earlier wait returned.
fn wait_status(server: &mut StdioServer, id: &str, status: &str, message: Option<&str>) -> Value {
    let id = id.to_string();
    let what = format!("task {id} to report status {status} (message {message:?})");
    let message = message.map(str::to_string);
    let notification = server.wait_for_notification(&what, move |n| {
        n["method"] == "notifications/tasks/status"
            && n["params"]["taskId"] == id.as_str()
            && n["params"]["status"] == status
            && message.as_deref().is_none_or(|m| n["params"]["statusMessage"] == m)
    });
    notification["params"].clone()
}

/// The statuses task `id` reported in notifications so far, in order.
fn reported_statuses(server: &StdioServer, id: &str) -> Vec<(String, Option<String>)> {
    server
        .notifications_of("notifications/tasks/status")
        .iter()
        .filter(|n| n["params"]["taskId"] == id)
        .map(|n| {
            (
                n["params"]["status"].as_str().unwrap_or_default().to_string(),
                n["params"]["statusMessage"].as_str().map(str::to_string),
            )
        })
        .collect()
}

/// `result` without its `_meta`, after checking that it names task `id`.
#[track_caller]
fn without_related_task(mut result: Value, id: &str) -> Value {
    assert_eq!(
        result["_meta"][RELATED_TASK],
        json!({"taskId": id}),
        "tasks/result carries the related-task _meta: {result}"
    );
    result.as_object_mut().unwrap().remove("_meta");
    result
}

fn is_hex_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

#[test]
fn the_server_declares_tasks_and_each_tools_task_support() {
    let mut server = StdioServer::start(PluginDir::with(&["batch-digest"]));
    let init = server.initialize(json!({}));
    assert_eq!(
        init["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
    );
    let tools = server.list_all("tools/list", "tools");
    assert_eq!(by_name(&tools, "digest_batch")["execution"]["taskSupport"], "optional");
    assert_eq!(by_name(&tools, "digest")["execution"]["taskSupport"], "forbidden");
    server.shutdown();
}

#[test]
fn a_task_runs_in_the_background_and_its_result_is_what_the_call_returns() {
    let mut server = batch_server(&[]);
    let arguments = json!({"items": ["alpha", "beta", "gamma"], "rounds": 1_000_000});
    let created = server
        .request(
            "tools/call",
            json!({"name": "digest_batch", "arguments": arguments, "task": {"ttl": 60_000},
                   "_meta": {"progressToken": "batch-1"}}),
        )
        .result()
        .clone();
    let task = &created["task"];
    let id = task_id(task);
    assert!(is_hex_id(&id), "a task id is 128 random bits in hex: {id}");
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttl"], 60_000);
    assert!(task["pollInterval"].as_u64().is_some_and(|ms| ms > 0), "{task}");
    for stamp in ["createdAt", "lastUpdatedAt"] {
        let text = task[stamp].as_str().unwrap_or_default();
        assert!(humanlike_rfc3339(text), "{stamp} is an ISO 8601 timestamp: {text:?}");
    }
    // The call answered at once: the batch (three inputs, each about a
    // second of hashing) has not finished.
    let progress_at_creation = server.notifications_of("notifications/progress").len();
    assert!(
        progress_at_creation < 3,
        "the task was created before its work was done"
    );

    let got = get_task(&mut server, &id);
    assert_eq!(got["taskId"], id.as_str());
    let listed = server.list_all("tasks/list", "tasks");
    assert!(listed.iter().any(|t| t["taskId"] == id.as_str()), "{listed:?}");

    let result = server.request("tasks/result", json!({"taskId": id})).result().clone();
    let result = without_related_task(result, &id);
    tool_ok(&result);
    assert_eq!(result["structuredContent"]["completed"], 3);
    assert_eq!(result["structuredContent"]["cancelled"], false);

    // Exactly what the call returns when not run as a task.
    let direct = server.call_tool("digest_batch", arguments).result().clone();
    assert_eq!(result, direct);

    let done = wait_status(&mut server, &id, "completed", None);
    assert_eq!(done["taskId"], id.as_str());
    assert_eq!(get_task(&mut server, &id)["status"], "completed");

    // Progress kept flowing on the token of the original request, to the end.
    let progress: Vec<Value> = server
        .notifications_of("notifications/progress")
        .into_iter()
        .filter(|n| n["params"]["progressToken"] == "batch-1")
        .map(|n| n["params"].clone())
        .collect();
    let values: Vec<f64> = progress.iter().map(|p| p["progress"].as_f64().unwrap()).collect();
    assert_eq!(values, [1.0, 2.0, 3.0], "{progress:?}");
    assert!(progress.iter().all(|p| p["total"] == 3.0), "{progress:?}");
    server.shutdown();
}

/// `2026-01-02T03:04:05.678Z` and the like.
fn humanlike_rfc3339(text: &str) -> bool {
    let bytes = text.as_bytes();
    text.len() >= 20 && bytes[4] == b'-' && bytes[7] == b'-' && bytes[10] == b'T' && text.ends_with('Z')
}

#[test]
fn tasks_result_blocks_until_the_task_ends() {
    let mut server = StdioServer::start_with_args(spinner_dir(), &NO_LIMITS);
    server.initialize(json!({}));
    let id = task_id(&start_task(&mut server, "spin", json!({}), json!({})));
    let waiting = server.start_request("tasks/result", json!({"taskId": id}));
    // Requests after it are answered; it is not, while the task runs.
    assert_eq!(get_task(&mut server, &id)["status"], "working");
    assert!(
        !server.has_response_for(&waiting),
        "tasks/result answered a running task"
    );
    server.request("tasks/cancel", json!({"taskId": id})).result();
    // A cancelled task has no result: the wait ends with an error.
    let error = server.wait_response(&waiting, "tasks/result").expect_error_code(-32602);
    assert!(error.message.contains(&id), "{}", error.message);
    server.shutdown();
}

#[test]
fn a_tool_error_fails_the_task_and_its_result_is_the_error_result() {
    let mut server = StdioServer::start_with_args(spinner_dir(), &["--timeout", "1", "--fuel", NO_FUEL_LIMIT]);
    server.initialize(json!({}));
    let id = task_id(&start_task(&mut server, "spin", json!({}), json!({})));
    let expected = "Tool spin failed: stopped after 1 s wall-clock limit";
    let failed = wait_status(&mut server, &id, "failed", None);
    assert_eq!(failed["statusMessage"], expected, "the limit is named: {failed}");
    let result = server.request("tasks/result", json!({"taskId": id})).result().clone();
    let result = without_related_task(result, &id);
    assert!(is_tool_error(&result), "{result}");
    assert_eq!(single_text(&result), expected);
    let got = get_task(&mut server, &id);
    assert_eq!(
        (got["status"].as_str(), got["statusMessage"].as_str()),
        (Some("failed"), Some(expected))
    );
    server.shutdown();
}

#[test]
fn a_json_rpc_error_of_the_call_stays_an_error_in_tasks_result() {
    let mut server = StdioServer::start_initialized(&["vanishing"]);
    // Run directly, the call is a JSON-RPC error...
    let direct = server.call_tool("vanish", json!({})).expect_error_code(-32602);
    // ...and as a task: a failed task whose result is that same error.
    let id = task_id(&start_task(&mut server, "vanish", json!({}), json!({})));
    let failed = wait_status(&mut server, &id, "failed", None);
    assert_eq!(failed["statusMessage"], direct.message.as_str(), "{failed}");
    let error = server
        .request("tasks/result", json!({"taskId": id}))
        .expect_error_code(-32602);
    assert_eq!(error.message, direct.message);
    server.shutdown();
}

// ---- cancel ------------------------------------------------------------------

#[test]
fn cancelling_a_task_stops_its_wasm_and_its_cpu_use() {
    let mut server = StdioServer::start_with_args(spinner_dir(), &NO_LIMITS);
    server.initialize(json!({}));
    server.wait_for_cpu("the idle server using little CPU", |t| t <= full_core() / 10);
    let id = task_id(&start_task(&mut server, "spin", json!({}), json!({})));
    server.wait_for_cpu("the `spin` task burning CPU", |t| t >= full_core() / 3);

    let cancelled = server.request("tasks/cancel", json!({"taskId": id})).result().clone();
    assert_eq!(cancelled["taskId"], id.as_str());
    assert_eq!(cancelled["status"], "cancelled");
    wait_status(&mut server, &id, "cancelled", None);
    server.wait_for_cpu("the cancelled task to stop using CPU", |t| t <= full_core() / 10);
    assert_eq!(get_task(&mut server, &id)["status"], "cancelled");

    // A terminal task cannot be cancelled again, and has no result.
    cancel_is_refused(&mut server, &id, "cancelled");
    let error = server
        .request("tasks/result", json!({"taskId": id}))
        .expect_error_code(-32602);
    assert!(error.message.contains("cancelled"), "{}", error.message);
    // The task's status never moved after it was cancelled.
    let statuses = reported_statuses(&server, &id);
    assert_eq!(
        statuses.last().map(|(s, _)| s.as_str()),
        Some("cancelled"),
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|(s, _)| s == "cancelled").count(),
        1,
        "{statuses:?}"
    );
    server.shutdown();
}

/// tasks/cancel of the task `id`, whose status is `status`, is invalid
/// params naming both.
fn cancel_is_refused(server: &mut StdioServer, id: &str, status: &str) {
    let error = server
        .request("tasks/cancel", json!({"taskId": id}))
        .expect_error_code(-32602);
    assert!(
        error.message.contains(id) && error.message.contains(status),
        "{}",
        error.message
    );
}

#[test]
fn cancelling_a_finished_task_is_invalid_params() {
    let mut server = batch_server(&[]);
    let id = task_id(&start_quick_task(&mut server, json!({})));
    wait_status(&mut server, &id, "completed", None);
    cancel_is_refused(&mut server, &id, "completed");
    // Its result is still there.
    let result = server.request("tasks/result", json!({"taskId": id})).result().clone();
    tool_ok(&without_related_task(result, &id));
    server.shutdown();
}

// ---- ids, ttl, sessions, listing ---------------------------------------------

#[test]
fn unknown_task_ids_are_invalid_params_that_name_the_id() {
    let mut server = batch_server(&[]);
    let unknown = "0123456789abcdef0123456789abcdef";
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let error = server
            .request(method, json!({"taskId": unknown}))
            .expect_error_code(-32602);
        assert!(error.message.contains(unknown), "{method}: {}", error.message);
    }
    server.shutdown();
}

#[test]
fn a_task_and_its_result_are_purged_when_its_ttl_runs_out() {
    let mut server = batch_server(&[]);
    let created = start_quick_task(&mut server, json!({"ttl": 300}));
    assert_eq!(created["ttl"], 300);
    let id = task_id(&created);
    wait_status(&mut server, &id, "completed", None);
    // Poll (as a client would) until it is gone.
    let deadline = Instant::now() + timeout();
    let error = loop {
        let response = server.request("tasks/get", json!({"taskId": id}));
        if response.is_error() {
            break response.expect_error_code(-32602);
        }
        assert!(Instant::now() < deadline, "task {id} never expired: {}", response.raw);
        server.drain_until(Instant::now() + Duration::from_millis(100));
    };
    assert!(error.message.contains(&id), "{}", error.message);
    let error = server
        .request("tasks/result", json!({"taskId": id}))
        .expect_error_code(-32602);
    assert!(error.message.contains(&id), "{}", error.message);
    let listed = server.list_all("tasks/list", "tasks");
    assert!(listed.iter().all(|t| t["taskId"] != id.as_str()), "{listed:?}");
    server.shutdown();
}

#[test]
fn a_task_still_running_when_its_ttl_runs_out_is_stopped_quietly() {
    let mut server = StdioServer::start_with_args(spinner_dir(), &NO_LIMITS);
    server.initialize(json!({}));
    // The ttl outlasts the first CPU sample, so the spin is seen before it expires.
    let id = task_id(&start_task(&mut server, "spin", json!({}), json!({"ttl": 3000})));
    server.wait_for_cpu("the `spin` task burning CPU", |t| t >= full_core() / 3);
    let deadline = Instant::now() + timeout();
    loop {
        let response = server.request("tasks/get", json!({"taskId": id}));
        if response.is_error() {
            response.expect_error_code(-32602);
            break;
        }
        assert!(Instant::now() < deadline, "task {id} never expired: {}", response.raw);
        server.drain_until(Instant::now() + Duration::from_millis(100));
    }
    // Its call is stopped...
    server.wait_for_cpu("the expired task to stop using CPU", |t| t <= full_core() / 10);
    // ...and it reports nothing more about a task the client can no longer
    // ask about (in particular not that it "failed" by being cancelled).
    let statuses = reported_statuses(&server, &id);
    assert!(
        statuses.iter().all(|(status, _)| status == "working"),
        "no terminal status is announced for an expired task: {statuses:?}"
    );
    server.shutdown();
}

#[test]
fn the_requested_ttl_is_honoured_up_to_the_maximum() {
    let mut server = batch_server(&[]);
    let default = start_quick_task(&mut server, json!({}));
    assert_eq!(default["ttl"], 3_600_000, "the default retention is an hour: {default}");
    let asked = start_quick_task(&mut server, json!({"ttl": 120_000}));
    assert_eq!(asked["ttl"], 120_000);
    let ten_days = 10 * 24 * 3_600_000u64;
    let capped = start_quick_task(&mut server, json!({"ttl": ten_days}));
    assert_eq!(capped["ttl"], 86_400_000, "ttl is capped at a day: {capped}");
    server.shutdown();
}

#[test]
fn the_maximum_ttl_is_configurable() {
    let mut server = batch_server(&["--max-task-ttl", "90"]);
    let capped = start_quick_task(&mut server, json!({"ttl": 3_600_000}));
    assert_eq!(capped["ttl"], 90_000, "ttl is capped at --max-task-ttl: {capped}");
    let default = start_quick_task(&mut server, json!({}));
    assert_eq!(
        default["ttl"], 90_000,
        "the default never exceeds the maximum: {default}"
    );
    server.shutdown();
}

#[test]
fn a_session_holds_a_bounded_number_of_tasks() {
    let mut server = batch_server(&[]);
    let quick = quick_batch();
    let mut created = 0;
    let refusal = loop {
        let response = server.request(
            "tools/call",
            json!({"name": "digest_batch", "arguments": quick, "task": {}}),
        );
        if response.is_error() {
            break response.error();
        }
        created += 1;
        assert!(created <= 10_000, "no bound on the tasks of a session");
    };
    assert_eq!(created, 1000, "the bound is 1000 live tasks per session");
    assert!(
        refusal.message.contains("1000 tasks"),
        "the refusal says why: {}",
        refusal.message
    );
    assert_eq!(server.list_all("tasks/list", "tasks").len(), 1000);
    // Plain calls are unaffected.
    tool_ok(server.call_tool("digest", json!({"text": "a"})).result());
    server.shutdown();
}

#[test]
fn task_ids_are_unique_and_tasks_are_visible_only_to_their_session() {
    let mut mine = batch_server(&[]);
    let ids: Vec<String> = (0..5)
        .map(|_| task_id(&start_quick_task(&mut mine, json!({}))))
        .collect();
    let unique: HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    assert!(ids.iter().all(|id| is_hex_id(id)), "{ids:?}");

    // Another session (over stdio: another server process) sees none of them.
    let mut theirs = batch_server(&[]);
    assert_eq!(theirs.list_all("tasks/list", "tasks"), Vec::<Value>::new());
    for id in &ids {
        theirs
            .request("tasks/get", json!({"taskId": id}))
            .expect_error_code(-32602);
    }
    theirs.shutdown();
    mine.shutdown();
}

#[test]
fn tasks_list_pages_through_every_task_of_the_session() {
    let mut server = batch_server(&["--page-size", "2"]);
    let created: BTreeSet<String> = (0..5)
        .map(|_| task_id(&start_quick_task(&mut server, json!({}))))
        .collect();
    let first = server.request("tasks/list", json!({})).result().clone();
    assert_eq!(first["tasks"].as_array().unwrap().len(), 2, "{first}");
    assert!(first["nextCursor"].is_string(), "{first}");
    let listed: Vec<String> = server.list_all("tasks/list", "tasks").iter().map(task_id).collect();
    assert_eq!(listed.len(), created.len(), "each task once: {listed:?}");
    assert_eq!(listed.into_iter().collect::<BTreeSet<_>>(), created);
    server.shutdown();
}

// ---- task support ------------------------------------------------------------

#[test]
fn forbidden_and_required_task_support_are_enforced_with_method_not_found() {
    let mut server = batch_server(&[]);
    let error = server
        .request(
            "tools/call",
            json!({"name": "digest", "arguments": {"text": "a"}, "task": {}}),
        )
        .expect_error_code(-32601);
    assert!(error.message.contains("digest"), "{}", error.message);
    server.shutdown();

    // The manifest overrides what the plugin declares, both ways.
    let dir = PluginDir::with(&["batch-digest"]);
    dir.add_file(
        "batch-digest.toml",
        b"[tools.digest_batch]\ntask_support = \"required\"\n\n[tools.digest]\ntask_support = \"optional\"\n",
    );
    let mut server = StdioServer::start(dir);
    server.initialize(json!({}));
    let tools = server.list_all("tools/list", "tools");
    assert_eq!(by_name(&tools, "digest_batch")["execution"]["taskSupport"], "required");
    assert_eq!(by_name(&tools, "digest")["execution"]["taskSupport"], "optional");
    let error = server
        .call_tool("digest_batch", quick_batch())
        .expect_error_code(-32601);
    assert!(error.message.contains("digest_batch"), "{}", error.message);
    let id = task_id(&start_task(&mut server, "digest", json!({"text": "abc"}), json!({})));
    let result = server.request("tasks/result", json!({"taskId": id})).result().clone();
    assert_eq!(
        without_related_task(result, &id)["structuredContent"]["digest"],
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    // Optional: still callable without a task.
    tool_ok(server.call_tool("digest", json!({"text": "abc"})).result());
    server.shutdown();
}

// ---- waiting on the client ---------------------------------------------------

fn conformance_with_tasks(args: &[&str], capabilities: Value) -> StdioServer {
    let dir = PluginDir::with(&["conformance"]);
    dir.add_file(
        "conformance.toml",
        b"[tools.test_elicitation]\ntask_support = \"optional\"\n\n[tools.test_sampling]\ntask_support = \"optional\"\n",
    );
    let mut server = StdioServer::start_with_args(dir, args);
    server.initialize(capabilities);
    server
}

#[test]
fn an_elicitation_inside_a_task_makes_it_input_required_until_answered() {
    // A one-second deadline, and an answer that takes longer: time spent
    // waiting on the client is not charged to the call.
    let mut server = conformance_with_tasks(&["--timeout", "1"], json!({"elicitation": {}}));
    let id = task_id(&start_task(
        &mut server,
        "test_elicitation",
        json!({"message": "Who are you?"}),
        json!({}),
    ));
    let request = server.wait_for_client_request("elicitation/create");
    assert_eq!(
        request["params"]["_meta"][RELATED_TASK],
        json!({"taskId": id}),
        "the request to the client names the task: {request}"
    );
    assert_eq!(request["params"]["message"], "Who are you?");
    wait_status(&mut server, &id, "input_required", None);
    let got = get_task(&mut server, &id);
    assert_eq!(got["status"], "input_required", "{got}");
    assert!(
        got["statusMessage"]
            .as_str()
            .unwrap_or_default()
            .contains("elicitation"),
        "{got}"
    );
    server.drain_until(Instant::now() + Duration::from_millis(1500));
    assert_eq!(get_task(&mut server, &id)["status"], "input_required");

    server.respond(
        &request["id"],
        json!({"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}),
    );
    let result = server.request("tasks/result", json!({"taskId": id})).result().clone();
    let result = without_related_task(result, &id);
    tool_ok(&result);
    assert!(
        single_text(&result).starts_with("User response: action=accept"),
        "{result}"
    );
    wait_status(&mut server, &id, "completed", None);
    let statuses: Vec<String> = reported_statuses(&server, &id).into_iter().map(|(s, _)| s).collect();
    assert_eq!(
        statuses,
        ["input_required", "working", "completed"],
        "every change is announced"
    );
    server.shutdown();
}

#[test]
fn sampling_inside_a_task_makes_it_input_required_and_names_the_task() {
    let mut server = conformance_with_tasks(&[], json!({"sampling": {}}));
    let id = task_id(&start_task(
        &mut server,
        "test_sampling",
        json!({"prompt": "What is 2+2?"}),
        json!({}),
    ));
    let request = server.wait_for_client_request("sampling/createMessage");
    assert_eq!(request["params"]["_meta"][RELATED_TASK], json!({"taskId": id}));
    wait_status(&mut server, &id, "input_required", None);
    server.respond(
        &request["id"],
        json!({"role": "assistant", "content": {"type": "text", "text": "four"},
               "model": "test-model", "stopReason": "endTurn"}),
    );
    wait_status(&mut server, &id, "working", None);
    let result = server.request("tasks/result", json!({"taskId": id})).result().clone();
    assert_eq!(single_text(&without_related_task(result, &id)), "LLM response: four");
    server.shutdown();
}

// ---- concurrency ---------------------------------------------------------------

#[test]
fn beyond_the_per_plugin_limit_calls_queue_and_a_queued_task_says_so() {
    let mut args = NO_LIMITS.to_vec();
    args.extend(["--max-calls-per-plugin", "1"]);
    let mut server = StdioServer::start_with_args(spinner_dir(), &args);
    server.initialize(json!({}));
    let busy = task_id(&start_task(&mut server, "spin", json!({}), json!({})));
    // The second task is started once the first holds the plugin's one slot.
    server.wait_for_cpu("the `spin` task burning CPU", |t| t >= full_core() / 3);
    let queued = task_id(&start_task(&mut server, "sleep", json!({"ms": 1}), json!({})));
    let queued_message = "queued: waiting for a free slot to run";
    wait_status(&mut server, &queued, "working", Some(queued_message));
    let got = get_task(&mut server, &queued);
    assert_eq!(
        (got["status"].as_str(), got["statusMessage"].as_str()),
        (Some("working"), Some(queued_message))
    );
    // A plain call waits its turn too (it does not fail).
    let plain = server.start_request("tools/call", json!({"name": "sleep", "arguments": {"ms": 1}}));
    assert_eq!(get_task(&mut server, &busy)["status"], "working");
    assert!(
        !server.has_response_for(&plain),
        "the plain call runs only when a slot frees"
    );

    server.request("tasks/cancel", json!({"taskId": busy})).result();
    wait_status(&mut server, &queued, "completed", None);
    let slept = server.wait_response(&plain, "tools/call").result().clone();
    assert_eq!(single_text(&slept), "slept 1 ms");
    let result = server
        .request("tasks/result", json!({"taskId": queued}))
        .result()
        .clone();
    assert_eq!(single_text(&without_related_task(result, &queued)), "slept 1 ms");
    let statuses = reported_statuses(&server, &queued);
    assert_eq!(
        statuses,
        [
            ("working".to_string(), Some(queued_message.to_string())),
            ("working".to_string(), None),
            ("completed".to_string(), None),
        ],
        "queued, then running, then done"
    );
    server.shutdown();
}

#[test]
fn beyond_the_host_wide_limit_calls_of_other_plugins_queue_too() {
    let dir = spinner_dir();
    dir.add_plugin("batch-digest");
    let mut args = NO_LIMITS.to_vec();
    args.extend(["--max-concurrent-calls", "1"]);
    let mut server = StdioServer::start_with_args(dir, &args);
    server.initialize(json!({}));
    let busy = task_id(&start_task(&mut server, "spin", json!({}), json!({})));
    // The second task is started once the first holds the one slot.
    server.wait_for_cpu("the `spin` task burning CPU", |t| t >= full_core() / 3);
    let queued = task_id(&start_quick_task(&mut server, json!({})));
    wait_status(
        &mut server,
        &queued,
        "working",
        Some("queued: waiting for a free slot to run"),
    );
    server.request("tasks/cancel", json!({"taskId": busy})).result();
    wait_status(&mut server, &queued, "completed", None);
    server.shutdown();
}

#[test]
fn a_manifest_can_limit_its_plugins_concurrent_calls() {
    let dir = PluginDir::with(&["spinner"]);
    dir.add_file(
        "spinner.toml",
        &[SPINNER_TASKS, b"\n[limits]\nmax_concurrent_calls = 1\n".as_slice()].concat(),
    );
    let mut server = StdioServer::start_with_args(dir, &NO_LIMITS);
    server.initialize(json!({}));
    let busy = task_id(&start_task(&mut server, "spin_checked", json!({}), json!({})));
    // The second task is started once the first holds the plugin's one slot.
    server.wait_for_cpu("the `spin_checked` task burning CPU", |t| t >= full_core() / 3);
    let queued = task_id(&start_task(&mut server, "sleep", json!({"ms": 1}), json!({})));
    wait_status(
        &mut server,
        &queued,
        "working",
        Some("queued: waiting for a free slot to run"),
    );
    server.request("tasks/cancel", json!({"taskId": busy})).result();
    let result = server
        .request("tasks/result", json!({"taskId": queued}))
        .result()
        .clone();
    assert_eq!(texts(&without_related_task(result, &queued)), ["slept 1 ms"]);
    server.shutdown();
}
