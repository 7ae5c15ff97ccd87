//! Limits on every plugin call: wall-clock deadline, fuel, memory and output
//! size. Hitting one ends that call only (a tool call gets an `isError`
//! result naming the limit and its value, other requests a JSON-RPC error
//! saying the same), the instance is discarded, and the host goes on serving
//! meanwhile. Also: traps, panics and stack overflows; the limits' sources
//! (flags over a config file over the defaults, manifests per plugin and per
//! tool over the host's); and the debug log of what each call consumed.
//!
//! Behavioural only: waits are bounded by the harness timeout, and "meanwhile"
//! means another request was answered before the limited call's response
//! arrived, never a measured duration.

use std::process::Command;

use serde_json::{Value, json};
use wasm_mcp_tests::expect::{is_tool_error, single_text, texts, tool_ok};
use wasm_mcp_tests::{NO_FUEL_LIMIT, PluginDir, StdioServer, binary};

fn spinner(args: &[&str]) -> StdioServer {
    let mut server = StdioServer::start_with_args(PluginDir::with(&["spinner"]), args);
    server.initialize(json!({}));
    server
}

/// The text of an `isError` tool result; fails if the call succeeded.
#[track_caller]
fn tool_error_text(result: &Value) -> String {
    assert!(is_tool_error(result), "expected an isError result, got {result}");
    texts(result).join("\n")
}

/// Calls `tool`, which must fail; returns its error text.
fn call_error_text(server: &mut StdioServer, tool: &str, arguments: Value) -> String {
    tool_error_text(&server.call_tool(tool, arguments).result().clone())
}

/// Starts `tool` (which will be stopped by a limit), checks that other
/// requests (a tools/call of another tool, tools/list, ping) are answered
/// while it runs, then returns its result.
fn stopped_while_others_are_served(server: &mut StdioServer, tool: &str) -> Value {
    let limited = server.start_request("tools/call", json!({"name": tool, "arguments": {}}));
    let slept = server.call_tool("sleep", json!({"ms": 1})).result().clone();
    assert_eq!(single_text(&slept), "slept 1 ms");
    let tools = server.list_all("tools/list", "tools");
    assert!(!tools.is_empty());
    assert_eq!(server.request("ping", Value::Null).result(), &json!({}));
    assert!(
        !server.has_response_for(&limited),
        "the `{tool}` call should still be running while the other requests are answered: {:?}",
        server.all_responses()
    );
    server.wait_response(&limited, "tools/call").result().clone()
}

/// The host goes on after a limit: a fresh call of the same plugin works.
fn still_serves(server: &mut StdioServer) {
    let result = server.call_tool("alloc", json!({"mb": 1})).result().clone();
    assert_eq!(single_text(&result), "allocated 1 MiB", "{result}");
}

#[test]
fn a_spinning_call_is_stopped_by_its_deadline_while_other_requests_are_answered() {
    let mut server = spinner(&["--timeout", "1", "--fuel", NO_FUEL_LIMIT]);
    let result = stopped_while_others_are_served(&mut server, "spin");
    assert_eq!(
        tool_error_text(&result),
        "Tool spin failed: stopped after 1 s wall-clock limit"
    );
    still_serves(&mut server);
    server.shutdown();
}

#[test]
fn a_spinning_call_is_stopped_by_its_fuel_while_other_requests_are_answered() {
    // About a second of spinning at the speeds seen; a slower machine only
    // takes longer.
    let mut server = spinner(&["--fuel", "12345678901", "--timeout", "86400"]);
    let result = stopped_while_others_are_served(&mut server, "spin");
    assert_eq!(
        tool_error_text(&result),
        "Tool spin failed: stopped after using its fuel limit of 12345678901 instructions"
    );
    still_serves(&mut server);
    server.shutdown();
}

#[test]
fn deadlines_hold_without_the_directory_watcher() {
    // With --no-watch nothing but the serve loop holds the plugin runtime,
    // which owns the engine the plugins run on.
    let mut server = spinner(&["--no-watch", "--timeout", "1", "--fuel", NO_FUEL_LIMIT]);
    let result = stopped_while_others_are_served(&mut server, "spin");
    assert_eq!(
        tool_error_text(&result),
        "Tool spin failed: stopped after 1 s wall-clock limit"
    );
    server.shutdown();
}

