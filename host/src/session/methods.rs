//! The MCP methods a client can call, each answered from the catalog or by the
//! plugin that owns the entry.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::client::{ClientCapabilities, RequestLink};
use super::{Phase, Session};
use crate::catalog::pagination::{self, ListKind};
use crate::catalog::{Catalog, ToolEntry};
use crate::plugins::bindings::tools::TaskSupport;
use crate::plugins::bindings::{completion, types};
use crate::plugins::{CallError, CallScope, Plugin, wire};
use crate::protocol::jsonrpc::{INVALID_REQUEST, SERVER_ERROR, serialized_len};
use crate::protocol::{LogLevel, RequestId, RpcError, negotiate_version};

/// Most completion values one answer may carry.
const MAX_COMPLETION_VALUES: usize = 100;

pub(super) fn str_param<'a>(params: &'a Value, key: &str, method: &str) -> Result<&'a str, RpcError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params(format!("{method} needs a string \"{key}\" in params")))
}

/// The request's progress token, if it gave a valid one (a string or an integer).
fn progress_token(params: &Value) -> Option<Value> {
    params
        .pointer("/_meta/progressToken")
        .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
        .cloned()
}

/// A tool execution error, shown to the model so it can correct itself.
fn tool_error(text: impl Into<String>) -> Value {
    json!({ "content": [{ "type": "text", "text": text.into() }], "isError": true })
}

fn server_info() -> Value {
    json!({
        "name": "wasm-mcp",
        "title": "wasm-mcp",
        "version": env!("CARGO_PKG_VERSION"),
        "description": "Tools, resources and prompts served by sandboxed WebAssembly components",
        "icons": [{
            "src": "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAxNiAxNiI+PHJlY3Qgd2lkdGg9IjE2IiBoZWlnaHQ9IjE2IiByeD0iMyIgZmlsbD0iIzY1NGZmMCIvPjwvc3ZnPg==",
            "mimeType": "image/svg+xml",
            "sizes": ["any"]
        }]
    })
}

impl Session {
    /// Methods answered from session state alone, in the order they arrive.
    pub(super) fn handle_inline(&self, method: &str, params: &Value) -> Option<Result<Value, RpcError>> {
        Some(match method {
            "initialize" => self.initialize(params),
            "ping" => Ok(json!({})),
            "logging/setLevel" => self.set_log_level(params),
            "resources/subscribe" => str_param(params, "uri", method).and_then(|uri| self.subscribe(uri)),
            "resources/unsubscribe" => str_param(params, "uri", method).map(|uri| {
                self.state.lock().unwrap().subscriptions.remove(uri);
                json!({})
            }),
            _ => return None,
        })
    }

    /// Methods that need the catalog or a plugin; these run concurrently.
    pub(super) async fn dispatch(
        self: &Arc<Self>,
        id: &RequestId,
        method: &str,
        mut params: Value,
        cancel: CancellationToken,
    ) -> Result<Value, RpcError> {
        let page_size = self.server.config.page_size;
        let known = matches!(
            method,
            "tools/list"
                | "tools/call"
                | "resources/list"
                | "resources/templates/list"
                | "resources/read"
                | "prompts/list"
                | "prompts/get"
                | "completion/complete"
        );
        if !known {
            return self.dispatch_tasks(method, &params).await;
        }
        let catalog = self.server.loaded_catalog().await;
        let scope = |params: &Value| self.call_scope(id, params, cancel.clone());
        match method {
            "tools/list" => pagination::page(ListKind::Tools, &catalog.tools, &params, page_size),
            "prompts/list" => pagination::page(ListKind::Prompts, &catalog.prompts, &params, page_size),
            "resources/list" => pagination::page(ListKind::Resources, &catalog.resources, &params, page_size),
            "resources/templates/list" => pagination::page(ListKind::Templates, &catalog.templates, &params, page_size),
            "tools/call" => {
                let call = ToolCall::parse(catalog.clone(), &mut params)?;
                match params.get("task") {
                    Some(task) => self.start_task(call, task, progress_token(&params)),
                    None => {
                        if call.tool().task_support == TaskSupport::Required {
                            return Err(RpcError::method_not_found(&format!(
                                "tools/call of {} without a task: this tool must be called as a task (add \"task\": {{}} to params)",
                                call.name
                            )));
                        }
                        call.run(scope(&params)).await
                    }
                }
            }
            "resources/read" => read_resource(&catalog, &params, scope(&params)).await,
            "prompts/get" => get_prompt(&catalog, &params, scope(&params)).await,
            "completion/complete" => complete(&catalog, &params, scope(&params)).await,
            _ => unreachable!("checked above"),
        }
    }

