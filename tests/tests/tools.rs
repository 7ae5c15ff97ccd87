//! tools/list and tools/call over stdio: every field a plugin declares comes
//! through, results and tool errors, unknown tools, arguments checked against
//! the input schema before the plugin runs, and structured results.

use serde_json::{Value, json};
use wasm_mcp_tests::StdioServer;
use wasm_mcp_tests::expect::{by_name, is_tool_error, names, names_field, single_text, texts, tool_ok};

/// The first example plugin (plugins/text-tools), built with the SDK.
const TEXT_TOOLS: &str = "text-tools";

/// The icon text-tools declares on word_count.
const AA_ICON: &str = "data:image/svg+xml;base64,PHN2ZyB4bWxucz0naHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmcnIHZpZXdCb3g9JzAgMCAyNCAyNCc+PHJlY3Qgd2lkdGg9JzI0JyBoZWlnaHQ9JzI0JyByeD0nNCcgZmlsbD0nIzJiNmNiMCcvPjx0ZXh0IHg9JzEyJyB5PScxNycgZm9udC1zaXplPScxMicgdGV4dC1hbmNob3I9J21pZGRsZScgZmlsbD0nd2hpdGUnIGZvbnQtZmFtaWx5PSdzYW5zLXNlcmlmJz5BYTwvdGV4dD48L3N2Zz4=";

fn text_tools() -> StdioServer {
    StdioServer::start_initialized(&[TEXT_TOOLS])
}

#[test]
fn tools_list_carries_every_declared_field() {
    let mut server = text_tools();
    let tools = server.list_all("tools/list", "tools");
    let mut listed = names(&tools);
    listed.sort();
    assert_eq!(
        listed,
        [
            "base64_decode",
            "base64_encode",
            "change_case",
            "reverse",
            "slugify",
            "word_count"
        ],
        "text-tools declares exactly these tools"
    );
    for (name, title, description) in [
        (
            "word_count",
            "Word count",
            "Counts the words, lines and characters of a text.",
        ),
        (
            "change_case",
            "Change case",
            "Converts a text to upper, lower or title case, or to a snake_case or kebab-case identifier.",
        ),
        ("reverse", "Reverse", "Reverses a text, character by character."),
        (
            "slugify",
            "Slugify",
            "Turns a text into a URL slug: lowercase ASCII letters and digits joined by '-'.",
        ),
        (
            "base64_encode",
            "Base64 encode",
            "Encodes a text's UTF-8 bytes as standard base64.",
        ),
        (
            "base64_decode",
            "Base64 decode",
            "Decodes standard base64 into UTF-8 text.",
        ),
    ] {
        let tool = by_name(&tools, name);
        assert_eq!(tool["title"], title, "{name}.title: {tool}");
        assert_eq!(tool["description"], description, "{name}.description: {tool}");
        assert_eq!(
            tool["annotations"],
            json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}),
            "{name}.annotations: exactly the hints the plugin set: {tool}"
        );
        assert_eq!(
            tool["execution"]["taskSupport"], "forbidden",
            "{name}.execution: {tool}"
        );
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}.inputSchema: {tool}");
        if name != "word_count" {
            assert!(
                tool.get("icons").is_none_or(|i| i == &json!([])),
                "{name} declares no icon: {tool}"
            );
            assert!(
                tool.get("outputSchema").is_none(),
                "{name} declares no outputSchema: {tool}"
            );
        }
    }

    // Input schemas derived from the Rust argument types, doc comments included.
    let word_count = by_name(&tools, "word_count");
    let input = &word_count["inputSchema"];
    assert_eq!(input["properties"]["text"]["type"], "string", "{input}");
    assert_eq!(input["properties"]["text"]["description"], "The input text.", "{input}");
    assert_eq!(input["required"], json!(["text"]), "{input}");
    let change_case = by_name(&tools, "change_case");
    let input = &change_case["inputSchema"];
    // The doc comment of the field, and the enum of the Rust type.
    assert!(
        input["properties"]["to"]["description"]
            .as_str()
            .is_some_and(|d| d.starts_with("The case to convert to")),
        "{input}"
    );
    assert_eq!(
        input["properties"]["to"]["enum"],
        json!(["upper", "lower", "title", "snake", "kebab"]),
        "{input}"
    );
    let mut required: Vec<&str> = input["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    required.sort();
    assert_eq!(required, ["text", "to"], "{input}");
    let decode = by_name(&tools, "base64_decode");
    assert_eq!(decode["inputSchema"]["required"], json!(["data"]));

    // The icon, and the output schema derived from the structured result type.
    assert_eq!(
        word_count["icons"],
        json!([{"src": AA_ICON, "mimeType": "image/svg+xml", "sizes": ["any"]}]),
        "word_count's icon: {word_count}"
    );
    let output = &word_count["outputSchema"];
    assert_eq!(output["type"], "object", "{output}");
    for field in ["words", "lines", "characters"] {
        assert_eq!(output["properties"][field]["type"], "integer", "{field} in {output}");
    }
    assert_eq!(
        output["properties"]["words"]["description"], "Runs of non-whitespace characters.",
        "{output}"
    );
    server.shutdown();
}

