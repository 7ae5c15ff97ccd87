//! `wasm-mcp call PLUGIN.wasm TOOL [--args JSON]`: one tool call (or one
//! resource read, or one prompt) of one plugin, from the command line.
//!
//! It does not run the plugin itself: it loads the plugin with the runtime
//! `serve` uses (same sandbox, grants and limits, from the same manifest,
//! config file and flags) and hands JSON-RPC requests to an in-process [`Session`], so
//! argument checks, limits and result rendering are exactly those a client
//! gets. The result goes to stdout as JSON; the plugin's logs and progress go
//! to stderr. A tool whose task support is `required` runs as a task, the way
//! a client runs it: created, then waited on with `tasks/result`, its status
//! changes on stderr with its progress. The command fails (exit status 1) with the reason on stderr when
//! the plugin does not load, the tool, resource or prompt is unknown, the
//! arguments are not a JSON object or do not fit the input schema, or the
//! tool returns an error.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::call::ChangedLists;
use crate::catalog::Catalog;
use crate::config::{ConfigFile, Settings};
use crate::contract::bindings::tools::TaskSupport;
use crate::manifest::Manifest;
use crate::protocol::Incoming;
use crate::runtime::PluginRuntime;
use crate::server::Hub;
use crate::session::{Outgoing, Session};
use crate::settings::{LimitSettings, ServerSettings};
use crate::state::StateStore;

/// The arguments of `wasm-mcp call`.
#[derive(clap::Args)]
pub struct CallArgs {
    /// The plugin component (`NAME.wasm`; its manifest `NAME.toml` is read from beside it).
    pub plugin: PathBuf,
    /// The tool to call (by the name `tools/list` shows).
    #[arg(required_unless_present_any = ["resource", "prompt"], conflicts_with_all = ["resource", "prompt"])]
    pub tool: Option<String>,
    /// The arguments: a JSON object (for --prompt, an object of strings) [default: {}].
    #[arg(long, value_name = "JSON", conflicts_with = "resource")]
    pub args: Option<String>,
    /// Read the resource at URI instead of calling a tool.
    #[arg(long, value_name = "URI", conflicts_with = "prompt")]
    pub resource: Option<String>,
    /// Get the prompt NAME instead of calling a tool.
    #[arg(long, value_name = "NAME")]
    pub prompt: Option<String>,
    /// The plugin's manifest, instead of `NAME.toml` beside the plugin.
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// A TOML file of host-wide settings, as for `serve`; flags override it.
    #[arg(long, value_name = "FILE", env = "WASM_MCP_CONFIG")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub limits: LimitSettings,
    #[command(flatten)]
    pub server: ServerSettings,
    /// Compile the plugin instead of using cached compiled code.
    #[arg(long, conflicts_with = "cache-dir")]
    pub no_cache: bool,
}

/// What to ask the plugin.
enum Request {
    Tool { name: String, arguments: Value },
    Resource { uri: String },
    Prompt { name: String, arguments: Value },
}

impl Request {
    fn from_args(args: &CallArgs) -> Result<Request> {
        let arguments = match &args.args {
            None => Value::Object(Map::new()),
            Some(text) => match serde_json::from_str::<Value>(text) {
                Ok(object @ Value::Object(_)) => object,
                Ok(other) => bail!(
                    "--args must be a JSON object such as '{{\"text\": \"hello\"}}', not {}",
                    json_kind(&other)
                ),
                Err(e) => bail!("--args is not valid JSON ({e}); pass an object such as '{{\"text\": \"hello\"}}'"),
            },
        };
        Ok(match (&args.tool, &args.resource, &args.prompt) {
            (_, Some(uri), _) => Request::Resource { uri: uri.clone() },
            (_, _, Some(name)) => Request::Prompt {
                name: name.clone(),
                arguments,
            },
            (Some(name), _, _) => Request::Tool {
                name: name.clone(),
                arguments,
            },
            (None, None, None) => bail!("name a tool, or pass --resource URI or --prompt NAME"),
        })
    }

    fn method(&self) -> &'static str {
        match self {
            Request::Tool { .. } => "tools/call",
            Request::Resource { .. } => "resources/read",
            Request::Prompt { .. } => "prompts/get",
        }
    }

    /// The tool, prompt or resource asked for.
    fn name(&self) -> &str {
        match self {
            Request::Tool { name, .. } | Request::Prompt { name, .. } => name,
            Request::Resource { uri } => uri,
        }
    }

    /// Whether the request is a call of a tool that runs only as a task.
    fn needs_task(&self, hub: &Hub) -> bool {
        match self {
            Request::Tool { name, .. } => hub
                .catalog()
                .tools
                .get(name)
                .is_some_and(|tool| tool.task_support == TaskSupport::Required),
            _ => false,
        }
    }

    fn params(&self) -> Value {
        match self {
            Request::Tool { name, arguments } => json!({ "name": name, "arguments": arguments }),
            Request::Resource { uri } => json!({ "uri": uri }),
            Request::Prompt { name, arguments } => json!({ "name": name, "arguments": arguments }),
        }
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Runs `wasm-mcp call`; returns the process's exit status. Failures are
/// reported on stderr.
pub async fn run(args: CallArgs) -> i32 {
    match call(&args).await {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("wasm-mcp call: {e:#}");
            1
        }
    }
}

