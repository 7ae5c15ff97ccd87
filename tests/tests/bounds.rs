//! Every input the host takes is bounded, and hitting a bound is a clear
//! error that names the limit and how to raise it, after which the server
//! goes on serving: message size (a stdio line, an HTTP body), requests in
//! flight per session, tasks and resource subscriptions per session, the log
//! rate of a plugin, and the size of a call's output. Limits come from flags
//! and from the config file.
//!
//! Behavioural only: waits are bounded by the harness timeout.

use std::collections::HashSet;

use reqwest::StatusCode;
use serde_json::{Value, json};
use wasm_mcp_tests::expect::{is_tool_error, single_text, texts, tool_ok};
use wasm_mcp_tests::{PluginDir, StdioServer};

use wasm_mcp_tests::http::{HttpServer, error_body};

/// The JSON-RPC code of a request refused because a server limit was reached.
const SERVER_ERROR: i64 = -32000;

/// The spinner, with `sleep` task-capable.
fn spinner_dir() -> PluginDir {
    let dir = PluginDir::with(&["spinner"]);
    dir.add_file("spinner.toml", b"[tools.sleep]\ntask_support = \"optional\"\n");
    dir
}

fn start(dir: PluginDir, args: &[&str], capabilities: Value) -> StdioServer {
    let mut server = StdioServer::start_with_args(dir, args);
    server.initialize(capabilities);
    server
}

/// The server still answers a plain tool call.
fn still_serves(server: &mut StdioServer) {
    let result = server.call_tool("sleep", json!({"ms": 1})).result().clone();
    assert_eq!(single_text(&result), "slept 1 ms");
}

#[track_caller]
fn assert_names(message: &str, needles: &[&str]) {
    for needle in needles {
        assert!(message.contains(needle), "{message:?} should mention {needle:?}");
    }
}

#[test]
fn a_stdio_line_over_the_message_limit_is_refused_and_reading_resumes_at_the_next_line() {
    let mut server = start(spinner_dir(), &["--max-message-bytes", "4096"], json!({}));
    // Far over the limit: the server must skip it, not hold it.
    let huge = json!({"jsonrpc": "2.0", "id": 900, "method": "ping", "params": {"pad": "x".repeat(8 << 20)}});
    server.send_raw(&huge.to_string());
    let refused = server.wait_null_id_error();
    assert_eq!(refused["error"]["code"], -32600);
    assert_names(
        refused["error"]["message"].as_str().unwrap(),
        &[
            "larger than the limit of 4096 bytes",
            "--max-message-bytes",
            "max_message_bytes",
        ],
    );
    // Just under the limit still goes through.
    let fits = server
        .request(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 1}, "_meta": {"pad": "y".repeat(3500)}}),
        )
        .result()
        .clone();
    tool_ok(&fits);
    still_serves(&mut server);
    assert!(
        !server.has_response_for(&json!(900)),
        "the oversized request must not be answered as if it had been read"
    );
    server.shutdown();
}

