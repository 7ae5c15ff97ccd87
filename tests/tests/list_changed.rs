//! The catalog follows the plugins directory while serving: adding or
//! removing a plugin sends the matching list_changed notifications, the new
//! entries serve at once, and pagination cursors stay valid across the change.

use std::collections::HashSet;

use serde_json::{Value, json};
use wasm_mcp_tests::expect::{names, single_text};
use wasm_mcp_tests::{PluginDir, StdioServer};

fn is(method: &'static str) -> impl Fn(&Value) -> bool {
    move |n| n["method"] == method
}

/// Waits until tools/list contains `name` (a list_changed may be sent once
/// per change, so the test re-lists after each notification).
fn wait_until_listed(server: &mut StdioServer, name: &str) {
    loop {
        let tools = names(&server.list_all("tools/list", "tools"));
        if tools.iter().any(|t| t == name) {
            return;
        }
        server.wait_for_notification(
            &format!("tools/list_changed bringing {name}"),
            is("notifications/tools/list_changed"),
        );
    }
}

#[test]
fn adding_a_plugin_announces_new_tools_and_serves_them() {
    let mut server = StdioServer::start_initialized(&["text-tools"]);
    server.list_all("tools/list", "tools");
    server.plugin_dir().add_plugin("raw-echo");
    server.wait_for_notification(
        "tools/list_changed after adding raw-echo",
        is("notifications/tools/list_changed"),
    );
    wait_until_listed(&mut server, "echo");
    let echoed = server.call_tool("echo", json!({"message": "new"})).result().clone();
    assert_eq!(single_text(&echoed), "new");
    server.shutdown();
}

#[test]
fn adding_resources_and_prompts_announces_both_lists() {
    let mut server = StdioServer::start_initialized(&["text-tools"]);
    server.list_all("resources/list", "resources");
    server.plugin_dir().add_plugin("notes");
    server.wait_for_notification("resources/list_changed", is("notifications/resources/list_changed"));
    server.wait_for_notification("prompts/list_changed", is("notifications/prompts/list_changed"));
    let resources = server.list_all("resources/list", "resources");
    assert!(names(&resources).iter().any(|n| n == "sandbox"), "{resources:?}");
    server.shutdown();
}

#[test]
fn removing_a_plugin_announces_and_its_tools_are_gone() {
    let mut server = StdioServer::start_initialized(&["text-tools", "raw-echo"]);
    assert!(names(&server.list_all("tools/list", "tools")).contains(&"echo".to_string()));
    server.plugin_dir().remove_file("raw-echo.wasm");
    server.wait_for_notification(
        "tools/list_changed after removing raw-echo",
        is("notifications/tools/list_changed"),
    );
    loop {
        let tools = names(&server.list_all("tools/list", "tools"));
        if !tools.contains(&"echo".to_string()) {
            assert!(tools.contains(&"reverse".to_string()), "{tools:?}");
            break;
        }
        server.wait_for_notification("another tools/list_changed", is("notifications/tools/list_changed"));
    }
    server
        .call_tool("echo", json!({"message": "gone"}))
        .expect_error_code(-32602);
    server.shutdown();
}

#[test]
fn a_cursor_stays_valid_when_a_plugin_is_added() {
    let mut server = StdioServer::start_with_args(PluginDir::with(&["text-tools"]), &["--page-size", "1"]);
    server.initialize(json!({}));
    let first = server.request("tools/list", json!({})).result().clone();
    let mut seen: Vec<String> = names(first["tools"].as_array().unwrap());
    let mut cursor = first["nextCursor"].clone();
    assert!(cursor.is_string(), "{first}");

    server.plugin_dir().add_plugin("raw-echo");
    server.wait_for_notification("tools/list_changed", is("notifications/tools/list_changed"));
    // Walk on from the cursor taken before the change.
    while cursor.is_string() {
        let page = server.request("tools/list", json!({"cursor": cursor})).result().clone();
        seen.extend(names(page["tools"].as_array().unwrap()));
        cursor = page.get("nextCursor").cloned().unwrap_or(Value::Null);
    }
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no duplicates across the change: {seen:?}");
    for tool in [
        "base64_decode",
        "base64_encode",
        "change_case",
        "reverse",
        "slugify",
        "word_count",
    ] {
        assert!(seen.iter().any(|s| s == tool), "the walk kept {tool}: {seen:?}");
    }
    server.shutdown();
}
