//! Every fixture of shared/conformance/FIXTURES.md, served by the
//! `conformance` plugin and driven over stdio the way the official
//! conformance runner drives it (client capabilities `{sampling, elicitation}`,
//! the runner's canned answers), with the exact reference outputs checked.

use serde_json::{Value, json};
use wasm_mcp_tests::expect::{by_field, by_name, is_tool_error, single_text, texts, tool_ok};
use wasm_mcp_tests::{PluginDir, StdioServer};

const PLUGIN: &str = "conformance";

/// The 1×1 red PNG of the reference server.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// The minimal WAV of the reference server.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// The runner's answer to sampling/createMessage.
fn sampling_answer() -> Value {
    json!({"role": "assistant", "content": {"type": "text", "text": "This is a test response from the client"},
           "model": "test-model", "stopReason": "endTurn"})
}

/// The conformance plugin, initialized as the conformance runner does, with
/// the runner's canned sampling and elicitation answers.
fn server() -> StdioServer {
    let mut server = StdioServer::start(PluginDir::with(&[PLUGIN]));
    server.on_request("sampling/createMessage", |_| Ok(sampling_answer()));
    server.on_request("elicitation/create", |params| {
        let properties = &params["requestedSchema"]["properties"];
        if properties.get("name").is_some() && properties.get("verified").is_some() {
            // elicitation-sep1034-defaults
            Ok(json!({"action": "accept", "content": {"name": "Jane Smith", "age": 25,
                "score": 88.0, "status": "inactive", "verified": false}}))
        } else if properties.get("untitledSingle").is_some() {
            // elicitation-sep1330-enums
            Ok(json!({"action": "accept", "content": {"untitledSingle": "option1",
                "titledSingle": "value1", "legacyEnum": "opt1",
                "untitledMulti": ["option1"], "titledMulti": ["value1"]}}))
        } else {
            Ok(json!({"action": "accept",
                "content": {"username": "testuser", "email": "test@example.com"}}))
        }
    });
    server.initialize(json!({"sampling": {}, "elicitation": {}}));
    server
}

fn call(server: &mut StdioServer, tool: &str) -> Value {
    server.call_tool(tool, json!({})).result().clone()
}

/// Calls `tool` with `arguments` and checks that the call succeeded.
fn call_ok(server: &mut StdioServer, tool: &str, arguments: Value) -> Value {
    request_ok(server, json!({"name": tool, "arguments": arguments}))
}

/// Sends `tools/call` with `params` as given and checks that the call succeeded.
fn request_ok(server: &mut StdioServer, params: Value) -> Value {
    let result = server.request("tools/call", params).result().clone();
    tool_ok(&result);
    result
}

// ---- tools/list ---------------------------------------------------------------

#[test]
fn every_fixture_tool_is_listed_with_a_description_and_an_object_schema() {
    let mut server = server();
    let tools = server.list_all("tools/list", "tools");
    for name in [
        "test_simple_text",
        "test_image_content",
        "test_audio_content",
        "test_embedded_resource",
        "test_multiple_content_types",
        "test_tool_with_logging",
        "test_tool_with_progress",
        "test_error_handling",
        "test_sampling",
        "test_elicitation",
        "test_elicitation_sep1034_defaults",
        "test_elicitation_sep1330_enums",
        "json_schema_2020_12_tool",
    ] {
        let tool = by_name(&tools, name);
        let description = tool["description"].as_str().unwrap_or_default();
        assert!(!description.is_empty(), "{name} needs a non-empty description: {tool}");
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}'s inputSchema: {tool}");
    }
    // Every tool on the first page has name, description and inputSchema (tools-list).
    let first_page = server.request("tools/list", json!({})).result()["tools"].clone();
    for tool in first_page.as_array().unwrap() {
        assert!(
            tool["description"].as_str().is_some_and(|d| !d.is_empty()),
            "tools-list requires a description on every tool: {tool}"
        );
    }

    let sampling = by_name(&tools, "test_sampling");
    assert_eq!(sampling["inputSchema"]["properties"]["prompt"]["type"], "string");
    assert_eq!(sampling["inputSchema"]["required"], json!(["prompt"]));
    let elicitation = by_name(&tools, "test_elicitation");
    assert_eq!(elicitation["inputSchema"]["properties"]["message"]["type"], "string");
    assert_eq!(elicitation["inputSchema"]["required"], json!(["message"]));
    server.shutdown();
}

