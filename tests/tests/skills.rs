//! Skills (the `io.modelcontextprotocol/skills` extension) shipped in a
//! plugin's skills folder, from the outside: declared in both revisions,
//! listed and fetched with every file's digest and size (checked here
//! against the bytes `resources/read` returns), their folders read with
//! `resources/directory/read`, the errors of an unknown skill and of a
//! file that is no folder; a skill that breaks a rule (its frontmatter
//! names another, it holds more than 512 files) refused with why while the
//! others serve; the manifest's `[deny] skills`; and a skills folder
//! replaced while serving, announced as a change of the resources list.

use std::path::Path;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use wasm_mcp_tests::modern::{ModernStdio, meta, with_meta};
use wasm_mcp_tests::process::serve_command;
use wasm_mcp_tests::wait::poll;
use wasm_mcp_tests::{PluginDir, StdioServer, timeout};

const EXTENSION: &str = "io.modelcontextprotocol/skills";

fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    format!("sha256:{}", hash.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

#[track_caller]
fn result(response: &Value) -> &Value {
    response
        .get("result")
        .unwrap_or_else(|| panic!("expected a result, got {response}"))
}

#[track_caller]
fn error(response: &Value) -> (i64, String) {
    let error = response
        .get("error")
        .unwrap_or_else(|| panic!("expected an error, got {response}"));
    (
        error["code"].as_i64().unwrap(),
        error["message"].as_str().unwrap().to_owned(),
    )
}

fn uris(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|entry| entry["uri"].as_str().unwrap())
        .collect()
}

