//! Graceful shutdown, over stdio (stdin closing, SIGTERM, SIGINT) and HTTP
//! (SIGTERM): new requests are refused, running calls get the shutdown grace
//! to finish and their responses are delivered; calls still running after it
//! are stopped and answered with an error saying why; tasks still running end
//! as cancelled with a status message saying the server is shutting down,
//! and the client is told; a 2026-07-28 `subscriptions/listen` stream is
//! answered with a completion result carrying only the subscription's id
//! (and the server's identity); the exit code is 0.
//!
//! Behavioural only: waits are bounded by the harness timeout, and the grace
//! is either far longer than the calls that must finish or far shorter than
//! the calls that must be stopped.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasm_mcp_tests::expect::single_text;
use wasm_mcp_tests::{NO_LIMITS, PluginDir, StdioServer};

use wasm_mcp_tests::http::{HttpServer, check_message, read_until};

/// The JSON-RPC code of a request refused or stopped by the server.
const SERVER_ERROR: i64 = -32000;

/// The spinner with `sleep` and `spin` task-capable.
fn spinner_dir() -> PluginDir {
    let dir = PluginDir::with(&["spinner"]);
    dir.add_file(
        "spinner.toml",
        b"[tools.sleep]\ntask_support = \"optional\"\n\n[tools.spin]\ntask_support = \"optional\"\n",
    );
    dir
}

fn spinner_server(grace: &str) -> StdioServer {
    let mut args = vec!["--shutdown-grace", grace];
    args.extend(NO_LIMITS);
    let mut server = StdioServer::start_with_args(spinner_dir(), &args);
    server.initialize(json!({}));
    server
}

/// What starts the shutdown.
#[derive(Debug, Clone, Copy)]
enum Trigger {
    StdinClosed,
    Signal(&'static str),
}

impl Trigger {
    fn fire(self, server: &mut StdioServer) {
        match self {
            Trigger::StdinClosed => server.close_stdin(),
            Trigger::Signal(signal) => server.send_signal(signal),
        }
    }

    /// The server exits, with status 0.
    fn assert_clean_exit(self, server: &mut StdioServer) {
        let status = server.wait_for_exit(&format!("{self:?}"));
        assert!(
            status.success(),
            "{self:?}: exit {status}; stderr:\n{}",
            server.stderr()
        );
    }
}

/// Sends a request, then a ping: once the ping is answered, the request is
/// running (the server reads in order). Returns the request's id.
fn start_running(server: &mut StdioServer, method: &str, params: Value) -> Value {
    let id = server.start_request(method, params);
    assert!(!server.request("ping", json!({})).is_error());
    id
}

/// Starts `sleep` for `ms` as a task; returns its id.
fn start_sleep_task(server: &mut StdioServer, ms: u64) -> Value {
    let created = server
        .request(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": ms}, "task": {"ttl": 3_600_000}}),
        )
        .result()
        .clone();
    created["task"]["taskId"].clone()
}

#[track_caller]
fn assert_says_shutting_down(message: &str) {
    assert!(message.contains("the server is shutting down"), "{message:?}");
}

#[test]
fn running_calls_finish_within_the_grace_and_their_responses_are_delivered() {
    for trigger in [Trigger::StdinClosed, Trigger::Signal("TERM"), Trigger::Signal("INT")] {
        let mut server = spinner_server("600");
        let call = start_running(
            &mut server,
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 1500}}),
        );
        let task = start_sleep_task(&mut server, 1500);
        trigger.fire(&mut server);
        if let Trigger::Signal(_) = trigger {
            server.wait_for_stderr("the signal to be seen", |log| log.contains("signal received"));
            // stdin is still open: new work is refused, task polling is not.
            let refused = server
                .call_tool("sleep", json!({"ms": 1}))
                .expect_error_code(SERVER_ERROR);
            assert!(
                refused.message.contains("shutting down"),
                "{trigger:?}: {}",
                refused.message
            );
            let status = server.request("tasks/get", json!({"taskId": task})).result().clone();
            assert_eq!(status["status"], "working", "{trigger:?}");
        }
        let done = server.wait_response(&call, "tools/call");
        assert_eq!(single_text(done.result()), "slept 1500 ms", "{trigger:?}");
        server.wait_for_notification("the task completed", |n| {
            n["method"] == "notifications/tasks/status"
                && n["params"]["taskId"] == task
                && n["params"]["status"] == "completed"
        });
        trigger.assert_clean_exit(&mut server);
    }
}

