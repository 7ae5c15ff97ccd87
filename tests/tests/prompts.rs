//! prompts/list and prompts/get over stdio: arguments checked by the host
//! (a missing required argument is -32602), unknown prompts, and messages
//! carrying every content type the plugin returns.

use serde_json::json;
use wasm_mcp_tests::StdioServer;
use wasm_mcp_tests::expect::by_name;

const CONFORMANCE: &str = "conformance";

fn server() -> StdioServer {
    StdioServer::start_initialized(&[CONFORMANCE])
}

#[test]
fn prompts_list_carries_titles_descriptions_and_arguments() {
    let mut server = server();
    let prompts = server.list_all("prompts/list", "prompts");
    let prompt = by_name(&prompts, "test_prompt_with_arguments");
    assert_eq!(prompt["title"], "Prompt With Arguments", "{prompt}");
    assert_eq!(prompt["description"], "A prompt with required arguments", "{prompt}");
    let arguments = prompt["arguments"].as_array().expect("arguments");
    assert_eq!(arguments.len(), 2, "{prompt}");
    for (name, description) in [("arg1", "First test argument"), ("arg2", "Second test argument")] {
        let argument = by_name(arguments, name);
        assert_eq!(argument["description"], description, "{argument}");
        assert_eq!(argument["required"], true, "{argument}");
    }
    let simple = by_name(&prompts, "test_simple_prompt");
    assert!(
        simple.get("arguments").is_none_or(|a| a == &json!([])),
        "a prompt without arguments lists none: {simple}"
    );
    server.shutdown();
}

#[test]
fn a_missing_required_argument_is_invalid_params() {
    let mut server = server();
    let only_one = server.request(
        "prompts/get",
        json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "a"}}),
    );
    let error = only_one.expect_error_code(-32602);
    assert!(
        error.message.contains("arg2"),
        "the error names the missing argument: {error:?}"
    );
    let none = server.request("prompts/get", json!({"name": "test_prompt_with_arguments"}));
    none.expect_error_code(-32602);
    server.shutdown();
}

#[test]
fn arguments_must_be_strings() {
    let mut server = server();
    server
        .request(
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": 1, "arg2": "b"}}),
        )
        .expect_error_code(-32602);
    server.shutdown();
}

#[test]
fn an_unknown_prompt_is_invalid_params() {
    let mut server = server();
    let error = server
        .request("prompts/get", json!({"name": "no_such_prompt"}))
        .expect_error_code(-32602);
    assert!(error.message.contains("no_such_prompt"), "{error:?}");
    server.shutdown();
}

#[test]
fn messages_carry_text_image_and_embedded_resources() {
    let mut server = server();
    let image = server.request("prompts/get", json!({"name": "test_prompt_with_image"}));
    let messages = image.result()["messages"].as_array().unwrap().clone();
    assert_eq!(messages[0]["content"]["type"], "image");
    assert_eq!(messages[0]["content"]["mimeType"], "image/png");
    assert_eq!(messages[1]["content"]["type"], "text");

    let embedded = server.request(
        "prompts/get",
        json!({"name": "test_prompt_with_embedded_resource",
               "arguments": {"resourceUri": "file:///any/uri/at/all.txt"}}),
    );
    let messages = embedded.result()["messages"].as_array().unwrap().clone();
    assert_eq!(messages[0]["content"]["type"], "resource");
    assert_eq!(
        messages[0]["content"]["resource"]["uri"], "file:///any/uri/at/all.txt",
        "the argument reaches the plugin: {messages:?}"
    );
    server.shutdown();
}
