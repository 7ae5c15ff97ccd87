//! Plugins written in Python (componentize-py, `plugins/python/stats`) and
//! JavaScript (componentize-js, `plugins/js/textkit`), each through its helper
//! layer: their tools (schemas from the helper, structured results, tool
//! errors), resource, prompt, and the log and progress notifications they
//! send, all through the real binary.

use std::process::Command;

use serde_json::{Value, json};
use wasm_mcp_tests::expect::{by_name, is_tool_error, names_field, single_text, tool_ok};
use wasm_mcp_tests::{StdioServer, binary, plugin_wasm};

/// Serves one plugin once it has loaded, with the client's log level at debug.
fn serve(plugin: &str) -> StdioServer {
    let mut server = StdioServer::start_initialized(&[plugin]);
    server.wait_until_loaded();
    server.request("logging/setLevel", json!({"level": "debug"})).result();
    server
}

/// Calls `tool` with a progress token; returns its result and the progress
/// notifications that arrived before it.
fn call_with_progress(server: &mut StdioServer, tool: &str, arguments: Value) -> (Value, Vec<Value>) {
    let before = server.notifications_of("notifications/progress").len();
    let params = json!({"name": tool, "arguments": arguments, "_meta": {"progressToken": "p-1"}});
    let result = server.request("tools/call", params).result().clone();
    (
        result,
        server.notifications_of("notifications/progress")[before..].to_vec(),
    )
}

/// Progress values, checked to carry the token and to strictly increase.
fn progress_values(progress: &[Value]) -> Vec<(f64, f64)> {
    let values: Vec<(f64, f64)> = progress
        .iter()
        .map(|n| {
            assert_eq!(n["params"]["progressToken"], "p-1", "{n}");
            let value = n["params"]["progress"].as_f64().expect("a progress value");
            (value, n["params"]["total"].as_f64().expect("a total"))
        })
        .collect();
    assert!(values.windows(2).all(|w| w[0].0 < w[1].0), "increasing: {values:?}");
    values
}

/// The log messages of `logger` received so far.
fn log_messages(server: &StdioServer, logger: &str) -> Vec<Value> {
    server
        .notifications_of("notifications/message")
        .into_iter()
        .filter(|n| n["params"]["logger"] == logger)
        .collect()
}

