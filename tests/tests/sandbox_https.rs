//! Outgoing HTTPS through `wasi:http/outgoing-handler` (the `http-client`
//! test plugin): the host makes the TLS connection and verifies the server's
//! certificate (trusted root, validity, the URL's host name) after the same
//! egress checks as plain HTTP. Each test runs its own HTTPS server on
//! 127.0.0.1 with a certificate from a private CA it makes; a plugin trusts
//! that CA through `[network] ca_file` or the platform store (`SSL_CERT_FILE`).

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use serde_json::json;
use wasm_mcp_tests::expect::{is_tool_error, single_text, tool_ok};
use wasm_mcp_tests::http2::http2;
use wasm_mcp_tests::https::{Answer, TestCa, https, https_requiring_client_cert};
use wasm_mcp_tests::loopback::TestServer;
use wasm_mcp_tests::process::serve_command;
use wasm_mcp_tests::recorder::Recorder;
use wasm_mcp_tests::wasi_http::{BODY, get, plugins, refused, serve, still_serving};
use wasm_mcp_tests::{PluginDir, StdioServer};

/// A manifest granting `rules`, trusting `ca.pem` (beside it) when `ca_file`.
fn manifest(rules: &[String], ca_file: bool) -> String {
    let rules: Vec<String> = rules.iter().map(|r| format!("{r:?}")).collect();
    let ca = if ca_file { "ca_file = \"ca.pem\"\n" } else { "" };
    format!("[network]\nallow = [{}]\n{ca}", rules.join(", "))
}

/// http-client under `manifest`, with `ca`'s certificate at `ca.pem` beside it.
fn serve_trusting(ca: &TestCa, manifest: &str) -> StdioServer {
    let plugins = plugins(manifest);
    plugins.add_file("ca.pem", ca.pem().as_bytes());
    let mut server = StdioServer::start(plugins);
    server.initialize(json!({}));
    server
}

#[track_caller]
fn fetched(server: &mut StdioServer, url: &str) {
    let result = get(server, url);
    tool_ok(&result);
    assert_eq!(single_text(&result), format!("200\n{BODY}"), "{url}");
}

/// The log line of a refused request names the plugin and says why.
#[track_caller]
fn logged(server: &mut StdioServer, why: &str) {
    server.wait_for_stderr(&format!("a refusal logged with the plugin's name and {why:?}"), |s| {
        s.lines()
            .any(|l| l.contains("outgoing HTTP request refused") && l.contains("http-client") && l.contains(why))
    });
}

#[test]
fn a_granted_https_host_is_fetched_when_its_ca_file_trusts_the_server() {
    let ca = TestCa::new();
    let web = https(ca.server_cert(&["localhost"]), Answer::Body(BODY));
    let mut server = serve_trusting(&ca, &manifest(&[format!("https://localhost:{}", web.port)], true));
    fetched(&mut server, &format!("https://localhost:{}/hello", web.port));
    still_serving(&mut server);
    server.shutdown();
}

#[test]
fn the_platform_trust_store_is_trusted() {
    // No ca_file: the CA reaches the host through the platform store (here SSL_CERT_FILE).
    let ca = TestCa::new();
    let web = https(ca.server_cert(&["localhost"]), Answer::Body(BODY));
    let plugins = plugins(&manifest(&[format!("https://localhost:{}", web.port)], false));
    plugins.add_file("store.pem", ca.pem().as_bytes());
    let mut command = serve_command(plugins.path());
    command.env("SSL_CERT_FILE", plugins.path().join("store.pem"));
    let mut server = StdioServer::spawn_command(command);
    server.initialize(json!({}));
    fetched(&mut server, &format!("https://localhost:{}/", web.port));
    server.shutdown();
    drop(plugins);
}

#[test]
fn an_untrusted_certificate_is_refused_with_a_tls_error() {
    let ca = TestCa::new();
    let web = https(ca.server_cert(&["localhost"]), Answer::Body(BODY));
    let mut server = serve(&manifest(&[format!("https://localhost:{}", web.port)], false));
    refused(
        &mut server,
        &format!("https://localhost:{}/", web.port),
        "TlsCertificateError",
    );
    logged(&mut server, "its issuer is not trusted");
    still_serving(&mut server);
    server.shutdown();
}

