//! Streamable HTTP connections bounded in time and number, tried from the
//! outside the way a careless or hostile client would: request heads that
//! never end, kept-alive connections left idle, bodies dripped a byte at a
//! time, more connections than the server takes. Each is closed or refused
//! within its configured bound while a normal client is served throughout.
//!
//! The bounds are configured short (seconds); the assertions allow several
//! times as much, so they say "closed by the server", never "closed on time".

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;
use wasm_mcp_tests::PluginDir;
use wasm_mcp_tests::http::{HttpServer, McpClient};
use wasm_mcp_tests::proc_stat::open_fds;
use wasm_mcp_tests::wait::{poll, timeout};

/// What the assertions allow beyond a configured bound.
const SLACK: Duration = Duration::from_secs(5);

/// A head that names the server's endpoint; `end` completes it.
fn head(extra: &str, end: bool) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{extra}{}",
        if end { "\r\n" } else { "" }
    )
}

/// Reads until the server closes `stream`; what it sent and how long after
/// `since` it closed, or `None` if it is still open at `since + limit`.
fn closed_within(stream: &mut TcpStream, since: Instant, limit: Duration) -> Option<(String, Duration)> {
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let left = (since + limit).checked_duration_since(Instant::now())?;
        stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => received.extend_from_slice(&buffer[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            // A reset closes it too.
            Err(_) => break,
        }
    }
    Some((String::from_utf8_lossy(&received).into_owned(), since.elapsed()))
}

/// A ping outside any session (refused with 400) on a new connection that
/// asks to be closed after it: the whole answer, and how long it took.
fn ask_once(server: &HttpServer) -> (String, Duration) {
    let mut stream = server.connect();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let request = head(
        &format!("Connection: close\r\nContent-Length: {}\r\n", body.len()),
        true,
    ) + &body;
    let asked = Instant::now();
    // A refused connection may be closed before all of it is written.
    let _ = stream.write_all(request.as_bytes());
    closed_within(&mut stream, asked, SLACK).expect("the server answers and closes the connection")
}

/// A ping in `client`'s session answers, and how long it took.
fn ping(client: &mut McpClient) -> Duration {
    let asked = Instant::now();
    let pong = client.request("ping", json!({}));
    assert_eq!(*pong.result(), json!({}), "ping answered");
    asked.elapsed()
}

