//! The notes example plugin: resources, a template, prompts, completion with
//! context and tools used together for one purpose, driven over stdio.

use serde_json::{Value, json};
use wasm_mcp_tests::StdioServer;
use wasm_mcp_tests::expect::{by_field, by_name, is_tool_error, texts, tool_ok};

const SLUGS: [&str; 5] = ["getting-started", "writing-plugins", "sandbox", "limits", "hot-reload"];

fn server() -> StdioServer {
    StdioServer::start_initialized(&["notes"])
}

fn complete(server: &mut StdioServer, reference: Value, name: &str, value: &str, context: Value) -> Vec<String> {
    let mut params = json!({"ref": reference, "argument": {"name": name, "value": value}});
    if !context.is_null() {
        params["context"] = json!({"arguments": context});
    }
    let response = server.request("completion/complete", params);
    let completion = &response.result()["completion"];
    let values: Vec<String> = completion["values"]
        .as_array()
        .unwrap_or_else(|| panic!("values: {completion}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(completion["total"], values.len(), "{completion}");
    values
}

#[test]
fn every_note_is_a_resource_and_the_index_is_annotated() {
    let mut server = server();
    let resources = server.list_all("resources/list", "resources");
    assert_eq!(resources.len(), SLUGS.len() + 1, "{resources:?}");
    for slug in SLUGS {
        let note = by_field(&resources, "uri", &format!("notes://note/{slug}"));
        assert_eq!(note["name"], slug, "{note}");
        assert_eq!(note["mimeType"], "text/markdown", "{note}");
        assert!(note["title"].is_string() && note["description"].is_string(), "{note}");
    }
    let index = by_field(&resources, "uri", "notes://index");
    assert_eq!(index["title"], "Notes index", "{index}");
    assert_eq!(
        index["annotations"]["audience"],
        json!(["user", "assistant"]),
        "{index}"
    );
    assert_eq!(index["annotations"]["priority"].as_f64(), Some(1.0), "{index}");

    let read = server.request("resources/read", json!({"uri": "notes://index"}));
    let text = read.result()["contents"][0]["text"].as_str().unwrap().to_string();
    for slug in SLUGS {
        assert!(
            text.contains(&format!("(notes://note/{slug})")),
            "the index links {slug}: {text}"
        );
    }
    server.shutdown();
}

#[test]
fn notes_read_by_uri_and_by_template_and_unknown_slugs_are_not_found() {
    let mut server = server();
    let templates = server.list_all("resources/templates/list", "resourceTemplates");
    let template = by_field(&templates, "uriTemplate", "notes://note/{slug}");
    assert_eq!(template["mimeType"], "text/markdown");

    let read = server.request("resources/read", json!({"uri": "notes://note/sandbox"}));
    let contents = &read.result()["contents"];
    assert_eq!(contents[0]["uri"], "notes://note/sandbox");
    assert_eq!(contents[0]["mimeType"], "text/markdown");
    assert!(
        contents[0]["text"].as_str().unwrap().starts_with("# The sandbox\n"),
        "{contents}"
    );

    // Matches the template, but the plugin has no such note.
    server
        .request("resources/read", json!({"uri": "notes://note/no-such-note"}))
        .expect_error_code(-32002);
    server.shutdown();
}

#[test]
fn completion_uses_the_context_arguments() {
    let mut server = server();
    let template = json!({"type": "ref/resource", "uri": "notes://note/{slug}"});
    assert_eq!(
        complete(&mut server, template.clone(), "slug", "h", Value::Null),
        ["hot-reload"]
    );
    assert_eq!(complete(&mut server, template, "slug", "", Value::Null), SLUGS);

    let compare = json!({"type": "ref/prompt", "name": "compare_notes"});
    assert_eq!(complete(&mut server, compare.clone(), "second", "", Value::Null), SLUGS);
    let without_sandbox: Vec<&str> = SLUGS.iter().copied().filter(|s| *s != "sandbox").collect();
    assert_eq!(
        complete(&mut server, compare.clone(), "second", "", json!({"first": "sandbox"})),
        without_sandbox,
        "the already chosen `first` reaches the plugin through context.arguments"
    );
    assert_eq!(
        complete(&mut server, compare, "second", "S", json!({"first": "sandbox"})),
        Vec::<String>::new()
    );
    server.shutdown();
}

#[test]
fn prompts_embed_notes_and_check_their_arguments() {
    let mut server = server();
    let prompts = server.list_all("prompts/list", "prompts");
    let compare = by_name(&prompts, "compare_notes");
    let args = compare["arguments"].as_array().unwrap();
    assert_eq!(by_name(args, "first")["required"], true);
    assert_eq!(by_name(args, "second")["description"], "The slug of the second note");

    let got = server.request(
        "prompts/get",
        json!({"name": "compare_notes", "arguments": {"first": "sandbox", "second": "limits"}}),
    );
    let messages = got.result()["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[0]["content"]["resource"]["uri"], "notes://note/sandbox");
    assert_eq!(messages[1]["content"]["resource"]["uri"], "notes://note/limits");
    assert_eq!(messages[2]["content"]["type"], "text");

    server
        .request(
            "prompts/get",
            json!({"name": "compare_notes", "arguments": {"first": "sandbox"}}),
        )
        .expect_error_code(-32602);
    let unknown = server
        .request(
            "prompts/get",
            json!({"name": "summarize_note", "arguments": {"slug": "nope"}}),
        )
        .expect_error_code(-32602);
    assert!(unknown.message.contains("nope"), "{unknown:?}");
    server.shutdown();
}

#[test]
fn search_returns_resource_links() {
    let mut server = server();
    let result = server
        .call_tool("search_notes", json!({"query": "security"}))
        .result()
        .clone();
    tool_ok(&result);
    let content = result["content"].as_array().unwrap();
    assert_eq!(
        content[0],
        json!({"type": "text", "text": "2 notes match \"security\":"})
    );
    let links: Vec<&Value> = content[1..].iter().collect();
    assert_eq!(links.len(), 2, "{result}");
    for link in &links {
        assert_eq!(link["type"], "resource_link", "{link}");
        assert_eq!(link["mimeType"], "text/markdown", "{link}");
        assert!(link["size"].as_u64().is_some_and(|s| s > 0), "{link}");
    }
    let uris: Vec<&str> = links.iter().map(|l| l["uri"].as_str().unwrap()).collect();
    assert_eq!(uris, ["notes://note/sandbox", "notes://note/limits"]);
    server.shutdown();
}

#[test]
fn touching_a_note_notifies_its_subscribers_only() {
    let mut server = server();
    server
        .request("resources/subscribe", json!({"uri": "notes://note/sandbox"}))
        .result();
    for slug in ["limits", "sandbox", "hot-reload"] {
        let result = server.call_tool("touch_note", json!({"slug": slug})).result().clone();
        tool_ok(&result);
    }
    let unknown = server.call_tool("touch_note", json!({"slug": "nope"})).result().clone();
    assert!(is_tool_error(&unknown), "{unknown}");
    assert!(
        texts(&unknown).join(" ").contains("known notes: getting-started"),
        "{unknown}"
    );
    let status = server.close_and_wait();
    assert!(status.success(), "exit status {status}");
    let updates = server.notifications_of("notifications/resources/updated");
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0]["params"]["uri"], "notes://note/sandbox");
}

/// The manifest of the plugin the operator installs it with.
const ONLY_SEARCH: &str = r#"
[allow]
tools = ["search_*"]
[deny]
prompts = ["*"]
resources = ["notes://note/getting-*"]
"#;

/// An operator serves only some of a plugin's entries (`[allow]`, `[deny]`
/// in its manifest): the others are not listed, and calling, getting or
/// reading them fails as for entries that do not exist, a denied URI even
/// through a template that would match it. `wasm-mcp check` shows which are
/// not served, and why.
#[test]
fn the_manifest_serves_only_what_the_operator_allows() {
    let plugins = wasm_mcp_tests::PluginDir::with(&["notes"]);
    plugins.add_file("notes.toml", ONLY_SEARCH.as_bytes());
    let mut server = StdioServer::spawn(plugins.path(), &[]);
    server.initialize(json!({}));
    let tools: Vec<Value> = server.list_all("tools/list", "tools");
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["search_notes"]);
    let touch = server.request(
        "tools/call",
        json!({"name": "touch_note", "arguments": {"slug": "sandbox"}}),
    );
    assert!(touch.error().message.contains("touch_note"), "{:?}", touch.error());
    assert!(server.list_all("prompts/list", "prompts").is_empty());
    let prompt = server.request(
        "prompts/get",
        json!({"name": "summarize_note", "arguments": {"slug": "sandbox"}}),
    );
    prompt.expect_error_code(-32602);
    let resources = server.list_all("resources/list", "resources");
    assert_eq!(
        resources.len(),
        SLUGS.len(),
        "one note fewer than the index and every note: {resources:?}"
    );
    assert!(resources.iter().all(|r| r["uri"] != "notes://note/getting-started"));
    let denied = server.request("resources/read", json!({"uri": "notes://note/getting-started"}));
    // Not even through the template notes://note/{slug}, which would match it.
    denied.expect_error_code(-32002);
    let served = server.request("resources/read", json!({"uri": "notes://note/sandbox"}));
    assert!(
        served.result()["contents"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("# The sandbox")
    );

    let check = std::process::Command::new(wasm_mcp_tests::binary())
        .args(["check"])
        .arg(plugins.path().join("notes.wasm"))
        .output()
        .unwrap();
    let report = String::from_utf8(check.stdout).unwrap();
    assert!(check.status.success(), "{report}");
    for why in [
        "NOT SERVED     the manifest's [allow] tools does not list it",
        "NOT SERVED     the manifest's [deny] prompts has \"*\"",
        "NOT SERVED     the manifest's [deny] resources has \"notes://note/getting-*\"",
    ] {
        assert!(report.contains(why), "{why} in:\n{report}");
    }
    assert_eq!(
        report.matches("NOT SERVED").count(),
        4,
        "touch_note, two prompts, one note:\n{report}"
    );
}