    fn call_scope(self: &Arc<Self>, id: &RequestId, params: &Value, cancel: CancellationToken) -> Arc<CallScope> {
        let progress_token = progress_token(params);
        let link = Arc::new(RequestLink {
            session: self.clone(),
            request: id.clone(),
        });
        Arc::new(CallScope::new(link, progress_token, cancel))
    }

    fn initialize(&self, params: &Value) -> Result<Value, RpcError> {
        let mut state = self.state.lock().unwrap();
        if state.phase != Phase::AwaitingInitialize {
            return Err(RpcError::new(
                INVALID_REQUEST,
                "initialize was already received in this session; start a new session to initialize again",
            ));
        }
        let requested = str_param(params, "protocolVersion", "initialize")?;
        state.protocol_version = negotiate_version(Some(requested));
        state.client = ClientCapabilities::from_initialize(params.get("capabilities").unwrap_or(&Value::Null));
        state.phase = Phase::Initialized;
        let client = params
            .pointer("/clientInfo/name")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        tracing::info!(
            client,
            requested,
            negotiated = state.protocol_version,
            "session initialized"
        );
        Ok(json!({
            "protocolVersion": state.protocol_version,
            "capabilities": {
                "tools": { "listChanged": true },
                "resources": { "subscribe": true, "listChanged": true },
                "prompts": { "listChanged": true },
                "logging": {},
                "completions": {},
                "tasks": { "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } },
            },
            "serverInfo": server_info(),
        }))
    }

    fn set_log_level(&self, params: &Value) -> Result<Value, RpcError> {
        let level: LogLevel = params
            .get("level")
            .and_then(|l| serde_json::from_value(l.clone()).ok())
            .ok_or_else(|| RpcError::invalid_params("logging/setLevel needs \"level\": one of debug, info, notice, warning, error, critical, alert, emergency"))?;
        self.state.lock().unwrap().log_level = level;
        Ok(json!({}))
    }

    /// resources/subscribe, within the session's `max_subscriptions`.
    fn subscribe(&self, uri: &str) -> Result<Value, RpcError> {
        let limit = self.server.config.max_subscriptions;
        let mut state = self.state.lock().unwrap();
        if state.subscriptions.len() >= limit && !state.subscriptions.contains(uri) {
            return Err(RpcError::new(
                SERVER_ERROR,
                format!(
                    "Too many subscriptions: this session already holds {limit} (the max_subscriptions limit); \
                     unsubscribe from some, or raise the limit (--max-subscriptions, or max_subscriptions under \
                     [server] in the config file)"
                ),
            ));
        }
        state.subscriptions.insert(uri.to_owned());
        Ok(json!({}))
    }
}

/// The JSON-RPC error for a failed resources/read, prompts/get or completion/complete.
fn request_error(error: CallError) -> RpcError {
    match error {
        CallError::Plugin(types::Error::InvalidParams(why)) => RpcError::invalid_params(why),
        other => RpcError::internal(other.to_string()),
    }
}

fn string_map(value: Option<&Value>, what: &str) -> Result<Vec<(String, String)>, RpcError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(RpcError::invalid_params(format!("{what} \"{k}\" must be a string"))),
            })
            .collect(),
        Some(_) => Err(RpcError::invalid_params(format!(
            "{what}s must be an object of strings"
        ))),
    }
}

/// A tools/call whose tool exists and whose arguments are an object.
pub(super) struct ToolCall {
    catalog: Arc<Catalog>,
    pub name: String,
    arguments: Value,
}

impl ToolCall {
    /// Takes the arguments out of `params`.
    pub fn parse(catalog: Arc<Catalog>, params: &mut Value) -> Result<Self, RpcError> {
        let name = str_param(params, "name", "tools/call")?.to_owned();
        if !catalog.tools.contains_key(&name) {
            return Err(RpcError::invalid_params(format!(
                "Unknown tool: {name}. Call tools/list for the tools available."
            )));
        }
        let arguments = match params.get_mut("arguments").map(Value::take) {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(args @ Value::Object(_)) => args,
            Some(_) => return Err(RpcError::invalid_params("tools/call \"arguments\" must be an object")),
        };
        Ok(Self {
            catalog,
            name,
            arguments,
        })
    }