async fn call(args: &CallArgs) -> Result<()> {
    let request = Request::from_args(args)?;
    let flags = ConfigFile {
        limits: args.limits.clone(),
        server: args.server.clone(),
        ..ConfigFile::default()
    };
    let settings = Settings::load(args.config.as_deref(), &flags)?;
    if !args.plugin.is_file() {
        bail!("{} does not exist or is not a file", args.plugin.display());
    }
    let manifest = match &args.manifest {
        Some(path) => Manifest::load(path)?,
        None => Manifest::for_plugin(&args.plugin)?.0,
    };
    // The same compiled-code cache as `serve`: a large (Python, JavaScript)
    // component is compiled once, not on every call.
    let cache_dir = super::cache_directory(settings.server.cache_dir.clone(), args.no_cache)?;
    // Nothing a one-off call keeps (its tasks, the plugin's key-value state) outlives it.
    let store = StateStore::in_memory();
    // Held until the call ends: it owns the engine the plugin runs on.
    let runtime = PluginRuntime::new(&settings, cache_dir, store.clone())?;
    let plugin = runtime
        .load_with_manifest(&args.plugin, manifest)
        .await
        .with_context(|| format!("{} does not load", args.plugin.display()))?;
    let hub = Hub::new(settings.server, store)?;
    hub.publish(
        Catalog::build([&plugin], &Catalog::default()),
        &BTreeSet::new(),
        ChangedLists::default(),
    );
    hub.startup_done();
    check_exists(&hub, &request, &args.plugin)?;
    let as_task = request.needs_task(&hub);

    let (outbox, mut outgoing) = mpsc::unbounded_channel::<Outgoing>();
    let session = Session::new(hub, outbox);
    let mut params = request.params();
    params["_meta"] = json!({ "progressToken": "call" });
    if as_task {
        params["task"] = json!({});
    }
    for message in [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": crate::protocol::LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": { "name": "wasm-mcp call", "version": env!("CARGO_PKG_VERSION") },
        }}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "debug"}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": request.method(), "params": params}),
    ] {
        session.handle(Incoming::from_value(message).expect("a well-formed request"));
    }

    // The answer to the request, or, for a task, to `tasks/result` (id 3).
    let result = loop {
        let Some(out) = outgoing.recv().await else {
            bail!("the host ended without answering");
        };
        let message = out.message;
        match message.get("id") {
            Some(id) if *id == json!(2) && as_task => {
                let Some(task_id) = message["result"]["task"]["taskId"].as_str() else {
                    break message;
                };
                eprintln!(
                    "[task] {task_id} created: {} runs as a task (its task support is required)",
                    request.name()
                );
                session.handle(
                    Incoming::from_value(
                        json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": {"taskId": task_id}}),
                    )
                    .expect("a well-formed request"),
                );
            }
            Some(id) if *id == json!(2) || *id == json!(3) => break message,
            _ => report_notification(&message),
        }
    };
    drop(runtime);
    finish(&request, result)
}

/// Fails, naming what the plugin has, when the tool or prompt is not one of its.
fn check_exists(hub: &Hub, request: &Request, plugin: &Path) -> Result<()> {
    let catalog = hub.catalog();
    let (kind, name, known): (&str, &str, Vec<&String>) = match request {
        Request::Tool { name, .. } => ("tool", name, catalog.tools.keys().collect()),
        Request::Prompt { name, .. } => ("prompt", name, catalog.prompts.keys().collect()),
        Request::Resource { .. } => return Ok(()),
    };
    if known.iter().any(|k| *k == name) {
        return Ok(());
    }
    let mut known: Vec<&str> = known.into_iter().map(String::as_str).collect();
    known.sort_unstable();
    if known.is_empty() {
        bail!("{} has no {kind}s, so no {kind} \"{name}\"", plugin.display());
    }
    Err(anyhow!(
        "{} has no {kind} \"{name}\"; its {kind}s are: {}",
        plugin.display(),
        known.join(", ")
    ))
}

/// Writes a notification for the client to stderr: the plugin's logs (with
/// what it wrote to its stdout and stderr) and its progress. The host's own
/// diagnostics are on stderr too, at the `WASM_MCP_LOG` level.
fn report_notification(message: &Value) {
    let params = &message["params"];
    match message["method"].as_str() {
        Some("notifications/message") => {
            let text = match &params["data"] {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let level = params["level"].as_str().unwrap_or("info");
            let logger = params["logger"].as_str().unwrap_or("plugin");
            eprintln!("[{level}] {logger}: {text}");
        }
        Some("notifications/tasks/status") => {
            let text = params["statusMessage"]
                .as_str()
                .map(|m| format!(": {m}"))
                .unwrap_or_default();
            eprintln!(
                "[task] {} {}{text}",
                params["taskId"].as_str().unwrap_or("?"),
                params["status"].as_str().unwrap_or("?")
            );
        }
        Some("notifications/progress") => {
            let total = params.get("total").map(|t| format!("/{t}")).unwrap_or_default();
            let text = params["message"].as_str().map(|m| format!(" {m}")).unwrap_or_default();
            eprintln!("[progress] {}{total}{text}", params["progress"]);
        }
        _ => {}
    }
}

/// Prints the result on stdout; fails with the error's text on a JSON-RPC
/// error or a tool result with `isError`.
fn finish(request: &Request, response: Value) -> Result<()> {
    if let Some(error) = response.get("error") {
        let message = error["message"].as_str().unwrap_or("unknown error");
        bail!("{} failed: {message}", request.method());
    }
    let result = &response["result"];
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut stdout, result)?;
    writeln!(stdout)?;
    stdout.flush()?;
    if result["isError"] == json!(true) {
        let texts: Vec<&str> = result["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|block| block["text"].as_str())
            .collect();
        bail!("the tool returned an error: {}", texts.join(" "));
    }
    Ok(())
}