#[test]
fn a_tool_call_returns_the_plugins_result() {
    let mut server = text_tools();
    for (tool, arguments, expected) in [
        (
            "change_case",
            json!({"text": "helloWorld foo-bar", "to": "snake"}),
            "hello_world_foo_bar",
        ),
        (
            "change_case",
            json!({"text": "hello wORLD", "to": "title"}),
            "Hello World",
        ),
        ("reverse", json!({"text": "stressed"}), "desserts"),
        ("slugify", json!({"text": "  Hello, World! 2024 "}), "hello-world-2024"),
        ("base64_encode", json!({"text": "hello"}), "aGVsbG8="),
        ("base64_decode", json!({"data": "aGVs bG8="}), "hello"),
    ] {
        let result = server.call_tool(tool, arguments.clone()).result().clone();
        tool_ok(&result);
        assert_eq!(single_text(&result), expected, "{tool}({arguments})");
    }
    server.shutdown();
}

#[test]
fn structured_content_comes_with_a_text_block_of_the_same_json() {
    let mut server = text_tools();
    let result = server
        .call_tool("word_count", json!({"text": "one two  three\nfour"}))
        .result()
        .clone();
    tool_ok(&result);
    let expected = json!({"words": 4, "lines": 2, "characters": 19});
    assert_eq!(result["structuredContent"], expected, "{result}");
    let text = single_text(&result);
    let parsed: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("the text block must be the serialized JSON ({e}): {text:?}"));
    assert_eq!(parsed, expected);
    server.shutdown();
}

#[test]
fn a_tool_error_is_an_is_error_result() {
    let mut server = text_tools();
    let response = server.call_tool("base64_decode", json!({"data": "not base64!"}));
    let result = response.result();
    assert!(
        is_tool_error(result),
        "a failing tool returns isError: true, got {result}"
    );
    let text = texts(result).join(" ");
    assert!(
        text.contains("not valid base64"),
        "the plugin's own message comes through: {text:?}"
    );
    // The session goes on.
    let ok = server.call_tool("reverse", json!({"text": "ab"})).result().clone();
    assert_eq!(single_text(&ok), "ba");
    server.shutdown();
}

#[test]
fn an_unknown_tool_is_invalid_params() {
    let mut server = text_tools();
    let error = server.call_tool("no_such_tool", json!({})).expect_error_code(-32602);
    assert!(
        error.message.contains("no_such_tool"),
        "the message names the tool: {error:?}"
    );
    server.shutdown();
}