#[test]
fn the_message_limit_comes_from_the_config_file_too_and_bounds_http_bodies() {
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), "[server]\nmax_message_bytes = 2048\n").unwrap();
    let server = HttpServer::start(spinner_dir(), &["--config", config.path().to_str().unwrap()]);
    let mut client = server.session(json!({}));
    let big = json!({"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"pad": "x".repeat(4096)}});
    let refused = client.post(&big);
    assert_eq!(refused.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_names(
        &error_body(refused),
        &[
            "larger than the limit of 2048 bytes",
            "--max-message-bytes",
            "max_message_bytes",
        ],
    );
    let after = client.call_tool("sleep", json!({"ms": 1}));
    assert_eq!(single_text(after.result()), "slept 1 ms");
}

#[test]
fn requests_over_the_pending_limit_are_refused_until_some_finish() {
    let dir = PluginDir::with(&["probe", "spinner"]);
    let mut server = start(dir, &["--max-pending-requests", "2"], json!({"roots": {}}));
    // Each list_roots call waits for the client to answer roots/list: two in flight.
    let first = server.start_request("tools/call", json!({"name": "list_roots", "arguments": {}}));
    let second = server.start_request("tools/call", json!({"name": "list_roots", "arguments": {}}));
    let asked = [
        server.wait_for_client_request("roots/list"),
        server.wait_for_client_request("roots/list"),
    ];
    let refused = server
        .call_tool("sleep", json!({"ms": 1}))
        .expect_error_code(SERVER_ERROR);
    assert_names(
        &refused.message,
        &[
            "Too many requests in flight",
            "2",
            "--max-pending-requests",
            "max_pending_requests",
        ],
    );
    // Requests answered at once are not held back by the limit.
    assert!(!server.request("ping", json!({})).is_error());
    for request in &asked {
        server.respond(&request["id"], json!({"roots": []}));
    }
    for id in [first, second] {
        tool_ok(server.wait_response(&id, "tools/call").result());
    }
    still_serves(&mut server);
    server.shutdown();
}

#[test]
fn tasks_over_the_per_session_limit_are_refused_and_plain_calls_go_on() {
    let mut server = start(spinner_dir(), &["--max-tasks", "2"], json!({}));
    let task = |ms: u64| json!({"name": "sleep", "arguments": {"ms": ms}, "task": {"ttl": 60_000}});
    let mut ids = HashSet::new();
    for _ in 0..2 {
        let created = server.request("tools/call", task(600_000)).result().clone();
        ids.insert(created["task"]["taskId"].as_str().unwrap().to_owned());
    }
    let refused = server.request("tools/call", task(1)).expect_error_code(SERVER_ERROR);
    assert_names(&refused.message, &["Too many tasks", "2", "--max-tasks", "max_tasks"]);
    still_serves(&mut server);
    let listed = server.request("tasks/list", json!({})).result().clone();
    let listed: HashSet<String> = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["taskId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, ids, "the refused task was never created");
    for id in &ids {
        server.request("tasks/cancel", json!({"taskId": id})).result();
    }
    server.shutdown();
}

#[test]
fn subscriptions_over_the_per_session_limit_are_refused_until_one_is_dropped() {
    let mut server = start(spinner_dir(), &["--max-subscriptions", "2"], json!({}));
    let subscribe = |server: &mut StdioServer, uri: &str| server.request("resources/subscribe", json!({"uri": uri}));
    assert!(!subscribe(&mut server, "spinner://misbehave/a").is_error());
    assert!(!subscribe(&mut server, "spinner://misbehave/b").is_error());
    assert!(
        !subscribe(&mut server, "spinner://misbehave/a").is_error(),
        "a held URI again is fine"
    );
    let refused = subscribe(&mut server, "spinner://misbehave/c").expect_error_code(SERVER_ERROR);
    assert_names(
        &refused.message,
        &[
            "Too many subscriptions",
            "2",
            "--max-subscriptions",
            "max_subscriptions",
        ],
    );
    assert!(
        !server
            .request("resources/unsubscribe", json!({"uri": "spinner://misbehave/a"}))
            .is_error()
    );
    assert!(!subscribe(&mut server, "spinner://misbehave/c").is_error());
    still_serves(&mut server);
    server.shutdown();
}

/// Reads log messages of `plugin` until those forwarded plus those the
/// drop summaries count reach `expected`; returns (forwarded, summaries).
fn read_logs_until_accounted(server: &mut StdioServer, plugin: &str, expected: u64) -> (Vec<String>, Vec<String>) {
    let mut forwarded = Vec::new();
    let mut summaries = Vec::new();
    let mut dropped = 0;
    while forwarded.len() as u64 + dropped < expected {
        let log = server.wait_for_notification("a log message of the plugin", |n| {
            n["method"] == "notifications/message" && n["params"]["logger"] == plugin
        });
        let text = log["params"]["data"].as_str().unwrap().to_owned();
        match text.split_once(" log message(s) from plugin ") {
            Some((count, _)) => {
                dropped += count.parse::<u64>().unwrap();
                assert_eq!(log["params"]["level"], "warning");
                summaries.push(text);
            }
            None => forwarded.push(text),
        }
    }
    assert_eq!(
        forwarded.len() as u64 + dropped,
        expected,
        "forwarded {forwarded:?}, summaries {summaries:?}"
    );
    (forwarded, summaries)
}

#[test]
fn a_plugin_over_its_log_rate_has_the_excess_dropped_and_counted_in_one_summary() {
    let dir = PluginDir::with(&["probe", "spinner"]);
    let mut server = start(dir, &["--max-log-rate", "5"], json!({}));
    let result = server.call_tool("log_many", json!({"count": 300})).result().clone();
    assert_eq!(single_text(&result), "logged 300 messages");
    let (forwarded, summaries) = read_logs_until_accounted(&mut server, "probe", 300);
    assert!(!summaries.is_empty(), "300 messages at 5 per second cannot all pass");
    assert!(forwarded.len() < 300);
    for summary in &summaries {
        assert_names(summary, &["limit of 5 per second", "--max-log-rate", "max_log_rate"]);
    }
    // Messages keep their order: the first ones pass.
    assert_eq!(forwarded[0], "message 1");

    // Captured stdout and stderr lines are plugin logs too.
    let text: Vec<String> = (1..=100).map(|n| format!("line {n}")).collect();
    let printed = server
        .call_tool("print", json!({"text": text.join("\n")}))
        .result()
        .clone();
    assert_eq!(texts(&printed), ["printed"]);
    let (_, summaries) = read_logs_until_accounted(&mut server, "spinner", 200);
    assert!(!summaries.is_empty(), "200 lines at 5 per second cannot all pass");
    still_serves(&mut server);
    server.shutdown();
}

#[test]
fn output_over_the_limit_is_refused_naming_how_to_raise_it_for_calls_and_tasks() {
    let dir = PluginDir::with(&["spinner"]);
    dir.add_file("spinner.toml", b"[tools.big_output]\ntask_support = \"optional\"\n");
    let mut server = start(dir, &["--max-output-kib", "16"], json!({}));
    let direct = server.call_tool("big_output", json!({"kb": 64})).result().clone();
    assert!(is_tool_error(&direct));
    let hint = [
        "output exceeded the limit of 16384 bytes",
        "--max-output-kib",
        "max_output_kib",
    ];
    assert_names(&texts(&direct).join(" "), &hint);
    let created = server
        .request(
            "tools/call",
            json!({"name": "big_output", "arguments": {"kb": 64}, "task": {}}),
        )
        .result()
        .clone();
    let task_id = created["task"]["taskId"].clone();
    let result = server
        .request("tasks/result", json!({"taskId": task_id}))
        .result()
        .clone();
    assert!(is_tool_error(&result), "a task's output is bounded too: {result}");
    assert_names(&texts(&result).join(" "), &hint);
    let read = server
        .request("resources/read", json!({"uri": "spinner://misbehave/big"}))
        .expect_error_code(-32603);
    assert_names(&read.message, &hint);
    let fits = server.call_tool("big_output", json!({"kb": 8})).result().clone();
    tool_ok(&fits);
    server.shutdown();
}

#[test]
fn a_bound_of_zero_or_a_negative_grace_stops_the_start_naming_the_setting() {
    let dir = PluginDir::with(&["spinner"]);
    let cases = [
        ("--max-message-bytes", "0", "max_message_bytes"),
        ("--max-pending-requests", "0", "max_pending_requests"),
        ("--max-tasks", "0", "max_tasks"),
        ("--max-log-rate", "0", "max_log_rate"),
        ("--max-subscriptions", "0", "max_subscriptions"),
        ("--shutdown-grace", "-1", "shutdown_grace_secs"),
    ];
    for (flag, value, named) in cases {
        let output = std::process::Command::new(wasm_mcp_tests::binary())
            .args(["serve", "--plugins"])
            .arg(dir.path())
            .arg(format!("{flag}={value}"))
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run wasm-mcp");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{flag} {value} must stop the start");
        assert!(
            stderr.contains(named),
            "{flag} {value}: the error names {named:?}: {stderr}"
        );
        assert!(output.stdout.is_empty(), "nothing on stdout: {:?}", output.stdout);
    }
}

/// A client that keeps sending but never reads cannot make the server queue
/// answers without end: once `--max-pending-requests` answers wait to be
/// written, the server stops reading stdin (the client's writes block) until
/// the client reads again; then every request is answered.
#[test]
fn a_client_that_does_not_read_its_answers_is_held_back_not_queued_for() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    const PINGS: usize = 50_000;
    let dir = PluginDir::empty();
    let mut child = Command::new(wasm_mcp_tests::binary())
        .args(["serve", "--no-watch", "--max-pending-requests", "16", "--plugins"])
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start wasm-mcp");
    let mut stdin = child.stdin.take().unwrap();
    let written = Arc::new(AtomicUsize::new(0));
    let sender = {
        let written = written.clone();
        std::thread::spawn(move || {
            for id in 0..PINGS {
                let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n");
                stdin
                    .write_all(line.as_bytes())
                    .expect("the server reads again once answers are read");
                written.fetch_add(1, Ordering::Relaxed);
            }
            stdin
        })
    };

    // Wait until the client's writes stop making progress (or all went through).
    let mut last = usize::MAX;
    let mut still_since = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let now = written.load(Ordering::Relaxed);
        if now == PINGS {
            break;
        }
        if now != last {
            last = now;
            still_since = Instant::now();
        } else if still_since.elapsed() > Duration::from_secs(1) {
            break;
        }
    }
    let held_at = written.load(Ordering::Relaxed);
    assert!(
        held_at < PINGS,
        "the server read all {PINGS} requests while none of its answers were read"
    );

    // Reading the answers lets the client go on, and every ping is answered once.
    let mut answered = vec![false; PINGS];
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    for _ in 0..PINGS {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the server stopped answering");
        let answer: Value = serde_json::from_str(&line).unwrap();
        let id = answer["id"].as_u64().unwrap() as usize;
        assert!(answer.get("result").is_some(), "{answer}");
        assert!(!std::mem::replace(&mut answered[id], true), "ping {id} answered twice");
    }
    drop(sender.join().unwrap());
    assert!(child.wait().unwrap().success());
    eprintln!("the client was held after {held_at} of {PINGS} requests");
}
