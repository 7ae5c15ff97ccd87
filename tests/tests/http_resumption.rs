//! Streamable HTTP resumption: SSE event ids name the stream and the
//! position in it, and a GET with `Last-Event-ID` delivers what a dropped
//! connection missed — after the client dropped it, or after the server
//! closed it mid-call under the polling policy (`--sse-poll-after`), up to
//! and including the response.

use reqwest::StatusCode;
use serde_json::{Value, json};
use wasm_mcp_tests::PluginDir;
use wasm_mcp_tests::http::{Event, HttpServer, McpClient, check_message};

/// (stream, seq) of an event id `<stream>-<seq>`.
fn position(event: &Event) -> (u64, u64) {
    let id = event.id.as_deref().expect("every event has an id");
    let (stream, seq) = id.split_once('-').expect("ids are <stream>-<seq>");
    (stream.parse().unwrap(), seq.parse().unwrap())
}

/// Resumes `last_event_id` with GET until the response to request `id`
/// arrives; returns every event read, checking each message.
fn resume_to_response(client: &McpClient, mut last_event_id: String, id: i64) -> Vec<Event> {
    let mut events = Vec::new();
    for _ in 0..1000 {
        let mut sse = client.get_stream(Some(&last_event_id));
        while let Some(event) = sse.next_event() {
            if let Some(next) = &event.id {
                last_event_id = next.clone();
            }
            let message = event.message();
            events.push(event);
            if let Some(message) = message {
                let response = message.get("method").is_none();
                check_message(&message, response.then_some("tools/call"));
                if response {
                    assert_eq!(message["id"], id);
                    assert!(sse.next_event().is_none(), "the stream goes on after the response");
                    return events;
                }
            }
        }
    }
    panic!("no response after 1000 reconnections; read {events:?}");
}

/// The messages of `events` in order, checking their ids are on one stream
/// and strictly increasing (so nothing was delivered twice).
fn messages_in_order(events: &[Event]) -> Vec<Value> {
    let mut last: Option<(u64, u64)> = None;
    let mut messages = Vec::new();
    for event in events.iter().filter(|e| !e.data.is_empty()) {
        let at = position(event);
        if let Some((stream, seq)) = last {
            assert_eq!(at.0, stream, "an event from another stream: {events:?}");
            assert!(at.1 > seq, "event {at:?} after {seq}: {events:?}");
        }
        last = Some(at);
        messages.push(event.message().unwrap());
    }
    messages
}

#[test]
fn the_server_closes_a_long_call_and_the_client_polls_for_the_rest() {
    let server = HttpServer::start(
        PluginDir::with(&["conformance"]),
        &["--sse-poll-after", "60", "--sse-retry", "25"],
    );
    let mut client = server.session(json!({}));
    client.request("logging/setLevel", json!({"level": "debug"}));
    // The tool logs three times, 50 ms apart: longer than the server keeps the POST open.
    let (id, post) = client.start("tools/call", json!({"name": "test_tool_with_logging", "arguments": {}}));
    let first = post.rest();
    let priming = &first[0];
    assert!(
        priming.id.is_some() && priming.data.is_empty() && priming.retry == Some(25),
        "{priming:?}"
    );
    let closing = first.last().unwrap();
    assert!(
        closing.retry == Some(25) && closing.data.is_empty(),
        "the POST stream should end with a retry field: {first:?}"
    );
    assert!(
        first
            .iter()
            .filter_map(Event::message)
            .all(|m| m.get("method").is_some()),
        "the response came before the deadline: {first:?}"
    );
    let last_id = first.iter().rev().find_map(|e| e.id.clone()).unwrap();
    let rest = resume_to_response(&client, last_id, id);

    let all: Vec<Event> = first.into_iter().chain(rest).collect();
    let messages = messages_in_order(&all);
    let logs = messages
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .count();
    assert_eq!(logs, 3, "every log arrives exactly once: {messages:?}");
    assert_eq!(messages.last().unwrap()["id"], id);
}

#[test]
fn a_dropped_post_connection_is_resumed_with_what_it_missed() {
    let server = HttpServer::start(PluginDir::with(&["conformance"]), &[]);
    let mut client = server.session(json!({}));
    let (id, mut post) = client.start(
        "tools/call",
        json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": 7}}),
    );
    let priming = post.next_event().unwrap();
    assert!(priming.data.is_empty());
    let first = post.next_event().unwrap();
    assert_eq!(first.message().unwrap()["params"]["progress"], 0.0, "{first:?}");
    // The client loses the connection after the first progress notification.
    let first_id = first.id.unwrap();
    drop(post);
    let rest = resume_to_response(&client, first_id, id);
    let messages = messages_in_order(&rest);
    let progress: Vec<f64> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(progress, [50.0, 100.0], "the missed progress, once each: {messages:?}");
    assert_eq!(messages.last().unwrap()["id"], id, "then the response");
}

#[test]
fn a_dropped_call_is_not_cancelled_and_its_response_waits_for_the_client() {
    let server = HttpServer::start(PluginDir::with(&["spinner"]), &[]);
    let mut client = server.session(json!({}));
    let (id, mut post) = client.start("tools/call", json!({"name": "sleep", "arguments": {"ms": 300}}));
    let priming = post.next_event().unwrap();
    drop(post);
    std::thread::sleep(std::time::Duration::from_millis(600));
    let events = resume_to_response(&client, priming.id.unwrap(), id);
    let response = events.iter().rev().find_map(Event::message).unwrap();
    assert_eq!(response["result"]["content"][0]["text"], "slept 300 ms");
    // Resuming at the end finds nothing more: the stream ends at once.
    let end = client.get_stream(events.last().unwrap().id.as_deref());
    assert!(end.rest().iter().all(|e| e.data.is_empty()));
}

#[test]
fn the_standalone_stream_resumes_after_a_drop() {
    let server = HttpServer::start(PluginDir::with(&["probe"]), &[]);
    let mut client = server.session(json!({}));
    client.request("resources/subscribe", json!({"uri": "test://watched"}));
    let mut stream = client.get_stream(None);
    let priming = stream.next_event().unwrap();
    assert!(priming.data.is_empty() && priming.id.is_some());
    client.call_tool("announce", json!({"uri": "test://watched"}));
    let event = stream.next_event().unwrap();
    assert_eq!(event.message().unwrap()["method"], "notifications/resources/updated");
    assert_eq!(position(&event).0, 0, "the standalone stream is stream 0");
    drop(stream);
    // Two updates while no GET is open, then a resumption.
    client.call_tool("announce", json!({"uri": "test://watched"}));
    client.call_tool("announce", json!({"uri": "test://watched"}));
    let mut resumed = client.get_stream(event.id.as_deref());
    let mut missed = Vec::new();
    while missed.len() < 2 {
        let next = resumed.next_event().unwrap();
        if !next.data.is_empty() {
            missed.push(next);
        }
    }
    let messages = messages_in_order(&[vec![event], missed].concat());
    assert!(
        messages
            .iter()
            .all(|m| m["method"] == "notifications/resources/updated")
    );
}

#[test]
fn unknown_event_ids_are_refused() {
    let server = HttpServer::start(PluginDir::with(&["conformance"]), &[]);
    let client = server.session(json!({}));
    for bad in ["nonsense", "99-1"] {
        let response = client.get(Some(bad));
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{bad}");
    }
}
