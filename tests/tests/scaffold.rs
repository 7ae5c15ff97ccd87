//! `wasm-mcp new` for each language, the whole loop a plugin author runs:
//! scaffold, run the project's own tests, build it with its own Makefile,
//! drop the component into a directory the real binary is serving, see
//! `tools/list_changed`, and call the new tool. Also: bad names and existing
//! directories are refused with a clear error.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::json;
use wasm_mcp_tests::expect::{by_name, single_text};
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
/// then hot-loads it into a running server and calls its `shout` tool.
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
    assert_eq!(by_name(&tools, "shout")["inputSchema"]["required"], json!(["text"]));
    let result = server
        .call_tool("shout", json!({"text": "hi", "times": 2}))
        .result()
        .clone();
    assert_eq!(single_text(&result), "HI HI");
    server.shutdown();
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
