//! Plugin output crossing back into the host: arbitrary WIT values (built
//! structure-aware from the fuzzer's bytes) and arbitrary JSON text wherever
//! the host expects JSON, through the conversion code (`contract::wire`), the
//! tool schema compiler, progress and log floods under the notification
//! bounds (caps, rate, the call's budget), and the readers of the client's
//! answers.
//! Nothing may panic, and what the host renders for the client has no null
//! where the MCP schema wants a value.
#![no_main]

use std::sync::{Arc, Mutex};

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wasm_mcp::CallScope;
use wasm_mcp::fuzzing::bindings::host::{
    IncludeContext, ModelPreferences, SamplingContent, SamplingMessage, SamplingRequest, ToolResult, ToolUse,
};
use wasm_mcp::fuzzing::bindings::types::{
    Annotations, ContentBlock, ContentsBody, EmbeddedResource, Icon, IconTheme, MediaContent, ResourceContents,
    ResourceLink, Role, TextContent,
};
use wasm_mcp::fuzzing::bindings::{prompts, resources, tools};
use wasm_mcp::fuzzing::{BoxFuture, ClientLink, ClientRequestError, LogLevel, NotificationBounds, ToolSchemas, wire};
use wasm_mcp_fuzz::{assert_no_null, json_text, json_value};

fn opt<T>(u: &mut Unstructured, f: impl FnOnce(&mut Unstructured) -> Result<T>) -> Result<Option<T>> {
    if u.arbitrary()? { Ok(Some(f(u)?)) } else { Ok(None) }
}

fn list<T>(u: &mut Unstructured, f: impl Fn(&mut Unstructured) -> Result<T>) -> Result<Vec<T>> {
    (0..u.int_in_range(0..=3)?).map(|_| f(u)).collect()
}

fn string(u: &mut Unstructured) -> Result<String> {
    u.arbitrary()
}

fn role(u: &mut Unstructured) -> Result<Role> {
    Ok(if u.arbitrary()? { Role::User } else { Role::Assistant })
}

fn annotations(u: &mut Unstructured) -> Result<Annotations> {
    Ok(Annotations {
        audience: opt(u, |u| list(u, role))?,
        priority: opt(u, |u| u.arbitrary())?,
        last_modified: opt(u, string)?,
    })
}

fn icon(u: &mut Unstructured) -> Result<Icon> {
    Ok(Icon {
        src: string(u)?,
        mime_type: opt(u, string)?,
        sizes: opt(u, |u| list(u, string))?,
        theme: opt(u, |u| {
            Ok(if u.arbitrary()? {
                IconTheme::Light
            } else {
                IconTheme::Dark
            })
        })?,
    })
}

fn text_content(u: &mut Unstructured) -> Result<TextContent> {
    Ok(TextContent {
        text: string(u)?,
        annotations: opt(u, annotations)?,
        meta: opt(u, json_text)?,
    })
}

fn media_content(u: &mut Unstructured) -> Result<MediaContent> {
    Ok(MediaContent {
        data: u.arbitrary()?,
        mime_type: string(u)?,
        annotations: opt(u, annotations)?,
        meta: opt(u, json_text)?,
    })
}

fn resource_contents(u: &mut Unstructured) -> Result<ResourceContents> {
    Ok(ResourceContents {
        uri: string(u)?,
        mime_type: opt(u, string)?,
        body: if u.arbitrary()? {
            ContentsBody::Text(string(u)?)
        } else {
            ContentsBody::Blob(u.arbitrary()?)
        },
        meta: opt(u, json_text)?,
    })
}

fn content_block(u: &mut Unstructured) -> Result<ContentBlock> {
    Ok(match u.choose_index(5)? {
        0 => ContentBlock::Text(text_content(u)?),
        1 => ContentBlock::Image(media_content(u)?),
        2 => ContentBlock::Audio(media_content(u)?),
        3 => ContentBlock::ResourceLink(ResourceLink {
            uri: string(u)?,
            name: string(u)?,
            title: opt(u, string)?,
            description: opt(u, string)?,
            mime_type: opt(u, string)?,
            size: opt(u, |u| u.arbitrary())?,
            icons: list(u, icon)?,
            annotations: opt(u, annotations)?,
            meta: opt(u, json_text)?,
        }),
        _ => ContentBlock::EmbeddedResource(EmbeddedResource {
            resource: resource_contents(u)?,
            annotations: opt(u, annotations)?,
            meta: opt(u, json_text)?,
        }),
    })
}

