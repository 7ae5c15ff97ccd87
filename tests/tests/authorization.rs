//! OAuth with an authorization server reached over HTTPS, as it is in
//! production: the server reads the issuer's metadata and JWKS through the
//! platform's trust store (here `SSL_CERT_FILE`, a CA made for the test),
//! accepts a token signed with the issuer's key, and refuses to read an
//! issuer whose certificate it cannot verify. And an issuer that hangs
//! (accepts connections, never answers) once its keys are known: tokens of
//! those keys are answered while a fetch for an unknown key hangs, which
//! waits no longer than `--auth-issuer-wait`, however many such tokens come.
//! The rest of the OAuth tests (a real authorization server, the SDK's
//! discovery, the refusal matrix, scopes, principals, cache scopes) are in
//! `tests/node/oauth.test.mjs`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;
use wasm_mcp_tests::PluginDir;
use wasm_mcp_tests::http::{HttpServer, McpClient};
use wasm_mcp_tests::https::{Answer, TestCa, https};
use wasm_mcp_tests::issuer::{self, Issuer, JWKS};
use wasm_mcp_tests::{jsonrpc, wait};

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

/// The bound of the hung-issuer test (`--auth-issuer-wait`), in seconds:
/// long enough that a loaded machine answers the valid tokens well before it.
const WAIT_SECS: u64 = 6;

/// A text-tools server taking tokens of `issuer`, waiting on it at most `wait_secs`.
fn waiting_server(issuer: &Issuer, wait_secs: u64) -> HttpServer {
    let wait = wait_secs.to_string();
    HttpServer::start(
        PluginDir::with(&["text-tools"]),
        &[
            "--auth-issuer",
            &issuer.url,
            "--auth-issuer-wait",
            &wait,
            "--max-connections",
            "1500",
        ],
    )
}

/// An initialize POST with `token`, sent on a connection of its own; the
/// answer is left to [`answer`].
fn send(server: &HttpServer, token: &str) -> TcpStream {
    let address = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let body = jsonrpc::request(1, "initialize", jsonrpc::initialize_params("hung-issuer", json!({}))).to_string();
    let mut stream = TcpStream::connect(&address).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    stream
}

/// The status, `Retry-After` and body (the error's message, if it is one)
/// of the answer on `stream`.
fn answer(mut stream: TcpStream) -> (u16, Option<String>, String) {
    stream.set_read_timeout(Some(wait::timeout())).unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let retry_after = head.lines().find_map(|line| {
        line.to_ascii_lowercase()
            .strip_prefix("retry-after:")
            .map(|v| v.trim().to_owned())
    });
    let message = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|body| body["error"]["message"].as_str().map(str::to_owned));
    (status, retry_after, message.unwrap_or_else(|| body.to_owned()))
}

