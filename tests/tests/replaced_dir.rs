//! Hot reload when the plugins directory itself is replaced: deleted and
//! recreated, a symlink to it swapped, or the files symlinks through a
//! swapped `..data` link (the Kubernetes ConfigMap and projected volume
//! layout).
//!
//! Each test serves a path under a temporary root, replaces what it leads
//! to the way a deployment does, and checks what a client sees: one
//! `list_changed` per list that changed (one burst, never a half-swapped set),
//! the new tools served, and the new version answering. The time from the
//! change to `list_changed` is printed (run with `--nocapture` to see it).
//!
//! The old set is `versioned` v1 and `text-tools`; the new set is `versioned`
//! v2 (the same listing, another answer) and `raw-echo`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasm_mcp_tests::expect::{names, single_text, tool_ok};
use wasm_mcp_tests::{StdioServer, plugin_wasm};

const TOOLS_CHANGED: &str = "notifications/tools/list_changed";
const RESOURCES_CHANGED: &str = "notifications/resources/list_changed";

// ---- helpers ----------------------------------------------------------------

/// A temporary folder that holds the plugins path and what it leads to.
fn root() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("wasm-mcp-replaced-")
        .tempdir()
        .expect("create a temporary folder")
}

/// Copies the built plugin `name` into `dir` as `as_name.wasm`.
fn copy_plugin(name: &str, dir: &Path, as_name: &str) {
    let target = dir.join(format!("{as_name}.wasm"));
    std::fs::copy(plugin_wasm(name), &target).unwrap_or_else(|e| panic!("copy {name} to {}: {e}", target.display()));
}

/// Creates `dir` holding the old set (`versioned` v1, `text-tools`).
fn old_set(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    copy_plugin("versioned-v1", dir, "versioned");
    copy_plugin("text-tools", dir, "text-tools");
}

/// Creates `dir` holding the new set (`versioned` v2, `raw-echo`).
fn new_set(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    copy_plugin("versioned-v2", dir, "versioned");
    copy_plugin("raw-echo", dir, "raw-echo");
}

/// `releases/41` (the old set) and `releases/42` (the new set) under `root`,
/// and `current -> releases/41`; returns (current, releases/41, releases/42).
fn two_releases(root: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let (v41, v42) = (root.join("releases/41"), root.join("releases/42"));
    old_set(&v41);
    new_set(&v42);
    let current = root.join("current");
    symlink("releases/41", &current);
    (current, v41, v42)
}

fn symlink(target: impl AsRef<Path>, link: &Path) {
    std::os::unix::fs::symlink(target.as_ref(), link)
        .unwrap_or_else(|e| panic!("symlink {} -> {}: {e}", link.display(), target.as_ref().display()));
}

/// Points `link` at `target` atomically: a new link (`NAME_tmp`, as the
/// kubelet names it) renamed over the old one.
fn swap_symlink(target: impl AsRef<Path>, link: &Path) {
    let mut fresh = link.as_os_str().to_owned();
    fresh.push("_tmp");
    let fresh = PathBuf::from(fresh);
    symlink(target, &fresh);
    std::fs::rename(&fresh, link).unwrap_or_else(|e| panic!("rename {} over {}: {e}", fresh.display(), link.display()));
}

/// Serves `plugins` with `args`, initialized, once its tools are listed.
fn serve(plugins: &Path, args: &[&str]) -> StdioServer {
    let mut server = StdioServer::spawn(plugins, args);
    server.initialize(json!({}));
    server.list_all("tools/list", "tools");
    server
}

fn tool_names(server: &mut StdioServer) -> Vec<String> {
    let mut tools = names(&server.list_all("tools/list", "tools"));
    tools.sort();
    tools
}

fn version(server: &mut StdioServer) -> String {
    let result = server.call_tool("version", json!({})).result().clone();
    tool_ok(&result);
    single_text(&result)
}

/// Waits for tools/list_changed and prints how long it took since `changed`.
fn wait_for_tools_changed(server: &mut StdioServer, case: &str, changed: Instant) {
    server.wait_for_notification(&format!("tools/list_changed after {case}"), |n| {
        n["method"] == TOOLS_CHANGED
    });
    eprintln!("{case}: change -> tools/list_changed in {:?}", changed.elapsed());
}

/// The old set is served: `versioned` answers v1 beside `text-tools`.
fn assert_old_set(server: &mut StdioServer) {
    let tools = tool_names(server);
    assert!(
        tools.contains(&"version".to_string()) && tools.contains(&"word_count".to_string()),
        "{tools:?}"
    );
    assert!(!tools.contains(&"echo".to_string()), "{tools:?}");
    assert_eq!(version(server), "v1");
}