#[test]
fn calls_still_running_after_the_grace_are_stopped_with_an_error_and_tasks_end_cancelled() {
    for trigger in [Trigger::StdinClosed, Trigger::Signal("TERM")] {
        let mut server = spinner_server("0.5");
        let task = start_sleep_task(&mut server, 3_600_000);
        let spinning = start_running(&mut server, "tools/call", json!({"name": "spin", "arguments": {}}));
        trigger.fire(&mut server);
        let stopped = server
            .wait_response(&spinning, "tools/call")
            .expect_error_code(SERVER_ERROR);
        assert!(
            stopped.message.contains("stopped before it finished"),
            "{}",
            stopped.message
        );
        assert_says_shutting_down(&stopped.message);
        let cancelled = server.wait_for_notification("the task's status: cancelled", |n| {
            n["method"] == "notifications/tasks/status" && n["params"]["taskId"] == task
        });
        assert_eq!(cancelled["params"]["status"], "cancelled", "{trigger:?}");
        assert_says_shutting_down(cancelled["params"]["statusMessage"].as_str().unwrap());
        trigger.assert_clean_exit(&mut server);
    }
}

#[test]
fn over_http_a_signal_lets_calls_finish_cancels_the_tasks_left_and_exits_zero() {
    let mut server = HttpServer::start(spinner_dir(), &["--shutdown-grace", "3"]);
    let mut client = server.session(json!({}));
    let mut standalone = client.get_stream(None);
    let created = client.request(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 3_600_000}, "task": {"ttl": 3_600_000}}),
    );
    let task = created.result()["task"]["taskId"].clone();
    let (call, mut stream) = client.start("tools/call", json!({"name": "sleep", "arguments": {"ms": 1000}}));
    server.send_signal("TERM");
    server.wait_for_stderr("the signal to be seen", |log| log.contains("signal received"));
    let response = loop {
        let event = stream.next_event().expect("the call's stream ends with its response");
        if let Some(message) = event.message().filter(|m| m.get("method").is_none()) {
            break message;
        }
    };
    check_message(&response, Some("tools/call"));
    assert_eq!(response["id"], call);
    assert_eq!(single_text(&response["result"]), "slept 1000 ms");
    let (_, cancelled) = read_until(&mut standalone, "the task's status: cancelled", |m| {
        m["method"] == "notifications/tasks/status" && m["params"]["taskId"] == task
    });
    assert_eq!(cancelled["params"]["status"], "cancelled");
    assert_says_shutting_down(cancelled["params"]["statusMessage"].as_str().unwrap());
    let status = server.wait_for_exit();
    assert!(status.success(), "exit {status}; stderr:\n{}", server.stderr());
}

