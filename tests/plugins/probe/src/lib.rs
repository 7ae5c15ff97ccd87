//! A plugin that exercises the host imports the conformance plugin does not:
//! roots, sampling with tools, URL-mode elicitation, resource updates,
//! multi-step progress, every log level and a flood of log messages.

use std::time::{SystemTime, UNIX_EPOCH};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wasm_mcp_sdk::host::{self, ElicitAction, LogLevel, SamplingContent, SamplingMessage, SamplingRequest};
use wasm_mcp_sdk::{NoArgs, Plugin, Tool};

/// The client's roots as a JSON array of `{uri, name?}`.
fn list_roots(_: NoArgs) -> Result<String, String> {
    let roots = host::list_roots().map_err(|e| format!("roots/list failed: {e}"))?;
    let roots: Vec<Value> = roots
        .into_iter()
        .map(|root| match root.name {
            Some(name) => json!({"uri": root.uri, "name": name}),
            None => json!({"uri": root.uri}),
        })
        .collect();
    Ok(Value::Array(roots).to_string())
}

/// A sampling request that offers the model a tool, which needs the
/// client's `sampling.tools` capability.
fn sample_with_tools(_: NoArgs) -> Result<String, String> {
    let request = SamplingRequest {
        tools: Some(
            json!([{
                "name": "get_weather",
                "description": "The current weather in a city",
                "inputSchema": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"]
                }
            }])
            .to_string(),
        ),
        tool_choice: Some(json!({"mode": "auto"}).to_string()),
        ..SamplingRequest::new(vec![SamplingMessage::user("What is the weather in Paris?")], 200)
    };
    let answer = host::sample(&request).map_err(|e| format!("sampling failed: {e}"))?;
    let lines: Vec<String> = answer
        .content
        .iter()
        .map(|content| match content {
            SamplingContent::Text(t) => t.text.clone(),
            SamplingContent::ToolUse(u) => format!("tool_use {} {} {}", u.id, u.name, u.input),
            SamplingContent::ToolResult(r) => format!("tool_result {}", r.tool_use_id),
            SamplingContent::Image(_) => "image".into(),
            SamplingContent::Audio(_) => "audio".into(),
        })
        .collect();
    Ok(lines.join("\n"))
}

#[derive(Deserialize, JsonSchema)]
struct UrlArgs {
    /// The URL the user is sent to.
    url: String,
}

/// URL-mode elicitation; on accept, announces its completion.
fn elicit_url(args: UrlArgs) -> Result<String, String> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let id = format!("probe-{nanos}");
    let answer = host::elicit_url("Please complete this step in your browser.", &args.url, &id)
        .map_err(|e| format!("elicitation failed: {e}"))?;
    let action = match answer.action {
        ElicitAction::Accept => {
            host::elicitation_complete(&id);
            "accept"
        }
        ElicitAction::Decline => "decline",
        ElicitAction::Cancel => "cancel",
    };
    Ok(format!("action={action}, elicitationId={id}"))
}

#[derive(Deserialize, JsonSchema)]
struct AnnounceArgs {
    /// The URI of the resource that changed.
    uri: String,
}

fn announce(args: AnnounceArgs) -> String {
    host::resource_updated(&args.uri);
    format!("announced {}", args.uri)
}

#[derive(Deserialize, JsonSchema)]
struct StepsArgs {
    /// How many progress notifications to send.
    steps: u32,
}

fn progress_steps(args: StepsArgs) -> String {
    let total = f64::from(args.steps);
    for step in 1..=args.steps {
        let message = format!("step {step} of {}", args.steps);
        host::progress(f64::from(step), Some(total), Some(&message));
    }
    format!("reported {} steps", args.steps)
}

const LEVELS: [(LogLevel, &str); 8] = [
    (LogLevel::Debug, "debug"),
    (LogLevel::Info, "info"),
    (LogLevel::Notice, "notice"),
    (LogLevel::Warning, "warning"),
    (LogLevel::Error, "error"),
    (LogLevel::Critical, "critical"),
    (LogLevel::Alert, "alert"),
    (LogLevel::Emergency, "emergency"),
];

/// One log per level, lowest first; the message is `<level> message`.
fn log_levels(_: NoArgs) -> String {
    for (level, name) in LEVELS {
        host::log(level, &format!("{name} message"));
    }
    "logged 8 levels".into()
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// How many messages to log.
    count: u32,
}

/// Logs `count` info messages, `message 1` to `message <count>`.
fn log_many(args: CountArgs) -> String {
    for n in 1..=args.count {
        host::log(LogLevel::Info, &format!("message {n}"));
    }
    format!("logged {} messages", args.count)
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool(Tool::new("list_roots", list_roots).description("Returns the client's roots as JSON text."))
        .tool(
            Tool::new("sample_with_tools", sample_with_tools)
                .description("Sends a sampling request that offers the model a tool."),
        )
        .tool(Tool::new("elicit_url", elicit_url).description("Asks the user to visit `url` (URL-mode elicitation)."))
        .tool(Tool::new("announce", announce).description("Announces that the resource `uri` changed."))
        .tool(
            Tool::new("progress_steps", progress_steps)
                .description("Reports progress 1..=steps of a total of `steps`."),
        )
        .tool(Tool::new("log_levels", log_levels).description("Logs one message at every level."))
        .tool(Tool::new("log_many", log_many).description("Logs `count` info messages as fast as it can."))
}

wasm_mcp_sdk::export!(plugin);