    pub fn tool(&self) -> &ToolEntry {
        &self.catalog.tools[&self.name]
    }

    /// Runs the call: arguments checked against the input schema first, then
    /// the plugin; everything that goes wrong in the tool is an isError result.
    pub async fn run(&self, scope: Arc<CallScope>) -> Result<Value, RpcError> {
        let (tool, name) = (self.tool(), &self.name);
        if let Some(problem) = input_problem(tool, &self.arguments) {
            return Ok(tool_error(format!("Invalid arguments for tool {name}: {problem}")));
        }
        let max_output = tool.plugin.tool_limits(&tool.own_name).max_output_bytes;
        match tool
            .plugin
            .call_tool(scope, &tool.own_name, &self.arguments.to_string())
            .await
        {
            Ok(result) => Ok(render_tool_result(tool, name, result, max_output)),
            Err(CallError::Plugin(types::Error::NotFound(_))) => {
                Err(RpcError::invalid_params(format!("Unknown tool: {name}")))
            }
            Err(CallError::Unsupported(what)) => Err(RpcError::internal(format!(
                "the plugin serving {name} does not export {what}"
            ))),
            Err(error) => Ok(tool_error(format!("Tool {name} failed: {error}"))),
        }
    }
}

/// What is wrong with `arguments` under the tool's input schema, naming the field.
fn input_problem(tool: &ToolEntry, arguments: &Value) -> Option<String> {
    if tool.input.is_valid(arguments) {
        return None;
    }
    let problems: Vec<String> = tool
        .input
        .iter_errors(arguments)
        .map(|e| {
            let path = e.instance_path().to_string();
            if path.is_empty() {
                e.to_string()
            } else {
                format!("{path}: {e}")
            }
        })
        .collect();
    (!problems.is_empty()).then(|| problems.join("; "))
}

fn render_tool_result(
    tool: &ToolEntry,
    name: &str,
    result: crate::plugins::bindings::tools::CallToolResult,
    max_output: usize,
) -> Value {
    let mut content = match wire::content_blocks(result.content) {
        Ok(content) => content,
        Err(why) => return tool_error(format!("Tool {name} returned unusable content: {why}")),
    };
    let structured = match result
        .structured_content
        .as_deref()
        .map(|s| wire::parse_json(s, "structuredContent"))
        .transpose()
    {
        Ok(structured) => structured,
        Err(why) => return tool_error(format!("Tool {name} failed: {why}")),
    };
    if let (Some(validator), false) = (&tool.output, result.is_error) {
        let Some(structured) = &structured else {
            return tool_error(format!(
                "Tool {name} declares an outputSchema but returned no structuredContent"
            ));
        };
        if let Some(error) = validator.iter_errors(structured).next() {
            return tool_error(format!(
                "Tool {name} returned structuredContent that does not match its outputSchema: {error}"
            ));
        }
    }
    if let Some(structured) = &structured {
        if !structured.is_object() {
            return tool_error(format!(
                "Tool {name} returned structuredContent that is not a JSON object"
            ));
        }
        if content.is_empty() {
            content.push(json!({ "type": "text", "text": structured.to_string() }));
        }
    }
    let mut rendered = json!({ "content": content });
    if let Some(structured) = structured {
        rendered["structuredContent"] = structured;
    }
    if result.is_error {
        rendered["isError"] = json!(true);
    }
    if let Some(meta) = result
        .meta
        .as_deref()
        .and_then(|m| wire::parse_json(m, "_meta").ok())
        .filter(Value::is_object)
    {
        rendered["_meta"] = meta;
    }
    let size = serialized_len(&rendered);
    if size > max_output {
        return tool_error(format!(
            "Tool {name} failed: {} ({size} bytes returned)",
            crate::plugins::limits::LimitHit::Output(max_output)
        ));
    }
    rendered
}

