//! The `http-client` test plugin (GETs any URL through `wasi:http`) as the
//! sandbox tests drive it: served under a manifest of the test's, next to
//! text-tools, with its answers and refusals checked.

use serde_json::{Value, json};

use crate::expect::{is_tool_error, single_text, tool_ok};
use crate::{PluginDir, StdioServer};

/// What the tests' servers answer with.
pub const BODY: &str = "served over wasi:http";

/// The plugins of [`serve`], with http-client under `manifest`.
pub fn plugins(manifest: &str) -> PluginDir {
    let plugins = PluginDir::with(&["text-tools"]);
    plugins.add_file("http-client.toml", manifest.as_bytes());
    plugins.add_plugin("http-client");
    plugins
}

/// http-client under `manifest`, next to text-tools, initialized.
pub fn serve(manifest: &str) -> StdioServer {
    let mut server = StdioServer::start(plugins(manifest));
    server.initialize(json!({}));
    server
}

/// The result of GETting `url` (`STATUS\nBODY` on success).
pub fn get(server: &mut StdioServer, url: &str) -> Value {
    server.call_tool("get", json!({"url": url})).result().clone()
}

/// The GET fails as a tool error whose text contains `needle`.
#[track_caller]
pub fn refused(server: &mut StdioServer, url: &str, needle: &str) {
    let result = get(server, url);
    assert!(is_tool_error(&result), "{url} should have been refused, got: {result}");
    let text = single_text(&result);
    assert!(
        text.contains(needle),
        "{url}: the error should say {needle:?}, got: {text}"
    );
    assert!(!text.contains(BODY), "{url} reached the server: {text}");
}

/// The other plugin still answers.
#[track_caller]
pub fn still_serving(server: &mut StdioServer) {
    let result = server.call_tool("reverse", json!({"text": "abc"})).result().clone();
    tool_ok(&result);
    assert_eq!(single_text(&result), "cba");
}