#[test]
fn a_certificate_for_another_name_is_refused() {
    let ca = TestCa::new();
    let web = https(ca.server_cert(&["localhost"]), Answer::Body(BODY));
    let mut server = serve_trusting(&ca, &manifest(&[format!("https://127.0.0.1:{}", web.port)], true));
    refused(
        &mut server,
        &format!("https://127.0.0.1:{}/", web.port),
        "TlsCertificateError",
    );
    logged(&mut server, "it does not name the URL's host");
    server.shutdown();
}

#[test]
fn an_expired_certificate_is_refused() {
    let ca = TestCa::new();
    let web = https(ca.expired_server_cert(&["localhost"]), Answer::Body(BODY));
    let mut server = serve_trusting(&ca, &manifest(&[format!("https://localhost:{}", web.port)], true));
    refused(
        &mut server,
        &format!("https://localhost:{}/", web.port),
        "TlsCertificateError",
    );
    logged(&mut server, "it has expired");
    server.shutdown();
}

#[test]
fn an_https_rule_grants_no_plain_http() {
    let plain = TestServer::http(BODY);
    let mut server = serve(&manifest(
        &[
            format!("https://localhost:{}", plain.port),
            format!("https://127.0.0.1:{}", plain.port),
        ],
        false,
    ));
    refused(
        &mut server,
        &format!("http://localhost:{}/", plain.port),
        "HttpRequestDenied",
    );
    refused(
        &mut server,
        &format!("http://127.0.0.1:{}/", plain.port),
        "DestinationIpProhibited",
    );
    logged(&mut server, "https:// requests only");
    assert_eq!(plain.connections(), 0);
    still_serving(&mut server);
    server.shutdown();
}

#[test]
fn ungranted_hosts_and_ports_are_still_refused() {
    let ca = TestCa::new();
    let web = https(ca.server_cert(&["localhost"]), Answer::Body(BODY));
    let other = https(ca.server_cert(&["localhost"]), Answer::Body(BODY));
    let mut server = serve_trusting(&ca, &manifest(&[format!("https://localhost:{}", web.port)], true));
    refused(
        &mut server,
        &format!("https://localhost:{}/", other.port),
        "HttpRequestDenied",
    );
    refused(
        &mut server,
        &format!("https://127.0.0.1:{}/", other.port),
        "DestinationIpProhibited",
    );
    refused(&mut server, "https://example.com/", "HttpRequestDenied");
    refused(&mut server, "https://169.254.169.254/", "DestinationIpProhibited");
    assert_eq!(other.connections(), 0);
    fetched(&mut server, &format!("https://localhost:{}/", web.port));
    server.shutdown();
}

#[test]
fn requests_of_one_call_share_a_connection() {
    let ca = TestCa::new();
    let web = https(ca.server_cert(&["localhost"]), Answer::Body(BODY));
    let mut server = serve_trusting(&ca, &manifest(&[format!("https://localhost:{}", web.port)], true));
    let url = format!("https://localhost:{}/", web.port);
    let result = server
        .call_tool("get_each", json!({"urls": [url.clone(), url.clone(), url]}))
        .result()
        .clone();
    tool_ok(&result);
    assert_eq!(single_text(&result), vec![format!("200\n{BODY}"); 3].join("\n"));
    assert_eq!(web.connections(), 1, "three requests in one call, one TLS connection");
    // The pool is the call's: the next call connects anew.
    fetched(&mut server, &format!("https://localhost:{}/", web.port));
    assert_eq!(web.connections(), 2);
    server.shutdown();
}

#[test]
fn a_server_offering_h2_is_spoken_to_over_http2_on_one_connection() {
    let ca = TestCa::new();
    let web = http2(ca.server_cert(&["localhost"]), BODY);
    let mut server = serve_trusting(&ca, &manifest(&[format!("https://localhost:{}", web.port)], true));
    let base = format!("https://localhost:{}", web.port);
    let result = server
        .call_tool(
            "get_each",
            json!({"urls": [format!("{base}/one"), format!("{base}/two?x=1")]}),
        )
        .result()
        .clone();
    tool_ok(&result);
    assert_eq!(single_text(&result), vec![format!("200\n{BODY}"); 2].join("\n"));
    let seen = web.seen();
    assert_eq!(seen.accepts, 1, "two requests in one call, one connection: {seen:?}");
    assert_eq!(seen.protocols, vec![Some("h2".to_string())], "{seen:?}");
    assert_eq!(
        seen.requests,
        vec![
            (http::Version::HTTP_2, format!("{base}/one")),
            (http::Version::HTTP_2, format!("{base}/two?x=1")),
        ]
    );
    still_serving(&mut server);
    server.shutdown();
}

