//! Plugins written in Python (componentize-py, `plugins/python/stats`) and
//! JavaScript (componentize-js, `plugins/js/textkit`), each through its helper
//! layer: their tools (schemas from the helper, structured results, tool
//! errors), resource, prompt, and the log and progress notifications they
//! send, all through the real binary; a task-supporting tool of each that
//! says it takes a while becomes a task for a 2026-07-28 client with the
//! tasks extension, a tool of each that says its lists changed makes the
//! host announce them, and each makes a skill (the `plugin-with-skills`
//! world), listed as dynamic and read as made.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasm_mcp_tests::expect::{by_name, is_tool_error, names_field, single_text, tool_ok};
use wasm_mcp_tests::modern::{ModernStdio, is_terminal, meta, task_id, with_meta, with_tasks};
use wasm_mcp_tests::schema::{checked_result, validate_tasks};
use wasm_mcp_tests::wait::poll;
use wasm_mcp_tests::{PluginDir, StdioServer, binary, plugin_wasm, timeout};

/// Serves `plugins` once they have loaded, with the client's log level at debug.
fn serve(plugins: &[&str]) -> StdioServer {
    let mut server = StdioServer::start_initialized(plugins);
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
    let mut server = serve(&["stats"]);

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
    let mut server = serve(&["textkit"]);

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

/// Serves `plugin` to 2026-07-28 clients once it has loaded, and checks that
/// tools/list shows its tool `long` as one that may run as a task and `quick`
/// as one that may not. No call becomes a task by running long: only a
/// plugin that says it takes a while makes one.
fn serve_modern(plugin: &str, long: &str, quick: &str) -> (PluginDir, ModernStdio) {
    let plugins = PluginDir::with(&[plugin]);
    let mut server = ModernStdio::serve(&plugins, &["--task-after", "600000"]);
    server.wait_until_loaded();
    let listed = server.request("tools/list", with_meta(json!({}), &meta(json!({}), None)));
    let listed = listed["result"]["tools"].as_array().expect("a list of tools").clone();
    let task_support = |tool: &str| by_name(&listed, tool)["execution"]["taskSupport"].clone();
    assert_eq!(
        [task_support(long), task_support(quick)],
        [json!("optional"), json!("forbidden")]
    );
    (plugins, server)
}

/// Calls `tool` as a client with the tasks extension and checks that the
/// answer is a task; polls it to its end and returns its result.
#[track_caller]
fn call_as_task(server: &mut ModernStdio, tool: &str, arguments: Value) -> Value {
    let m = with_tasks();
    let created = checked_result(
        validate_tasks,
        "CreateTaskResult",
        &server.call_tool(&m, tool, arguments),
    );
    assert_eq!(created["resultType"], "task", "{created}");
    let done = server.poll_task_until(&m, &task_id(&created), is_terminal);
    assert_eq!(done["status"], "completed", "{done:#}");
    tool_ok(&done["result"]);
    done["result"].clone()
}

/// Calls `tool` as `meta` says and checks that the server answered directly
/// (no task); returns the result.
#[track_caller]
fn answered_directly(server: &mut ModernStdio, meta: &Value, tool: &str, arguments: Value) -> Value {
    let response = server.call_tool(meta, tool, arguments);
    assert_eq!(response["result"]["resultType"], "complete", "{response}");
    tool_ok(&response["result"]);
    response["result"].clone()
}

#[test]
fn a_python_tool_that_says_it_takes_a_while_runs_as_a_task_polled_to_its_result() {
    let (_plugins, mut server) = serve_modern("stats", "bootstrap", "describe");
    let numbers: Vec<f64> = (1..=20).map(f64::from).collect();

    // A short bootstrap does not say it takes a while: answered directly.
    let short = answered_directly(
        &mut server,
        &with_tasks(),
        "bootstrap",
        json!({"numbers": numbers, "resamples": 100}),
    );
    assert_eq!(short["structuredContent"]["resamples"], 100);

    // 50 000 resamples of 20 numbers: the tool calls run_as_task.
    let arguments = json!({"numbers": numbers, "resamples": 50_000, "seed": 7});
    let result = call_as_task(&mut server, "bootstrap", arguments.clone());
    let interval = &result["structuredContent"];
    assert_eq!(interval["mean"], 10.5);
    assert_eq!(interval["resamples"], 50_000);
    let (low, high) = (interval["low"].as_f64().unwrap(), interval["high"].as_f64().unwrap());
    assert!(1.0 < low && low < 10.5 && 10.5 < high && high < 20.0, "{interval}");
    // The same call (same seed) waited for by a client without the extension
    // gives the same interval: the task's result is the tool's.
    let waited = answered_directly(&mut server, &meta(json!({}), None), "bootstrap", arguments);
    assert_eq!(&waited["structuredContent"], interval);
    server.close();
}

#[test]
fn a_javascript_tool_that_says_it_takes_a_while_runs_as_a_task_polled_to_its_result() {
    let (_plugins, mut server) = serve_modern("textkit", "similar_lines", "convert_case");
    let short = answered_directly(
        &mut server,
        &with_tasks(),
        "similar_lines",
        json!({"text": "colour\ncolor\nshade"}),
    );
    assert_eq!(
        short["structuredContent"],
        json!({"lines": 3, "pairs": [{"line": 1, "other": 2, "edits": 1}]})
    );

    // 120 random lines, two of them near-copies of others: every pair is
    // compared, and the tool calls runAsTask.
    let mut rng = fastrand::Rng::with_seed(7);
    let mut lines: Vec<String> = (0..120).map(|_| format!("{:016x}", rng.u64(..))).collect();
    lines[90] = format!("{}x{}", &lines[7][..5], &lines[7][6..]);
    lines[110] = format!("{}{}", &lines[42][..3], &lines[42][4..]);
    let result = call_as_task(&mut server, "similar_lines", json!({"text": lines.join("\n")}));
    assert_eq!(
        result["structuredContent"],
        json!({"lines": 120, "pairs": [{"line": 8, "other": 91, "edits": 1}, {"line": 43, "other": 111, "edits": 1}]})
    );
    server.close();
}

/// Calls `tool` (which says its plugin's tools, prompts and resources
/// changed) and waits until the host announces each list anew.
fn relisted_after(server: &mut StdioServer, tool: &str) {
    let announced = |server: &StdioServer| {
        ["tools", "prompts", "resources"].map(|list| {
            server
                .notifications_of(&format!("notifications/{list}/list_changed"))
                .len()
        })
    };
    let before = announced(server);
    tool_ok(server.call_tool(tool, json!({})).result());
    let after = poll(timeout(), || {
        server.drain_until(Instant::now() + Duration::from_millis(50));
        let now = announced(server);
        now.iter().zip(before).all(|(now, before)| *now > before).then_some(now)
    });
    assert!(
        after.is_some(),
        "{tool}: the host announced no new lists (before: {before:?})"
    );
}

#[test]
fn python_and_javascript_tools_that_say_their_lists_changed_make_the_host_list_them_again() {
    let mut server = serve(&["stats", "textkit"]);
    relisted_after(&mut server, "refresh_stats");
    relisted_after(&mut server, "refresh_textkit");
    // Listed again, both are still served.
    let tools = server.list_all("tools/list", "tools");
    for tool in ["describe", "bootstrap", "convert_case", "similar_lines"] {
        by_name(&tools, tool);
    }
    let result = server
        .call_tool("convert_case", json!({"text": "list changed", "to": "pascal"}))
        .result()
        .clone();
    assert_eq!(single_text(&result), "ListChanged");
    server.shutdown();
}

/// `method` of a 2026-07-28 client: the whole response.
fn modern_request(server: &mut ModernStdio, method: &str, params: Value) -> Value {
    server.request(method, with_meta(params, &meta(json!({}), None)))
}

#[test]
fn python_and_javascript_plugins_make_skills_listed_as_dynamic_and_read_as_made() {
    let plugins = PluginDir::with(&["stats", "textkit"]);
    let mut server = ModernStdio::serve(&plugins, &[]);
    server.wait_until_loaded();
    let listed = modern_request(&mut server, "skills/list", json!({}));
    let skills = listed["result"]["skills"].as_array().expect("a list of skills").clone();
    for (path, name, file, made) in [
        (
            "stats/describing-data",
            "describing-data",
            "example.md",
            "A sample of 8 numbers",
        ),
        ("textkit/naming", "naming", "cases.md", "- snake: naming_things"),
    ] {
        let uri = format!("skill://{path}/SKILL.md");
        let entry = skills
            .iter()
            .find(|s| s["uri"] == uri)
            .unwrap_or_else(|| panic!("{uri} is not listed: {listed}"));
        assert_eq!(entry["resources"], "dynamic", "{entry}");
        assert_eq!(entry["frontmatter"]["name"], name, "{entry}");
        let mut read = |uri: &str| modern_request(&mut server, "resources/read", json!({ "uri": uri }));
        let skill_md = read(&uri);
        let text = skill_md["result"]["contents"][0]["text"].as_str().unwrap_or_default();
        assert!(text.starts_with(&format!("---\nname: {name}\n")), "{skill_md}");
        let other = read(&format!("skill://{path}/{file}"));
        assert_eq!(other["result"]["contents"][0]["mimeType"], "text/markdown", "{other}");
        let other_text = other["result"]["contents"][0]["text"].as_str().unwrap_or_default();
        assert!(other_text.contains(made), "{other}");
        let missing = read(&format!("skill://{path}/missing.md"));
        assert_eq!(missing["error"]["code"], -32602, "{missing}");
        let folder = modern_request(
            &mut server,
            "resources/directory/read",
            json!({ "uri": format!("skill://{path}") }),
        );
        let files: Vec<&str> = folder["result"]["resources"]
            .as_array()
            .unwrap_or_else(|| panic!("{folder}"))
            .iter()
            .map(|f| f["uri"].as_str().unwrap())
            .collect();
        assert_eq!(files, [uri.clone(), format!("skill://{path}/{file}")], "{folder}");
    }
    server.close();
}