#[test]
fn json_schema_2020_12_tool_keeps_its_schema_verbatim() {
    let mut server = server();
    let tools = server.list_all("tools/list", "tools");
    let tool = by_name(&tools, "json_schema_2020_12_tool");
    let expected = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {
            "street": {"type": "string"}, "city": {"type": "string"}}}},
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
    });
    assert_eq!(
        tool["inputSchema"], expected,
        "the 2020-12 keywords must come through verbatim"
    );
    server.shutdown();
}

// ---- tools/call ---------------------------------------------------------------

#[test]
fn simple_text_accepts_a_call_without_arguments() {
    let mut server = server();
    // The runner sends no `arguments` key at all for this tool.
    let result = request_ok(&mut server, json!({"name": "test_simple_text"}));
    assert_eq!(single_text(&result), "This is a simple text response for testing.");
    server.shutdown();
}

#[test]
fn image_audio_and_embedded_resource_content() {
    let mut server = server();
    let image = call(&mut server, "test_image_content");
    assert_eq!(
        image["content"],
        json!([{"type": "image", "data": PNG, "mimeType": "image/png"}])
    );

    let audio = call(&mut server, "test_audio_content");
    assert_eq!(
        audio["content"],
        json!([{"type": "audio", "data": WAV, "mimeType": "audio/wav"}])
    );

    let embedded = call(&mut server, "test_embedded_resource");
    assert_eq!(
        embedded["content"],
        json!([{"type": "resource", "resource": {"uri": "test://embedded-resource",
            "mimeType": "text/plain", "text": "This is an embedded resource content."}}])
    );
    server.shutdown();
}

#[test]
fn multiple_content_types_in_order() {
    let mut server = server();
    let result = call(&mut server, "test_multiple_content_types");
    assert_eq!(
        result["content"],
        json!([
            {"type": "text", "text": "Multiple content types test:"},
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "test://mixed-content-resource",
                "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}"}}
        ])
    );
    server.shutdown();
}

#[test]
fn reconnection_tool_answers_over_stdio() {
    let mut server = server();
    let result = call_ok(&mut server, "test_reconnection", json!({}));
    assert_eq!(
        single_text(&result),
        "Reconnection test completed successfully. If you received this, the client properly \
         reconnected after stream closure."
    );
    server.shutdown();
}

#[test]
fn error_handling_is_a_tool_error_not_a_jsonrpc_error() {
    let mut server = server();
    let response = server.call_tool("test_error_handling", json!({}));
    assert!(
        !response.is_error(),
        "a tool failure must be a result, got {}",
        response.raw
    );
    let result = response.result();
    assert!(is_tool_error(result), "expected isError: true, got {result}");
    assert_eq!(
        single_text(result),
        "This tool intentionally returns an error for testing"
    );
    server.shutdown();
}

#[test]
fn logging_tool_sends_three_info_messages_during_the_call() {
    let mut server = server();
    let set = server.request("logging/setLevel", json!({"level": "debug"}));
    assert_eq!(set.result(), &json!({}), "logging/setLevel answers {{}}");
    let result = call_ok(&mut server, "test_tool_with_logging", json!({}));
    assert_eq!(single_text(&result), "Tool with logging executed successfully");
    // Notifications received before the response: sent while the call was in flight.
    let messages = server.notifications_of("notifications/message");
    let data: Vec<&Value> = messages.iter().map(|m| &m["params"]["data"]).collect();
    assert_eq!(
        data,
        vec![
            &json!("Tool execution started"),
            &json!("Tool processing data"),
            &json!("Tool execution completed")
        ],
        "the three log messages, in order, before the result: {messages:?}"
    );
    for message in &messages {
        assert_eq!(message["params"]["level"], "info", "{message}");
        assert_eq!(
            message["params"]["logger"], PLUGIN,
            "logger = the plugin's name: {message}"
        );
    }
    server.shutdown();
}

