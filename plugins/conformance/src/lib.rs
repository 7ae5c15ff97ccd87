//! Every fixture the official MCP conformance suite
//! (`@modelcontextprotocol/conformance` 0.1.16) expects from a server, with
//! the names, URIs, schemas and behaviours of its reference server: see
//! `shared/conformance/FIXTURES.md`. The fixtures only its 2026-07-28
//! pre-release line asks for are in [`modern`] and, for the tasks
//! extension, [`tasks`].

mod modern;
mod tasks;

use std::thread::sleep;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wasm_mcp_sdk::host::{self, ElicitResult, LogLevel, SamplingMessage, SamplingRequest};
use wasm_mcp_sdk::{
    Arguments, ContentBlock, NoArgs, Plugin, Prompt, PromptMessage, Resource, ResourceContents, ResourceTemplate, Tool,
    completion,
};

/// A 1×1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV file.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

fn png() -> Vec<u8> {
    STANDARD.decode(PNG).expect("PNG is valid base64")
}

fn wav() -> Vec<u8> {
    STANDARD.decode(WAV).expect("WAV is valid base64")
}

/// The pause between the steps of the logging and progress tools.
const STEP: Duration = Duration::from_millis(50);

// --- tools -----------------------------------------------------------------

fn simple_text(_: NoArgs) -> &'static str {
    "This is a simple text response for testing."
}

fn image_content(_: NoArgs) -> ContentBlock {
    ContentBlock::image(png(), "image/png")
}

fn audio_content(_: NoArgs) -> ContentBlock {
    ContentBlock::audio(wav(), "audio/wav")
}

fn embedded_resource(_: NoArgs) -> ContentBlock {
    ContentBlock::resource(ResourceContents::text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    ))
}

fn multiple_content_types(_: NoArgs) -> Vec<ContentBlock> {
    vec![
        ContentBlock::text("Multiple content types test:"),
        ContentBlock::image(png(), "image/png"),
        ContentBlock::resource(ResourceContents::text(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#,
        )),
    ]
}

fn tool_with_logging(_: NoArgs) -> &'static str {
    host::log(LogLevel::Info, "Tool execution started");
    sleep(STEP);
    host::log(LogLevel::Info, "Tool processing data");
    sleep(STEP);
    host::log(LogLevel::Info, "Tool execution completed");
    "Tool with logging executed successfully"
}

fn tool_with_progress(_: NoArgs) -> &'static str {
    // A pause follows every step, the last too: a client may handle a
    // notification only after the read that carried it (the TypeScript SDK
    // runs progress handlers in a microtask and forgets a request's handler
    // when its response arrives), so the last one must not share a read with
    // the response.
    for step in [0.0, 50.0, 100.0] {
        host::progress(step, Some(100.0), Some(&format!("Completed step {step} of 100")));
        sleep(STEP);
    }
    "Progress notifications sent: 0, 50 and 100 of 100"
}

fn error_handling(_: NoArgs) -> Result<String, &'static str> {
    Err("This tool intentionally returns an error for testing")
}

#[derive(Deserialize, JsonSchema)]
struct SamplingArgs {
    /// The prompt to send to the client's LLM.
    prompt: String,
}

fn sampling(args: SamplingArgs) -> Result<String, String> {
    let request = SamplingRequest::new(vec![SamplingMessage::user(args.prompt)], 100);
    let answer = host::sample(&request).map_err(|e| format!("Sampling failed: {e}"))?;
    Ok(format!("LLM response: {}", answer.text()))
}

#[derive(Deserialize, JsonSchema)]
struct ElicitationArgs {
    /// The message to show the user.
    message: String,
}

fn elicitation(args: ElicitationArgs) -> Result<String, String> {
    let schema = json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}
        },
        "required": ["username", "email"]
    });
    let answer = elicit(&args.message, &schema)?;
    Ok(format!("User response: {}", describe(&answer)))
}

fn elicitation_defaults(_: NoArgs) -> Result<String, String> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active"
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": true}
        },
        "required": []
    });
    let answer = elicit("Please review and update the form fields with defaults", &schema)?;
    Ok(format!("Elicitation completed: {}", describe(&answer)))
}

fn elicitation_enums(_: NoArgs) -> Result<String, String> {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Select one option",
                "enum": ["option1", "option2", "option3"]
            },
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"}
                ]
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "minItems": 1,
                "maxItems": 3,
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"}
                    ]
                }
            }
        },
        "required": []
    });
    let answer = elicit("Please select options from the enum fields", &schema)?;
    Ok(format!("Elicitation completed: {}", describe(&answer)))
}

fn elicit(message: &str, schema: &Value) -> Result<ElicitResult, String> {
    host::elicit_form(message, schema).map_err(|e| format!("Elicitation failed: {e}"))
}

/// `action=<action>, content=<json>` (`null` when nothing was submitted).
fn describe(answer: &ElicitResult) -> String {
    let action = match answer.action {
        host::ElicitAction::Accept => "accept",
        host::ElicitAction::Decline => "decline",
        host::ElicitAction::Cancel => "cancel",
    };
    let content = answer.content.as_deref().unwrap_or("null");
    format!("action={action}, content={content}")
}

fn json_schema_2020_12(args: Value) -> String {
    format!("JSON Schema 2020-12 tool called with: {args}")
}

fn reconnection(_: NoArgs) -> &'static str {
    "Reconnection test completed successfully. If you received this, the client properly \
     reconnected after stream closure."
}