fn tool(u: &mut Unstructured) -> Result<tools::Tool> {
    Ok(tools::Tool {
        name: string(u)?,
        title: opt(u, string)?,
        description: opt(u, string)?,
        input_schema: json_text(u)?,
        output_schema: opt(u, json_text)?,
        annotations: opt(u, |u| {
            Ok(tools::ToolAnnotations {
                title: opt(u, string)?,
                read_only_hint: u.arbitrary()?,
                destructive_hint: u.arbitrary()?,
                idempotent_hint: u.arbitrary()?,
                open_world_hint: u.arbitrary()?,
            })
        })?,
        icons: list(u, icon)?,
        task_support: *u.choose(&[
            tools::TaskSupport::Forbidden,
            tools::TaskSupport::Optional,
            tools::TaskSupport::Required,
        ])?,
        meta: opt(u, json_text)?,
    })
}

fn sampling_content(u: &mut Unstructured) -> Result<SamplingContent> {
    Ok(match u.choose_index(5)? {
        0 => SamplingContent::Text(text_content(u)?),
        1 => SamplingContent::Image(media_content(u)?),
        2 => SamplingContent::Audio(media_content(u)?),
        3 => SamplingContent::ToolUse(ToolUse {
            id: string(u)?,
            name: string(u)?,
            input: json_text(u)?,
        }),
        _ => SamplingContent::ToolResult(ToolResult {
            tool_use_id: string(u)?,
            content: list(u, content_block)?,
            structured_content: opt(u, json_text)?,
            is_error: u.arbitrary()?,
        }),
    })
}

fn sampling_request(u: &mut Unstructured) -> Result<SamplingRequest> {
    Ok(SamplingRequest {
        messages: list(u, |u| {
            Ok(SamplingMessage {
                role: role(u)?,
                content: list(u, sampling_content)?,
            })
        })?,
        model_preferences: opt(u, |u| {
            Ok(ModelPreferences {
                hints: list(u, string)?,
                cost_priority: u.arbitrary()?,
                speed_priority: u.arbitrary()?,
                intelligence_priority: u.arbitrary()?,
            })
        })?,
        system_prompt: opt(u, string)?,
        include_context: opt(u, |u| {
            Ok(*u.choose(&[
                IncludeContext::None,
                IncludeContext::ThisServer,
                IncludeContext::AllServers,
            ])?)
        })?,
        temperature: u.arbitrary()?,
        max_tokens: u.arbitrary()?,
        stop_sequences: list(u, string)?,
        metadata: opt(u, json_text)?,
        tools: opt(u, json_text)?,
        tool_choice: opt(u, json_text)?,
    })
}

/// A client that records the notifications the plugin's call sends it (log
/// data is the plugin's own JSON, embedded as given).
#[derive(Default)]
struct RecordingClient(Mutex<Vec<Value>>);

impl ClientLink for RecordingClient {
    fn notify(&self, method: &str, params: Value) {
        self.0
            .lock()
            .unwrap()
            .push(json!({ "method": method, "params": params }));
    }
    fn log(&self, _: LogLevel, _: &str, data: Value, _: usize) -> BoxFuture<'_, ()> {
        self.0
            .lock()
            .unwrap()
            .push(json!({ "method": "notifications/message", "params": { "data": data } }));
        Box::pin(std::future::ready(()))
    }
    fn request(&self, _: &'static str, _: Value) -> BoxFuture<'_, std::result::Result<Value, ClientRequestError>> {
        Box::pin(async { Err(ClientRequestError::TimedOut) })
    }
    fn resource_updated(&self, _: &str) {}
}