/// The progress notifications for `token` received so far.
fn progress_for(server: &StdioServer, token: &Value) -> Vec<Value> {
    server
        .notifications_of("notifications/progress")
        .into_iter()
        .filter(|n| &n["params"]["progressToken"] == token)
        .collect()
}

#[test]
fn progress_tool_reports_0_50_100_on_a_string_token() {
    let mut server = server();
    let token = json!("progress-test-1");
    request_ok(
        &mut server,
        json!({"name": "test_tool_with_progress", "arguments": {},
               "_meta": {"progressToken": token}}),
    );
    let progress = progress_for(&server, &token);
    let values: Vec<&Value> = progress.iter().map(|n| &n["params"]["progress"]).collect();
    assert_eq!(
        values.iter().map(|v| v.as_f64().unwrap()).collect::<Vec<_>>(),
        vec![0.0, 50.0, 100.0],
        "progress 0, 50, 100 before the result: {progress:?}"
    );
    for n in &progress {
        assert_eq!(n["params"]["total"].as_f64(), Some(100.0), "total 100: {n}");
    }
    let all = server.notifications_of("notifications/progress");
    assert_eq!(all.len(), 3, "no progress on other tokens: {all:?}");
    server.shutdown();
}

#[test]
fn progress_tool_echoes_a_number_token_as_a_number() {
    let mut server = server();
    request_ok(
        &mut server,
        json!({"name": "test_tool_with_progress", "arguments": {},
               "_meta": {"progressToken": 7}}),
    );
    let progress = server.notifications_of("notifications/progress");
    assert_eq!(progress.len(), 3, "three progress notifications: {progress:?}");
    for n in &progress {
        assert_eq!(n["params"]["progressToken"], json!(7), "the token, as a number: {n}");
    }
    server.shutdown();
}

#[test]
fn progress_tool_without_a_token_sends_no_progress() {
    let mut server = server();
    call_ok(&mut server, "test_tool_with_progress", json!({}));
    // Read stdout to its end: nothing may come late either.
    let mut server = server;
    let status = server.close_and_wait();
    assert!(status.success(), "exit status {status}");
    let progress = server.notifications_of("notifications/progress");
    assert!(progress.is_empty(), "no token, no progress: {progress:?}");
}

#[test]
fn sampling_round_trip() {
    let mut server = server();
    let result = call_ok(
        &mut server,
        "test_sampling",
        json!({"prompt": "Test prompt for sampling"}),
    );
    let requests = server.client_requests_of("sampling/createMessage");
    assert_eq!(requests.len(), 1, "one sampling request during the call: {requests:?}");
    let params = &requests[0]["params"];
    assert_eq!(
        params["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Test prompt for sampling"}}])
    );
    assert_eq!(params["maxTokens"], 100);
    assert_eq!(
        single_text(&result),
        "LLM response: This is a test response from the client"
    );
    server.shutdown();
}

#[test]
fn elicitation_round_trip() {
    let mut server = server();
    let result = call_ok(
        &mut server,
        "test_elicitation",
        json!({"message": "Please provide your information"}),
    );
    let requests = server.client_requests_of("elicitation/create");
    assert_eq!(
        requests.len(),
        1,
        "one elicitation request during the call: {requests:?}"
    );
    assert_eq!(requests[0]["params"]["message"], "Please provide your information");
    assert_eq!(requests[0]["params"]["requestedSchema"]["type"], "object");
    let text = single_text(&result);
    let content = text
        .strip_prefix("User response: action=accept, content=")
        .unwrap_or_else(|| panic!("unexpected elicitation result text: {text:?}"));
    let content: Value =
        serde_json::from_str(content).unwrap_or_else(|e| panic!("the content part of {text:?} is not JSON: {e}"));
    assert_eq!(content, json!({"username": "testuser", "email": "test@example.com"}));
    server.shutdown();
}