#[test]
fn over_http_a_shutdown_ends_within_the_grace_whatever_connections_clients_hold() {
    const GRACE: Duration = Duration::from_secs(2);
    let mut server = HttpServer::start(spinner_dir(), &["--shutdown-grace", "2"]);
    let head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                Accept: application/json, text/event-stream\r\n";
    // Held open: nothing sent, part of a head, a head and part of its body,
    // and a kept-alive connection after a complete (refused) request.
    let silent = server.connect();
    let mut half_open = server.connect();
    half_open.write_all(head.as_bytes()).unwrap();
    let mut dripping = server.connect();
    dripping
        .write_all(format!("{head}Content-Length: 1000\r\n\r\n{{").as_bytes())
        .unwrap();
    let mut kept_alive = server.connect();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    kept_alive
        .write_all(format!("{head}Content-Length: {}\r\n\r\n{ping}", ping.len()).as_bytes())
        .unwrap();
    let mut answer = [0u8; 12];
    kept_alive.read_exact(&mut answer).unwrap();
    assert_eq!(
        &answer, b"HTTP/1.1 400",
        "the kept-alive connection's request is answered"
    );
    // SSE: the standalone stream, a call that finishes within the grace and one that does not.
    let mut client = server.session(json!({}));
    let _standalone = client.get_stream(None);
    let (quick, mut quick_stream) = client.start("tools/call", json!({"name": "sleep", "arguments": {"ms": 1000}}));
    let (slow, mut slow_stream) = client.start("tools/call", json!({"name": "sleep", "arguments": {"ms": 600_000}}));
    let signalled = Instant::now();
    server.send_signal("TERM");
    // The connections with no response to wait for close at once, while the calls still run.
    for (what, mut stream) in [
        ("silent", &silent),
        ("half-open", &half_open),
        ("dripping", &dripping),
        ("kept-alive", &kept_alive),
    ] {
        stream.set_read_timeout(Some(GRACE * 5)).unwrap();
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest);
        let closed_after = signalled.elapsed();
        assert!(
            closed_after < GRACE * 5,
            "the {what} connection is still open {closed_after:?} after the signal"
        );
        eprintln!("the {what} connection closed {closed_after:?} after the signal");
    }
    assert!(
        server.exit_within(Duration::ZERO).is_none(),
        "the connections closed before the server stopped"
    );
    let response = |stream: &mut wasm_mcp_tests::http::Sse| loop {
        let event = stream.next_event().expect("the call's stream ends with its response");
        if let Some(message) = event.message().filter(|m| m.get("method").is_none()) {
            break message;
        }
    };
    let quick_response = response(&mut quick_stream);
    assert_eq!(quick_response["id"], quick);
    assert_eq!(single_text(&quick_response["result"]), "slept 1000 ms");
    let slow_response = response(&mut slow_stream);
    assert_eq!(slow_response["id"], slow);
    assert_eq!(slow_response["error"]["code"], SERVER_ERROR, "{slow_response}");
    assert_says_shutting_down(slow_response["error"]["message"].as_str().unwrap());
    let status = server
        .exit_within(GRACE + Duration::from_secs(8))
        .unwrap_or_else(|| panic!("still running {:?} after the signal", signalled.elapsed()));
    let took = signalled.elapsed();
    assert!(status.success(), "exit {status}; stderr:\n{}", server.stderr());
    eprintln!("exited {took:?} after the signal, with a {GRACE:?} grace");
    drop((silent, half_open, dripping, kept_alive));
}

#[test]
fn over_http_a_listen_stream_ends_with_a_completion_result_at_a_signal() {
    use wasm_mcp_tests::http::Sse;
    use wasm_mcp_tests::modern::{MODERN_VERSION, meta, with_meta};
    let mut server = HttpServer::start(PluginDir::with(&["conformance"]), &["--shutdown-grace", "3"]);
    let listen = json!({
        "jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
        "params": with_meta(json!({ "notifications": { "toolsListChanged": true } }), &meta(json!({}), None)),
    });
    let response = wasm_mcp_tests::http::blocking_client()
        .post(&server.url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", MODERN_VERSION)
        .header("Mcp-Method", "subscriptions/listen")
        .body(listen.to_string())
        .send()
        .expect("POST subscriptions/listen");
    let mut stream = Sse::new(response);
    let mut next_message = || loop {
        let event = stream.next_event().expect("the listen stream ends with its result");
        if let Some(message) = event.message() {
            break message;
        }
    };
    let ack = next_message();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    server.send_signal("TERM");
    let end = next_message();
    assert_eq!(end["id"], 7, "{end}");
    let result = end["result"].as_object().unwrap_or_else(|| panic!("a result: {end}"));
    assert_eq!(result["resultType"], "complete");
    let keys: Vec<&str> = result.keys().map(String::as_str).collect();
    assert_eq!(keys, ["_meta", "resultType"], "nothing method-specific: {end}");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);
    let status = server.wait_for_exit();
    assert!(status.success(), "exit {status}; stderr:\n{}", server.stderr());
}