#[test]
fn a_server_that_demands_a_client_certificate_ends_in_a_tls_alert() {
    // The host presents none: the server ends the handshake with a certificate_required
    // alert, which reaches the host over HTTP/1.1 or HTTP/2 after its side of the handshake.
    let alpns: [&[&[u8]]; 2] = [&[b"http/1.1"], &[b"h2"]];
    for alpn in alpns {
        let ca = TestCa::new();
        let web = https_requiring_client_cert(ca.server_cert(&["localhost"]), &ca, alpn);
        let mut server = serve_trusting(&ca, &manifest(&[format!("https://localhost:{}", web.port)], true));
        let url = format!("https://localhost:{}/", web.port);
        refused(&mut server, &url, "TlsAlertReceived");
        refused(&mut server, &url, "CertificateRequired");
        logged(&mut server, "received fatal alert: CertificateRequired");
        assert_eq!(web.connections(), 2, "{alpn:?}");
        still_serving(&mut server);
        server.shutdown();
    }
}

#[test]
fn plaintext_on_the_tls_port_is_a_tls_protocol_error() {
    // Reads the ClientHello, answers as a plain HTTP server would.
    let (hello_tx, hello_rx) = std::sync::mpsc::channel();
    let web = TestServer::serve(move |stream| {
        let mut hello = [0u8; 4096];
        let n = stream.read(&mut hello).unwrap_or(0);
        let _ = hello_tx.send(hello[..n].to_vec());
        let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    });
    let mut server = serve(&manifest(&[format!("https://localhost:{}", web.port)], false));
    refused(
        &mut server,
        &format!("https://localhost:{}/", web.port),
        "TlsProtocolError",
    );
    logged(&mut server, "the TLS handshake failed");
    let hello = hello_rx.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(hello.first(), Some(&0x16), "the host began a TLS handshake: {hello:?}");
    assert_eq!(web.connections(), 1);
    still_serving(&mut server);
    server.shutdown();
}

#[test]
fn a_kept_alive_connection_the_server_closed_is_replaced_by_a_new_one() {
    // Each connection serves one response, then closes without having said so
    // (the close travels with the response, so it is there before the next request).
    let ca = TestCa::new();
    let web = https(ca.server_cert(&["localhost"]), Answer::Once(BODY));
    let mut server = serve_trusting(&ca, &manifest(&[format!("https://localhost:{}", web.port)], true));
    let url = format!("https://localhost:{}/", web.port);
    let result = server
        .call_tool("get_each", json!({"urls": vec![url; 8]}))
        .result()
        .clone();
    tool_ok(&result);
    assert_eq!(single_text(&result), vec![format!("200\n{BODY}"); 8].join("\n"));
    assert_eq!(web.connections(), 8, "one connection per response");
    server.shutdown();
}

#[test]
fn a_server_that_never_answers_ends_the_call_at_its_deadline() {
    let ca = TestCa::new();
    let web = https(ca.server_cert(&["localhost"]), Answer::Never);
    let mut server = serve_trusting(
        &ca,
        &format!(
            "[limits]\ntimeout_secs = 1\n\n{}",
            manifest(&[format!("https://localhost:{}", web.port)], true)
        ),
    );
    let started = Instant::now();
    let result = get(&mut server, &format!("https://localhost:{}/", web.port));
    assert!(is_tool_error(&result), "{result}");
    assert!(started.elapsed() < Duration::from_secs(10), "{result}");
    assert_eq!(web.connections(), 1);
    still_serving(&mut server);
    server.shutdown();
}