/// The `requestedSchema` of the one elicitation made during a call of `tool`,
/// and the call's text.
fn elicited_schema(tool: &str) -> (Value, String) {
    let mut server = server();
    let result = call_ok(&mut server, tool, json!({}));
    let requests = server.client_requests_of("elicitation/create");
    assert_eq!(requests.len(), 1, "one elicitation request during {tool}: {requests:?}");
    let text = texts(&result).join("");
    server.shutdown();
    (requests[0]["params"]["requestedSchema"].clone(), text)
}

#[test]
fn elicitation_sep1034_defaults() {
    let (schema, text) = elicited_schema("test_elicitation_sep1034_defaults");
    let p = &schema["properties"];
    for (name, ty, default) in [
        ("name", "string", json!("John Doe")),
        ("age", "integer", json!(30)),
        ("score", "number", json!(95.5)),
        ("status", "string", json!("active")),
        ("verified", "boolean", json!(true)),
    ] {
        assert_eq!(p[name]["type"], ty, "type of {name}: {schema}");
        assert_eq!(p[name]["default"], default, "default of {name}: {schema}");
    }
    assert_eq!(p["status"]["enum"], json!(["active", "inactive", "pending"]));
    assert!(
        text.starts_with("Elicitation completed: action=accept, content="),
        "unexpected result text: {text:?}"
    );
}

#[test]
fn elicitation_sep1330_enums() {
    let (schema, text) = elicited_schema("test_elicitation_sep1330_enums");
    let expected = json!({
        "untitledSingle": {"type": "string", "description": "Select one option",
            "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "description": "Select one option with titles",
            "oneOf": [{"const": "value1", "title": "First Option"},
                      {"const": "value2", "title": "Second Option"},
                      {"const": "value3", "title": "Third Option"}]},
        "legacyEnum": {"type": "string", "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "description": "Select multiple options",
            "minItems": 1, "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "description": "Select multiple options with titles",
            "minItems": 1, "maxItems": 3,
            "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                {"const": "value2", "title": "Second Choice"},
                                {"const": "value3", "title": "Third Choice"}]}}
    });
    assert_eq!(schema["properties"], expected, "the five enum shapes, exactly");
    assert!(
        text.starts_with("Elicitation completed: "),
        "unexpected result text: {text:?}"
    );
}

// ---- resources ----------------------------------------------------------------

#[test]
fn fixture_resources_and_template_are_listed() {
    let mut server = server();
    let resources = server.list_all("resources/list", "resources");
    for uri in ["test://static-text", "test://static-binary", "test://watched-resource"] {
        let resource = by_field(&resources, "uri", uri);
        assert!(
            resource["name"].as_str().is_some_and(|n| !n.is_empty()),
            "{uri} needs a name: {resource}"
        );
    }
    let templates = server.list_all("resources/templates/list", "resourceTemplates");
    by_field(&templates, "uriTemplate", "test://template/{id}/data");
    server.shutdown();
}

#[test]
fn fixture_resources_read_exactly() {
    let mut server = server();
    let text = server.request("resources/read", json!({"uri": "test://static-text"}));
    assert_eq!(
        text.result()["contents"],
        json!([{"uri": "test://static-text", "mimeType": "text/plain",
                "text": "This is the content of the static text resource."}])
    );
    let binary = server.request("resources/read", json!({"uri": "test://static-binary"}));
    assert_eq!(
        binary.result()["contents"],
        json!([{"uri": "test://static-binary", "mimeType": "image/png", "blob": PNG}])
    );
    let templated = server.request("resources/read", json!({"uri": "test://template/123/data"}));
    let contents = &templated.result()["contents"];
    assert_eq!(contents.as_array().map(Vec::len), Some(1), "{contents}");
    assert_eq!(contents[0]["uri"], "test://template/123/data");
    assert_eq!(contents[0]["mimeType"], "application/json");
    let data: Value = serde_json::from_str(contents[0]["text"].as_str().expect("text contents"))
        .expect("the template resource is JSON");
    assert_eq!(
        data,
        json!({"id": "123", "templateTest": true, "data": "Data for ID: 123"})
    );
    server.shutdown();
}

