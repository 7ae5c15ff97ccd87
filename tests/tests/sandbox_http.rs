//! Outgoing HTTP through `wasi:http/outgoing-handler` (the `http-client` test
//! plugin), held to the same `[network]` grants as sockets: only a granted
//! host and port is reached, the host resolves names itself and connects only
//! to addresses the grants allow, and every refusal is a clear tool error
//! while the host keeps serving.

use std::net::TcpListener;

use wasm_mcp_tests::expect::{is_tool_error, single_text, tool_ok};
use wasm_mcp_tests::loopback::{TestServer, loopback_alias};
use wasm_mcp_tests::wasi_http::{BODY, get, refused, serve, still_serving};

#[test]
fn a_granted_host_and_port_is_reached_and_nothing_else_is() {
    let web = TestServer::http(BODY);
    let other = TestServer::http(BODY);
    let mut server = serve(&format!("[network]\nallow = [\"127.0.0.1:{}\"]\n", web.port));

    let result = get(&mut server, &format!("http://127.0.0.1:{}/hello", web.port));
    tool_ok(&result);
    assert_eq!(single_text(&result), format!("200\n{BODY}"));

    refused(
        &mut server,
        &format!("http://127.0.0.1:{}/", other.port),
        "DestinationIpProhibited",
    );
    refused(
        &mut server,
        "http://169.254.169.254/latest/meta-data/",
        "DestinationIpProhibited",
    );
    refused(&mut server, "http://example.com/", "HttpRequestDenied");
    refused(
        &mut server,
        &format!("http://localhost:{}/", web.port),
        "HttpRequestDenied",
    );
    still_serving(&mut server);
    // The granted request still works after the refusals.
    tool_ok(&get(&mut server, &format!("http://127.0.0.1:{}/again", web.port)));
    assert_eq!(web.connections(), 2);
    assert_eq!(other.connections(), 0);

    let stderr = server.wait_for_stderr("the refusals logged with the plugin's name", |s| {
        s.contains("outgoing HTTP request refused") && s.contains("http-client")
    });
    assert!(stderr.contains("169.254.169.254"), "{stderr}");
    server.shutdown();
}

#[test]
fn without_a_network_grant_every_request_is_refused() {
    let web = TestServer::http(BODY);
    let mut server = serve("");
    refused(
        &mut server,
        &format!("http://127.0.0.1:{}/", web.port),
        "DestinationIpProhibited",
    );
    refused(&mut server, "http://example.com/", "HttpRequestDenied");
    assert_eq!(web.connections(), 0);
    still_serving(&mut server);
    server.shutdown();
}

#[test]
fn a_granted_name_that_resolves_to_a_refused_address_is_refused() {
    let web = TestServer::http(BODY);
    // `localhost` names loopback explicitly; any other name leading there does not.
    let Some(alias) = loopback_alias() else {
        eprintln!("no loopback alias in /etc/hosts; the unit tests of sandbox::network cover this case");
        return;
    };
    let mut server = serve(&format!(
        "[network]\nallow = [\"{alias}:{}\", \"0.0.0.0/0:*\"]\n",
        web.port
    ));
    refused(
        &mut server,
        &format!("http://{alias}:{}/", web.port),
        "DestinationIpProhibited",
    );
    assert_eq!(web.connections(), 0);
    still_serving(&mut server);
    server.shutdown();
}

#[test]
fn the_name_localhost_grants_loopback_by_name() {
    let web = TestServer::http(BODY);
    let mut server = serve(&format!("[network]\nallow = [\"localhost:{}\"]\n", web.port));
    let result = get(&mut server, &format!("http://localhost:{}/", web.port));
    tool_ok(&result);
    assert_eq!(single_text(&result), format!("200\n{BODY}"));
    refused(&mut server, "http://169.254.169.254/", "DestinationIpProhibited");
    assert_eq!(web.connections(), 1);
    server.shutdown();
}

#[test]
fn a_stalled_server_ends_the_call_at_its_deadline() {
    // Accepts, reads, never answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let mut server = serve(&format!(
        "[limits]\ntimeout_secs = 1\n\n[network]\nallow = [\"127.0.0.1:{port}\"]\n"
    ));
    let started = std::time::Instant::now();
    let result = get(&mut server, &format!("http://127.0.0.1:{port}/"));
    assert!(is_tool_error(&result), "{result}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "{result}");
    still_serving(&mut server);
    server.shutdown();
}