/// Whether an answer has arrived on `stream` (without reading it).
fn answered(stream: &TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let arrived = !matches!(stream.peek(&mut [0u8; 1]), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    stream.set_nonblocking(false).unwrap();
    arrived
}

/// A token of `issuer` naming a key it does not publish, as anyone can make.
fn random_kid_token(issuer: &Issuer, server: &HttpServer) -> String {
    let kid = format!("random-{:016x}", fastrand::u64(..));
    issuer::forged_token(&issuer.url, &kid, &server.url)
}

/// The server, its issuer now hung, with a fetch for an unknown key
/// hanging at it (started by the token whose answer is on the stream).
fn hung_fetch(issuer: &Issuer, server: &HttpServer) -> (TcpStream, Instant) {
    let cached = issuer.token("ada", &server.url, "", Duration::from_secs(600));
    assert_eq!(answer(send(server, &cached)).0, 200, "{}", server.stderr());
    issuer.hang();
    let before = issuer.connections();
    // Within 10 s of the last fetch (the one at start), an unknown key is
    // refused at once for what that fetch found; after, it starts a fetch.
    wait::poll(wait::timeout(), || {
        let started = Instant::now();
        let random = send(server, &random_kid_token(issuer, server));
        let fetching = wait::poll(wait::timeout(), || {
            if issuer.connections() > before {
                Some(true)
            } else {
                answered(&random).then_some(false)
            }
        })
        .expect("either the keys are fetched again or the token is answered");
        if fetching {
            return Some((random, started));
        }
        let (status, _, body) = answer(random);
        assert!(
            status == 401 && body.contains("which the issuer does not publish (its keys as fetched"),
            "{status} {body}"
        );
        std::thread::sleep(Duration::from_millis(500));
        None
    })
    .expect("a token naming an unknown key makes the server fetch the keys again")
}

#[test]
fn tokens_of_known_keys_are_answered_while_a_fetch_for_an_unknown_key_hangs() {
    let issuer = Issuer::start();
    let server = waiting_server(&issuer, WAIT_SECS);
    let (random, random_sent) = hung_fetch(&issuer, &server);

    // A token already accepted and a new one of the same (known) key, while the fetch hangs.
    let sent = Instant::now();
    let cached = send(&server, &issuer.token("ada", &server.url, "", Duration::from_secs(600)));
    let new = send(
        &server,
        &issuer.token("grace", &server.url, "", Duration::from_secs(600)),
    );
    let (cached_status, _, cached_body) = answer(cached);
    let cached_took = sent.elapsed();
    let (new_status, _, new_body) = answer(new);
    let new_took = sent.elapsed();
    assert_eq!(cached_status, 200, "{cached_body}");
    assert_eq!(new_status, 200, "{new_body}");
    assert!(
        !answered(&random),
        "the valid tokens are answered while the token of an unknown key still waits for the hung fetch"
    );

    let (status, retry_after, body) = answer(random);
    let random_took = random_sent.elapsed();
    eprintln!(
        "hung issuer: cached token {cached_took:?}, new token of a known key {new_took:?}, \
         unknown key {random_took:?} (bound {WAIT_SECS} s)"
    );
    assert_eq!(status, 503, "{body}");
    assert!(
        retry_after
            .as_ref()
            .is_some_and(|s| s.parse::<u64>().is_ok_and(|s| s >= 1)),
        "Retry-After: {retry_after:?}"
    );
    assert!(
        body.contains("is signed with key \"random-") && body.contains(&format!("did not answer within {WAIT_SECS}s")),
        "the refusal says what happened: {body}"
    );
    // The fetch itself tries three times, 5 s each: the answer came at the bound, not at its end.
    assert!(
        random_took >= Duration::from_secs(WAIT_SECS) && random_took < Duration::from_secs(WAIT_SECS + 8),
        "answered at the bound: {random_took:?}"
    );
}

#[test]
fn a_burst_of_unknown_keys_makes_one_fetch_and_holds_up_no_valid_token() {
    let issuer = Issuer::start();
    // A bound past the fetch's own end (three tries of 5 s): every token of
    // an unknown key waits for that one fetch, which hangs all along.
    let server = waiting_server(&issuer, 30);
    let before = issuer.connections();
    let (first, _) = hung_fetch(&issuer, &server);

    let burst_sent = Instant::now();
    let mut burst = Vec::new();
    let mut took = Vec::new();
    for n in 0..20 {
        burst.extend((0..50).map(|_| send(&server, &random_kid_token(&issuer, &server))));
        let token = issuer.token(&format!("user-{n}"), &server.url, "", Duration::from_secs(600));
        let sent = Instant::now();
        let (status, _, body) = answer(send(&server, &token));
        took.push(sent.elapsed());
        assert_eq!(status, 200, "{body}");
        assert!(
            !answered(&first),
            "valid token {n} is answered while the fetch for the unknown keys still hangs"
        );
    }
    let burst_took = burst_sent.elapsed();
    took.sort();
    eprintln!(
        "1000 unknown keys against a hung issuer, with a valid token after every 50, in {burst_took:?}: \
         the valid tokens answered in median {:?}, max {:?}",
        took[took.len() / 2],
        took[took.len() - 1]
    );

    let mut refusals = std::collections::BTreeMap::<String, usize>::new();
    for stream in std::iter::once(first).chain(burst) {
        let (status, retry_after, body) = answer(stream);
        assert_eq!(status, 503, "{body}");
        assert!(retry_after.is_some(), "{body}");
        let what = if body.contains("did not answer within") {
            "the issuer did not answer in time"
        } else if body.contains("fetching them again failed") {
            "the fetch failed"
        } else {
            panic!("the refusal says what happened: {body}")
        };
        *refusals.entry(what.to_owned()).or_default() += 1;
    }
    eprintln!("the 1001 refusals: {refusals:?}");
    // One fetch for them all: its three tries are all the issuer saw (its
    // metadata and keys at start were read before).
    let fetches = issuer.connections() - before;
    assert!(
        fetches <= 2 + 3,
        "one fetch (three tries) after the two reads at start, not {fetches} connections"
    );
}

#[test]
fn an_introspection_the_hung_issuer_does_not_answer_is_503_at_the_bound() {
    let issuer = Issuer::start();
    let server = HttpServer::start_with_env(
        PluginDir::with(&["text-tools"]),
        &[
            "--auth-issuer",
            &issuer.url,
            "--auth-introspection-client",
            "wasm-mcp",
            "--auth-issuer-wait",
            "2",
        ],
        &[("WASM_MCP_AUTH_CLIENT_SECRET", "introspection-secret")],
    );
    // The metadata, read at start, names the introspection endpoint.
    wait::poll(wait::timeout(), || {
        server.stderr().contains("accepting OAuth access tokens").then_some(())
    })
    .expect("the metadata is read at start");
    issuer.hang();
    let sent = Instant::now();
    let (status, retry_after, body) = answer(send(&server, "an-opaque-token-0123456789"));
    let took = sent.elapsed();
    eprintln!("an introspection the hung issuer does not answer: {status} in {took:?} (bound 2 s)");
    assert_eq!(status, 503, "{body}");
    assert!(retry_after.is_some(), "{body}");
    assert!(
        body.contains("could not be asked about the token") && body.contains("no answer within"),
        "the refusal says what happened: {body}"
    );
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(2 + 8),
        "answered at the bound: {took:?}"
    );
}
