//! Renders what plugins return (WIT values) as MCP JSON, and reads the client's
//! JSON answers back into WIT values for the plugin.
//!
//! Open-ended JSON crossed the boundary as text; here it is parsed once and
//! embedded. Bytes become base64. An error is a sentence saying what the
//! plugin (or the client) sent wrong, for the error the host answers with.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value, json};

use super::bindings::host::{ElicitAction, ElicitResult, SamplingContent, SamplingResult, ToolResult, ToolUse};
use super::bindings::types::{
    Annotations, ContentBlock, ContentsBody, EmbeddedResource, Icon, IconTheme, MediaContent, ResourceContents,
    ResourceLink, Role, TextContent,
};
use super::bindings::{prompts, resources, tools};

/// Parses JSON text a plugin produced. `what` names it in the error.
///
/// # Errors
///
/// When `text` is not JSON.
pub fn parse_json(text: &str, what: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("the plugin returned invalid JSON for {what}: {e}"))
}

/// An object under construction, leaving out absent optional fields.
struct Obj(Map<String, Value>);

impl Obj {
    fn new() -> Self {
        Self(Map::new())
    }
    fn set(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.0.insert(key.into(), value.into());
        self
    }
    fn opt<T: Into<Value>>(mut self, key: &str, value: Option<T>) -> Self {
        if let Some(value) = value {
            self.0.insert(key.into(), value.into());
        }
        self
    }
    /// A number the plugin gave; NaN and infinities have no JSON form and are left out.
    fn num(self, key: &str, value: Option<f64>) -> Self {
        self.opt(key, value.filter(|v| v.is_finite()))
    }
    fn list(mut self, key: &str, values: Vec<Value>) -> Self {
        if !values.is_empty() {
            self.0.insert(key.into(), Value::Array(values));
        }
        self
    }
    /// Embeds plugin-provided JSON text, which must be an object (`_meta`, schemas).
    fn json_object(mut self, key: &str, text: Option<&str>) -> Result<Self, String> {
        if let Some(text) = text {
            let value = parse_json(text, key)?;
            if !value.is_object() {
                return Err(format!("the plugin's {key} must be a JSON object"));
            }
            self.0.insert(key.into(), value);
        }
        Ok(self)
    }
    fn done(self) -> Value {
        Value::Object(self.0)
    }
}

