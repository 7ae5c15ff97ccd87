//! What operators see: a real Prometheus (Debian's `prometheus`, started
//! here) scrapes `/metrics` of an HTTP server (behind its token) and of a
//! stdio server (`--metrics ADDR`), and its query API must show the series a
//! known sequence of calls produces; and the status page, rendered by
//! headless Chromium (Debian's `chromium`), must show calls, a failing
//! plugin, a reload, a limit hit and refused egress (its screenshot is kept
//! in `target/test-output/operations/`); and an OTLP receiver here decodes
//! the spans the server exports (the OpenTelemetry protobuf types) and
//! checks their names, attributes and parents.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use wasm_mcp_tests::http::{HttpServer, McpClient};
use wasm_mcp_tests::otlp::{AnyValue, OtlpReceiver, Span};
use wasm_mcp_tests::process::{Stderr, serve_command};
use wasm_mcp_tests::{PluginDir, StdioServer, timeout, workspace_root};

const TOKEN: &str = "scrape-token";

/// A Prometheus of its own, on a free loopback port, scraping `targets`
/// (job name, `host:port`, bearer token) every 200 ms.
struct Prometheus {
    process: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(targets: &[(&str, &str, Option<&str>)]) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let mut config = String::from("global:\n  scrape_interval: 200ms\n  scrape_timeout: 150ms\nscrape_configs:\n");
        for (job, target, token) in targets {
            config += &format!("  - job_name: {job}\n    static_configs:\n      - targets: ['{target}']\n");
            if let Some(token) = token {
                config += &format!("    authorization:\n      credentials: {token}\n");
            }
        }
        std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
        let port = free_port();
        let process = Command::new("prometheus")
            .arg(format!("--config.file={}", dir.path().join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus runs (`make scale-deps` installs Debian's prometheus)");
        Prometheus {
            process,
            url: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        }
    }

    /// The value of the instant `query`, once it is `expected` (a scrape
    /// may not have happened yet); fails with what it was at the timeout.
    fn wait_for(&self, query: &str, expected: f64) {
        let http = wasm_mcp_tests::http::blocking_client();
        let deadline = Instant::now() + timeout();
        let mut last = Value::Null;
        while Instant::now() < deadline {
            let answer = http
                .get(self.api("query", "query", query))
                .send()
                .and_then(|r| r.text())
                .map(|text| serde_json::from_str::<Value>(&text).unwrap_or_default());
            if let Ok(answer) = answer {
                let value = answer["data"]["result"][0]["value"][1]
                    .as_str()
                    .and_then(|v| v.parse::<f64>().ok());
                if value == Some(expected) {
                    return;
                }
                last = answer;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("Prometheus never answered {expected} to {query}; last answer: {last}");
    }

    /// The URL of API `endpoint` with `key` = `value`.
    fn api(&self, endpoint: &str, key: &str, value: &str) -> reqwest::Url {
        reqwest::Url::parse_with_params(&format!("{}/api/v1/{endpoint}", self.url), &[(key, value)]).unwrap()
    }

    /// How many series match `selector` now.
    fn series(&self, selector: &str) -> usize {
        let text = wasm_mcp_tests::http::blocking_client()
            .get(self.api("series", "match[]", selector))
            .send()
            .and_then(|r| r.text())
            .expect("the series API answers");
        let answer: Value = serde_json::from_str(&text).expect("the series API answers JSON");
        answer["data"].as_array().expect("a list of series").len()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `host:port` of the server's own address.
fn authority(url: &str) -> &str {
    let rest = url.trim_start_matches("http://");
    rest.split('/').next().unwrap()
}

/// The address a stdio server's `--metrics 127.0.0.1:0` took, from its log.
fn metrics_address(server: &mut StdioServer) -> String {
    const AT: &str = "metrics at http://";
    let log = server.wait_for_stderr("the metrics address", |log| log.contains(AT));
    let rest = &log[log.find(AT).unwrap() + AT.len()..];
    rest.split('/').next().unwrap().to_owned()
}

/// A 2025-11-25 session of `server` (with the token) that has called
/// `test_simple_text` three times, `test_error_handling` once (a tool
/// error) and `spin` once (stopped by its fuel).
fn known_sequence(server: &HttpServer) -> McpClient {
    let mut client = server.client();
    client.token = Some(TOKEN.into());
    client.initialize(json!({}));
    for _ in 0..3 {
        client.call_tool("test_simple_text", json!({}));
    }
    client.call_tool("test_error_handling", json!({}));
    client.call_tool("spin", json!({}));
    client
}

#[test]
fn prometheus_scrapes_what_a_known_sequence_of_calls_produces() {
    assert!(
        Path::new("/usr/bin/prometheus").exists(),
        "Debian's prometheus is needed (`make scale-deps` installs it)"
    );
    let limited = ["--fuel", "1000000000"];
    let http = HttpServer::start_with_env(
        PluginDir::with(&["conformance", "spinner"]),
        &limited,
        &[("WASM_MCP_AUTH_TOKEN", TOKEN)],
    );
    let mut stdio = StdioServer::start_with_args(PluginDir::with(&["conformance"]), &["--metrics", "127.0.0.1:0"]);
    let stdio_metrics = metrics_address(&mut stdio);

    // The HTTP server's /metrics wants the token like its MCP endpoint.
    let base = http.url.trim_end_matches("/mcp");
    let refused = wasm_mcp_tests::http::blocking_client()
        .get(format!("{base}/metrics"))
        .send()
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);

    // The known sequence, over HTTP (a 2025-11-25 session).
    let mut client = known_sequence(&http);
    // Names only a client made up never become label values.
    client.request("tools/call", json!({"name": "made-up-by-the-client", "arguments": {}}));
    client.request("made/up-method", json!({}));
    // And over stdio.
    stdio.initialize(json!({}));
    stdio.call_tool("test_simple_text", json!({}));
    stdio.call_tool("test_simple_text", json!({}));

    let prometheus = Prometheus::start(&[
        ("http", authority(&http.url), Some(TOKEN)),
        ("stdio", &stdio_metrics, None),
    ]);
    let operations = "mcp_server_operation_duration_seconds_count";
    prometheus.wait_for(r#"up{job="http"}"#, 1.0);
    prometheus.wait_for(r#"up{job="stdio"}"#, 1.0);
    prometheus.wait_for(
        &format!(
            r#"{operations}{{job="http",mcp_method_name="tools/call",gen_ai_tool_name="test_simple_text",error_type="",mcp_protocol_version="2025-11-25",network_transport="tcp"}}"#
        ),
        3.0,
    );
    prometheus.wait_for(
        &format!(r#"{operations}{{job="http",gen_ai_tool_name="test_error_handling",error_type="tool_error"}}"#),
        1.0,
    );
    prometheus.wait_for(
        &format!(r#"{operations}{{job="http",gen_ai_tool_name="spin",error_type="tool_error"}}"#),
        1.0,
    );
    prometheus.wait_for(
        &format!(r#"{operations}{{job="http",mcp_method_name="tools/call",gen_ai_tool_name="",error_type="-32602"}}"#),
        1.0,
    );
    prometheus.wait_for(
        &format!(r#"{operations}{{job="http",mcp_method_name="other",error_type="-32601"}}"#),
        1.0,
    );
    prometheus.wait_for(
        &format!(r#"{operations}{{job="stdio",gen_ai_tool_name="test_simple_text",network_transport="pipe"}}"#),
        2.0,
    );
    prometheus.wait_for(
        r#"wasm_mcp_plugin_limit_hits_total{job="http",plugin="spinner",limit="fuel"}"#,
        1.0,
    );
    prometheus.wait_for(
        r#"wasm_mcp_plugin_calls_total{job="http",plugin="conformance",call="tools/call",outcome="ok"}"#,
        4.0,
    );
    prometheus.wait_for(
        r#"wasm_mcp_plugin_calls_total{job="http",plugin="spinner",call="tools/call",outcome="limit"}"#,
        1.0,
    );
    prometheus.wait_for(
        r#"wasm_mcp_plugin_fuel_consumed_total{job="http",plugin="spinner"} > bool 1e9"#,
        1.0,
    );
    prometheus.wait_for(r#"wasm_mcp_plugins_loaded{job="http"}"#, 2.0);
    prometheus.wait_for(
        r#"wasm_mcp_plugin_loads_total{job="http",plugin="spinner",outcome="loaded"}"#,
        1.0,
    );
    prometheus.wait_for(
        r#"wasm_mcp_sessions{job="http",mcp_protocol_version="2025-11-25"}"#,
        1.0,
    );
    prometheus.wait_for(r#"wasm_mcp_plugin_calls_running{job="http"}"#, 0.0);
    assert_eq!(
        prometheus.series(r#"{gen_ai_tool_name="made-up-by-the-client"}"#),
        0,
        "a tool name the client made up is no label value"
    );
    assert_eq!(
        prometheus.series(r#"{mcp_method_name="made/up-method"}"#),
        0,
        "a method the client made up is no label value"
    );

    // A session that ends is counted in mcp.server.session.duration.
    assert_eq!(client.delete().status(), StatusCode::NO_CONTENT);
    prometheus.wait_for(
        r#"wasm_mcp_sessions{job="http",mcp_protocol_version="2025-11-25"}"#,
        0.0,
    );
    prometheus.wait_for(
        r#"mcp_server_session_duration_seconds_count{job="http",mcp_protocol_version="2025-11-25"}"#,
        1.0,
    );
    stdio.shutdown();
}

/// The page at `url` as headless Chromium renders it once its scripts have
/// run, as text: one line per table row, cells separated by tabs. With
/// `screenshot`, a phone-sized picture of it is written there too.
fn rendered(url: &str, screenshot: Option<&Path>) -> String {
    let chromium = |extra: &[String]| {
        let output = Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--virtual-time-budget=3000",
            ])
            .args(extra)
            .arg(url)
            .stderr(Stdio::null())
            .output()
            .expect("chromium runs (`make scale-deps` installs Debian's chromium)");
        assert!(output.status.success(), "chromium failed on {url}");
        String::from_utf8(output.stdout).unwrap()
    };
    if let Some(path) = screenshot {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        chromium(&[
            "--window-size=412,1600".into(),
            format!("--screenshot={}", path.display()),
        ]);
        assert!(path.exists(), "chromium wrote no screenshot");
    }
    let dom = chromium(&["--dump-dom".into()]);
    let body = &dom[dom.find("<body").expect("a body")..];
    let body = &body[..body.find("<script").unwrap_or(body.len())];
    let mut text = String::new();
    let mut in_tag = false;
    let mut tag = String::new();
    for c in body.chars() {
        match (c, in_tag) {
            ('<', _) => {
                in_tag = true;
                tag.clear();
            }
            ('>', true) => {
                in_tag = false;
                if tag.starts_with("/b") {
                    text.push(' ');
                } else if tag.starts_with("/td") || tag.starts_with("/th") {
                    text.push('\t');
                } else if tag.starts_with("/tr") || tag.starts_with("/div") || tag.starts_with("/h") {
                    text.push('\n');
                }
            }
            (c, true) => tag.push(c),
            (c, false) => text.push(c),
        }
    }
    text.replace("&amp;", "&").replace("&gt;", ">").replace("&lt;", "<")
}

/// The line of `text` that holds `part`.
fn row_with<'a>(text: &'a str, part: &str) -> &'a str {
    text.lines()
        .find(|line| line.contains(part))
        .unwrap_or_else(|| panic!("no line holds {part:?} in:\n{text}"))
}

/// The line of `text` that starts with `start`.
fn line<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|line| line.starts_with(start))
        .unwrap_or_else(|| panic!("no line starts with {start:?} in:\n{text}"))
}

#[test]
fn the_status_page_renders_live_numbers_in_chromium() {
    let plugins = PluginDir::with(&["conformance", "spinner", "http-client"]);
    let mut command = serve_command(plugins.path());
    command
        .args(["--http", "127.0.0.1:0", "--fuel", "1000000000"])
        .env("WASM_MCP_AUTH_TOKEN", TOKEN)
        .env("WASM_MCP_LOG", "info");
    let mut server = HttpServer::spawn(command, Stderr::Captured);
    server.wait_for_stderr("the plugins to load", |log| log.contains("plugins directory loaded"));
    let base = server.url.trim_end_matches("/mcp").to_owned();
    let page = format!("{base}/status#token={TOKEN}");

    // The data wants the token; the page (which holds none) does not.
    let data = wasm_mcp_tests::http::blocking_client()
        .get(format!("{base}/status.json"))
        .send()
        .unwrap();
    assert_eq!(data.status(), StatusCode::UNAUTHORIZED);
    let without_token = rendered(&format!("{base}/status"), None);
    assert!(without_token.contains("This server wants a token"), "{without_token}");

    let mut client = known_sequence(&server);
    client.call_tool("get", json!({"url": "http://127.0.0.1:9/"}));

    let before = rendered(&page, None);
    assert!(
        line(&before, "test_simple_text\tconformance\t3\t0 (0%)\t").contains(" ms"),
        "{before}"
    );
    line(&before, "test_error_handling\tconformance\t1\t1 (100%)\t");
    line(&before, "spin\tspinner\t1\t1 (100%)\t");
    line(&before, "greet\tconformance\t0\t0\t–\t");
    let spinner = line(&before, "spinner\t");
    assert!(spinner.contains("fuel 1000000000, 30 s, 256 MiB"), "{spinner}");
    line(&before, "1 sessions");
    line(&before, "3 plugins");
    assert!(row_with(&before, "\tlimit: fuel\t").contains("spinner"), "{before}");
    let refused = row_with(&before, "\tegress refused\t");
    assert!(
        refused.contains("http-client") && refused.contains("127.0.0.1:9"),
        "{refused}"
    );

    // A plugin that fails to load, and a reload that adds one.
    std::fs::write(plugins.path().join("broken.wasm"), b"not a component").unwrap();
    server.wait_for_stderr("the broken plugin to fail", |log| log.contains("plugin failed to load"));
    plugins.add_plugin("text-tools");
    server.wait_for_stderr("text-tools to load", |log| {
        log.lines()
            .any(|l| l.contains("plugin loaded") && l.contains("text-tools"))
    });
    let screenshot = workspace_root().join("target/test-output/operations/status.png");
    let after = rendered(&page, Some(&screenshot));
    let broken = line(&after, "broken\t");
    assert!(
        broken.contains("not served") && broken.contains("is not a WebAssembly component"),
        "{broken}"
    );
    row_with(&after, "\tload failed\tbroken\t");
    assert!(line(&after, "text-tools\t").contains("tools,"), "{after}");
    line(&after, "test_simple_text\tconformance\t3\t0 (0%)\t");
}

/// Attribute `key` of `span`, as text.
fn attribute(span: &Span, key: &str) -> Option<String> {
    let value = span
        .attributes
        .iter()
        .find(|a| a.key == key)?
        .value
        .as_ref()?
        .value
        .as_ref()?;
    Some(match value {
        AnyValue::StringValue(text) => text.clone(),
        AnyValue::IntValue(n) => n.to_string(),
        AnyValue::DoubleValue(x) => x.to_string(),
        AnyValue::BoolValue(b) => b.to_string(),
        other => format!("{other:?}"),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_tool_call_that_asks_the_client_is_one_trace_under_the_clients_span() {
    let receiver = OtlpReceiver::start();
    let plugins = PluginDir::with(&["conformance", "spinner"]);
    let mut command = serve_command(plugins.path());
    command
        .args(["--no-watch", "--http", "127.0.0.1:0", "--fuel", "1000000000"])
        .args(["--otlp-endpoint", &receiver.url()])
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env("WASM_MCP_LOG", "info");
    let mut server = HttpServer::spawn(command, Stderr::Captured);
    server.wait_for_stderr("the plugins to load", |log| log.contains("plugins directory loaded"));

    // The client's own span: trace 0af7…, span b7ad….
    let trace_id = "0af7651916cd43dd8448eb211c80319c";
    let parent_id = "b7ad6b7169203331";
    let mut client = server.client();
    client.initialize(json!({"elicitation": {}}));
    let meta = json!({"traceparent": format!("00-{trace_id}-{parent_id}-01"), "progressToken": "p"});
    let exchange = client.request_with(
        "tools/call",
        json!({"name": "test_elicitation", "arguments": {"message": "Who are you?"}, "_meta": meta}),
        |method, _| {
            assert_eq!(method, "elicitation/create");
            json!({"action": "accept", "content": {"username": "ada", "email": "ada@example.org"}})
        },
    );
    assert!(
        exchange.result()["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("ada")
    );
    client.call_tool("spin", json!({}));

    let request = receiver.span("tools/call test_elicitation");
    assert_eq!(hex(&request.trace_id), trace_id, "the request joins the client's trace");
    assert_eq!(hex(&request.parent_span_id), parent_id, "under the client's span");
    assert_eq!(attribute(&request, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(
        attribute(&request, "gen_ai.tool.name").as_deref(),
        Some("test_elicitation")
    );
    assert_eq!(
        attribute(&request, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(
        attribute(&request, "mcp.protocol.version").as_deref(),
        Some("2025-11-25")
    );
    assert_eq!(attribute(&request, "network.transport").as_deref(), Some("tcp"));
    assert!(attribute(&request, "jsonrpc.request.id").is_some());
    assert_eq!(attribute(&request, "error.type"), None);

    let call = receiver.span("plugin conformance tools/call");
    assert_eq!(call.trace_id, request.trace_id);
    assert_eq!(
        call.parent_span_id, request.span_id,
        "the plugin call is a child of the request"
    );
    assert_eq!(attribute(&call, "wasm_mcp.plugin").as_deref(), Some("conformance"));
    assert_eq!(attribute(&call, "wasm_mcp.plugin.sha256").map(|h| h.len()), Some(64));
    assert!(attribute(&call, "wasm_mcp.fuel_used").unwrap().parse::<u64>().unwrap() > 0);
    assert!(
        attribute(&call, "wasm_mcp.peak_memory_bytes")
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 0
    );
    assert!(attribute(&call, "wasm_mcp.wall_ms").is_some());
    assert_eq!(attribute(&call, "wasm_mcp.outcome").as_deref(), Some("ok"));

    let round_trip = receiver.span("elicitation/create (to the client)");
    assert_eq!(round_trip.trace_id, request.trace_id);
    assert_eq!(
        round_trip.parent_span_id, call.span_id,
        "the client round trip happens inside the plugin call"
    );

    // A call stopped by a limit: the request says tool_error, its plugin call which limit.
    let spin = receiver.span("tools/call spin");
    assert_eq!(attribute(&spin, "error.type").as_deref(), Some("tool_error"));
    assert_ne!(
        hex(&spin.trace_id),
        trace_id,
        "a request without traceparent starts its own trace"
    );
    let spun = receiver.span("plugin spinner tools/call");
    assert_eq!(spun.parent_span_id, spin.span_id);
    assert_eq!(attribute(&spun, "wasm_mcp.limit").as_deref(), Some("fuel"));
    assert_eq!(attribute(&spun, "wasm_mcp.outcome").as_deref(), Some("limit"));
    // A task's lifetime is a span under the request that created it.
    let created = client.request(
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 0.2}, "task": {"ttl": 60_000}}),
    );
    let task_id = created.result()["task"]["taskId"].as_str().unwrap().to_owned();
    client.request("tasks/result", json!({"taskId": task_id}));
    let task = receiver.span("task");
    let creating = receiver.span("tools/call slow_compute");
    assert_eq!(
        task.parent_span_id, creating.span_id,
        "the task is a child of the request that created it"
    );
    assert_eq!(attribute(&task, "wasm_mcp.task.id"), Some(task_id));
    assert_eq!(attribute(&task, "wasm_mcp.task.status").as_deref(), Some("completed"));
    let computed = receiver.span("plugin conformance tools/call");
    assert!(
        receiver
            .spans()
            .iter()
            .any(|s| s.name == computed.name && s.parent_span_id == task.span_id),
        "the task's plugin call is a child of the task"
    );

    // Arguments and results are never recorded.
    let everything = format!("{:?}", receiver.spans());
    assert!(!everything.contains("Who are you?") && !everything.contains("ada@example.org"));
}