#[test]
fn hundreds_of_unfinished_request_heads_are_closed_within_the_header_timeout_while_a_client_is_served() {
    const HALF_OPEN: usize = 300;
    let timeout = Duration::from_secs(2);
    let server = HttpServer::start(PluginDir::with(&["conformance"]), &["--header-timeout", "2"]);
    let mut client = server.session(json!({}));
    let before = open_fds(server.pid());
    let opened = Instant::now();
    let mut held: Vec<TcpStream> = (0..HALF_OPEN)
        .map(|i| {
            let mut stream = server.connect();
            // Half of them send part of a head, half send nothing.
            if i % 2 == 0 {
                stream.write_all(head("X-Slow: 1\r\n", false).as_bytes()).unwrap();
            }
            stream
        })
        .collect();
    let held_open = open_fds(server.pid());
    assert!(
        held_open >= before + HALF_OPEN / 2,
        "the server holds the connections at first"
    );
    let mut slowest = Duration::ZERO;
    let mut released = None;
    while opened.elapsed() < timeout + Duration::from_secs(1) {
        slowest = slowest.max(ping(&mut client));
        if released.is_none() && open_fds(server.pid()) <= before + 5 {
            released = Some(opened.elapsed());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(slowest < SLACK, "a ping took {slowest:?} among half-open connections");
    let mut latest = Duration::ZERO;
    for (i, stream) in held.iter_mut().enumerate() {
        let (_, after) = closed_within(stream, opened, timeout + SLACK)
            .unwrap_or_else(|| panic!("half-open connection {i} still open after {:?}", timeout + SLACK));
        latest = latest.max(after);
    }
    eprintln!(
        "{HALF_OPEN} half-open connections: {held_open} descriptors held, {before} before; released after {released:?}; \
         all seen closed by {latest:?}; the slowest ping took {slowest:?}"
    );
    let after = open_fds(server.pid());
    assert!(
        after <= before + 5,
        "the server holds {after} descriptors, {before} before the half-open connections"
    );
    ping(&mut client);
}

#[test]
fn a_kept_alive_connection_left_idle_is_closed_after_the_header_timeout_but_a_long_response_is_not_cut() {
    let server = HttpServer::start(PluginDir::with(&["spinner"]), &["--header-timeout", "1"]);
    let mut stream = server.connect();
    // A complete request (refused: no session) leaves the connection kept alive, then idle.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let request = head(&format!("Content-Length: {}\r\n", body.len()), true) + &body;
    stream.write_all(request.as_bytes()).unwrap();
    let sent = Instant::now();
    let (answer, after) = closed_within(&mut stream, sent, Duration::from_secs(1) + SLACK)
        .expect("the idle kept-alive connection is closed");
    assert!(answer.starts_with("HTTP/1.1 400"), "the request was answered: {answer}");
    eprintln!("an idle kept-alive connection closed {after:?} after its request");
    // A response that takes longer than the header timeout is delivered whole.
    let mut client = server.session(json!({}));
    let slept = client.call_tool("sleep", json!({"ms": 2500}));
    assert_eq!(
        slept.result()["content"][0]["text"],
        "slept 2500 ms",
        "the call's answer arrives"
    );
}

#[test]
fn connections_beyond_the_cap_get_503_at_once_and_an_open_sse_stream_counts_past_the_header_timeout() {
    let server = HttpServer::start(
        PluginDir::with(&["conformance"]),
        &["--max-connections", "3", "--header-timeout", "2"],
    );
    let client = server.session(json!({}));
    let _standalone = client.get_stream(None);
    // The client's idle kept-alive connection closes; its SSE stream stays open.
    std::thread::sleep(Duration::from_secs(4));
    let held: Vec<TcpStream> = (0..2).map(|_| server.connect()).collect();
    let (answer, after) = ask_once(&server);
    assert!(answer.starts_with("HTTP/1.1 503"), "over the cap: {answer}");
    assert!(answer.contains("Retry-After: 1\r\n"), "{answer}");
    assert!(
        answer.contains("--max-connections") && answer.contains("max_connections under [http]"),
        "the refusal says how to raise the cap: {answer}"
    );
    eprintln!("a connection over the cap was answered 503 and closed in {after:?}");
    drop(held);
    let served = poll(timeout(), || {
        let (answer, _) = ask_once(&server);
        answer.starts_with("HTTP/1.1 400").then_some(answer)
    });
    assert!(served.is_some(), "connections are served again once some close");
}

#[test]
fn a_dripped_body_gets_408_and_its_connection_closed_within_the_body_timeout_while_a_client_is_served() {
    let timeout = Duration::from_secs(2);
    let server = HttpServer::start(PluginDir::with(&["conformance"]), &["--body-timeout", "2"]);
    let mut client = server.session(json!({}));
    let mut stream = server.connect();
    stream
        .write_all(head("Content-Length: 100000\r\n", true).as_bytes())
        .unwrap();
    let started = Instant::now();
    let mut dripping = stream.try_clone().unwrap();
    let drip = std::thread::spawn(move || {
        // Two bytes a second until the server closes the connection (or long after the bound).
        while started.elapsed() < timeout + SLACK && dripping.write_all(b"  ").is_ok() {
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    let mut slowest = Duration::ZERO;
    while started.elapsed() < timeout + Duration::from_secs(1) {
        slowest = slowest.max(ping(&mut client));
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(slowest < SLACK, "a ping took {slowest:?} beside a dripped body");
    let (answer, after) =
        closed_within(&mut stream, started, timeout + SLACK).expect("the server closes the dripping connection");
    assert!(
        answer.starts_with("HTTP/1.1 408"),
        "the dripped body is refused: {answer}"
    );
    assert!(
        answer.contains("--body-timeout") && answer.contains("body_timeout_secs under [http]"),
        "the refusal says how to raise the bound: {answer}"
    );
    eprintln!("a dripped body was refused and its connection closed {after:?} after its head");
    drop(stream);
    drip.join().unwrap();
}

#[test]
fn a_connection_bound_of_zero_stops_the_start_naming_the_setting() {
    let dir = PluginDir::with(&["conformance"]);
    for (flag, named) in [
        ("--header-timeout", "header_timeout_secs"),
        ("--body-timeout", "body_timeout_secs"),
        ("--max-connections", "max_connections"),
    ] {
        let output = std::process::Command::new(wasm_mcp_tests::binary())
            .args(["serve", "--http", "127.0.0.1:0", "--plugins"])
            .arg(dir.path())
            .arg(format!("{flag}=0"))
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run wasm-mcp");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{flag} 0 must stop the start");
        assert!(stderr.contains(named), "{flag} 0: the error names {named:?}: {stderr}");
    }
}