fn tools(plugin: Plugin) -> Plugin {
    let all = [
        Tool::new("test_simple_text", simple_text).description("Tests simple text content response"),
        Tool::new("test_image_content", image_content).description("Tests image content response"),
        Tool::new("test_audio_content", audio_content).description("Tests audio content response"),
        Tool::new("test_embedded_resource", embedded_resource).description("Tests embedded resource content response"),
        Tool::new("test_multiple_content_types", multiple_content_types)
            .description("Tests response with multiple content types (text, image, resource)"),
        Tool::new("test_tool_with_logging", tool_with_logging)
            .description("Tests tool that emits log messages during execution"),
        Tool::new("test_tool_with_progress", tool_with_progress)
            .description("Tests tool that reports progress notifications"),
        Tool::new("test_error_handling", error_handling).description("Tests error response handling"),
        Tool::new("test_sampling", sampling).description("Tests server-initiated sampling (LLM completion request)"),
        Tool::new("test_elicitation", elicitation)
            .description("Tests server-initiated elicitation (user input request)"),
        Tool::new("test_elicitation_sep1034_defaults", elicitation_defaults)
            .description("Tests elicitation with default values for all primitive types (SEP-1034)"),
        Tool::new("test_elicitation_sep1330_enums", elicitation_enums)
            .description("Tests elicitation with enum schema improvements (SEP-1330)"),
        Tool::new("json_schema_2020_12_tool", json_schema_2020_12)
            .description("Tool with JSON Schema 2020-12 features")
            .input_schema(json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {
                    "address": {
                        "$anchor": "addressDef",
                        "type": "object",
                        "properties": {
                            "street": {"type": "string"},
                            "city": {"type": "string"}
                        }
                    }
                },
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            })),
        Tool::new("test_reconnection", reconnection)
            .description("Tests SSE stream disconnection and client reconnection (SEP-1699)"),
    ];
    all.into_iter().fold(plugin, Plugin::tool)
}

// --- resources -------------------------------------------------------------

fn resources(plugin: Plugin) -> Plugin {
    plugin
        .resource(
            Resource::text(
                "test://static-text",
                "static-text",
                "text/plain",
                "This is the content of the static text resource.",
            )
            .title("Static Text Resource")
            .description("A static text resource for testing"),
        )
        .resource(
            Resource::blob("test://static-binary", "static-binary", "image/png", png())
                .title("Static Binary Resource")
                .description("A static binary resource (image) for testing"),
        )
        .resource(
            Resource::text(
                "test://watched-resource",
                "watched-resource",
                "text/plain",
                "Watched resource content",
            )
            .title("Watched Resource")
            .description("A resource that can be subscribed to for updates"),
        )
        .resource_template(
            ResourceTemplate::new("test://template/{id}/data", "template", template_data)
                .title("Resource Template")
                .description("A resource template with parameter substitution")
                .mime_type("application/json")
                .complete("id", |value, _| {
                    completion::starting_with(["1", "2", "3", "123"], value)
                }),
        )
}

fn template_data(uri: &str, vars: &Arguments) -> Result<Vec<ResourceContents>, wasm_mcp_sdk::Error> {
    let id = vars.get("id").unwrap_or_default();
    let data = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
    Ok(vec![ResourceContents::text(uri, "application/json", data.to_string())])
}

// --- prompts ---------------------------------------------------------------

type PromptResult = Result<Vec<PromptMessage>, wasm_mcp_sdk::Error>;

fn simple_prompt(_: NoArgs) -> PromptResult {
    Ok(vec![PromptMessage::user(ContentBlock::text(
        "This is a simple prompt for testing.",
    ))])
}

#[derive(Deserialize, JsonSchema)]
struct PromptArgs {
    /// First test argument
    arg1: String,
    /// Second test argument
    arg2: String,
}

fn prompt_with_arguments(args: PromptArgs) -> PromptResult {
    Ok(vec![PromptMessage::user(ContentBlock::text(format!(
        "Prompt with arguments: arg1='{}', arg2='{}'",
        args.arg1, args.arg2
    )))])
}

#[derive(Deserialize, JsonSchema)]
struct EmbeddedArgs {
    /// URI of the resource to embed
    #[serde(rename = "resourceUri")]
    resource_uri: String,
}

fn prompt_with_embedded_resource(args: EmbeddedArgs) -> PromptResult {
    Ok(vec![
        PromptMessage::user(ContentBlock::resource(ResourceContents::text(
            args.resource_uri,
            "text/plain",
            "Embedded resource content for testing.",
        ))),
        PromptMessage::user(ContentBlock::text("Please process the embedded resource above.")),
    ])
}

fn prompt_with_image(_: NoArgs) -> PromptResult {
    Ok(vec![
        PromptMessage::user(ContentBlock::image(png(), "image/png")),
        PromptMessage::user(ContentBlock::text("Please analyze the image above.")),
    ])
}

fn prompts(plugin: Plugin) -> Plugin {
    plugin
        .prompt(
            Prompt::new("test_simple_prompt", simple_prompt)
                .title("Simple Test Prompt")
                .description("A simple prompt without arguments"),
        )
        .prompt(
            Prompt::new("test_prompt_with_arguments", prompt_with_arguments)
                .title("Prompt With Arguments")
                .description("A prompt with required arguments")
                .complete("arg1", |value, _| {
                    completion::starting_with(["testValue1", "test", "example"], value)
                })
                .complete("arg2", |value, _| {
                    completion::starting_with(["testValue2", "test", "example"], value)
                }),
        )
        .prompt(
            Prompt::new("test_prompt_with_embedded_resource", prompt_with_embedded_resource)
                .title("Prompt With Embedded Resource")
                .description("A prompt that includes an embedded resource"),
        )
        .prompt(
            Prompt::new("test_prompt_with_image", prompt_with_image)
                .title("Prompt With Image")
                .description("A prompt that includes an image"),
        )
}

fn plugin() -> Plugin {
    tasks::fixtures(modern::fixtures(prompts(resources(tools(Plugin::new())))))
}

wasm_mcp_sdk::export!(plugin);