async fn read_resource(catalog: &Catalog, params: &Value, scope: Arc<CallScope>) -> Result<Value, RpcError> {
    let uri = str_param(params, "uri", "resources/read")?;
    let Some(plugin) = catalog.resource_owner(uri) else {
        return Err(RpcError::resource_not_found(uri));
    };
    let contents = plugin.read_resource(scope, uri).await.map_err(|e| match e {
        CallError::Plugin(types::Error::NotFound(_)) => RpcError::resource_not_found(uri),
        other => request_error(other),
    })?;
    let contents = contents
        .into_iter()
        .map(wire::resource_contents)
        .collect::<Result<Vec<_>, _>>()
        .map_err(RpcError::internal)?;
    within_output_limit(json!({ "contents": contents }), plugin)
}

async fn get_prompt(catalog: &Catalog, params: &Value, scope: Arc<CallScope>) -> Result<Value, RpcError> {
    let name = str_param(params, "name", "prompts/get")?;
    let Some(prompt) = catalog.prompts.get(name) else {
        return Err(RpcError::invalid_params(format!(
            "Unknown prompt: {name}. Call prompts/list for the prompts available."
        )));
    };
    let arguments = string_map(params.get("arguments"), "prompt argument")?;
    if let Some(missing) = prompt
        .required_arguments
        .iter()
        .find(|r| !arguments.iter().any(|(k, _)| k == *r))
    {
        return Err(RpcError::invalid_params(format!(
            "Missing required argument \"{missing}\" for prompt {name}"
        )));
    }
    let result = prompt
        .plugin
        .get_prompt(scope, &prompt.own_name, &arguments)
        .await
        .map_err(|e| match e {
            CallError::Plugin(types::Error::NotFound(_)) => RpcError::invalid_params(format!("Unknown prompt: {name}")),
            other => request_error(other),
        })?;
    let result = wire::prompt_result(result).map_err(RpcError::internal)?;
    within_output_limit(result, &prompt.plugin)
}

async fn complete(catalog: &Catalog, params: &Value, scope: Arc<CallScope>) -> Result<Value, RpcError> {
    let reference = params
        .get("ref")
        .ok_or_else(|| RpcError::invalid_params("completion/complete needs \"ref\""))?;
    let (plugin, target) = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            let name = str_param(reference, "name", "ref/prompt")?;
            let prompt = catalog
                .prompts
                .get(name)
                .ok_or_else(|| RpcError::invalid_params(format!("Unknown prompt: {name}")))?;
            (&prompt.plugin, completion::Reference::Prompt(prompt.own_name.clone()))
        }
        Some("ref/resource") => {
            let uri = str_param(reference, "uri", "ref/resource")?;
            let template = catalog
                .templates
                .get(uri)
                .ok_or_else(|| RpcError::invalid_params(format!("Unknown resource template: {uri}")))?;
            (
                &template.plugin,
                completion::Reference::ResourceTemplate(uri.to_owned()),
            )
        }
        _ => {
            return Err(RpcError::invalid_params(
                "\"ref.type\" must be \"ref/prompt\" or \"ref/resource\"",
            ));
        }
    };
    let argument = params
        .get("argument")
        .ok_or_else(|| RpcError::invalid_params("completion/complete needs \"argument\""))?;
    let request = completion::CompletionRequest {
        reference: target,
        argument_name: str_param(argument, "name", "argument")?.to_owned(),
        argument_value: str_param(argument, "value", "argument")?.to_owned(),
        context_arguments: string_map(params.pointer("/context/arguments"), "context argument")?,
    };
    if !plugin.has_completion() {
        return Ok(json!({ "completion": { "values": [], "total": 0, "hasMore": false } }));
    }
    let mut completions = plugin.complete(scope, &request).await.map_err(request_error)?;
    let offered = completions.values.len();
    completions.values.truncate(MAX_COMPLETION_VALUES);
    let total = completions.total.map_or(offered, |t| (t as usize).max(offered));
    let result = json!({
        "completion": {
            "values": completions.values,
            "total": total,
            "hasMore": completions.has_more || total > completions.values.len(),
        }
    });
    within_output_limit(result, plugin)
}

/// `result` unless it is larger than the plugin's output limit; then the
/// JSON-RPC error that names the limit (as a tool call's isError result does).
fn within_output_limit(result: Value, plugin: &Plugin) -> Result<Value, RpcError> {
    let max = plugin.limits.max_output_bytes;
    let size = serialized_len(&result);
    if size > max {
        return Err(RpcError::internal(format!(
            "{} ({size} bytes returned)",
            crate::plugins::limits::LimitHit::Output(max)
        )));
    }
    Ok(result)
}
