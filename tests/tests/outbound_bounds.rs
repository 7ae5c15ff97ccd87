//! Nothing a plugin sends toward the client can grow the host: the `flood`
//! test plugin logs megabytes, sends progress and resource updates as fast as
//! it can, while clients read slowly or not at all. The server's resident
//! memory is read from `/proc`, latencies are measured on the wire, and every
//! response must arrive.
//!
//! The bounds are generous (this runs on a small shared machine); each
//! assertion message prints what was measured.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasm_mcp_tests::http::HttpServer;
use wasm_mcp_tests::proc_stat::rss_kib;
use wasm_mcp_tests::process::serve_command;
use wasm_mcp_tests::{PluginDir, timeout};

/// How much the server's RSS may grow over its start while a flood is held
/// back: the plugin's own linear memory (its 32 MiB message and the copy the
/// host receives) plus the session's outbound bound, with room to spare.
/// Before the bound, 50 messages of 32 MiB took it from 64 MiB to 1.7 GiB.
const RSS_GROWTH_BOUND_MIB: u64 = 256;

/// The slowest an unrelated call may answer during a flood (measured in tens
/// of milliseconds; generous for a shared 2-core machine).
const ECHO_BOUND: Duration = Duration::from_millis(200);

/// A stdio server driven by hand: the test decides when stdout is read.
struct RawServer {
    child: Child,
    stdin: ChildStdin,
    _plugins: PluginDir,
}

