//! Cancellation: `notifications/cancelled` stops the running wasm call itself
//! (a call that never checks for cancellation stops consuming CPU), no
//! response is sent for it, and the host goes on serving.
//!
//! CPU use is read from /proc/<pid>/stat. This is a behavioural check, not a
//! speed one: the test waits (up to the harness timeout) for the process's CPU
//! time to stop growing. The host's own limits are raised out of reach so that
//! only the cancellation can stop the call.

use serde_json::{Value, json};
use wasm_mcp_tests::expect::single_text;
use wasm_mcp_tests::proc_stat::full_core;
use wasm_mcp_tests::{NO_LIMITS, PluginDir, StdioServer};

fn cancel_and_check(tool: &str) {
    let mut server = StdioServer::start_with_args(PluginDir::with(&["spinner"]), &NO_LIMITS);
    server.initialize(json!({}));
    // Idle before the call.
    server.wait_for_cpu("the idle server using little CPU", |t| t <= full_core() / 10);

    let id = server.start_request("tools/call", json!({"name": tool, "arguments": {}}));
    server.wait_for_cpu(&format!("the `{tool}` call burning CPU"), |t| t >= full_core() / 3);

    server.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "the test cancels it"}),
    );
    server.wait_for_cpu(&format!("the cancelled `{tool}` call to stop using CPU"), |t| {
        t <= full_core() / 10
    });

    // The host goes on: ping and a new call both work.
    assert_eq!(server.request("ping", Value::Null).result(), &json!({}));
    let slept = server.call_tool("sleep", json!({"ms": 1})).result().clone();
    assert_eq!(single_text(&slept), "slept 1 ms");

    // Read stdout to its end: the cancelled request never got a response.
    let status = server.close_and_wait();
    assert!(status.success(), "exit status {status}; stderr:\n{}", server.stderr());
    assert!(
        !server.has_response_for(&id),
        "a cancelled request gets no response: {:?}",
        server.all_responses()
    );
}

#[test]
fn cancelling_a_call_that_never_checks_stops_the_wasm_itself() {
    cancel_and_check("spin");
}

#[test]
fn cancelling_a_call_that_checks_is_cancelled_stops_it_without_a_response() {
    cancel_and_check("spin_checked");
}