#[test]
fn a_call_blocked_in_a_host_call_is_stopped_by_its_deadline() {
    // `sleep` waits in a WASI host call, where no wasm runs to burn fuel:
    // ten minutes asked, one second allowed.
    let mut server = spinner(&["--timeout", "1"]);
    assert_eq!(
        call_error_text(&mut server, "sleep", json!({"ms": 600_000})),
        "Tool sleep failed: stopped after 1 s wall-clock limit"
    );
    still_serves(&mut server);
    server.shutdown();
}

#[test]
fn a_fractional_deadline_is_named_in_milliseconds() {
    let mut server = spinner(&["--timeout", "0.25"]);
    assert_eq!(
        call_error_text(&mut server, "spin_checked", json!({})),
        "Tool spin_checked failed: stopped after 250 ms wall-clock limit"
    );
    server.shutdown();
}

#[test]
fn a_memory_hungry_call_is_stopped_at_its_cap() {
    let mut server = spinner(&["--memory-mib", "32"]);
    assert_eq!(
        call_error_text(&mut server, "alloc", json!({"mb": 64})),
        "Tool alloc failed: stopped at its memory limit of 32 MiB"
    );
    // Below the cap it works, in a fresh instance.
    let result = server.call_tool("alloc", json!({"mb": 16})).result().clone();
    assert_eq!(single_text(&result), "allocated 16 MiB");
    server.shutdown();
}

#[test]
fn a_panic_is_a_crash_result_naming_the_panic() {
    let mut server = spinner(&[]);
    let text = call_error_text(&mut server, "panic", json!({}));
    assert!(
        text.starts_with("Tool panic failed: the plugin crashed: ") && text.contains("panicked"),
        "{text}"
    );
    assert!(
        text.contains("panic requested by the caller"),
        "the crash names the guest's panic message (its stderr): {text}"
    );
    still_serves(&mut server);
    server.shutdown();
}

#[test]
fn a_stack_overflow_is_a_crash_result() {
    let mut server = spinner(&[]);
    // The wasm call stack: wasmtime's guard traps with a stack overflow.
    let text = call_error_text(&mut server, "trap_call_stack", json!({}));
    assert_eq!(text, "Tool trap_call_stack failed: the plugin crashed: stack overflow");
    still_serves(&mut server);
    // Rust keeps big frames on a shadow stack in linear memory; overflowing
    // it runs off the bottom of memory, which traps as an out-of-bounds
    // access. Either way the call ends as a crash and the host goes on.
    let text = call_error_text(&mut server, "trap_stack", json!({}));
    assert!(
        text.starts_with("Tool trap_stack failed: the plugin crashed: ")
            && (text.contains("stack overflow") || text.contains("out of bounds memory access")),
        "{text}"
    );
    still_serves(&mut server);
    server.shutdown();
}

#[test]
fn output_over_the_maximum_is_refused_naming_the_limit() {
    let mut server = spinner(&["--max-output-kib", "16"]);
    let small = server.call_tool("big_output", json!({"kb": 8})).result().clone();
    tool_ok(&small);
    assert_eq!(single_text(&small).len(), 8 * 1024);
    let text = call_error_text(&mut server, "big_output", json!({"kb": 64}));
    assert!(
        text.starts_with("Tool big_output failed: output exceeded the limit of 16384 bytes"),
        "{text}"
    );
    still_serves(&mut server);
    server.shutdown();
}

