//! The catalog across plugins: name collisions between plugins are handled
//! deterministically (both entries stay callable under stable names), are
//! logged, and colliding resource URIs are served once.

use std::collections::HashSet;

use serde_json::{Value, json};
use wasm_mcp_tests::expect::{by_name, names, single_text};
use wasm_mcp_tests::{PluginDir, StdioServer};

/// The same plugin under two file names: every tool, prompt and URI collides.
fn colliding() -> PluginDir {
    let plugins = PluginDir::empty();
    plugins.add_plugin_as("conformance", "conformance");
    plugins.add_plugin_as("conformance", "twin");
    plugins
}

/// The tool and prompt names of one run, in listed order.
fn listed_names(server: &mut StdioServer) -> (Vec<String>, Vec<String>) {
    let tools = server.list_all("tools/list", "tools");
    let prompts = server.list_all("prompts/list", "prompts");
    (names(&tools), names(&prompts))
}

#[test]
fn colliding_tool_names_are_all_callable_under_stable_names() {
    let mut first = StdioServer::start(colliding());
    first.initialize(json!({}));
    let (tools, prompts) = listed_names(&mut first);

    let unique: HashSet<&String> = tools.iter().collect();
    assert_eq!(unique.len(), tools.len(), "tool names must be unique: {tools:?}");
    // Each of the plugin's tools is listed twice: once under its own name, once
    // under another name that still says which tool it is.
    let others: Vec<&String> = tools
        .iter()
        .filter(|n| **n != "test_simple_text" && n.ends_with("test_simple_text"))
        .collect();
    assert!(tools.contains(&"test_simple_text".to_string()), "{tools:?}");
    assert_eq!(
        others.len(),
        1,
        "the second test_simple_text gets one other name: {tools:?}"
    );
    assert_eq!(tools.len() % 2, 0, "every tool is listed for both plugins: {tools:?}");

    // Both are callable and run the same plugin code.
    for name in ["test_simple_text", others[0].as_str()] {
        let result = first.call_tool(name, json!({})).result().clone();
        assert_eq!(
            single_text(&result),
            "This is a simple text response for testing.",
            "{name}"
        );
    }
    // Prompts likewise.
    let prompt_twins: Vec<&String> = prompts
        .iter()
        .filter(|n| **n != "test_simple_prompt" && n.ends_with("test_simple_prompt"))
        .collect();
    assert_eq!(prompt_twins.len(), 1, "{prompts:?}");
    for name in ["test_simple_prompt", prompt_twins[0].as_str()] {
        first.request("prompts/get", json!({"name": name})).result();
    }
    // The collision is logged.
    first.wait_for_stderr("a log line about the renamed test_simple_text", |stderr| {
        stderr.contains(others[0].as_str())
    });
    first.shutdown();

    // A second run over the same directory gives the same names.
    let mut second = StdioServer::start(colliding());
    second.initialize(json!({}));
    assert_eq!(
        listed_names(&mut second),
        (tools, prompts),
        "collision handling must be deterministic"
    );
    second.shutdown();
}

#[test]
fn colliding_resource_uris_are_listed_once_and_readable() {
    let mut server = StdioServer::start(colliding());
    server.initialize(json!({}));
    for (method, field) in [
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
    ] {
        let items = server.list_all(method, field);
        let keys: Vec<String> = items
            .iter()
            .map(|i| {
                i.get("uri")
                    .or_else(|| i.get("uriTemplate"))
                    .and_then(Value::as_str)
                    .unwrap()
                    .to_string()
            })
            .collect();
        let unique: HashSet<&String> = keys.iter().collect();
        assert_eq!(unique.len(), keys.len(), "{method} lists each URI once: {keys:?}");
    }
    let read = server.request("resources/read", json!({"uri": "test://static-text"}));
    assert_eq!(
        read.result()["contents"][0]["text"],
        "This is the content of the static text resource."
    );
    server.shutdown();
}

#[test]
fn different_plugins_keep_their_own_names() {
    let mut server = StdioServer::start_initialized(&["text-tools", "raw-echo", "conformance"]);
    let tools = server.list_all("tools/list", "tools");
    for name in ["reverse", "echo", "add", "test_simple_text"] {
        by_name(&tools, name);
    }
    server.shutdown();
}

#[test]
fn a_tool_name_taken_by_another_plugin_is_renamed_and_both_are_callable() {
    let run = || {
        let mut server = StdioServer::start_initialized(&["text-tools", "text-tools-twin"]);
        let tools = names(&server.list_all("tools/list", "tools"));
        let reverses: Vec<String> = tools.iter().filter(|n| n.ends_with("reverse")).cloned().collect();
        assert_eq!(reverses.len(), 2, "both reverse tools are listed: {tools:?}");
        let mut outputs = Vec::new();
        for name in &reverses {
            let result = server.call_tool(name, json!({"text": "abc"})).result().clone();
            outputs.push(single_text(&result));
        }
        let mut sorted = outputs.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            ["[twin] cba", "cba"],
            "each name reaches its own plugin: {reverses:?}"
        );
        server.shutdown();
        (tools, reverses, outputs)
    };
    let first = run();
    let second = run();
    assert_eq!(first, second, "the same names map to the same plugins on every run");
}