fn role(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

fn annotations(a: Annotations) -> Value {
    Obj::new()
        .opt(
            "audience",
            a.audience
                .map(|roles| roles.into_iter().map(|r| json!(role(r))).collect::<Vec<_>>()),
        )
        .num("priority", a.priority)
        .opt("lastModified", a.last_modified)
        .done()
}

fn icons(icons: Vec<Icon>) -> Vec<Value> {
    icons
        .into_iter()
        .map(|icon| {
            Obj::new()
                .set("src", icon.src)
                .opt("mimeType", icon.mime_type)
                .opt("sizes", icon.sizes)
                .opt(
                    "theme",
                    icon.theme.map(|t| match t {
                        IconTheme::Light => "light",
                        IconTheme::Dark => "dark",
                    }),
                )
                .done()
        })
        .collect()
}

fn text_content(c: TextContent) -> Result<Value, String> {
    Obj::new()
        .set("type", "text")
        .set("text", c.text)
        .opt("annotations", c.annotations.map(annotations))
        .json_object("_meta", c.meta.as_deref())
        .map(Obj::done)
}

fn media_content(kind: &str, c: MediaContent) -> Result<Value, String> {
    Obj::new()
        .set("type", kind)
        .set("data", BASE64.encode(&c.data))
        .set("mimeType", c.mime_type)
        .opt("annotations", c.annotations.map(annotations))
        .json_object("_meta", c.meta.as_deref())
        .map(Obj::done)
}

/// A resource's contents as `resources/read` shows them.
///
/// # Errors
///
/// When its `_meta` is not a JSON object.
pub fn resource_contents(c: ResourceContents) -> Result<Value, String> {
    let body = match c.body {
        ContentsBody::Text(text) => ("text", Value::String(text)),
        ContentsBody::Blob(bytes) => ("blob", Value::String(BASE64.encode(&bytes))),
    };
    Obj::new()
        .set("uri", c.uri)
        .opt("mimeType", c.mime_type)
        .set(body.0, body.1)
        .json_object("_meta", c.meta.as_deref())
        .map(Obj::done)
}

fn resource_link(l: ResourceLink) -> Result<Value, String> {
    Obj::new()
        .set("type", "resource_link")
        .set("uri", l.uri)
        .set("name", l.name)
        .opt("title", l.title)
        .opt("description", l.description)
        .opt("mimeType", l.mime_type)
        .opt("size", l.size)
        .list("icons", icons(l.icons))
        .opt("annotations", l.annotations.map(annotations))
        .json_object("_meta", l.meta.as_deref())
        .map(Obj::done)
}

fn embedded_resource(e: EmbeddedResource) -> Result<Value, String> {
    Obj::new()
        .set("type", "resource")
        .set("resource", resource_contents(e.resource)?)
        .opt("annotations", e.annotations.map(annotations))
        .json_object("_meta", e.meta.as_deref())
        .map(Obj::done)
}

/// A content block as MCP JSON.
fn content_block(block: ContentBlock) -> Result<Value, String> {
    match block {
        ContentBlock::Text(c) => text_content(c),
        ContentBlock::Image(c) => media_content("image", c),
        ContentBlock::Audio(c) => media_content("audio", c),
        ContentBlock::ResourceLink(l) => resource_link(l),
        ContentBlock::EmbeddedResource(e) => embedded_resource(e),
    }
}

/// Content blocks as MCP JSON (a tool result's `content`).
///
/// # Errors
///
/// When a block's `_meta` (or its embedded resource's) is not a JSON object.
pub fn content_blocks(blocks: Vec<ContentBlock>) -> Result<Vec<Value>, String> {
    blocks.into_iter().map(content_block).collect()
}

/// A tool as `tools/list` shows it, under the name the catalog exposes.
///
/// # Errors
///
/// When its `_meta` is not a JSON object.
pub fn tool(
    t: tools::Tool,
    exposed_name: &str,
    task_support: tools::TaskSupport,
    input_schema: &Value,
    output_schema: Option<&Value>,
) -> Result<Value, String> {
    let task_support = match task_support {
        tools::TaskSupport::Forbidden => "forbidden",
        tools::TaskSupport::Optional => "optional",
        tools::TaskSupport::Required => "required",
    };
    let annotations = t.annotations.map(|a| {
        Obj::new()
            .opt("title", a.title)
            .opt("readOnlyHint", a.read_only_hint)
            .opt("destructiveHint", a.destructive_hint)
            .opt("idempotentHint", a.idempotent_hint)
            .opt("openWorldHint", a.open_world_hint)
            .done()
    });
    Obj::new()
        .set("name", exposed_name)
        .opt("title", t.title)
        .opt("description", t.description)
        .set("inputSchema", input_schema.clone())
        .opt("outputSchema", output_schema.cloned())
        .opt("annotations", annotations)
        .set("execution", json!({ "taskSupport": task_support }))
        .list("icons", icons(t.icons))
        .json_object("_meta", t.meta.as_deref())
        .map(Obj::done)
}

/// A resource as `resources/list` shows it.
///
/// # Errors
///
/// When its `_meta` is not a JSON object.
pub fn resource(r: resources::Resource) -> Result<Value, String> {
    Obj::new()
        .set("uri", r.uri)
        .set("name", r.name)
        .opt("title", r.title)
        .opt("description", r.description)
        .opt("mimeType", r.mime_type)
        .opt("size", r.size)
        .opt("annotations", r.annotations.map(annotations))
        .list("icons", icons(r.icons))
        .json_object("_meta", r.meta.as_deref())
        .map(Obj::done)
}

/// A resource template as `resources/templates/list` shows it.
///
/// # Errors
///
/// When its `_meta` is not a JSON object.
pub fn resource_template(t: resources::ResourceTemplate) -> Result<Value, String> {
    Obj::new()
        .set("uriTemplate", t.uri_template)
        .set("name", t.name)
        .opt("title", t.title)
        .opt("description", t.description)
        .opt("mimeType", t.mime_type)
        .opt("annotations", t.annotations.map(annotations))
        .list("icons", icons(t.icons))
        .json_object("_meta", t.meta.as_deref())
        .map(Obj::done)
}

/// A prompt as `prompts/list` shows it, under the name the catalog exposes.
///
/// # Errors
///
/// When its `_meta` is not a JSON object.
pub fn prompt(p: prompts::Prompt, exposed_name: &str) -> Result<Value, String> {
    let arguments: Vec<Value> = p
        .arguments
        .into_iter()
        .map(|a| {
            Obj::new()
                .set("name", a.name)
                .opt("title", a.title)
                .opt("description", a.description)
                .set("required", a.required)
                .done()
        })
        .collect();
    Obj::new()
        .set("name", exposed_name)
        .opt("title", p.title)
        .opt("description", p.description)
        .list("arguments", arguments)
        .list("icons", icons(p.icons))
        .json_object("_meta", p.meta.as_deref())
        .map(Obj::done)
}

/// A prompt's messages as `prompts/get` answers them.
///
/// # Errors
///
/// When its `_meta`, or a message's, is not a JSON object.
pub fn prompt_result(r: prompts::GetPromptResult) -> Result<Value, String> {
    let messages = r
        .messages
        .into_iter()
        .map(|m| Ok(json!({ "role": role(m.role), "content": content_block(m.content)? })))
        .collect::<Result<Vec<_>, String>>()?;
    Obj::new()
        .opt("description", r.description)
        .set("messages", messages)
        .json_object("_meta", r.meta.as_deref())
        .map(Obj::done)
}

// ---- sampling: plugin request → client JSON, client answer → plugin ----

/// One block of a sampling message as MCP JSON.
fn sampling_content(c: SamplingContent) -> Result<Value, String> {
    match c {
        SamplingContent::Text(t) => text_content(t),
        SamplingContent::Image(m) => media_content("image", m),
        SamplingContent::Audio(m) => media_content("audio", m),
        SamplingContent::ToolUse(u) => Ok(json!({
            "type": "tool_use", "id": u.id, "name": u.name, "input": parse_json(&u.input, "tool_use input")?,
        })),
        SamplingContent::ToolResult(r) => Ok(Obj::new()
            .set("type", "tool_result")
            .set("toolUseId", r.tool_use_id)
            .set("content", content_blocks(r.content)?)
            .json_object("structuredContent", r.structured_content.as_deref())?
            .opt("isError", r.is_error)
            .done()),
    }
}

fn parse_role(value: &Value) -> Result<Role, String> {
    match value.as_str() {
        Some("user") => Ok(Role::User),
        Some("assistant") => Ok(Role::Assistant),
        _ => Err(format!("invalid role {value}")),
    }
}

fn str_field(value: &Value, key: &str) -> Result<String, String> {
    value
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("missing string field \"{key}\""))
}