/// Limits hit outside tools/call: a JSON-RPC error that says the same.
#[test]
fn limits_in_other_requests_are_json_rpc_errors_naming_the_limit() {
    let mut server = spinner(&[
        "--timeout",
        "1",
        "--fuel",
        NO_FUEL_LIMIT,
        "--memory-mib",
        "32",
        "--max-output-kib",
        "64",
    ]);
    let cases = [
        (
            "resources/read",
            json!({"uri": "spinner://misbehave/spin"}),
            "stopped after 1 s wall-clock limit",
        ),
        (
            "prompts/get",
            json!({"name": "spin"}),
            "stopped after 1 s wall-clock limit",
        ),
        (
            "resources/read",
            json!({"uri": "spinner://misbehave/alloc"}),
            "stopped at its memory limit of 32 MiB",
        ),
        (
            "resources/read",
            json!({"uri": "spinner://misbehave/panic"}),
            "the plugin crashed",
        ),
        (
            "resources/read",
            json!({"uri": "spinner://misbehave/big"}),
            "output exceeded the limit of 65536 bytes",
        ),
    ];
    for (method, params, expected) in cases {
        let error = server.request(method, params.clone()).expect_error_code(-32603);
        assert!(
            error.message.contains(expected),
            "{method} {params}: the error should say {expected:?}, got {:?}",
            error.message
        );
    }
    still_serves(&mut server);
    server.shutdown();
}

#[test]
fn a_spinning_resource_read_is_stopped_by_fuel_too() {
    let mut server = spinner(&["--fuel", "1000000000", "--timeout", "86400"]);
    let error = server
        .request("resources/read", json!({"uri": "spinner://misbehave/spin"}))
        .expect_error_code(-32603);
    assert_eq!(
        error.message,
        "stopped after using its fuel limit of 1000000000 instructions"
    );
    server.shutdown();
}

/// `[limits]` in a manifest apply to every call of that plugin over the
/// host's flags; `[tools.NAME.limits]` to that tool over the plugin's.
#[test]
fn manifest_limits_override_the_host_per_plugin_and_per_tool() {
    let dir = PluginDir::with(&["spinner"]);
    dir.add_file(
        "spinner.toml",
        br#"
[limits]
timeout_secs = 1
memory_mib = 32

[tools.spin.limits]
fuel = 1234567890
timeout_secs = 600

[tools.alloc.limits]
memory_mib = 96
"#,
    );
    let mut server = StdioServer::start_with_args(
        dir,
        &["--timeout", "600", "--memory-mib", "16", "--fuel", NO_FUEL_LIMIT],
    );
    server.initialize(json!({}));

    // The plugin's deadline, over the host's 600 s.
    let text = call_error_text(&mut server, "spin_checked", json!({}));
    assert_eq!(text, "Tool spin_checked failed: stopped after 1 s wall-clock limit");
    // The tool's own fuel (its own timeout lifts the plugin's 1 s).
    let text = call_error_text(&mut server, "spin", json!({}));
    assert_eq!(
        text,
        "Tool spin failed: stopped after using its fuel limit of 1234567890 instructions"
    );
    // The tool's memory (96 MiB) over the plugin's (32) over the host's (16).
    let result = server.call_tool("alloc", json!({"mb": 64})).result().clone();
    assert_eq!(single_text(&result), "allocated 64 MiB");
    let text = call_error_text(&mut server, "alloc", json!({"mb": 128}));
    assert_eq!(text, "Tool alloc failed: stopped at its memory limit of 96 MiB");
    // Outside `alloc`, the plugin's 32 MiB.
    let error = server
        .request("resources/read", json!({"uri": "spinner://misbehave/alloc"}))
        .expect_error_code(-32603);
    assert!(error.message.contains("memory limit of 32 MiB"), "{}", error.message);
    server.shutdown();
}

/// A config file for `--config`, deleted with the returned guard.
fn config_file(text: &str) -> tempfile::NamedTempFile {
    let file = tempfile::Builder::new()
        .prefix("wasm-mcp-config-")
        .suffix(".toml")
        .tempfile()
        .expect("create a config file");
    std::fs::write(file.path(), text).expect("write the config file");
    file
}

const CONFIG: &str = r#"
[limits]
timeout_secs = 1
memory_mib = 24

[server]
page_size = 1
"#;

#[test]
fn a_config_file_sets_the_host_defaults() {
    let config = config_file(CONFIG);
    let path = config.path().to_str().unwrap();
    let mut server = spinner(&["--config", path, "--fuel", NO_FUEL_LIMIT]);
    let text = call_error_text(&mut server, "spin", json!({}));
    assert_eq!(text, "Tool spin failed: stopped after 1 s wall-clock limit");
    let text = call_error_text(&mut server, "alloc", json!({"mb": 32}));
    assert_eq!(text, "Tool alloc failed: stopped at its memory limit of 24 MiB");
    let page = server.request("tools/list", json!({})).result().clone();
    assert_eq!(page["tools"].as_array().unwrap().len(), 1, "page_size = 1: {page}");
    assert!(page.get("nextCursor").is_some(), "{page}");
    server.shutdown();
}

