//! Loading the plugins directory: files that are not usable components are
//! reported on stderr with their path and skipped while the good plugins
//! serve; a plugin written against the raw WIT bindings (no SDK) serves too;
//! a missing directory is one clear line on stderr.

use serde_json::json;
use wasm_mcp_tests::expect::{by_name, single_text, tool_ok};
use wasm_mcp_tests::{PluginDir, StdioServer};

/// Deterministic bytes that are not WebAssembly (a fixed-seed LCG).
fn random_bytes(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x5eed_1234_abcd_ef01;
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 56) as u8
        })
        .collect()
}

/// A valid core WebAssembly module that exports one function: a module, not a component.
const CORE_MODULE: &[u8] = &[
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version 1
    0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type section: () -> ()
    0x03, 0x02, 0x01, 0x00, // function section: one function of type 0
    0x07, 0x05, 0x01, 0x01, 0x66, 0x00, 0x00, // export "f" = func 0
    0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b, // code: empty body
];

#[test]
fn corrupt_files_are_reported_and_skipped_while_good_plugins_serve() {
    let plugins = PluginDir::with(&["text-tools", "conformance"]);
    let bad = [
        plugins.add_file("aaa-random-bytes.wasm", &random_bytes(4096)),
        plugins.add_file("core-module.wasm", CORE_MODULE),
        plugins.add_file("empty.wasm", b""),
        // Looks like a component header, then garbage.
        plugins.add_file(
            "truncated-component.wasm",
            &[0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00, 0xff],
        ),
    ];
    let mut server = StdioServer::start(plugins);
    server.initialize(json!({}));

    let tools = server.list_all("tools/list", "tools");
    by_name(&tools, "reverse");
    by_name(&tools, "test_simple_text");
    let result = server.call_tool("reverse", json!({"text": "abc"})).result().clone();
    tool_ok(&result);
    assert_eq!(single_text(&result), "cba");
    let result = server.call_tool("test_simple_text", json!({})).result().clone();
    assert_eq!(single_text(&result), "This is a simple text response for testing.");

    for path in &bad {
        let path = path.display().to_string();
        server.wait_for_stderr(&format!("a report naming {path}"), |stderr| stderr.contains(&path));
    }
    server.shutdown();
}

#[test]
fn an_empty_plugins_directory_serves_an_empty_catalog() {
    let mut server = StdioServer::start(PluginDir::empty());
    server.initialize(json!({}));
    assert_eq!(server.list_all("tools/list", "tools"), Vec::<serde_json::Value>::new());
    assert_eq!(
        server.list_all("prompts/list", "prompts"),
        Vec::<serde_json::Value>::new()
    );
    assert_eq!(
        server.list_all("resources/list", "resources"),
        Vec::<serde_json::Value>::new()
    );
    server
        .call_tool("reverse", json!({"text": "abc"}))
        .expect_error_code(-32602);
    server.shutdown();
}

#[test]
fn files_that_are_not_wasm_are_ignored() {
    let plugins = PluginDir::with(&["text-tools"]);
    plugins.add_file("README.md", b"# not a plugin");
    plugins.add_file("notes.txt", &random_bytes(100));
    let mut server = StdioServer::start(plugins);
    server.initialize(json!({}));
    let tools = server.list_all("tools/list", "tools");
    assert_eq!(tools.len(), 6, "only text-tools' six tools: {tools:?}");
    server.shutdown();
}

/// A command-line error is its chain of reasons on one line, without a
/// backtrace even when `RUST_BACKTRACE` is set; `WASM_MCP_LOG=debug` adds it.
#[test]
fn a_missing_plugins_directory_is_one_clear_line_without_a_backtrace() {
    let missing = std::env::temp_dir().join("wasm-mcp-surely-not-a-plugins-directory");
    let serve = |log: &str| {
        std::process::Command::new(wasm_mcp_tests::binary())
            .args(["serve", "--plugins"])
            .arg(&missing)
            .env("RUST_BACKTRACE", "1")
            .env("WASM_MCP_LOG", log)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run wasm-mcp serve")
    };
    let plain = serve("info");
    assert!(!plain.status.success());
    let stderr = String::from_utf8_lossy(&plain.stderr);
    let expected = format!(
        "wasm-mcp: the plugins directory {} does not exist; create it or pass --plugins DIR\n",
        missing.display()
    );
    assert!(stderr.ends_with(&expected), "{stderr}");
    assert!(!stderr.contains("backtrace"), "{stderr}");

    let debug = serve("debug");
    let stderr = String::from_utf8_lossy(&debug.stderr);
    assert!(stderr.contains("Stack backtrace"), "{stderr}");
}
