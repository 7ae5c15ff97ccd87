//! Streamable HTTP: the session lifecycle and the shape of every exchange —
//! session ids, the headers the transport requires, SSE or JSON answers,
//! notifications and server → client requests on the stream of the request
//! they belong to, and DELETE ending (and freeing) a session.

use reqwest::StatusCode;
use serde_json::{Value, json};
use wasm_mcp_tests::PluginDir;
use wasm_mcp_tests::http::{HttpServer, McpClient, Sse, error_body, read_all};

fn conformance_server() -> HttpServer {
    HttpServer::start(PluginDir::with(&["conformance"]), &[])
}

fn ping(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

#[test]
fn initialize_issues_an_unguessable_session_id_that_is_required_afterwards() {
    let server = conformance_server();
    let mut first = server.client();
    let result = first.initialize(json!({}));
    assert_eq!(result["protocolVersion"], "2025-11-25");
    let mut second = server.client();
    second.initialize(json!({}));
    for id in [&first.session, &second.session] {
        let id = id.as_deref().unwrap();
        assert!(
            id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit()),
            "session id {id:?}"
        );
    }
    assert_ne!(first.session, second.session);

    // Without the header: 400. With an unknown id: 404.
    let anonymous = McpClient::new(&server.url);
    let response = anonymous.post(&ping(2));
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(error_body(response).contains("Mcp-Session-Id"));
    let mut stranger = McpClient::new(&server.url);
    stranger.session = Some("0123456789abcdef0123456789abcdef".into());
    assert_eq!(stranger.post(&ping(2)).status(), StatusCode::NOT_FOUND);
    assert_eq!(stranger.get(None).status(), StatusCode::NOT_FOUND);
    assert_eq!(anonymous.get(None).status(), StatusCode::BAD_REQUEST);

    // A second initialize in the session is a JSON-RPC error, not a new session.
    let again = first.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
    );
    assert!(again.response.get("error").is_some(), "{}", again.response);
}

#[test]
fn a_failed_initialize_issues_no_session() {
    let server = conformance_server();
    let client = server.client();
    let response = client.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}));
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().get("mcp-session-id").is_none());
    let answer: Value = serde_json::from_str(&response.text().unwrap()).unwrap();
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
}

#[test]
fn requests_get_a_primed_sse_stream_and_notifications_get_202() {
    let server = conformance_server();
    let mut client = server.session(json!({}));
    let exchange = client.request(
        "tools/call",
        json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "tok"}}),
    );
    // A priming event first: an id, the retry delay, and empty data.
    let priming = &exchange.events[0];
    assert!(
        priming.id.is_some() && priming.retry.is_some() && priming.data.is_empty(),
        "{priming:?}"
    );
    // Then the progress of this request, then its response.
    let progress: Vec<f64> = exchange
        .notifications("notifications/progress")
        .iter()
        .map(|n| {
            assert_eq!(n["params"]["progressToken"], "tok");
            n["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(progress, [0.0, 50.0, 100.0]);
    assert!(exchange.result()["content"][0]["text"].is_string());
    // Every event has an id of its own.
    let mut ids: Vec<&str> = exchange.events.iter().map(|e| e.id.as_deref().unwrap()).collect();
    ids.dedup();
    assert_eq!(ids.len(), exchange.events.len());
}

#[test]
fn logs_go_on_the_stream_of_the_request_that_made_them() {
    let server = conformance_server();
    let mut client = server.session(json!({}));
    client.request("logging/setLevel", json!({"level": "debug"}));
    let exchange = client.call_tool("test_tool_with_logging", json!({}));
    let logs = exchange.notifications("notifications/message");
    assert_eq!(logs.len(), 3, "{:?}", exchange.messages);
}

#[test]
fn sampling_and_elicitation_travel_on_the_request_stream_and_answers_come_back_by_post() {
    let server = conformance_server();
    let mut client = server.session(json!({"sampling": {}, "elicitation": {}}));
    let exchange = client.request_with(
        "tools/call",
        json!({"name": "test_sampling", "arguments": {"prompt": "Say hi"}}),
        |method, params| {
            assert_eq!(method, "sampling/createMessage");
            assert_eq!(params["messages"][0]["content"]["text"], "Say hi");
            json!({"role": "assistant", "content": {"type": "text", "text": "hi there"}, "model": "m", "stopReason": "endTurn"})
        },
    );
    assert_eq!(exchange.result()["content"][0]["text"], "LLM response: hi there");
    let exchange = client.request_with(
        "tools/call",
        json!({"name": "test_elicitation", "arguments": {"message": "Who?"}}),
        |method, params| {
            assert_eq!(method, "elicitation/create");
            assert_eq!(params["message"], "Who?");
            json!({"action": "decline"})
        },
    );
    assert!(
        exchange.result()["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("action=decline")
    );
}

#[test]
fn a_client_that_accepts_only_json_gets_json() {
    let server = conformance_server();
    let client = server.session(json!({}));
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "test_simple_text", "arguments": {}}});
    let response = client.post_with(&[("accept", "application/json")], call.to_string());
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "application/json");
    let answer: Value = serde_json::from_str(&response.text().unwrap()).unwrap();
    wasm_mcp_tests::http::check_message(&answer, Some("tools/call"));
    assert_eq!(answer["id"], 9);
    let refused = client.post_with(&[("accept", "text/html")], ping(3).to_string());
    assert_eq!(refused.status(), StatusCode::NOT_ACCEPTABLE);
}