#[test]
fn a_call_that_breaks_the_call_tool_request_schema_is_invalid_params() {
    let mut server = text_tools();
    // No name.
    server
        .request("tools/call", json!({"arguments": {"text": "x"}}))
        .expect_error_code(-32602);
    // A name that is not a string.
    server
        .request("tools/call", json!({"name": 7}))
        .expect_error_code(-32602);
    // Arguments that are not an object.
    server
        .request("tools/call", json!({"name": "reverse", "arguments": ["x"]}))
        .expect_error_code(-32602);
    server.shutdown();
}

#[test]
fn arguments_are_checked_against_the_input_schema_and_the_error_names_the_field() {
    let mut server = text_tools();
    // A missing required field.
    let missing = server.call_tool("word_count", json!({})).result().clone();
    assert!(
        is_tool_error(&missing),
        "missing `text` must be an isError result: {missing}"
    );
    let message = texts(&missing).join(" ");
    assert!(names_field(&message, "text"), "the error names `text`: {message:?}");

    // A value outside the enum.
    let bad_enum = server
        .call_tool("change_case", json!({"text": "x", "to": "sideways"}))
        .result()
        .clone();
    assert!(
        is_tool_error(&bad_enum),
        "`to: sideways` must be an isError result: {bad_enum}"
    );
    let message = texts(&bad_enum).join(" ");
    assert!(names_field(&message, "to"), "the error names `to`: {message:?}");

    // A wrong type.
    let wrong_type = server.call_tool("reverse", json!({"text": 42})).result().clone();
    assert!(
        is_tool_error(&wrong_type),
        "`text: 42` must be an isError result: {wrong_type}"
    );
    let message = texts(&wrong_type).join(" ");
    assert!(names_field(&message, "text"), "the error names `text`: {message:?}");
    server.shutdown();
}

#[test]
fn the_host_validates_arguments_before_the_plugin_runs() {
    // json_schema_2020_12_tool takes any JSON object in the plugin but
    // declares `additionalProperties: false` and a string `name`: only the
    // host's check against the declared schema can refuse these calls.
    let mut server = StdioServer::start_initialized(&["conformance"]);
    let extra = server
        .call_tool("json_schema_2020_12_tool", json!({"name": "Ada", "unexpected": 1}))
        .result()
        .clone();
    assert!(is_tool_error(&extra), "an undeclared property must be refused: {extra}");
    let message = texts(&extra).join(" ");
    assert!(
        message.contains("unexpected"),
        "the error names the property: {message:?}"
    );

    let wrong = server
        .call_tool("json_schema_2020_12_tool", json!({"name": 5}))
        .result()
        .clone();
    assert!(is_tool_error(&wrong), "a non-string name must be refused: {wrong}");
    assert!(names_field(&texts(&wrong).join(" "), "name"), "names `name`: {wrong}");

    let fine = server
        .call_tool(
            "json_schema_2020_12_tool",
            json!({"name": "Ada", "address": {"street": "1 Main St", "city": "London"}, "email": "ada@example.com"}),
        )
        .result()
        .clone();
    tool_ok(&fine);
    // if/then/else: a phone contact needs a phone.
    let no_phone = server
        .call_tool(
            "json_schema_2020_12_tool",
            json!({"name": "Ada", "contactMethod": "phone", "email": "ada@example.com"}),
        )
        .result()
        .clone();
    assert!(is_tool_error(&no_phone), "then: phone is required: {no_phone}");
    server.shutdown();
}

#[test]
fn tools_of_several_plugins_are_served_together() {
    let mut server = StdioServer::start_initialized(&[TEXT_TOOLS, "conformance"]);
    let tools = server.list_all("tools/list", "tools");
    by_name(&tools, "reverse");
    by_name(&tools, "test_simple_text");
    let reversed = server.call_tool("reverse", json!({"text": "abc"})).result().clone();
    assert_eq!(single_text(&reversed), "cba");
    let simple = server.call_tool("test_simple_text", json!({})).result().clone();
    assert_eq!(single_text(&simple), "This is a simple text response for testing.");
    server.shutdown();
}
