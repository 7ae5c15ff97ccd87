//! What a plugin returns, made into the MCP result a client gets: a tool call
//! checked against the tool's schemas, content rendered, and every result
//! held to the plugin's output limit. Failures of a tool are results the
//! model sees (`isError`), not JSON-RPC errors.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::call::{CallError, CallScope, within_output_limit as fits};
use crate::catalog::{Catalog, ToolEntry};
use crate::contract::bindings::{prompts, tools, types};
use crate::contract::wire;
use crate::limits::Limits;
use crate::plugin::Plugin;
use crate::protocol::RpcError;
use crate::protocol::jsonrpc::serialized_len;
use crate::request::Reply;

/// What a tool call came to: the result for the client, as a success or a
/// failure of the tool (`isError`).
pub enum ToolOutcome {
    Completed(Value),
    /// `message` is the tool's first text, if it has one.
    Failed {
        result: Value,
        message: Option<String>,
    },
    /// The plugin call itself failed (a trap, a limit, an error instead of
    /// a result): `result` says so as a tool error, `error` as the JSON-RPC
    /// error a 2026-07-28 task reports (its status is then `failed`).
    Crashed {
        result: Value,
        error: RpcError,
    },
}

impl ToolOutcome {
    /// A tool execution error, shown to the model so it can correct itself.
    fn failed(text: impl Into<String>) -> Self {
        let text = text.into();
        Self::Failed {
            result: error_result(&text),
            message: Some(text),
        }
    }

    /// The plugin call failed with `error`, whose message the model sees.
    fn crashed(error: RpcError) -> Self {
        Self::Crashed {
            result: error_result(&error.message),
            error,
        }
    }

    /// The result for the client.
    /// The tool's result, saying whether it reports the tool's failure.
    pub fn into_reply(self) -> Reply {
        match self {
            ToolOutcome::Completed(value) => Reply {
                value,
                tool_error: false,
                per_caller: false,
            },
            ToolOutcome::Failed { result, .. } | ToolOutcome::Crashed { result, .. } => Reply {
                value: result,
                tool_error: true,
                per_caller: false,
            },
        }
    }
}

/// The result of a tool call that failed, saying `text`.
fn error_result(text: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": text }], "isError": true })
}

/// A tools/call whose tool exists.
pub struct ToolCall {
    catalog: Arc<Catalog>,
    pub name: String,
    arguments: Value,
}

impl ToolCall {
    /// The call of `name` with `arguments`, if the catalog has that tool.
    pub fn new(catalog: Arc<Catalog>, name: String, arguments: Value) -> Result<Self, RpcError> {
        if !catalog.tools.contains_key(&name) {
            return Err(RpcError::invalid_params(format!(
                "Unknown tool: {name}. Call tools/list for the tools available."
            )));
        }
        Ok(Self {
            catalog,
            name,
            arguments,
        })
    }

    pub fn tool(&self) -> &ToolEntry {
        &self.catalog.tools[&self.name]
    }