#[test]
fn watched_resource_subscribe_and_unsubscribe_succeed() {
    let mut server = server();
    let uri = json!({"uri": "test://watched-resource"});
    assert!(server.request("resources/subscribe", uri.clone()).result().is_object());
    assert!(server.request("resources/unsubscribe", uri).result().is_object());
    server.shutdown();
}

// ---- prompts ------------------------------------------------------------------

#[test]
fn fixture_prompts_are_listed_with_descriptions_and_arguments() {
    let mut server = server();
    let prompts = server.list_all("prompts/list", "prompts");
    for name in [
        "test_simple_prompt",
        "test_prompt_with_arguments",
        "test_prompt_with_embedded_resource",
        "test_prompt_with_image",
    ] {
        let prompt = by_name(&prompts, name);
        assert!(
            prompt["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{name} needs a description: {prompt}"
        );
    }
    let with_args = by_name(&prompts, "test_prompt_with_arguments");
    let args = with_args["arguments"].as_array().expect("arguments");
    for (name, description) in [("arg1", "First test argument"), ("arg2", "Second test argument")] {
        let arg = by_name(args, name);
        assert_eq!(arg["required"], true, "{arg}");
        assert_eq!(arg["description"], description, "{arg}");
    }
    let embedded = by_name(&prompts, "test_prompt_with_embedded_resource");
    let arg = by_name(embedded["arguments"].as_array().expect("arguments"), "resourceUri");
    assert_eq!(arg["required"], true, "{arg}");
    server.shutdown();
}

#[test]
fn fixture_prompts_get_exactly() {
    let mut server = server();
    let simple = server.request("prompts/get", json!({"name": "test_simple_prompt"}));
    assert_eq!(
        simple.result()["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}])
    );

    let with_args = server.request(
        "prompts/get",
        json!({"name": "test_prompt_with_arguments",
               "arguments": {"arg1": "testValue1", "arg2": "testValue2"}}),
    );
    assert_eq!(
        with_args.result()["messages"],
        json!([{"role": "user", "content": {"type": "text",
            "text": "Prompt with arguments: arg1='testValue1', arg2='testValue2'"}}])
    );

    let embedded = server.request(
        "prompts/get",
        json!({"name": "test_prompt_with_embedded_resource",
               "arguments": {"resourceUri": "test://example-resource"}}),
    );
    assert_eq!(
        embedded.result()["messages"],
        json!([
            {"role": "user", "content": {"type": "resource", "resource": {
                "uri": "test://example-resource", "mimeType": "text/plain",
                "text": "Embedded resource content for testing."}}},
            {"role": "user", "content": {"type": "text", "text": "Please process the embedded resource above."}}
        ])
    );

    let image = server.request("prompts/get", json!({"name": "test_prompt_with_image"}));
    assert_eq!(
        image.result()["messages"],
        json!([
            {"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
            {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}}
        ])
    );
    server.shutdown();
}

// ---- utilities ----------------------------------------------------------------

#[test]
fn completion_for_the_fixture_prompt_returns_values() {
    let mut server = server();
    let response = server.request(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
               "argument": {"name": "arg1", "value": "test"}}),
    );
    let values = response.result()["completion"]["values"]
        .as_array()
        .unwrap_or_else(|| panic!("completion.values is an array: {}", response.raw));
    assert!(values.len() <= 100, "at most 100 values");
    server.shutdown();
}

#[test]
fn ping_and_set_level_answer_empty_objects() {
    let mut server = server();
    assert_eq!(server.request("ping", Value::Null).result(), &json!({}));
    assert_eq!(
        server.request("logging/setLevel", json!({"level": "info"})).result(),
        &json!({})
    );
    server.shutdown();
}

#[test]
fn initialize_declares_what_the_runner_expects() {
    let mut server = StdioServer::start(PluginDir::with(&[PLUGIN]));
    let result = server.initialize(json!({"sampling": {}, "elicitation": {}}));
    let caps = &result["capabilities"];
    for cap in ["tools", "resources", "prompts", "logging", "completions"] {
        assert!(caps[cap].is_object(), "capability `{cap}` must be declared: {caps}");
    }
    assert_eq!(caps["resources"]["subscribe"], true, "resources.subscribe: {caps}");
    server.shutdown();
}