#[test]
fn a_manifest_prefix_overrides_the_naming() {
    // The twin's manifest prefixes its names: text-tools keeps `reverse`.
    let plugins = PluginDir::with(&["text-tools", "text-tools-twin"]);
    plugins.add_file("text-tools-twin.toml", b"prefix = \"twin\"\n");
    let mut server = StdioServer::start(plugins);
    server.initialize(json!({}));
    let tools = names(&server.list_all("tools/list", "tools"));
    assert!(tools.contains(&"twin_reverse".to_string()), "{tools:?}");
    let plain = server.call_tool("reverse", json!({"text": "abc"})).result().clone();
    assert_eq!(single_text(&plain), "cba");
    let twin = server
        .call_tool("twin_reverse", json!({"text": "abc"}))
        .result()
        .clone();
    assert_eq!(single_text(&twin), "[twin] cba");
    server.shutdown();

    // Prefixing text-tools instead hands the bare name to the twin.
    let plugins = PluginDir::with(&["text-tools", "text-tools-twin"]);
    plugins.add_file("text-tools.toml", b"prefix = \"tt\"\n");
    let mut server = StdioServer::start(plugins);
    server.initialize(json!({}));
    let tools = names(&server.list_all("tools/list", "tools"));
    for name in ["tt_reverse", "tt_word_count", "reverse"] {
        assert!(tools.contains(&name.to_string()), "{name} in {tools:?}");
    }
    let twin = server.call_tool("reverse", json!({"text": "abc"})).result().clone();
    assert_eq!(single_text(&twin), "[twin] cba");
    let plain = server.call_tool("tt_reverse", json!({"text": "abc"})).result().clone();
    assert_eq!(single_text(&plain), "cba");
    server.shutdown();
}

/// The refusals the misnamed plugin's load must log, one per bad entry.
const MISNAMED_REFUSALS: [&str; 7] = [
    "the tool \"\" of plugin misnamed is refused: the name is empty",
    "the tool \"has space\" of plugin misnamed is refused: the name has characters other than",
    "the tool \"naïve\" of plugin misnamed is refused",
    "of plugin misnamed is refused: the name is 129 bytes long, over 128",
    "the tool \"fine\" of plugin misnamed is refused: plugin misnamed already lists a tool named fine",
    "the prompt \"greet\" of plugin misnamed is refused: plugin misnamed already lists a prompt named greet",
    "the prompt \"\" of plugin misnamed is refused: the name is empty",
];

#[test]
fn entries_with_invalid_or_repeated_names_are_refused_and_the_rest_of_the_plugin_serves() {
    let mut server = StdioServer::start(PluginDir::with(&["misnamed", "text-tools"]));
    server.initialize(json!({}));
    let (tools, prompts) = listed_names(&mut server);
    assert!(
        tools.iter().filter(|t| *t == "fine").count() == 1
            && !tools
                .iter()
                .any(|t| t.is_empty() || t.contains(' ') || !t.is_ascii() || t.len() > 128),
        "only valid names, once each: {tools:?}"
    );
    assert_eq!(prompts.iter().filter(|p| *p == "greet").count(), 1, "{prompts:?}");
    assert!(!prompts.iter().any(String::is_empty), "{prompts:?}");
    // The first of a repeated name is the one served.
    let fine = server.call_tool("fine", json!({})).result().clone();
    assert_eq!(single_text(&fine), "first fine");
    let greet = server.request("prompts/get", json!({"name": "greet"})).result().clone();
    assert_eq!(greet["messages"][0]["content"]["text"], "first greet");
    // A refused name is not callable.
    for name in ["", "has space", "naïve"] {
        let refused = server.call_tool(name, json!({}));
        assert!(
            refused.is_error() || refused.result()["isError"] == true,
            "{name:?} must not be callable"
        );
    }
    // Each refusal is logged once, naming the plugin and the entry.
    let stderr = server.wait_for_stderr("every refusal", |stderr| {
        MISNAMED_REFUSALS.iter().all(|needle| stderr.contains(needle))
    });
    for needle in MISNAMED_REFUSALS {
        assert_eq!(stderr.matches(needle).count(), 1, "{needle:?} once in:\n{stderr}");
    }
    // The other plugin is untouched.
    let reversed = server.call_tool("reverse", json!({"text": "abc"})).result().clone();
    assert_eq!(single_text(&reversed), "cba");
    server.shutdown();
}