fn parse_media(value: &Value) -> Result<MediaContent, String> {
    let data = BASE64
        .decode(str_field(value, "data")?)
        .map_err(|e| format!("invalid base64 data: {e}"))?;
    Ok(MediaContent {
        data,
        mime_type: str_field(value, "mimeType")?,
        annotations: None,
        meta: None,
    })
}

fn parse_text(value: &Value) -> Result<TextContent, String> {
    Ok(TextContent {
        text: str_field(value, "text")?,
        annotations: None,
        meta: None,
    })
}

/// Reads a content block the client sent (inside a tool result of a sampling answer).
fn parse_content_block(value: &Value) -> Result<ContentBlock, String> {
    match value.get("type").and_then(Value::as_str) {
        Some("text") => Ok(ContentBlock::Text(parse_text(value)?)),
        Some("image") => Ok(ContentBlock::Image(parse_media(value)?)),
        Some("audio") => Ok(ContentBlock::Audio(parse_media(value)?)),
        other => Err(format!("unsupported content type {other:?} in a sampling answer")),
    }
}

fn parse_sampling_content(value: &Value) -> Result<SamplingContent, String> {
    match value.get("type").and_then(Value::as_str) {
        Some("text") => Ok(SamplingContent::Text(parse_text(value)?)),
        Some("image") => Ok(SamplingContent::Image(parse_media(value)?)),
        Some("audio") => Ok(SamplingContent::Audio(parse_media(value)?)),
        Some("tool_use") => Ok(SamplingContent::ToolUse(ToolUse {
            id: str_field(value, "id")?,
            name: str_field(value, "name")?,
            input: value.get("input").cloned().unwrap_or_else(|| json!({})).to_string(),
        })),
        Some("tool_result") => Ok(SamplingContent::ToolResult(ToolResult {
            tool_use_id: str_field(value, "toolUseId")?,
            content: value
                .get("content")
                .and_then(Value::as_array)
                .map(|blocks| blocks.iter().map(parse_content_block).collect())
                .transpose()?
                .unwrap_or_default(),
            structured_content: value.get("structuredContent").map(Value::to_string),
            is_error: value.get("isError").and_then(Value::as_bool),
        })),
        other => Err(format!("unknown content type {other:?}")),
    }
}