/// Renders whatever the bytes describe; `Err` only when the bytes run out.
fn render(u: &mut Unstructured) -> Result<()> {
    match u.choose_index(9)? {
        0 => {
            if let Ok(blocks) = wire::content_blocks(list(u, content_block)?) {
                blocks.iter().for_each(|b| assert_no_null(b, "content"));
            }
        }
        1 => {
            let tool = tool(u)?;
            if let Ok(schemas) = ToolSchemas::compile(&tool) {
                let name = tool.name.clone();
                let task_support = tool.task_support;
                if let Ok(listed) = wire::tool(
                    tool,
                    &name,
                    task_support,
                    &schemas.input_schema,
                    schemas.output_schema.as_ref(),
                ) {
                    assert_no_null(&listed, "tool");
                }
                // Arguments and structured content are checked against the schemas.
                let instance = json_value(u, 4)?;
                let _ = schemas.input.iter_errors(&instance).count();
                if let Some(output) = &schemas.output {
                    // The host quotes the first error to the model.
                    if let Some(error) = output.iter_errors(&instance).next() {
                        assert!(!error.to_string().is_empty());
                    }
                }
            }
        }
        2 => {
            let resource = resources::Resource {
                uri: string(u)?,
                name: string(u)?,
                title: opt(u, string)?,
                description: opt(u, string)?,
                mime_type: opt(u, string)?,
                size: opt(u, |u| u.arbitrary())?,
                annotations: opt(u, annotations)?,
                icons: list(u, icon)?,
                meta: opt(u, json_text)?,
            };
            if let Ok(listed) = wire::resource(resource) {
                assert_no_null(&listed, "resource");
            }
            if let Ok(contents) = wire::resource_contents(resource_contents(u)?) {
                assert_no_null(&contents, "resource contents");
            }
        }
        3 => {
            let template = resources::ResourceTemplate {
                uri_template: string(u)?,
                name: string(u)?,
                title: opt(u, string)?,
                description: opt(u, string)?,
                mime_type: opt(u, string)?,
                annotations: opt(u, annotations)?,
                icons: list(u, icon)?,
                meta: opt(u, json_text)?,
            };
            if let Ok(listed) = wire::resource_template(template) {
                assert_no_null(&listed, "resource template");
            }
        }
        4 => {
            let prompt = prompts::Prompt {
                name: string(u)?,
                title: opt(u, string)?,
                description: opt(u, string)?,
                arguments: list(u, |u| {
                    Ok(prompts::PromptArgument {
                        name: string(u)?,
                        title: opt(u, string)?,
                        description: opt(u, string)?,
                        required: u.arbitrary()?,
                    })
                })?,
                icons: list(u, icon)?,
                meta: opt(u, json_text)?,
            };
            let name = prompt.name.clone();
            if let Ok(listed) = wire::prompt(prompt, &name) {
                assert_no_null(&listed, "prompt");
            }
            let result = prompts::GetPromptResult {
                description: opt(u, string)?,
                messages: list(u, |u| {
                    Ok(prompts::PromptMessage {
                        role: role(u)?,
                        content: content_block(u)?,
                    })
                })?,
                meta: opt(u, json_text)?,
            };
            if let Ok(rendered) = wire::prompt_result(result) {
                assert_no_null(&rendered, "prompt result");
            }
        }
        5 => {
            if let Ok(params) = wire::sampling_request(sampling_request(u)?) {
                assert_no_null(&params, "sampling request");
            }
        }
        6 => {
            // The client's answers, read back for the plugin.
            let answer = json_value(u, 5)?;
            let _ = wire::parse_sampling_result(&answer);
            let _ = wire::parse_elicit_result(&answer);
        }
        7 => {
            let _ = wire::parse_json(&json_text(u)?, "fuzz");
        }
        _ => {
            // Progress and log data the plugin reports during a call, under
            // small bounds: floods of both, texts cut anywhere (multi-byte
            // characters included), the rate and the call's budget.
            let bounds = NotificationBounds {
                log_message_bytes: u.int_in_range(1..=64)?,
                progress_message_bytes: u.int_in_range(1..=64)?,
                call_bytes: u.int_in_range(1..=512)?,
                progress_per_sec: u.int_in_range(1..=8)?,
            };
            let client = Arc::new(RecordingClient::default());
            let scope = CallScope::new(client.clone(), Some(json!("token")), CancellationToken::new(), bounds);
            let mut last = None;
            for _ in 0..u.int_in_range(0..=64)? {
                let (progress, total, message): (f64, Option<f64>, Option<String>) =
                    (u.arbitrary()?, u.arbitrary()?, opt(u, string)?);
                if progress.is_finite() && last.is_none_or(|prev| progress > prev) {
                    last = Some(progress);
                }
                scope.progress(progress, total, message);
                if u.arbitrary()? {
                    drop(scope.log_text("fuzz", LogLevel::Info, string(u)?));
                } else {
                    drop(scope.log_json("fuzz", LogLevel::Info, json_text(u)?));
                }
            }
            scope.finish("fuzz");
            let sent = client.0.lock().unwrap();
            let values: Vec<f64> = sent
                .iter()
                .filter(|n| n["method"] == "notifications/progress")
                .map(|n| n["params"]["progress"].as_f64().expect("a number"))
                .collect();
            assert!(
                values.windows(2).all(|w| w[0] < w[1]),
                "progress only increases: {values:?}"
            );
            assert_eq!(values.last().copied(), last, "the final value arrives");
            for sent in sent.iter() {
                // A log message's `data` is the JSON the plugin logged, embedded as given.
                let mut rendered = sent.clone();
                if let Some(params) = rendered["params"].as_object_mut() {
                    params.remove("data");
                }
                assert_no_null(&rendered, "notification");
                let text = sent["params"]["message"].as_str().or(sent["params"]["data"].as_str());
                if let Some(text) = text.filter(|t| t.contains("… [truncated: ")) {
                    let cap = bounds.log_message_bytes.max(bounds.progress_message_bytes);
                    assert!(text.find("… [truncated: ").unwrap() <= cap, "cut at the cap: {text}");
                }
            }
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    while !u.is_empty() {
        if render(&mut u).is_err() {
            break;
        }
    }
});