/// The new set is served, whole (`also` among its tools), and it came as
/// one change: one tools/list_changed, and `resources_changes`
/// resources/list_changed (none when only `versioned` serves resources: both
/// its versions list the same one).
fn assert_new_set_in_one_change(server: &mut StdioServer, also: &[&str], resources_changes: usize) {
    let tools = tool_names(server);
    for tool in ["version", "echo"].iter().chain(also) {
        assert!(tools.contains(&tool.to_string()), "{tool} in {tools:?}");
    }
    assert!(!tools.contains(&"word_count".to_string()), "{tools:?}");
    assert_eq!(version(server), "v2");
    // Anything a second burst would announce has arrived by now.
    server.drain_until(Instant::now() + Duration::from_millis(600));
    server.request("ping", Value::Null).result();
    let stderr = server.stderr();
    assert_eq!(
        server.notifications_of(TOOLS_CHANGED).len(),
        1,
        "one tools/list_changed for the whole change; stderr:\n{stderr}"
    );
    assert_eq!(
        server.notifications_of(RESOURCES_CHANGED).len(),
        resources_changes,
        "stderr:\n{stderr}"
    );
}

/// The notifications/message from the host about the plugins directory at `level`.
fn directory_messages(server: &StdioServer, level: &str) -> Vec<Value> {
    server
        .notifications_of("notifications/message")
        .into_iter()
        .filter(|n| n["params"]["logger"] == "wasm-mcp" && n["params"]["level"] == level)
        .collect()
}

// ---- deleted and recreated --------------------------------------------------

#[test]
fn a_directory_deleted_and_recreated_at_once_serves_the_new_set() {
    let root = root();
    let plugins = root.path().join("plugins");
    old_set(&plugins);
    let mut server = serve(&plugins, &[]);
    assert_old_set(&mut server);

    // `rm -rf plugins && cp -r new plugins`.
    let staged = root.path().join("staged");
    new_set(&staged);
    let changed = Instant::now();
    std::fs::remove_dir_all(&plugins).unwrap();
    std::fs::create_dir(&plugins).unwrap();
    for entry in std::fs::read_dir(&staged).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), plugins.join(entry.file_name())).unwrap();
    }
    wait_for_tools_changed(&mut server, "rm -rf and cp -r", changed);
    assert_new_set_in_one_change(&mut server, &[], 0);
    server.shutdown();
}

#[test]
fn a_directory_gone_for_a_while_keeps_serving_then_its_return_is_loaded() {
    let root = root();
    let plugins = root.path().join("plugins");
    old_set(&plugins);
    let mut server = serve(&plugins, &["--plugins-grace", "60"]);

    std::fs::remove_dir_all(&plugins).unwrap();
    let warning = server.wait_for_notification("the warning that the directory is gone", |n| {
        n["method"] == "notifications/message" && n["params"]["level"] == "warning"
    });
    assert_eq!(warning["params"]["logger"], "wasm-mcp", "{warning}");
    assert_eq!(warning["params"]["data"]["path"], json!(plugins.display().to_string()));
    // Within the grace period the last good set keeps serving, and no list changed.
    assert_old_set(&mut server);
    server.request("ping", Value::Null).result();
    assert!(
        server.notifications_of(TOOLS_CHANGED).is_empty(),
        "nothing withdrawn yet"
    );
    assert!(
        server.stderr().contains("is gone"),
        "said on stderr too:\n{}",
        server.stderr()
    );

    let changed = Instant::now();
    new_set(&plugins);
    wait_for_tools_changed(&mut server, "the directory recreated after a pause", changed);
    assert_new_set_in_one_change(&mut server, &[], 0);
    assert_eq!(directory_messages(&server, "warning").len(), 1, "said once");
    server.shutdown();
}

#[test]
fn a_directory_missing_beyond_the_grace_period_serves_nothing_until_it_returns() {
    let root = root();
    let plugins = root.path().join("plugins");
    old_set(&plugins);
    let mut server = serve(&plugins, &["--plugins-grace", "0.5"]);

    std::fs::remove_dir_all(&plugins).unwrap();
    server.wait_for_notification("tools/list_changed when the grace runs out", |n| {
        n["method"] == TOOLS_CHANGED
    });
    assert_eq!(tool_names(&mut server), Vec::<String>::new());
    assert_eq!(directory_messages(&server, "error").len(), 1, "the withdrawal is said");

    let changed = Instant::now();
    new_set(&plugins);
    wait_for_tools_changed(&mut server, "the directory back after the grace", changed);
    let tools = tool_names(&mut server);
    assert!(tools.contains(&"echo".to_string()), "{tools:?}");
    assert_eq!(version(&mut server), "v2");
    server.shutdown();
}

