//! What operators see: a real Prometheus (Debian's `prometheus`, started
//! here) scrapes `/metrics` of an HTTP server (behind its token) and of a
//! stdio server (`--metrics ADDR`), and its query API must show the series a
//! known sequence of calls produces.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use wasm_mcp_tests::http::HttpServer;
use wasm_mcp_tests::{PluginDir, StdioServer, timeout};

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
        let http = reqwest::blocking::Client::new();
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
        let text = reqwest::blocking::Client::new()
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
    let refused = reqwest::blocking::get(format!("{base}/metrics")).unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);

    // The known sequence, over HTTP (a 2025-11-25 session).
    let mut client = http.client();
    client.token = Some(TOKEN.into());
    client.initialize(json!({}));
    for _ in 0..3 {
        client.call_tool("test_simple_text", json!({}));
    }
    client.call_tool("test_error_handling", json!({}));
    client.call_tool("spin", json!({}));
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