/// A skills folder of `files` (path, text), written under `dir`.
fn write_folder(dir: &Path, files: &[(String, String)]) {
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn skill_md(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n")
}

#[test]
fn skills_are_listed_fetched_and_read_with_their_digests() {
    let plugins = PluginDir::with(&["conformance"]);
    let mut server = ModernStdio::serve(&plugins, &[]);
    let m = meta(json!({}), None);
    let request = |server: &mut ModernStdio, method: &str, params: Value| server.request(method, with_meta(params, &m));

    let discover = request(&mut server, "server/discover", json!({}));
    let capabilities = &result(&discover)["capabilities"];
    assert_eq!(capabilities["extensions"][EXTENSION], json!({ "directoryRead": true }));
    assert!(
        capabilities["resources"].is_object(),
        "the extension needs resources: {capabilities}"
    );

    let list = request(&mut server, "skills/list", json!({}));
    let listed = result(&list);
    assert_eq!(
        uris(&listed["skills"]),
        [
            "skill://acme/billing/refunds/SKILL.md",
            "skill://pdf-processing/SKILL.md"
        ]
    );
    assert_eq!(listed["resultType"], "complete");
    assert!(listed["ttlMs"].is_u64() && listed["cacheScope"] == "public", "{listed}");
    let refunds = &listed["skills"][0];
    assert_eq!(
        refunds["frontmatter"],
        json!({
            "name": "refunds",
            "description": "Process customer refund requests per company policy",
            "license": "Apache-2.0",
            "metadata": { "team": "billing" }
        }),
        "every field of the frontmatter, as written"
    );
    let pdf = &listed["skills"][1];
    assert_eq!(
        uris(&pdf["resources"]),
        [
            "skill://pdf-processing/SKILL.md",
            "skill://pdf-processing/templates/invoice.md",
            "skill://pdf-processing/templates/purchase-order.md",
            "skill://pdf-processing/templates/regional/eu-invoice.md",
        ]
    );
    // The extension's own example: its SKILL.md and invoice have these digests.
    assert_eq!(
        pdf["resources"][0]["digest"],
        "sha256:99b737495721155ece826d57521e2d66141ebdc1344a400487481ea2642ab19e"
    );
    assert_eq!(pdf["resources"][0]["size"], 151);
    for skill in listed["skills"].as_array().unwrap() {
        for file in skill["resources"].as_array().unwrap() {
            let read = request(&mut server, "resources/read", json!({ "uri": file["uri"] }));
            let contents = &result(&read)["contents"][0];
            let text = contents["text"].as_str().unwrap();
            assert_eq!(file["size"], text.len(), "{file}");
            assert_eq!(file["digest"], digest(text.as_bytes()), "{file}");
            assert_eq!(contents["mimeType"], "text/markdown");
        }
    }

    let got = request(
        &mut server,
        "skills/get",
        json!({ "uri": "skill://pdf-processing/SKILL.md" }),
    );
    assert_eq!(
        result(&got)["skill"],
        *pdf,
        "skills/get gives the entry skills/list gives"
    );
    assert!(result(&got)["ttlMs"].is_u64() && result(&got).get("nextCursor").is_none());
    let unknown = request(&mut server, "skills/get", json!({ "uri": "skill://nowhere/SKILL.md" }));
    let (code, message) = error(&unknown);
    assert_eq!(code, -32602);
    assert!(
        message.contains("No skill is served at skill://nowhere/SKILL.md"),
        "{message}"
    );

    let root = request(
        &mut server,
        "resources/directory/read",
        json!({ "uri": "skill://pdf-processing" }),
    );
    assert_eq!(
        result(&root)["resources"],
        json!([
            { "uri": "skill://pdf-processing/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown", "size": 151 },
            { "uri": "skill://pdf-processing/templates", "name": "templates", "mimeType": "inode/directory" },
        ])
    );
    let templates = request(
        &mut server,
        "resources/directory/read",
        json!({ "uri": "skill://pdf-processing/templates" }),
    );
    assert_eq!(
        uris(&result(&templates)["resources"]),
        [
            "skill://pdf-processing/templates/invoice.md",
            "skill://pdf-processing/templates/purchase-order.md",
            "skill://pdf-processing/templates/regional",
        ]
    );
    for not_a_folder in [
        "skill://pdf-processing/SKILL.md",
        "skill://pdf-processing/",
        "skill://nowhere",
    ] {
        let read = request(&mut server, "resources/directory/read", json!({ "uri": not_a_folder }));
        let (code, message) = error(&read);
        assert_eq!(code, -32602, "{not_a_folder}");
        assert!(message.contains("is not a directory resource"), "{message}");
    }

    let resources = request(&mut server, "resources/list", json!({}));
    let skill_md = result(&resources)["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["uri"] == "skill://pdf-processing/SKILL.md")
        .cloned()
        .expect("SKILL.md is listed among the resources");
    assert_eq!(skill_md["name"], "pdf-processing");
    assert_eq!(skill_md["description"], "Extract, fill, and assemble PDF documents");
    server.close();
}

#[test]
fn a_2025_11_25_session_sees_the_extension_and_its_methods() {
    let plugins = PluginDir::with(&["conformance"]);
    let mut server = StdioServer::start(plugins);
    let init = server.initialize(json!({}));
    assert_eq!(
        init["capabilities"]["extensions"][EXTENSION],
        json!({ "directoryRead": true })
    );
    let list = server.request("skills/list", json!({})).result().clone();
    assert_eq!(list["skills"].as_array().unwrap().len(), 2, "{list}");
    assert!(list.get("ttlMs").is_none(), "no caching hint in 2025-11-25");
    let read = server
        .request(
            "resources/read",
            json!({ "uri": "skill://acme/billing/refunds/examples/email.md" }),
        )
        .result()
        .clone();
    assert!(read["contents"][0]["text"].as_str().unwrap().contains("refunded"));
}

#[test]
fn a_skill_that_breaks_a_rule_is_refused_with_why_and_the_others_serve() {
    let plugins = PluginDir::with(&["text-tools"]);
    let source = tempfile::tempdir().unwrap();
    let mut files = vec![
        (
            "good/SKILL.md".to_owned(),
            skill_md("good", "A skill that keeps the rules"),
        ),
        (
            "misnamed/SKILL.md".to_owned(),
            skill_md("other-name", "Its folder is not its name"),
        ),
        (
            "internal/SKILL.md".to_owned(),
            skill_md("internal", "Kept back by the manifest"),
        ),
        ("big/SKILL.md".to_owned(), skill_md("big", "Too many files")),
    ];
    files.extend((0..512).map(|i| (format!("big/parts/{i:03}.md"), format!("part {i}\n"))));
    write_folder(source.path(), &files);
    plugins.add_folder("text-tools.skills", source.path());
    plugins.add_file("text-tools.toml", b"[deny]\nskills = [\"intern*\"]\n");

    let mut server = ModernStdio::serve(&plugins, &[]);
    let m = meta(json!({}), None);
    let list = server.request("skills/list", with_meta(json!({}), &m));
    assert_eq!(uris(&result(&list)["skills"]), ["skill://good/SKILL.md"]);
    let stderr = server.stderr();
    assert!(
        stderr.contains("skill://misnamed") && stderr.contains("other-name") && stderr.contains("but its folder is"),
        "{stderr}"
    );
    assert!(
        stderr.contains("skill://big") && stderr.contains("513 files, more than the 512"),
        "{stderr}"
    );
    for unserved in [
        "skill://misnamed/SKILL.md",
        "skill://internal/SKILL.md",
        "skill://big/SKILL.md",
    ] {
        let read = server.request("resources/read", with_meta(json!({ "uri": unserved }), &m));
        assert_eq!(error(&read).0, -32602, "{unserved}: {read}");
    }
    server.close();
}

#[test]
fn a_replaced_skills_folder_is_served_and_announced() {
    let plugins = PluginDir::with(&["text-tools"]);
    let first = tempfile::tempdir().unwrap();
    write_folder(
        first.path(),
        &[("notes/SKILL.md".to_owned(), skill_md("notes", "First"))],
    );
    plugins.add_folder("text-tools.skills", first.path());
    let mut server = ModernStdio::spawn(serve_command(plugins.path()));
    let m = meta(json!({}), None);
    let listed = server.request("skills/list", with_meta(json!({}), &m));
    assert_eq!(result(&listed)["skills"][0]["frontmatter"]["description"], "First");
    server.start(
        "subscriptions/listen",
        with_meta(json!({ "notifications": { "resourcesListChanged": true } }), &m),
    );
    server.wait_for("the acknowledgement", |message| {
        message["method"] == "notifications/subscriptions/acknowledged"
    });

    let second = tempfile::tempdir().unwrap();
    write_folder(
        second.path(),
        &[
            ("notes/SKILL.md".to_owned(), skill_md("notes", "Second")),
            ("notes/more.md".to_owned(), "more\n".to_owned()),
        ],
    );
    plugins.add_folder("text-tools.skills", second.path());
    server.wait_for("resources/list_changed", |message| {
        message["method"] == "notifications/resources/list_changed"
    });
    let entry = poll(timeout(), || {
        let got = server.request("skills/get", with_meta(json!({ "uri": "skill://notes/SKILL.md" }), &m));
        let skill = result(&got)["skill"].clone();
        (skill["frontmatter"]["description"] == "Second").then_some(skill)
    })
    .expect("the new folder is served");
    assert_eq!(
        uris(&entry["resources"]),
        ["skill://notes/SKILL.md", "skill://notes/more.md"]
    );
    server.close();
}

#[test]
fn a_plugin_makes_a_skill_listed_as_dynamic_beside_its_static_one() {
    let plugins = PluginDir::with(&["playbook"]);
    let mut server = ModernStdio::serve(&plugins, &[]);
    let m = meta(json!({}), None);
    let request = |server: &mut ModernStdio, method: &str, params: Value| server.request(method, with_meta(params, &m));

    let list = request(&mut server, "skills/list", json!({}));
    let skills = &result(&list)["skills"];
    assert_eq!(
        uris(skills),
        ["skill://git-workflow/SKILL.md", "skill://reports/daily/SKILL.md"]
    );
    assert_eq!(
        uris(&skills[0]["resources"]),
        [
            "skill://git-workflow/SKILL.md",
            "skill://git-workflow/references/commit-messages.md"
        ]
    );
    let daily = &skills[1];
    assert_eq!(daily["resources"], "dynamic", "{daily}");
    assert_eq!(daily["frontmatter"]["name"], "daily");

    let read = |server: &mut ModernStdio, uri: &str| request(server, "resources/read", json!({ "uri": uri }));
    let skill_md = read(&mut server, "skill://reports/daily/SKILL.md");
    let text = result(&skill_md)["contents"][0]["text"].as_str().unwrap().to_owned();
    assert!(text.starts_with("---\nname: daily\n"), "{text}");
    assert_eq!(
        result(&skill_md)["contents"][0]["uri"],
        "skill://reports/daily/SKILL.md"
    );
    let today = read(&mut server, "skill://reports/daily/today.md");
    assert!(
        result(&today)["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Open pull requests")
    );
    let missing = read(&mut server, "skill://reports/daily/missing.md");
    assert_eq!(error(&missing).0, -32602, "{missing}");

    let folder = request(
        &mut server,
        "resources/directory/read",
        json!({ "uri": "skill://reports/daily" }),
    );
    assert_eq!(
        uris(&result(&folder)["resources"]),
        ["skill://reports/daily/SKILL.md", "skill://reports/daily/today.md"]
    );
    let got = request(
        &mut server,
        "skills/get",
        json!({ "uri": "skill://reports/daily/SKILL.md" }),
    );
    assert_eq!(result(&got)["skill"], *daily);
    server.close();
}