// ---- a swapped symlink ------------------------------------------------------

#[test]
fn a_swapped_symlink_to_the_directory_serves_the_new_release() {
    let root = root();
    let (current, v41, v42) = two_releases(root.path());
    let mut server = serve(&current, &[]);
    assert_old_set(&mut server);

    let changed = Instant::now();
    swap_symlink("releases/42", &current);
    wait_for_tools_changed(&mut server, "current -> releases/42", changed);
    assert_new_set_in_one_change(&mut server, &[], 0);

    // The old release is no longer followed; the new one is.
    std::fs::remove_file(v41.join("text-tools.wasm")).unwrap();
    let changed = Instant::now();
    std::fs::remove_file(v42.join("raw-echo.wasm")).unwrap();
    wait_for_tools_changed(&mut server, "a plugin removed from the new release", changed);
    assert_eq!(
        tool_names(&mut server),
        ["held_version", "slow_version", "version"].map(String::from)
    );
    server.shutdown();
}

// ---- the Kubernetes volume layout ---------------------------------------------

/// Writes one version of a volume: `..NAME/` holding `versioned.wasm`, the
/// other plugins, `docs-search` with a manifest granting `docs`, and `docs/`
/// holding `doc` (a Markdown file).
fn volume_version(volume: &Path, name: &str, versioned: &str, other: &str, doc: &str) -> PathBuf {
    let data = volume.join(name);
    std::fs::create_dir_all(data.join("docs")).unwrap();
    copy_plugin(versioned, &data, "versioned");
    copy_plugin(other, &data, other);
    copy_plugin("docs-search", &data, "docs-search");
    std::fs::write(
        data.join("docs-search.toml"),
        "[[directories]]\nhost = \"docs\"\nguest = \"/docs\"\n",
    )
    .unwrap();
    std::fs::write(data.join("docs").join(doc), format!("# {doc}\n")).unwrap();
    data
}

/// The resource URIs served.
fn resource_uris(server: &mut StdioServer) -> Vec<String> {
    let mut uris: Vec<String> = server
        .list_all("resources/list", "resources")
        .iter()
        .map(|r| r["uri"].as_str().unwrap_or_default().to_owned())
        .collect();
    uris.sort();
    uris
}

#[test]
fn a_kubernetes_volume_update_swaps_changes_adds_and_removes_plugins_at_once() {
    let root = root();
    let volume = root.path().join("plugins");
    std::fs::create_dir(&volume).unwrap();
    volume_version(&volume, "..2026_12_04_01", "versioned-v1", "text-tools", "old.md");
    symlink("..2026_12_04_01", &volume.join("..data"));
    for file in [
        "versioned.wasm",
        "text-tools.wasm",
        "docs-search.wasm",
        "docs-search.toml",
        "docs",
    ] {
        symlink(format!("..data/{file}"), &volume.join(file));
    }
    let mut server = serve(&volume, &[]);
    assert_old_set(&mut server);
    assert!(resource_uris(&mut server).contains(&"docs:///old.md".to_string()));

    // What the kubelet does: the new version beside the old, `..data` swapped
    // by a rename, links for new files made, links for gone ones removed, the
    // old version deleted.
    volume_version(&volume, "..2026_12_04_02", "versioned-v2", "raw-echo", "new.md");
    let changed = Instant::now();
    swap_symlink("..2026_12_04_02", &volume.join("..data"));
    symlink("..data/raw-echo.wasm", &volume.join("raw-echo.wasm"));
    std::fs::remove_file(volume.join("text-tools.wasm")).unwrap();
    std::fs::remove_dir_all(volume.join("..2026_12_04_01")).unwrap();
    wait_for_tools_changed(&mut server, "a ..data swap", changed);
    assert_new_set_in_one_change(&mut server, &["search_docs"], 1);
    // The manifest and the granted directory moved with the swap.
    let uris = resource_uris(&mut server);
    assert!(uris.contains(&"docs:///new.md".to_string()), "{uris:?}");
    assert!(!uris.contains(&"docs:///old.md".to_string()), "{uris:?}");
    server.shutdown();
}

// ---- no watching ------------------------------------------------------------

#[test]
fn with_no_watch_a_swapped_symlink_is_not_followed() {
    let root = root();
    let (current, v41, _) = two_releases(root.path());
    let mut server = serve(&current, &["--no-watch"]);

    swap_symlink("releases/42", &current);
    std::fs::remove_dir_all(&v41).unwrap();
    server.drain_until(Instant::now() + Duration::from_millis(800));
    assert!(server.notifications_of(TOOLS_CHANGED).is_empty());
    assert_old_set(&mut server);
    server.shutdown();
}