#[test]
fn an_unusable_ca_file_stops_the_plugin_from_loading() {
    for (content, why) in [
        (None, "cannot read it"),
        (Some("not a certificate\n"), "holds no certificate"),
        (
            Some("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
            "not a CERTIFICATE",
        ),
    ] {
        let plugins = PluginDir::with(&["text-tools"]);
        plugins.add_file(
            "http-client.toml",
            b"[network]\nallow = [\"https://localhost\"]\nca_file = \"ca.pem\"\n",
        );
        if let Some(content) = content {
            plugins.add_file("ca.pem", content.as_bytes());
        }
        plugins.add_plugin("http-client");
        let mut server = StdioServer::start(plugins);
        server.initialize(json!({}));
        let stderr = server.wait_for_stderr("the load error", |s| s.contains("[network] ca_file"));
        assert!(stderr.contains(why) && stderr.contains("ca.pem"), "{why}: {stderr}");
        still_serving(&mut server);
        server.shutdown();
    }
}

#[test]
fn the_http_get_example_fetches_https_through_the_host() {
    let ca = TestCa::new();
    let web = https(ca.server_cert(&["localhost"]), Answer::Body(BODY));
    let plugins = PluginDir::empty();
    plugins.add_plugin("http-get");
    plugins.add_file("ca.pem", ca.pem().as_bytes());
    plugins.add_file(
        "http-get.toml",
        manifest(&[format!("https://localhost:{}", web.port)], true).as_bytes(),
    );
    let mut server = StdioServer::start(plugins);
    server.initialize(json!({}));
    let url = format!("https://localhost:{}/hello", web.port);
    let result = server.call_tool("http_get", json!({"url": url})).result().clone();
    tool_ok(&result);
    assert_eq!(result["structuredContent"]["status"], 200, "{result}");
    assert_eq!(result["structuredContent"]["body"], BODY);
    assert_eq!(result["structuredContent"]["content_type"], "text/plain");
    // The TLS-only rule grants no socket: plain http:// to the same port is refused.
    let plain = format!("http://localhost:{}/", web.port);
    let result = server.call_tool("http_get", json!({"url": plain})).result().clone();
    assert!(is_tool_error(&result), "{result}");
    server.shutdown();
}

#[test]
fn methods_and_path_prefixes_limit_what_a_rule_grants() {
    let ca = TestCa::new();
    let api = Recorder::https(ca.server_cert(&["localhost"]));
    let manifest = format!(
        "[network]\nallow = [{{ rule = \"https://localhost:{}\", methods = [\"GET\"], path_prefixes = [\"/v1/\"] }}]\n\
         ca_file = \"ca.pem\"\n",
        api.port
    );
    let mut server = serve_trusting(&ca, &manifest);
    let url = |path: &str| format!("https://localhost:{}{path}", api.port);
    let result = server
        .call_tool("request", json!({"url": url("/v1/items")}))
        .result()
        .clone();
    tool_ok(&result);
    assert!(single_text(&result).contains("status 200"), "{result}");
    for (args, why) in [
        (
            json!({"url": url("/v1/items"), "method": "POST"}),
            "does not grant POST /v1/items",
        ),
        (json!({"url": url("/v2/items")}), "does not grant GET /v2/items"),
        (
            json!({"url": url("/v1/../v2/items")}),
            "does not grant GET /v1/../v2/items",
        ),
        (json!({"url": url("/v1/%2e%2e/v2")}), "does not grant GET /v1/%2e%2e/v2"),
    ] {
        let result = server.call_tool("request", args.clone()).result().clone();
        assert!(is_tool_error(&result), "{args}: {result}");
        assert!(single_text(&result).contains("HttpRequestDenied"), "{result}");
        logged(&mut server, why);
    }
    // A kept connection is held to the rule too: the second GET of one call is refused on it.
    let result = server
        .call_tool("get_each", json!({"urls": [url("/v1/a"), url("/v2/b")]}))
        .result()
        .clone();
    assert!(is_tool_error(&result), "{result}");
    let paths: Vec<String> = api
        .requests()
        .iter()
        .map(|head| head.split_whitespace().nth(1).unwrap_or_default().to_owned())
        .collect();
    assert_eq!(paths, ["/v1/items", "/v1/a"]);
    still_serving(&mut server);
    server.shutdown();
}