#[test]
fn flags_override_the_config_file() {
    let config = config_file(CONFIG);
    let path = config.path().to_str().unwrap();
    let mut server = spinner(&[
        "--config",
        path,
        "--timeout",
        "600",
        "--fuel",
        "987654321",
        "--memory-mib",
        "40",
        "--page-size",
        "3",
    ]);
    let text = call_error_text(&mut server, "spin", json!({}));
    assert_eq!(
        text,
        "Tool spin failed: stopped after using its fuel limit of 987654321 instructions"
    );
    let result = server.call_tool("alloc", json!({"mb": 32})).result().clone();
    assert_eq!(single_text(&result), "allocated 32 MiB");
    let text = call_error_text(&mut server, "alloc", json!({"mb": 48}));
    assert_eq!(text, "Tool alloc failed: stopped at its memory limit of 40 MiB");
    let page = server.request("tools/list", json!({})).result().clone();
    assert_eq!(page["tools"].as_array().unwrap().len(), 3, "--page-size 3: {page}");
    server.shutdown();
}

#[test]
fn an_unknown_key_in_the_config_file_stops_the_start_naming_key_and_file() {
    let config = config_file("[limits]\nfuel = 10\ntimeout_secondz = 3\n");
    let dir = PluginDir::with(&["spinner"]);
    let output = Command::new(binary())
        .arg("serve")
        .arg("--plugins")
        .arg(dir.path())
        .arg("--config")
        .arg(config.path())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run wasm-mcp");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "a bad config file must stop the start");
    assert!(
        stderr.contains("timeout_secondz") && stderr.contains(&*config.path().to_string_lossy()),
        "the error names the key and the file: {stderr}"
    );
    assert!(output.stdout.is_empty(), "nothing on stdout: {:?}", output.stdout);
}

#[test]
fn an_unknown_key_in_a_manifest_rejects_that_plugin_naming_key_and_file() {
    let dir = PluginDir::with(&["spinner", "batch-digest"]);
    dir.add_file("spinner.toml", b"[tools.spin.limits]\nfuell = 5\n");
    let mut server = StdioServer::start(dir);
    server.initialize(json!({}));
    let tools = server.list_all("tools/list", "tools");
    let names = wasm_mcp_tests::expect::names(&tools);
    assert!(
        names.contains(&"digest".to_string()) && !names.contains(&"spin".to_string()),
        "only the plugin with the good manifest serves: {names:?}"
    );
    server.wait_for_stderr("the manifest error naming key and file", |stderr| {
        stderr.contains("fuell") && stderr.contains("spinner.toml")
    });
    server.shutdown();
}

// ---- what a call consumed, in the debug log ---------------------------------

/// One `plugin call finished` debug line's fields, as `key=value` pairs.
fn usage_fields(line: &str) -> Vec<(String, String)> {
    line.split_whitespace()
        .filter_map(|word| word.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
        .collect()
}

fn field<'a>(fields: &'a [(String, String)], key: &str, line: &str) -> &'a str {
    fields
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {key}= in the usage line: {line}"))
}

/// The usage lines logged for `tools/call` of `plugin`, in order.
fn tool_usage_lines(stderr: &str, plugin: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| {
            l.contains("plugin call finished")
                && l.contains(&format!("plugin={plugin}"))
                && l.contains("call=\"tools/call\"")
        })
        .map(str::to_string)
        .collect()
}

fn debug_server(dir: &PluginDir) -> StdioServer {
    let mut command = Command::new(binary());
    command
        .arg("serve")
        .arg("--plugins")
        .arg(dir.path())
        .env("WASM_MCP_LOG", "debug");
    let mut server = StdioServer::spawn_command(command);
    server.initialize(json!({}));
    server
}

