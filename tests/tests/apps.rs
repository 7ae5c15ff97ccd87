//! MCP Apps (the `io.modelcontextprotocol/ui` extension) through the host, in
//! both revisions, for a client that declares it: the dashboard plugin's
//! tool carries `_meta.ui` (the page it links, its visibility) as the plugin
//! wrote it, and the page is listed and read as `text/html;profile=mcp-app`
//! with its own `_meta.ui`. (The TypeScript SDK client's test renders the
//! page in Chromium.)

use serde_json::{Value, json};
use wasm_mcp_tests::modern::{ModernStdio, meta, with_meta};
use wasm_mcp_tests::{PluginDir, StdioServer};

const UI: &str = "io.modelcontextprotocol/ui";
const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";
const PAGE: &str = "ui://dashboard/view.html";

fn client_capabilities() -> Value {
    json!({ "extensions": { UI: { "mimeTypes": [APP_MIME_TYPE] } } })
}

/// What an Apps client needs from tools/list, resources/list and resources/read.
fn check_app(tools: &Value, resources: &Value, read: &Value) {
    let tool = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "show_dashboard")
        .unwrap_or_else(|| panic!("show_dashboard listed: {tools}"));
    assert_eq!(
        tool["_meta"]["ui"],
        json!({ "resourceUri": PAGE, "visibility": ["model", "app"] })
    );
    let listed = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|resource| resource["uri"] == PAGE)
        .unwrap_or_else(|| panic!("the page is listed: {resources}"));
    assert_eq!(listed["mimeType"], APP_MIME_TYPE);
    let page = &read["contents"][0];
    assert_eq!(page["mimeType"], APP_MIME_TYPE);
    assert_eq!(page["_meta"]["ui"], json!({ "prefersBorder": true }));
    assert!(page["text"].as_str().unwrap().starts_with("<!doctype html>"));
}

#[test]
fn a_2025_11_25_client_gets_the_tools_ui_link_and_its_page() {
    let mut server = StdioServer::start(PluginDir::with(&["dashboard"]));
    server.initialize(client_capabilities());
    let tools = server.request("tools/list", json!({})).result().clone();
    let resources = server.request("resources/list", json!({})).result().clone();
    let read = server
        .request("resources/read", json!({ "uri": PAGE }))
        .result()
        .clone();
    check_app(&tools, &resources, &read);
}

#[test]
fn a_2026_07_28_client_gets_the_tools_ui_link_and_its_page() {
    let plugins = PluginDir::with(&["dashboard"]);
    let mut server = ModernStdio::serve(&plugins, &[]);
    let m = meta(client_capabilities(), None);
    let mut result = |method: &str, params: Value| {
        let response = server.request(method, with_meta(params, &m));
        response["result"].clone()
    };
    let tools = result("tools/list", json!({}));
    let resources = result("resources/list", json!({}));
    let read = result("resources/read", json!({ "uri": PAGE }));
    check_app(&tools, &resources, &read);
    let call = result("tools/call", json!({ "name": "show_dashboard", "arguments": {} }));
    assert_eq!(call["structuredContent"], json!({ "open": 3, "closed": 12 }));
    server.close();
}