#[test]
fn malformed_posts_are_refused_with_a_reason() {
    let server = HttpServer::start(PluginDir::with(&["conformance"]), &["--max-body-bytes", "1024"]);
    let client = server.session(json!({}));
    let send = |content_type: &str, body: String| client.post_with(&[("content-type", content_type)], body);
    // The JSON-RPC codes are those stdio answers with: -32700 for a body that is not JSON,
    // -32600 for JSON that is not one message.
    for (body, code) in [
        ("{not json".to_string(), -32700),
        (json!([ping(1), ping(2)]).to_string(), -32600),
    ] {
        let refused = send("application/json", body.clone());
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
        let error: Value = serde_json::from_str(&refused.text().unwrap()).unwrap();
        assert_eq!(error["error"]["code"], code, "{error} for {body}");
        assert!(error.get("id").is_none(), "{error}");
    }
    let not_json = send("application/json", "{not json".into());
    assert!(error_body(not_json).contains("Parse error"));
    assert_eq!(
        send("text/plain", ping(1).to_string()).status(),
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x".repeat(2000)}});
    assert_eq!(
        send("application/json", big.to_string()).status(),
        StatusCode::PAYLOAD_TOO_LARGE
    );
    let version = client.post_with(&[("mcp-protocol-version", "2099-01-01")], ping(4).to_string());
    assert_eq!(version.status(), StatusCode::BAD_REQUEST);
    assert!(error_body(version).contains("MCP-Protocol-Version"));
    // None of it harmed the session.
    assert_eq!(client.post(&ping(5)).status(), StatusCode::OK);
}

#[test]
fn an_absent_protocol_version_header_means_2025_03_26_and_is_accepted() {
    let server = conformance_server();
    let client = server.session(json!({}));
    let response = client.post_with(&[("mcp-protocol-version", "")], ping(7).to_string());
    assert_eq!(response.status(), StatusCode::OK);
    let events = Sse::new(response).rest();
    assert!(events.iter().any(|e| e.message().is_some_and(|m| m["id"] == 7)));
}

#[test]
fn delete_ends_the_session_and_frees_it() {
    let mut server = conformance_server();
    let mut client = server.session(json!({}));
    let standalone = client.get(None);
    assert_eq!(standalone.status(), StatusCode::OK);
    let session = client.session.clone().unwrap();
    let response = client.delete();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    // The open stream ends, later requests are told the session is gone.
    read_all(standalone);
    assert_eq!(client.post(&ping(2)).status(), StatusCode::NOT_FOUND);
    assert_eq!(client.get(None).status(), StatusCode::NOT_FOUND);
    assert_eq!(client.delete().status(), StatusCode::NOT_FOUND);
    // The session itself is dropped, with everything it held.
    server.wait_for_stderr("the deleted session to be freed", |log| {
        log.lines()
            .any(|l| l.contains("HTTP session freed") && l.contains(&session))
    });
    // A new session works as before.
    client.session = None;
    client.initialize(json!({}));
    client.call_tool("test_simple_text", json!({}));
}