#[test]
fn the_debug_log_shows_fuel_wall_time_and_peak_memory_of_each_call() {
    let dir = PluginDir::with(&["spinner"]);
    let mut server = debug_server(&dir);
    let result = server.call_tool("alloc", json!({"mb": 40})).result().clone();
    assert_eq!(single_text(&result), "allocated 40 MiB");
    let stderr = server.wait_for_stderr("a usage line for the alloc call", |s| {
        !tool_usage_lines(s, "spinner").is_empty()
    });
    let line = tool_usage_lines(&stderr, "spinner").remove(0);
    assert!(line.contains("DEBUG"), "{line}");
    let fields = usage_fields(&line);
    let fuel: u64 = field(&fields, "fuel_used", &line)
        .parse()
        .expect("fuel_used is a number");
    let wall_ms: f64 = field(&fields, "wall_ms", &line).parse().expect("wall_ms is a number");
    let peak: u64 = field(&fields, "peak_memory_bytes", &line)
        .parse()
        .expect("peak_memory_bytes is a number");
    assert!(fuel > 0, "{line}");
    assert!(wall_ms > 0.0, "{line}");
    assert!(peak >= 40 << 20, "the peak covers the 40 MiB allocated: {line}");
    server.shutdown();
}

#[test]
fn the_logged_fuel_of_a_tool_with_its_own_fuel_limit_is_what_it_used() {
    let dir = PluginDir::with(&["batch-digest"]);
    // The tool's own fuel limit (10^10) differs from the plugin's (the default).
    dir.add_file("batch-digest.toml", b"[tools.digest.limits]\nfuel = 10_000_000_000\n");
    let mut server = debug_server(&dir);
    let result = server
        .call_tool("digest", json!({"text": "abc", "rounds": 1000}))
        .result()
        .clone();
    tool_ok(&result);
    let stderr = server.wait_for_stderr("a usage line for the digest call", |s| {
        !tool_usage_lines(s, "batch-digest").is_empty()
    });
    let line = tool_usage_lines(&stderr, "batch-digest").remove(0);
    let fields = usage_fields(&line);
    let fuel: u64 = field(&fields, "fuel_used", &line)
        .parse()
        .expect("fuel_used is a number");
    // A thousand SHA-256 rounds take millions of instructions, not billions.
    assert!(
        fuel > 0 && fuel < 1_000_000_000,
        "fuel_used must be what the call used, not counted from another limit: {line}"
    );
    server.shutdown();
}

#[test]
fn calls_share_the_host_memory_budget_the_next_waits_its_turn_and_one_over_it_fails_clearly() {
    let mut server = StdioServer::start_with_args(PluginDir::with(&["flood"]), &["--max-total-memory-mib", "100"]);
    server.initialize(json!({}));
    server.request("logging/setLevel", json!({"level": "info"}));
    // One call that alone needs more than the whole budget fails, naming the setting.
    let over = tool_error_text(server.call_tool("hold", json!({"mb": 150, "ms": 0})).result());
    for needle in [
        "more than the 100 MiB all calls running at once may hold",
        "--max-total-memory-mib",
        "max_total_memory_mib under [server]",
    ] {
        assert!(over.contains(needle), "{needle:?} in {over:?}");
    }
    // A call holds 60 MiB for a while; a second that needs 60 MiB more waits
    // for it, though it would hold its own for no time at all.
    let long = server.start_request(
        "tools/call",
        json!({"name": "hold", "arguments": {"mb": 60, "ms": 1500}}),
    );
    server.wait_for_notification("the first call holds its memory", |n| {
        n["params"]["data"] == "holding 60 MiB"
    });
    let short = server.start_request("tools/call", json!({"name": "hold", "arguments": {"mb": 60, "ms": 0}}));
    let short_answer = server.wait_response(&short, "tools/call").result().clone();
    assert_eq!(single_text(&short_answer), "held 60 MiB for 0 ms");
    assert!(
        server.has_response_for(&long),
        "the second call waited for the first to give its memory back"
    );
    tool_ok(server.wait_response(&long, "tools/call").result());
    // Within the budget, calls go on as usual.
    let echo = server.call_tool("echo", json!({"text": "still here"})).result().clone();
    assert_eq!(single_text(&echo), "still here");
    server.shutdown();
}
