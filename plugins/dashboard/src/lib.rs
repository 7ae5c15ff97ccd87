//! An MCP App (the `io.modelcontextprotocol/ui` extension): the tool
//! `show_dashboard` links, through `_meta.ui.resourceUri`, the page it
//! serves at `ui://dashboard/view.html` (`text/html;profile=mcp-app`). A
//! client that supports Apps renders the page beside the tool's result;
//! any other client shows the result's text, which says the same.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;
use wasm_mcp_sdk::{NoArgs, Plugin, Resource, ResourceContents, Structured, Tool};

/// The page's URI.
const PAGE: &str = "ui://dashboard/view.html";
/// The mime type of an MCP App's page.
const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The page: it renders the figures the host hands it (the tool's result,
/// through the Apps `ui/notifications/tool-result` message), and the
/// built-in ones until then.
const VIEW_HTML: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Dashboard</title>
<style>
  body { font: 16px system-ui, sans-serif; margin: 1rem; }
  .figure { font-size: 2rem; font-weight: bold; }
</style>
</head>
<body>
<h1>Dashboard</h1>
<p>Open tickets: <span id="open" class="figure">…</span></p>
<p id="status">Waiting for the host…</p>
<script>
  function show(figures) {
    document.getElementById("open").textContent = String(figures.open);
    document.getElementById("status").textContent =
      "Rendered by the app: " + figures.open + " open, " + figures.closed + " closed";
  }
  window.addEventListener("message", (event) => {
    const message = event.data;
    if (message && message.method === "ui/notifications/tool-result") {
      show(message.params.structuredContent);
    }
  });
  show({ open: 3, closed: 12 });
</script>
</body>
</html>
"#;

/// The figures the page shows.
#[derive(Serialize, JsonSchema)]
struct Figures {
    /// Tickets still open.
    open: u32,
    /// Tickets closed.
    closed: u32,
}

fn show_dashboard(_: NoArgs) -> Structured<Figures> {
    Structured(Figures { open: 3, closed: 12 })
}

/// The page as `resources/read` gives it, with how the client should frame it.
fn view(uri: &str) -> Result<Vec<ResourceContents>, wasm_mcp_sdk::Error> {
    let mut page = ResourceContents::text(uri, APP_MIME_TYPE, VIEW_HTML);
    page.meta = Some(json!({ "ui": { "prefersBorder": true } }).to_string());
    Ok(vec![page])
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool(
            Tool::new("show_dashboard", show_dashboard)
                .title("Show the dashboard")
                .description("Shows the ticket figures; clients that support MCP Apps render them as a page")
                .read_only_hint(true)
                .meta(json!({ "ui": { "resourceUri": PAGE, "visibility": ["model", "app"] } })),
        )
        .resource(
            Resource::new(PAGE, "dashboard", view)
                .title("Dashboard page")
                .description("The dashboard's interactive page (an MCP App)")
                .mime_type(APP_MIME_TYPE)
                .meta(json!({ "ui": { "prefersBorder": true } })),
        )
}

wasm_mcp_sdk::export!(plugin);
