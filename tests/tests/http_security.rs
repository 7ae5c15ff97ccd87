//! Streamable HTTP security: DNS-rebinding protection (Origin and Host),
//! bearer-token authentication with sessions bound to the token that created
//! them, and idle session expiry.

use std::io::Write;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use wasm_mcp_tests::PluginDir;
use wasm_mcp_tests::http::{HttpServer, McpClient, error_body};

fn initialize_body() -> String {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    })
    .to_string()
}

#[test]
fn a_foreign_origin_or_host_is_refused_and_localhost_is_not() {
    let server = HttpServer::start(
        PluginDir::with(&["conformance"]),
        &["--allow-origin", "https://app.example.com"],
    );
    let client = server.client();
    let post = |headers: &[(&str, &str)]| client.post_with(headers, initialize_body());
    let evil_origin = post(&[("origin", "http://evil.example.com")]);
    assert_eq!(evil_origin.status(), StatusCode::FORBIDDEN);
    assert!(error_body(evil_origin).contains("Origin"));
    // What the conformance suite's dns-rebinding-protection scenario sends.
    let rebound = post(&[("host", "evil.example.com"), ("origin", "http://evil.example.com")]);
    assert_eq!(rebound.status(), StatusCode::FORBIDDEN);
    let evil_host = post(&[("host", "evil.example.com:80")]);
    assert_eq!(evil_host.status(), StatusCode::FORBIDDEN);
    assert!(error_body(evil_host).contains("Host"));
    // Localhost origins, and the ones allowed on the command line, pass.
    for origin in ["http://localhost:6274", "http://127.0.0.1", "https://app.example.com"] {
        let response = post(&[("origin", origin)]);
        assert_eq!(response.status(), StatusCode::OK, "{origin}");
        assert!(response.headers().contains_key("mcp-session-id"));
    }
    // The refusal covers every method, not only POST.
    let mut session = server.session(json!({}));
    let get = session
        .with_headers(wasm_mcp_tests::http::blocking_client().get(&session.url))
        .header("origin", "http://evil.example.com");
    assert_eq!(get.send().unwrap().status(), StatusCode::FORBIDDEN);
    let delete = session
        .with_headers(wasm_mcp_tests::http::blocking_client().delete(&session.url))
        .header("origin", "http://evil.example.com");
    assert_eq!(delete.send().unwrap().status(), StatusCode::FORBIDDEN);
    session.call_tool("test_simple_text", json!({}));
}

#[test]
fn bearer_tokens_are_required_and_sessions_are_bound_to_theirs() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "# one token per line\nalpha-token\n\nbeta-token").unwrap();
    let server = HttpServer::start_with_env(
        PluginDir::with(&["conformance"]),
        &["--auth-token-file", file.path().to_str().unwrap()],
        &[("WASM_MCP_AUTH_TOKEN", "gamma-token")],
    );
    let mut anonymous = server.client();
    let missing = anonymous.post_with(&[], initialize_body());
    assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
    let challenge = missing.headers()["www-authenticate"].to_str().unwrap().to_string();
    assert!(challenge.starts_with("Bearer"), "{challenge}");
    anonymous.token = Some("wrong-token".into());
    let wrong = anonymous.post_with(&[], initialize_body());
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert!(
        wrong.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("invalid_token")
    );

    // What a message is refused for is told only to a sender who is admitted.
    anonymous.token = None;
    let unparseable = anonymous.post_with(&[], "{not json".into());
    assert_eq!(unparseable.status(), StatusCode::UNAUTHORIZED);
    let not_json = anonymous.post_with(&[("content-type", "text/plain")], initialize_body());
    assert_eq!(not_json.status(), StatusCode::UNAUTHORIZED);

    let mut alpha = server.client();
    alpha.token = Some("alpha-token".into());
    let unparseable = alpha.post_with(&[], "{not json".into());
    assert_eq!(unparseable.status(), StatusCode::BAD_REQUEST);
    assert!(error_body(unparseable).contains("Parse error"));
    let not_json = alpha.post_with(&[("content-type", "text/plain")], initialize_body());
    assert_eq!(not_json.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    alpha.initialize(json!({}));
    alpha.call_tool("test_simple_text", json!({}));
    let mut gamma = server.client();
    gamma.token = Some("gamma-token".into());
    gamma.initialize(json!({}));

    // Another valid token cannot use alpha's session: to it, the session does not exist.
    let mut thief = McpClient::new(&server.url);
    thief.token = Some("beta-token".into());
    thief.session = alpha.session.clone();
    let stolen = thief.post(&json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}));
    assert_eq!(stolen.status(), StatusCode::NOT_FOUND);
    assert_eq!(thief.get(None).status(), StatusCode::NOT_FOUND);
    assert_eq!(thief.delete().status(), StatusCode::NOT_FOUND);
    // Nor can a request without a token, which is refused before that.
    thief.token = None;
    assert_eq!(thief.delete().status(), StatusCode::UNAUTHORIZED);
    alpha.call_tool("test_simple_text", json!({}));
}

#[test]
fn idle_sessions_expire() {
    let mut server = HttpServer::start(PluginDir::with(&["conformance"]), &["--session-idle-timeout", "0.5"]);
    let mut idle = server.session(json!({}));
    let mut listening = server.session(json!({}));
    // An open stream keeps a session alive however long it is quiet.
    let stream = listening.get(None);
    assert_eq!(stream.status(), StatusCode::OK);
    server.wait_for_stderr("the idle session to expire", |log| log.contains("HTTP session expired"));
    std::thread::sleep(Duration::from_millis(100));
    let gone = idle.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
    listening.call_tool("test_simple_text", json!({}));
    drop(stream);
    idle.session = None;
    idle.initialize(json!({}));
}

/// `/healthz` and `/readyz` are for load balancers and orchestrators: they
/// answer without a token (and with nothing but their state), while the MCP
/// endpoint still wants one.
#[test]
fn health_endpoints_answer_without_a_token() {
    let server = HttpServer::start_with_env(
        PluginDir::with(&["conformance"]),
        &[],
        &[("WASM_MCP_AUTH_TOKEN", "secret-token")],
    );
    let base = server.url.trim_end_matches("/mcp");
    let http = wasm_mcp_tests::http::blocking_client();
    for (path, body) in [("/healthz", "ok\n"), ("/readyz", "ready\n")] {
        let response = http.get(format!("{base}{path}")).send().unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(response.text().unwrap(), body, "{path}");
    }
    let refused = server.client().post_with(&[], initialize_body());
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
}
