//! `wasm-mcp new` for each language, the whole loop a plugin author runs:
//! scaffold, run the project's own tests, build it with its own Makefile,
//! drop the component into a directory the real binary is serving, see
//! `tools/list_changed`, and call the new tool; two projects dropped into one
//! server keep their names, and a later plugin serving one of those names
//! never takes it; a project made with `--skill` ships its skill beside the
//! component, served once both are dropped in; a Python or JavaScript project
//! whose source names its world (`# world: NAME`) is built for it. Also: bad
//! names and existing directories are refused with a clear error.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::json;
use wasm_mcp_tests::expect::{by_name, names, single_text};
use wasm_mcp_tests::{PluginDir, StdioServer, binary, compile_timeout, workspace_root};

fn new_project(name: &str, lang: &str, parent: &Path) -> Output {
    Command::new(binary())
        .args(["new", name, "--lang", lang, "--dir"])
        .arg(parent)
        .output()
        .expect("run wasm-mcp new")
}

/// Runs `make TARGET` in `project`; fails the test with its output if it fails.
fn make(project: &Path, target: &str) {
    let mut command = Command::new("make");
    command.arg(target).current_dir(project);
    // A Rust project reuses the example plugins' compiled dependencies (same
    // profile), so the test does not compile wit-bindgen and serde again.
    if project.join("Cargo.toml").is_file() {
        command.env("CARGO_TARGET_DIR", workspace_root().join("plugins/target"));
    }
    let output = command.output().expect("run make");
    assert!(
        output.status.success(),
        "`make {target}` failed in {}:\n{}\n{}",
        project.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Scaffolds `name` in `lang`, tests and builds it with its own Makefile,
/// then hot-loads it into a running server and calls its `shout` tool (named
/// after the project).
fn scaffold_build_and_serve(lang: &str) {
    let parent = tempfile::tempdir().expect("a parent directory");
    let name = format!("my-{lang}-plugin");
    let created = new_project(&name, lang, parent.path());
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let project: PathBuf = parent.path().join(&name);
    assert!(project.join("README.md").is_file() && project.join("wit/plugin.wit").is_file());

    make(&project, "test");
    make(&project, "build");
    let wasm = project.join(format!("dist/{name}.wasm"));
    assert!(wasm.is_file(), "make build made no {}", wasm.display());

    let mut server = StdioServer::start(PluginDir::empty());
    server.initialize(json!({}));
    server.wait_until_loaded();
    assert!(server.list_all("tools/list", "tools").is_empty());

    let bytes = std::fs::read(&wasm).expect("read the built component");
    server.plugin_dir().add_file(&format!("{name}.wasm"), &bytes);
    // The host compiles the new component first (slow for Python and JavaScript).
    server.wait_for_notification_within(compile_timeout(), "tools/list_changed after the drop", |n| {
        n["method"] == "notifications/tools/list_changed"
    });
    let tools = server.list_all("tools/list", "tools");
    let shout = format!("my_{lang}_plugin_shout");
    assert_eq!(by_name(&tools, &shout)["inputSchema"]["required"], json!(["text"]));
    assert_eq!(shout_text(&mut server, &shout), "HI HI");
    server.shutdown();
}

/// What the tool `name` answers for `hi`, twice.
fn shout_text(server: &mut StdioServer, name: &str) -> String {
    let result = server
        .call_tool(name, json!({"text": "hi", "times": 2}))
        .result()
        .clone();
    single_text(&result).to_owned()
}

/// Drops `wasm` into the server's directory as `file` and waits until the
/// tools list changed.
fn drop_in(server: &mut StdioServer, wasm: &Path, file: &str) {
    let bytes = std::fs::read(wasm).unwrap_or_else(|e| panic!("read {}: {e}", wasm.display()));
    server.plugin_dir().add_file(file, &bytes);
    server.wait_for_notification_within(compile_timeout(), &format!("tools/list_changed after {file}"), |n| {
        n["method"] == "notifications/tools/list_changed"
    });
}

/// The README's loop for two projects into one running server: each keeps
/// the names it serves. Then a plugin that serves one of those names too,
/// under a file name that sorts first, is dropped in: it gets the prefixed
/// name, the client is told (naming both plugins), the holder keeps
/// answering, and the rename is said once however often plugins reload.
#[test]
fn two_scaffolds_in_one_server_keep_their_names_and_a_later_plugin_never_takes_one() {
    let parent = tempfile::tempdir().expect("a parent directory");
    let mut wasm = Vec::new();
    for name in ["my-tools", "more-tools"] {
        let created = new_project(name, "rust", parent.path());
        assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
        make(&parent.path().join(name), "build");
        wasm.push(parent.path().join(format!("{name}/dist/{name}.wasm")));
    }

    let mut server = StdioServer::start(PluginDir::empty());
    server.initialize(json!({}));
    server.request("logging/setLevel", json!({"level": "info"})).result();
    server.wait_until_loaded();
    drop_in(&mut server, &wasm[0], "my-tools.wasm");
    drop_in(&mut server, &wasm[1], "more-tools.wasm");
    let tools = names(&server.list_all("tools/list", "tools"));
    assert_eq!(tools, ["more_tools_shout", "my_tools_shout"]);
    assert_eq!(shout_text(&mut server, "my_tools_shout"), "HI HI");
    assert_eq!(shout_text(&mut server, "more_tools_shout"), "HI HI");

    // A plugin serving `my_tools_shout` too (lower-casing instead), as
    // `aaa-shadow.wasm`: first in name order, yet it does not take the name.
    let more_tools = parent.path().join("more-tools");
    let source = more_tools.join("src/lib.rs");
    let code = std::fs::read_to_string(&source).unwrap();
    let shadow = code
        .replace("\"more_tools_shout\"", "\"my_tools_shout\"")
        .replace("to_uppercase()", "to_lowercase()");
    assert_ne!(code, shadow, "the template's tool name or body changed: {code}");
    std::fs::write(&source, shadow).unwrap();
    make(&more_tools, "build");
    drop_in(&mut server, &wasm[1], "aaa-shadow.wasm");

    let told = server.wait_for_notification("a warning about the renamed tool", |n| {
        n["method"] == "notifications/message" && n["params"]["data"]["servedAs"] == "aaa-shadow_my_tools_shout"
    });
    assert_eq!(told["params"]["level"], "warning", "{told}");
    let data = &told["params"]["data"];
    assert_eq!(
        (&data["plugin"], &data["name"], &data["servedBy"]),
        (&json!("aaa-shadow"), &json!("my_tools_shout"), &json!("my-tools")),
        "{told}"
    );
    let message = data["message"].as_str().unwrap();
    assert!(
        message.contains("aaa-shadow") && message.contains("my-tools"),
        "{message}"
    );
    let tools = names(&server.list_all("tools/list", "tools"));
    assert_eq!(
        tools,
        ["aaa-shadow_my_tools_shout", "more_tools_shout", "my_tools_shout"]
    );
    assert_eq!(
        shout_text(&mut server, "my_tools_shout"),
        "HI HI",
        "the holder keeps its name"
    );
    assert_eq!(shout_text(&mut server, "aaa-shadow_my_tools_shout"), "hi hi");

    // The holder reloaded (copied again, the same listing: no list_changed):
    // it keeps the name, and the rename, unchanged, is not said again.
    let holder_loaded = |stderr: &str| {
        stderr
            .lines()
            .filter(|line| line.contains("plugin loaded") && line.contains("plugin=\"my-tools\""))
            .count()
    };
    let loads = holder_loaded(&server.stderr());
    server
        .plugin_dir()
        .add_file("my-tools.wasm", &std::fs::read(&wasm[0]).unwrap());
    server.wait_for_stderr("my-tools loaded again", |stderr| holder_loaded(stderr) > loads);
    assert_eq!(shout_text(&mut server, "my_tools_shout"), "HI HI");
    let renames = |server: &StdioServer| {
        server
            .notifications_of("notifications/message")
            .iter()
            .filter(|n| n["params"]["data"]["servedAs"] == "aaa-shadow_my_tools_shout")
            .count()
    };
    assert_eq!(renames(&server), 1, "the rename is told once");
    let stderr = server.stderr();
    assert_eq!(
        stderr.matches("is served as aaa-shadow_my_tools_shout").count(),
        1,
        "the rename is logged once: {stderr}"
    );
    server.shutdown();
}

#[test]
fn a_new_plugin_with_a_skill_ships_it_beside_its_component() {
    let parent = tempfile::tempdir().expect("a parent directory");
    let created = Command::new(binary())
        .args(["new", "guided-tools", "--lang", "rust", "--skill", "--dir"])
        .arg(parent.path())
        .output()
        .expect("run wasm-mcp new");
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    assert!(String::from_utf8_lossy(&created.stdout).contains("dist/guided-tools.skills"));
    let project = parent.path().join("guided-tools");
    assert!(project.join("skills/guided-tools/SKILL.md").is_file());
    make(&project, "build");
    let skills = project.join("dist/guided-tools.skills");
    assert!(
        skills.join("guided-tools/SKILL.md").is_file(),
        "make build made no {}",
        skills.display()
    );

    let plugins = PluginDir::empty();
    plugins.add_folder("guided-tools.skills", &skills);
    let wasm = std::fs::read(project.join("dist/guided-tools.wasm")).expect("the built component");
    plugins.add_file("guided-tools.wasm", &wasm);
    let mut server = StdioServer::start(plugins);
    server.initialize(json!({}));
    let listed = server.request("skills/list", json!({})).result().clone();
    assert_eq!(listed["skills"][0]["uri"], "skill://guided-tools/SKILL.md", "{listed}");
    assert_eq!(listed["skills"][0]["frontmatter"]["name"], "guided-tools");
    server.shutdown();
}

/// What a plugin that makes skills adds to a Python project's app.py: the
/// world line first, then one skill it makes as it is read.
const PYTHON_MADE_SKILL: &str = r#"
from wasm_mcp import Skills, skill

__all__.append("Skills")


@skill("skill-maker/made", files=lambda: ["SKILL.md"])
def made(file: str):
    if file == "SKILL.md":
        return "---\nname: made\ndescription: Made as it is read\n---\n# Made\n"
    return None
"#;

#[test]
fn a_new_python_plugin_that_names_its_world_is_built_for_it_and_makes_its_skill() {
    let parent = tempfile::tempdir().expect("a parent directory");
    let created = new_project("skill-maker", "python", parent.path());
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let project = parent.path().join("skill-maker");
    let app = project.join("app.py");
    let source = std::fs::read_to_string(&app).expect("app.py");
    std::fs::write(
        &app,
        format!("# world: plugin-with-skills\n{source}{PYTHON_MADE_SKILL}"),
    )
    .expect("write app.py");
    make(&project, "build");

    let plugins = PluginDir::empty();
    let wasm = std::fs::read(project.join("dist/skill-maker.wasm")).expect("the built component");
    plugins.add_file("skill-maker.wasm", &wasm);
    let mut server = StdioServer::start(plugins);
    server.initialize(json!({}));
    let listed = server.request("skills/list", json!({})).result().clone();
    assert_eq!(
        listed["skills"][0]["uri"], "skill://skill-maker/made/SKILL.md",
        "{listed}"
    );
    assert_eq!(listed["skills"][0]["frontmatter"]["description"], "Made as it is read");
    server.shutdown();
}

#[test]
fn a_new_js_plugin_is_built_for_the_world_its_source_names() {
    let parent = tempfile::tempdir().expect("a parent directory");
    let created = new_project("kept", "js", parent.path());
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let project = parent.path().join("kept");
    let plain = Command::new("make")
        .args(["-n", "build"])
        .current_dir(&project)
        .output()
        .expect("make -n");
    assert!(String::from_utf8_lossy(&plain.stdout).contains(" -n plugin "));
    let plugin = project.join("plugin.js");
    let source = std::fs::read_to_string(&plugin).expect("plugin.js");
    std::fs::write(&plugin, format!("// world: stateful-plugin\n{source}")).expect("write plugin.js");
    let stateful = Command::new("make")
        .args(["-n", "build"])
        .current_dir(&project)
        .output()
        .expect("make -n");
    let commands = String::from_utf8_lossy(&stateful.stdout);
    assert!(commands.contains(" -n stateful-plugin "), "{commands}");
}

#[test]
fn a_new_rust_plugin_builds_tests_and_serves() {
    scaffold_build_and_serve("rust");
}

#[test]
fn a_new_python_plugin_builds_tests_and_serves() {
    scaffold_build_and_serve("python");
}

#[test]
fn a_new_js_plugin_builds_tests_and_serves() {
    scaffold_build_and_serve("js");
}

#[test]
fn new_refuses_a_bad_name_an_unknown_language_and_an_existing_directory() {
    let parent = tempfile::tempdir().expect("a parent directory");
    let bad = new_project("My_Tools", "python", parent.path());
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("invalid plugin name \"My_Tools\""), "{stderr}");

    let unknown = new_project("tools", "cobol", parent.path());
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("cobol"));

    std::fs::create_dir(parent.path().join("taken")).unwrap();
    let existing = new_project("taken", "js", parent.path());
    assert!(!existing.status.success());
    let stderr = String::from_utf8_lossy(&existing.stderr);
    assert!(stderr.contains("already exists"), "{stderr}");
    assert_eq!(
        std::fs::read_dir(parent.path().join("taken")).unwrap().count(),
        0,
        "nothing is written into an existing directory"
    );
}
