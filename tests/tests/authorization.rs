//! OAuth with an authorization server reached over HTTPS, as it is in
//! production: the server reads the issuer's metadata and JWKS through the
//! platform's trust store (here `SSL_CERT_FILE`, a CA made for the test),
//! accepts a token signed with the issuer's key, and refuses to read an
//! issuer whose certificate it cannot verify. The rest of the OAuth tests
//! (a real authorization server, the SDK's discovery, the refusal matrix,
//! scopes, principals) are in `tests/node/oauth.test.mjs`.

use std::path::Path;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use wasm_mcp_tests::PluginDir;
use wasm_mcp_tests::http::{HttpServer, McpClient};
use wasm_mcp_tests::https::{Answer, TestCa, https};
use wasm_mcp_tests::issuer::{self, JWKS};
use wasm_mcp_tests::jsonrpc;

/// An issuer at `https://localhost:PORT` serving its metadata and JWKS from
/// `dir`, presenting a certificate of `ca`; its issuer URL.
fn issuer_over_https(ca: &TestCa, dir: &'static Path) -> (String, wasm_mcp_tests::loopback::TestServer) {
    let server = https(ca.server_cert(&["localhost"]), Answer::Files(dir));
    let url = format!("https://localhost:{}", server.port);
    std::fs::create_dir_all(dir.join(".well-known")).unwrap();
    std::fs::write(
        dir.join(".well-known/oauth-authorization-server"),
        issuer::metadata(&url),
    )
    .unwrap();
    std::fs::write(dir.join("jwks"), JWKS).unwrap();
    (url, server)
}

/// A server of text-tools taking tokens of `issuer`, trusting the roots in `store`.
fn resource_server(issuer: &str, store: &Path) -> HttpServer {
    let store = store.to_str().unwrap();
    HttpServer::start_with_env(
        PluginDir::with(&["text-tools"]),
        &["--auth-issuer", issuer],
        &[("SSL_CERT_FILE", store)],
    )
}

fn initialize_with(server: &HttpServer, token: &str) -> reqwest::blocking::Response {
    let mut client = McpClient::new(&server.url);
    client.token = Some(token.to_owned());
    let params = jsonrpc::initialize_params("wasm-mcp-authorization-tests", json!({}));
    client.post(&jsonrpc::request(1, "initialize", params))
}

#[test]
fn an_issuer_over_https_is_read_through_the_platform_trust_store() {
    let ca = TestCa::new();
    let files: &'static Path = Box::leak(tempfile::tempdir().unwrap().keep().into_boxed_path());
    let (issuer, _issuer_server) = issuer_over_https(&ca, files);
    let store = files.join("store.pem");
    std::fs::write(&store, ca.pem()).unwrap();
    let server = resource_server(&issuer, &store);
    let token = issuer::token(&issuer, "ada", &server.url, "", Duration::from_secs(600));
    let accepted = initialize_with(&server, &token);
    assert_eq!(accepted.status(), StatusCode::OK, "{}", server.stderr());

    // Trusting another CA, the same issuer is not read, and nothing is known of the token.
    let stranger = files.join("stranger.pem");
    std::fs::write(&stranger, TestCa::new().pem()).unwrap();
    let untrusting = resource_server(&issuer, &stranger);
    let token = issuer::token(&issuer, "ada", &untrusting.url, "", Duration::from_secs(600));
    let refused = initialize_with(&untrusting, &token);
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body = refused.text().unwrap();
    assert!(body.contains("keys could not be read"), "{body}");
    let log = untrusting.stderr();
    assert!(log.contains("invalid peer certificate"), "the log says why: {log}");
    std::fs::remove_dir_all(files).unwrap();
}