#[test]
fn a_python_plugin_serves_tools_a_resource_and_a_prompt_and_logs_and_reports_progress() {
    let mut server = serve("stats");

    let tools = server.list_all("tools/list", "tools");
    let describe = by_name(&tools, "describe");
    assert_eq!(describe["title"], "Describe numbers");
    assert_eq!(describe["annotations"]["readOnlyHint"], true);
    assert_eq!(
        describe["inputSchema"],
        json!({"type": "object", "properties": {"numbers": {"type": "array", "items": {"type": "number"},
              "description": "The sample (at least one number)."}}, "required": ["numbers"]}),
        "the schema comes from the type hints and the docstring"
    );
    assert_eq!(
        by_name(&tools, "percentile")["inputSchema"]["required"],
        json!(["numbers", "p"])
    );

    // 2500 numbers: the tool reports progress per 1000 and logs once.
    let numbers: Vec<f64> = (1..=2500).map(f64::from).collect();
    let (result, progress) = call_with_progress(&mut server, "describe", json!({"numbers": numbers}));
    tool_ok(&result);
    let stats = &result["structuredContent"];
    assert_eq!(stats["count"], 2500);
    assert_eq!(stats["mean"], 1250.5);
    assert_eq!(stats["median"], 1250.5);
    assert_eq!(
        (stats["min"].clone(), stats["max"].clone()),
        (json!(1.0), json!(2500.0))
    );
    let text: Value = serde_json::from_str(&single_text(&result)).expect("the text is the JSON of the result");
    assert_eq!(&text, stats);
    assert_eq!(
        progress_values(&progress),
        vec![(1000.0, 2500.0), (2000.0, 2500.0), (2500.0, 2500.0)]
    );
    let logs = log_messages(&server, "stats");
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert_eq!(logs[0]["params"]["level"], "info");
    assert_eq!(logs[0]["params"]["data"], "describing 2500 numbers");

    let result = server
        .call_tool("percentile", json!({"numbers": [4, 1, 3, 2], "p": 50}))
        .result()
        .clone();
    assert_eq!(single_text(&result), "2.5");
    // A ToolError is a tool error the model can read.
    let result = server
        .call_tool("percentile", json!({"numbers": [1], "p": 101.5}))
        .result()
        .clone();
    assert!(is_tool_error(&result), "{result}");
    assert_eq!(single_text(&result), "p must be between 0 and 100, not 101.5");
    // The host checks arguments against the derived schema before Python runs.
    let result = server
        .call_tool("percentile", json!({"numbers": "1,2", "p": 5}))
        .result()
        .clone();
    assert!(is_tool_error(&result), "{result}");
    assert!(names_field(&single_text(&result), "numbers"), "{result}");

    let resources = server.list_all("resources/list", "resources");
    assert_eq!(by_name(&resources, "about")["uri"], "stats://about");
    let read = server
        .request("resources/read", json!({"uri": "stats://about"}))
        .result()
        .clone();
    assert_eq!(read["contents"][0]["mimeType"], "text/plain");
    assert!(
        read["contents"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("stats computes")
    );

    let prompts = server.list_all("prompts/list", "prompts");
    let explain = by_name(&prompts, "explain");
    assert_eq!(
        explain["arguments"],
        json!([{"name": "numbers", "description": "The numbers, separated by commas.", "required": true},
               {"name": "audience", "description": "Who the explanation is for.", "required": false}])
    );
    let prompt = server
        .request(
            "prompts/get",
            json!({"name": "explain", "arguments": {"numbers": "1, 2", "audience": "a child"}}),
        )
        .result()
        .clone();
    assert_eq!(prompt["messages"][0]["role"], "user");
    assert_eq!(
        prompt["messages"][0]["content"]["text"],
        "Call the describe tool on [1, 2] and explain the result to a child."
    );
    server.shutdown();
}

#[test]
fn a_javascript_plugin_serves_tools_a_resource_and_a_prompt_and_logs_and_reports_progress() {
    let mut server = serve("textkit");

    let tools = server.list_all("tools/list", "tools");
    let convert = by_name(&tools, "convert_case");
    assert_eq!(convert["inputSchema"]["required"], json!(["text", "to"]));
    assert_eq!(
        convert["inputSchema"]["properties"]["to"]["enum"],
        json!(["snake", "kebab", "camel", "pascal", "constant"])
    );
    for (to, expected) in [
        ("snake", "http_server_error"),
        ("camel", "httpServerError"),
        ("constant", "HTTP_SERVER_ERROR"),
    ] {
        let result = server
            .call_tool("convert_case", json!({"text": "HttpServer-error", "to": to}))
            .result()
            .clone();
        assert_eq!(single_text(&result), expected, "to {to}");
    }
    // The host rejects a value outside the enum before JavaScript runs.
    let result = server
        .call_tool("convert_case", json!({"text": "x", "to": "title"}))
        .result()
        .clone();
    assert!(is_tool_error(&result), "{result}");
    assert!(names_field(&single_text(&result), "to"), "{result}");

    let (result, progress) = call_with_progress(&mut server, "char_stats", json!({"text": "ab 1\n$c\n42"}));
    tool_ok(&result);
    assert_eq!(
        result["structuredContent"],
        json!({"letters": 3, "digits": 3, "spaces": 1, "other": 1})
    );
    assert_eq!(progress_values(&progress), vec![(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)]);
    let logs = log_messages(&server, "textkit");
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert_eq!(logs[0]["params"]["data"], "counting 10 characters on 3 lines");

    let read = server
        .request("resources/read", json!({"uri": "textkit://cases"}))
        .result()
        .clone();
    assert_eq!(read["contents"][0]["text"], "snake\nkebab\ncamel\npascal\nconstant");

    let prompts = server.list_all("prompts/list", "prompts");
    assert_eq!(by_name(&prompts, "rename")["arguments"][1]["required"], false);
    let prompt = server
        .request(
            "prompts/get",
            json!({"name": "rename", "arguments": {"identifier": "x1", "style": "kebab"}}),
        )
        .result()
        .clone();
    assert_eq!(
        prompt["messages"][0]["content"]["text"],
        "Suggest a clearer name for `x1`, written in kebab case (convert_case can help)."
    );
    let unknown = server.request(
        "prompts/get",
        json!({"name": "rename", "arguments": {"identifier": "x", "tone": "dry"}}),
    );
    assert!(unknown.error().message.contains("tone"), "{:?}", unknown.error());
    server.shutdown();
}

#[test]
fn the_javascript_component_imports_only_the_host() {
    let output = Command::new(binary())
        .arg("check")
        .arg(plugin_wasm("textkit"))
        .output()
        .expect("run wasm-mcp check");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{report}");
    let imports = report
        .split("\nImports\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_else(|| panic!("no Imports section: {report}"));
    let names: Vec<&str> = imports.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(
        names,
        ["wasm-mcp:plugin/host@0.1.0", "wasm-mcp:plugin/types@0.1.0"],
        "{report}"
    );
}