impl RawServer {
    fn start(args: &[&str]) -> (Self, BufReader<std::process::ChildStdout>) {
        let plugins = PluginDir::with(&["flood"]);
        let mut command: Command = serve_command(plugins.path());
        command
            .args(args)
            .env("WASM_MCP_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command.spawn().expect("start wasm-mcp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut server = RawServer {
            child,
            stdin,
            _plugins: plugins,
        };
        server.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "outbound-bounds", "version": "0"}}}));
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        (server, stdout)
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("write to the server");
        self.stdin.flush().unwrap();
    }

    fn call(&mut self, id: u64, name: &str, arguments: Value, meta: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": meta}}));
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One line of the server's stdout, parsed, with when it arrived and its size.
struct Line {
    at: Instant,
    bytes: usize,
    message: Value,
}

/// Reads every line of `stdout` on a thread of its own, as fast as it comes.
fn read_all(stdout: BufReader<std::process::ChildStdout>) -> mpsc::Receiver<Line> {
    let (sender, lines) = mpsc::channel();
    thread::spawn(move || {
        for line in stdout.lines() {
            let Ok(line) = line else { return };
            let message = serde_json::from_str(&line).expect("every stdout line is JSON");
            let line = Line {
                at: Instant::now(),
                bytes: line.len() + 1,
                message,
            };
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    lines
}

/// Lines until (and with) the response to `id`.
fn until_response(lines: &mpsc::Receiver<Line>, id: u64) -> Vec<Line> {
    let mut seen = Vec::new();
    let deadline = Instant::now() + timeout();
    loop {
        let line = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("no response to {id} within {:?}", timeout()));
        let done = line.message["id"] == id && line.message.get("method").is_none();
        seen.push(line);
        if done {
            return seen;
        }
    }
}

fn text(response: &Value) -> &str {
    response["result"]["content"][0]["text"].as_str().unwrap_or_default()
}

/// Resident memory in MiB, sampled every 20 ms for `period`: (first, peak).
fn sample_rss(pid: u32, period: Duration) -> (u64, u64) {
    let first = rss_kib(pid);
    let mut peak = first;
    let end = Instant::now() + period;
    while Instant::now() < end {
        peak = peak.max(rss_kib(pid));
        thread::sleep(Duration::from_millis(20));
    }
    (first >> 10, peak >> 10)
}

#[test]
fn a_stdio_client_that_stops_reading_cannot_grow_the_host_with_log_messages() {
    let (mut server, mut stdout) = RawServer::start(&[]);
    let mut initialize = String::new();
    stdout.read_line(&mut initialize).unwrap();
    assert!(initialize.contains("\"id\":0"), "{initialize}");
    let before = rss_kib(server.pid()) >> 10;
    // 50 messages of 32 MiB, while the client reads nothing for 4 s.
    server.call(1, "log_flood", json!({"count": 50, "bytes": 32 << 20}), json!({}));
    let (_, peak) = sample_rss(server.pid(), Duration::from_secs(4));
    let lines = read_all(stdout);
    let seen = until_response(&lines, 1);
    let after = rss_kib(server.pid()) >> 10;
    let wire: usize = seen.iter().map(|l| l.bytes).sum();
    let logs: Vec<&Value> = seen
        .iter()
        .map(|l| &l.message)
        .filter(|m| m["method"] == "notifications/message")
        .collect();
    eprintln!(
        "log flood to a stalled stdio client: RSS {before} MiB before, {peak} MiB peak, {after} MiB after; \
         {} log messages, {wire} bytes on the wire",
        logs.len()
    );
    assert_eq!(
        text(&seen.last().unwrap().message),
        "logged 50 messages of 33554432 bytes"
    );
    assert!(
        peak < before + RSS_GROWTH_BOUND_MIB,
        "RSS grew from {before} MiB to {peak} MiB (bound: +{RSS_GROWTH_BOUND_MIB} MiB)"
    );
    // Each message was cut to the default cap (64 KiB) with a marker; none was lost.
    assert_eq!(logs.len(), 50, "every message arrives, cut to its cap");
    let data = logs[0]["params"]["data"].as_str().unwrap();
    assert!(
        data.len() < (64 << 10) + 200
            && data.contains("… [truncated: 65536 of 33554432 bytes shown; raise the cap with --max-log-message-bytes"),
        "{}",
        &data[data.len().saturating_sub(200)..]
    );
    assert!(wire < 8 << 20, "{wire} bytes on the wire for 50 capped messages");
}

/// Sends `echo` calls every 20 ms while `flood` (request 1) runs, reading
/// everything as it comes; returns every line up to the flood's response and
/// the echo latencies.
fn echo_during(server: &mut RawServer, lines: &mpsc::Receiver<Line>, echoes: u64) -> (Vec<Line>, Vec<Duration>) {
    let mut sent = Vec::new();
    let mut seen = Vec::new();
    for n in 0..echoes {
        let id = 100 + n;
        sent.push((id, Instant::now()));
        server.call(id, "echo", json!({"text": format!("echo {n}")}), json!({}));
        let pause = Instant::now() + Duration::from_millis(20);
        while let Ok(line) = lines.recv_timeout(pause.saturating_duration_since(Instant::now())) {
            seen.push(line);
        }
    }
    let flood_answered = |seen: &[Line]| seen.iter().any(|l| l.message["id"] == 1);
    let echoes_answered = |seen: &[Line]| sent.iter().all(|(id, _)| seen.iter().any(|l| l.message["id"] == *id));
    let deadline = Instant::now() + timeout();
    while !(flood_answered(&seen) && echoes_answered(&seen)) {
        let line = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("every response arrives");
        seen.push(line);
    }
    let latencies = sent
        .iter()
        .map(|(id, at)| {
            let answer = seen.iter().find(|l| l.message["id"] == *id).unwrap();
            assert_eq!(text(&answer.message), format!("echo {}", id - 100));
            answer.at - *at
        })
        .collect();
    (seen, latencies)
}

fn describe(latencies: &[Duration]) -> String {
    let mut sorted = latencies.to_vec();
    sorted.sort();
    format!(
        "echo latency over {} calls: median {:?}, max {:?}",
        sorted.len(),
        sorted[sorted.len() / 2],
        sorted[sorted.len() - 1]
    )
}

#[test]
fn echo_answers_within_tens_of_milliseconds_during_a_progress_flood_and_the_final_progress_arrives() {
    let (mut server, stdout) = RawServer::start(&[]);
    let lines = read_all(stdout);
    until_response(&lines, 0);
    let started = Instant::now();
    server.call(
        1,
        "progress_flood",
        json!({"count": 200_000}),
        json!({"progressToken": "flood"}),
    );
    let (seen, latencies) = echo_during(&mut server, &lines, 40);
    let took = started.elapsed();
    let flood_end = seen.iter().position(|l| l.message["id"] == 1).unwrap();
    let progress: Vec<f64> = seen[..flood_end]
        .iter()
        .filter(|l| l.message["method"] == "notifications/progress")
        .map(|l| l.message["params"]["progress"].as_f64().unwrap())
        .collect();
    eprintln!(
        "progress flood of 200 000 in {took:?}: {} notifications; {}",
        progress.len(),
        describe(&latencies)
    );
    assert_eq!(text(&seen[flood_end].message), "sent 200000 progress");
    assert_eq!(
        progress.last(),
        Some(&200_000.0),
        "the final value arrives before the response"
    );
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "progress only increases");
    // A burst of 100, then at most 100 a second, then the final value.
    let allowed = 100 + (took.as_secs_f64() * 100.0).ceil() as usize + 1;
    assert!(
        progress.len() <= allowed,
        "{} notifications, at most {allowed}",
        progress.len()
    );
    assert!(latencies.iter().all(|l| *l < ECHO_BOUND), "{}", describe(&latencies));
}

#[test]
fn echo_answers_within_tens_of_milliseconds_during_a_log_flood() {
    // The call's own budget lifted, so the session's outbound bound is what holds the flood.
    let (mut server, stdout) = RawServer::start(&[
        "--max-call-notification-bytes",
        "1000000000",
        "--max-log-rate",
        "1000000",
    ]);
    let lines = read_all(stdout);
    until_response(&lines, 0);
    server.call(1, "log_flood", json!({"count": 3000, "bytes": 65536}), json!({}));
    let (seen, latencies) = echo_during(&mut server, &lines, 40);
    let wire: usize = seen.iter().map(|l| l.bytes).sum();
    let logs = seen
        .iter()
        .filter(|l| l.message["method"] == "notifications/message")
        .count();
    eprintln!(
        "log flood of 3000 × 64 KiB: {logs} messages, {wire} bytes on the wire; {}",
        describe(&latencies)
    );
    assert_eq!(
        text(&seen.iter().find(|l| l.message["id"] == 1).unwrap().message),
        "logged 3000 messages of 65536 bytes"
    );
    assert_eq!(logs, 3000, "a client that reads loses nothing");
    assert!(latencies.iter().all(|l| *l < ECHO_BOUND), "{}", describe(&latencies));
}

#[test]
fn a_stalled_http_session_neither_grows_the_host_nor_slows_another_session() {
    let server = HttpServer::start(PluginDir::with(&["flood"]), &[]);
    let before = rss_kib(server.pid()) >> 10;
    // Session A floods its own stream and subscribes to updates, reading nothing.
    let mut stalled = server.session(json!({}));
    stalled.request("resources/subscribe", json!({"uri": "flood://r/0"}));
    let _unread_standalone = stalled.get(None);
    let flood = json!({"jsonrpc": "2.0", "id": 900, "method": "tools/call",
        "params": {"name": "log_flood", "arguments": {"count": 200, "bytes": 32 << 20}}});
    let _unread_flood = stalled.post(&flood);
    // Session B works meanwhile: echoes, and announces updates that A is subscribed to.
    let mut other = server.session(json!({}));
    let mut latencies = Vec::new();
    let mut peak = before;
    for n in 0..40 {
        let started = Instant::now();
        let echo = other.call_tool("echo", json!({"text": format!("echo {n}")}));
        latencies.push(started.elapsed());
        assert_eq!(text(&echo.response), format!("echo {n}"));
        peak = peak.max(rss_kib(server.pid()) >> 10);
        thread::sleep(Duration::from_millis(20));
    }
    let started = Instant::now();
    let updates = other.call_tool("updates_flood", json!({"count": 100_000, "uris": 4}));
    let updates_took = started.elapsed();
    assert_eq!(text(&updates.response), "announced 100000 updates");
    let started = Instant::now();
    let progress = other.request(
        "tools/call",
        json!({"name": "progress_flood", "arguments": {"count": 100_000}, "_meta": {"progressToken": 7}}),
    );
    let progress_took = started.elapsed();
    let values: Vec<f64> = progress
        .notifications("notifications/progress")
        .iter()
        .map(|n| n["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(
        values.last(),
        Some(&100_000.0),
        "the final progress arrives before the response"
    );
    peak = peak.max(rss_kib(server.pid()) >> 10);
    let after = rss_kib(server.pid()) >> 10;
    eprintln!(
        "HTTP: a stalled session flooding 200 × 32 MiB: RSS {before} MiB before, {peak} MiB peak, {after} MiB after; \
         the other session's {}; 100 000 updates in {updates_took:?}, 100 000 progress in {progress_took:?} \
         ({} notifications)",
        describe(&latencies),
        values.len()
    );
    assert!(latencies.iter().all(|l| *l < ECHO_BOUND), "{}", describe(&latencies));
    assert!(
        updates_took < Duration::from_secs(5),
        "announcing to a stalled subscriber took {updates_took:?}"
    );
    assert!(
        peak < before + RSS_GROWTH_BOUND_MIB,
        "RSS grew from {before} MiB to {peak} MiB (bound: +{RSS_GROWTH_BOUND_MIB} MiB)"
    );
}

#[test]
fn resource_updates_and_list_changes_to_a_stalled_stdio_client_are_coalesced() {
    let (mut server, mut stdout) = RawServer::start(&[]);
    for n in 0..4 {
        server.send(&json!({"jsonrpc": "2.0", "id": 10 + n, "method": "resources/subscribe",
            "params": {"uri": format!("flood://r/{n}")}}));
    }
    let mut line = String::new();
    while !line.contains("\"id\":13") {
        line.clear();
        stdout.read_line(&mut line).unwrap();
    }
    let before = rss_kib(server.pid()) >> 10;
    // Nothing is read while the plugin announces 100 000 updates over 4 URIs
    // and says 100 000 times that its lists changed.
    server.call(1, "updates_flood", json!({"count": 100_000, "uris": 4}), json!({}));
    server.call(2, "relist_flood", json!({"count": 100_000}), json!({}));
    let (_, peak) = sample_rss(server.pid(), Duration::from_secs(4));
    let lines = read_all(stdout);
    let mut seen = until_response(&lines, 1);
    if !seen.iter().any(|l| l.message["id"] == 2) {
        seen.extend(until_response(&lines, 2));
    }
    // The last announcements, held while the client was not reading, follow.
    while let Ok(line) = lines.recv_timeout(Duration::from_millis(500)) {
        seen.push(line);
    }
    let after = rss_kib(server.pid()) >> 10;
    let count = |method: &str| seen.iter().filter(|l| l.message["method"] == method).count();
    let (updates, tools_changed) = (
        count("notifications/resources/updated"),
        count("notifications/tools/list_changed"),
    );
    let wire: usize = seen.iter().map(|l| l.bytes).sum();
    eprintln!(
        "100 000 updates and 100 000 list changes to a stalled stdio client: RSS {before} MiB before, {peak} MiB \
         peak, {after} MiB after; {updates} updates and {tools_changed} tools/list_changed delivered, {wire} bytes \
         on the wire"
    );
    assert_eq!(
        text(&seen.iter().find(|l| l.message["id"] == 1).unwrap().message),
        "announced 100000 updates"
    );
    assert!(text(&seen.iter().find(|l| l.message["id"] == 2).unwrap().message).starts_with("said its lists changed"));
    // What fits the session's 1 MiB bound, then one per URI.
    assert!(updates < 100_000 / 4, "{updates} of 100 000 updates delivered");
    for n in 0..4 {
        let uri = format!("flood://r/{n}");
        assert!(
            seen.iter().any(|l| l.message["params"]["uri"] == uri.as_str()),
            "the latest update of {uri} arrives"
        );
    }
    assert!((1..100).contains(&tools_changed), "{tools_changed} tools/list_changed");
    assert!(wire < 4 << 20, "{wire} bytes on the wire");
    assert!(peak < before + RSS_GROWTH_BOUND_MIB, "RSS {before} -> {peak} MiB");
}

#[test]
fn one_call_cannot_put_more_than_its_notification_budget_on_the_wire() {
    // The log rate lifted, so the call's byte budget (default 8 MiB) is what holds it.
    let (mut server, stdout) = RawServer::start(&["--max-log-rate", "1000000"]);
    let lines = read_all(stdout);
    until_response(&lines, 0);
    // 200 MiB of log messages, cut to 64 KiB each: 3200 of them.
    server.call(1, "log_flood", json!({"count": 3200, "bytes": 65536}), json!({}));
    let mut seen = until_response(&lines, 1);
    while let Ok(line) = lines.recv_timeout(Duration::from_millis(300)) {
        seen.push(line);
    }
    let wire: usize = seen.iter().map(|l| l.bytes).sum();
    let logs: Vec<&Value> = seen
        .iter()
        .map(|l| &l.message)
        .filter(|m| m["method"] == "notifications/message")
        .collect();
    let summary = logs
        .iter()
        .filter_map(|m| m["params"]["data"].as_str())
        .find(|d| d.contains("were dropped"))
        .expect("one warning says how many were dropped");
    eprintln!(
        "one call logging 3200 × 64 KiB: {} messages, {wire} bytes on the wire; {summary}",
        logs.len()
    );
    assert!(wire < 9 << 20, "{wire} bytes on the wire, over the 8 MiB budget");
    assert!(
        summary.contains(
            " log message(s) from plugin flood were dropped: this call went over its budget of 8388608 bytes"
        ) && summary.contains("--max-call-notification-bytes"),
        "{summary}"
    );
    let dropped: usize = summary.split(' ').next().unwrap().parse().unwrap();
    assert_eq!(logs.len() - 1 + dropped, 3200, "every message is sent or counted");
    assert_eq!(
        text(&seen.iter().find(|l| l.message["id"] == 1).unwrap().message),
        "logged 3200 messages of 65536 bytes"
    );
}