    /// The arguments it was called with.
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }

    /// Runs the call: arguments checked against the input schema first, then
    /// the plugin; everything that goes wrong in the tool is an isError result.
    pub async fn run(&self, scope: Arc<CallScope>) -> Result<ToolOutcome, RpcError> {
        let (tool, name) = (self.tool(), &self.name);
        if let Some(problem) = input_problem(tool, &self.arguments) {
            return Ok(ToolOutcome::failed(format!(
                "Invalid arguments for tool {name}: {problem}"
            )));
        }
        let limits = tool.plugin.tool_limits(&tool.own_name);
        match tool
            .plugin
            .call_tool(scope, &tool.own_name, &self.arguments.to_string())
            .await
        {
            Ok(result) => Ok(render_tool_result(tool, name, result, limits)),
            Err(CallError::Refused(types::Error::NotFound(_))) => {
                Err(RpcError::invalid_params(format!("Unknown tool: {name}")))
            }
            Err(CallError::Unsupported(what)) => Err(RpcError::internal(format!(
                "the plugin serving {name} does not export {what}"
            ))),
            Err(error) => {
                let message = format!("Tool {name} failed: {error}");
                Ok(ToolOutcome::crashed(match error {
                    CallError::Refused(types::Error::InvalidParams(_)) => RpcError::invalid_params(message),
                    _ => RpcError::internal(message),
                }))
            }
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

fn render_tool_result(tool: &ToolEntry, name: &str, result: tools::CallToolResult, limits: &Limits) -> ToolOutcome {
    let mut content = match wire::content_blocks(result.content) {
        Ok(content) => content,
        Err(why) => return ToolOutcome::failed(format!("Tool {name} returned unusable content: {why}")),
    };
    let structured = match result
        .structured_content
        .as_deref()
        .map(|s| wire::parse_json(s, "structuredContent"))
        .transpose()
    {
        Ok(structured) => structured,
        Err(why) => return ToolOutcome::failed(format!("Tool {name} failed: {why}")),
    };
    if let (Some(validator), false) = (&tool.output, result.is_error) {
        let Some(structured) = &structured else {
            return ToolOutcome::failed(format!(
                "Tool {name} declares an outputSchema but returned no structuredContent"
            ));
        };
        if let Some(error) = validator.iter_errors(structured).next() {
            return ToolOutcome::failed(format!(
                "Tool {name} returned structuredContent that does not match its outputSchema: {error}"
            ));
        }
    }
    if let Some(structured) = &structured {
        if !structured.is_object() {
            return ToolOutcome::failed(format!(
                "Tool {name} returned structuredContent that is not a JSON object"
            ));
        }
        if content.is_empty() {
            content.push(json!({ "type": "text", "text": structured.to_string() }));
        }
    }
    // What a failing tool said: its first text, for a task's status message.
    let message = if result.is_error {
        content
            .first()
            .and_then(|block| block.get("text"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    } else {
        None
    };
    let mut rendered = Map::new();
    rendered.insert("content".into(), Value::Array(content));
    if let Some(structured) = structured {
        rendered.insert("structuredContent".into(), structured);
    }
    if result.is_error {
        rendered.insert("isError".into(), json!(true));
    }
    if let Some(meta) = result
        .meta
        .as_deref()
        .and_then(|m| wire::parse_json(m, "_meta").ok())
        .filter(Value::is_object)
    {
        rendered.insert("_meta".into(), meta);
    }
    let rendered = Value::Object(rendered);
    let size = serialized_len(&rendered);
    if let Err(hit) = fits(size, limits) {
        return ToolOutcome::failed(format!("Tool {name} failed: {hit} ({size} bytes returned)"));
    }
    if result.is_error {
        ToolOutcome::Failed {
            result: rendered,
            message,
        }
    } else {
        ToolOutcome::Completed(rendered)
    }
}

/// The result of a resources/read.
pub fn resource_contents(contents: Vec<types::ResourceContents>, plugin: &Plugin) -> Result<Value, RpcError> {
    let contents = contents
        .into_iter()
        .map(wire::resource_contents)
        .collect::<Result<Vec<_>, _>>()
        .map_err(RpcError::internal)?;
    within_output_limit(json!({ "contents": contents }), plugin)
}

/// The result of a prompts/get.
pub fn prompt(result: prompts::GetPromptResult, plugin: &Plugin) -> Result<Value, RpcError> {
    let result = wire::prompt_result(result).map_err(RpcError::internal)?;
    within_output_limit(result, plugin)
}

/// `result` unless it is larger than the plugin's output limit; then the
/// JSON-RPC error that names the limit (as a tool call's isError result does).
pub fn within_output_limit(result: Value, plugin: &Plugin) -> Result<Value, RpcError> {
    let size = serialized_len(&result);
    match fits(size, &plugin.limits) {
        Ok(()) => Ok(result),
        Err(hit) => Err(RpcError::internal(format!("{hit} ({size} bytes returned)"))),
    }
}