/// Reads a CreateMessageResult; `content` may be one block or an array.
///
/// # Errors
///
/// When a field is missing or of the wrong type, a content type is not one a
/// sampling answer carries, or media data is not base64.
pub fn parse_sampling_result(value: &Value) -> Result<SamplingResult, String> {
    let content = match value.get("content") {
        Some(Value::Array(blocks)) => blocks.iter().map(parse_sampling_content).collect::<Result<_, _>>()?,
        Some(block) => vec![parse_sampling_content(block)?],
        None => return Err("the sampling answer has no content".into()),
    };
    Ok(SamplingResult {
        role: parse_role(value.get("role").unwrap_or(&Value::Null))?,
        content,
        model: str_field(value, "model")?,
        stop_reason: value.get("stopReason").and_then(Value::as_str).map(str::to_owned),
    })
}

/// Reads an ElicitResult.
///
/// # Errors
///
/// When its `action` is not `accept`, `decline` or `cancel`.
pub fn parse_elicit_result(value: &Value) -> Result<ElicitResult, String> {
    let action = match value.get("action").and_then(Value::as_str) {
        Some("accept") => ElicitAction::Accept,
        Some("decline") => ElicitAction::Decline,
        Some("cancel") => ElicitAction::Cancel,
        other => return Err(format!("invalid elicitation action {other:?}")),
    };
    Ok(ElicitResult {
        action,
        content: value.get("content").map(Value::to_string),
    })
}

fn sampling_message(m: super::bindings::host::SamplingMessage) -> Result<Value, String> {
    let mut content = m
        .content
        .into_iter()
        .map(sampling_content)
        .collect::<Result<Vec<_>, _>>()?;
    let content = if content.len() == 1 {
        content.remove(0)
    } else {
        Value::Array(content)
    };
    Ok(json!({ "role": role(m.role), "content": content }))
}

/// Renders a plugin's sampling request as CreateMessageRequest params.
///
/// # Errors
///
/// When JSON text in it (tool input, structured content, `tools`,
/// `toolChoice`) does not parse, or its `metadata` or a `_meta` is not a
/// JSON object.
pub fn sampling_request(r: super::bindings::host::SamplingRequest) -> Result<Value, String> {
    use super::bindings::host::IncludeContext;
    let preferences = r.model_preferences.map(|p| {
        Obj::new()
            .list(
                "hints",
                p.hints.into_iter().map(|name| json!({ "name": name })).collect(),
            )
            .num("costPriority", p.cost_priority)
            .num("speedPriority", p.speed_priority)
            .num("intelligencePriority", p.intelligence_priority)
            .done()
    });
    let include_context = r.include_context.map(|c| match c {
        IncludeContext::None => "none",
        IncludeContext::ThisServer => "thisServer",
        IncludeContext::AllServers => "allServers",
    });
    let tools = r
        .tools
        .as_deref()
        .map(|t| parse_json(t, "sampling tools"))
        .transpose()?;
    let tool_choice = r
        .tool_choice
        .as_deref()
        .map(|t| parse_json(t, "sampling toolChoice"))
        .transpose()?;
    Ok(Obj::new()
        .set(
            "messages",
            r.messages
                .into_iter()
                .map(sampling_message)
                .collect::<Result<Vec<_>, _>>()?,
        )
        .opt("modelPreferences", preferences)
        .opt("systemPrompt", r.system_prompt)
        .opt("includeContext", include_context)
        .num("temperature", r.temperature)
        .set("maxTokens", r.max_tokens)
        .list(
            "stopSequences",
            r.stop_sequences.into_iter().map(Value::String).collect(),
        )
        .json_object("metadata", r.metadata.as_deref())?
        .opt("tools", tools)
        .opt("toolChoice", tool_choice)
        .done())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (plugin_output fuzz target): a NaN or infinite number from a
    /// plugin was rendered as `null`, which the MCP schema does not allow.
    #[test]
    fn numbers_without_a_json_form_are_left_out() {
        let block = ContentBlock::Text(TextContent {
            text: "t".into(),
            annotations: Some(Annotations {
                audience: None,
                priority: Some(f64::NAN),
                last_modified: None,
            }),
            meta: None,
        });
        assert_eq!(
            content_block(block).unwrap(),
            json!({ "type": "text", "text": "t", "annotations": {} })
        );
        let request = super::super::bindings::host::SamplingRequest {
            messages: Vec::new(),
            model_preferences: None,
            system_prompt: None,
            include_context: None,
            temperature: Some(f64::INFINITY),
            max_tokens: 1,
            stop_sequences: Vec::new(),
            metadata: None,
            tools: None,
            tool_choice: None,
        };
        assert_eq!(
            sampling_request(request).unwrap(),
            json!({ "messages": [], "maxTokens": 1 })
        );
    }
}
