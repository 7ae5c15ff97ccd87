//! Hot reload: the plugins directory is live (issue 5).
//!
//! These drive the real binary while the tests change its plugins directory
//! the ways people and tools do: copy a file in, overwrite it with a new build
//! while a call on the old one runs, write garbage over it, fix it, delete
//! and rename it, save it the way editors do, copy it slowly, change its
//! manifest. Adding and removing plugins in general, and pagination across a
//! change, are in `list_changed.rs`.
//!
//! Most tests serve `versioned`: `tests/plugins/versioned-v1` or `-v2` copied
//! in as `versioned.wasm`. Both versions list exactly the same tools and
//! resource and differ only in their answers ("v1", "v2"), so a test can tell
//! which version served a call and that an identical listing announces no
//! list change.
//!
//! "Exactly once" is checked without waiting for time to pass: after the
//! change under test, a marker plugin is added; the watcher handles changes
//! in order, so once the marker is loaded every reload the earlier change
//! caused has been logged.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasm_mcp_tests::expect::{by_name, is_tool_error, names, single_text, tool_ok};
use wasm_mcp_tests::{PluginDir, StdioServer, plugin_wasm, timeout};

const PLUGIN: &str = "versioned";
const VERSION_URI: &str = "versioned://version";
const TOOLS_CHANGED: &str = "notifications/tools/list_changed";
const PROMPTS_CHANGED: &str = "notifications/prompts/list_changed";
const RESOURCES_CHANGED: &str = "notifications/resources/list_changed";

// ---- helpers ----------------------------------------------------------------

fn is(method: &'static str) -> impl Fn(&Value) -> bool {
    move |n| n["method"] == method
}

/// The built `versioned-vN` component, to copy in as `versioned.wasm`.
fn build_of(version: u32) -> PathBuf {
    plugin_wasm(&format!("versioned-v{version}"))
}

/// A plugins directory holding `versioned.wasm` at `version` (plus `others`).
fn dir_with_version(version: u32, others: &[&str]) -> PluginDir {
    let dir = PluginDir::with(others);
    dir.add_plugin_as(&format!("versioned-v{version}"), PLUGIN);
    dir
}

/// A server over `versioned` v`version`, initialized with `capabilities`,
/// whose catalog has loaded.
fn serve_version(version: u32, args: &[&str], capabilities: Value) -> StdioServer {
    let mut server = StdioServer::start_with_args(dir_with_version(version, &[]), args);
    server.initialize(capabilities);
    let tools = server.list_all("tools/list", "tools");
    by_name(&tools, "version");
    server
}

fn path_in(server: &StdioServer, file: &str) -> PathBuf {
    server.plugin_dir().path().join(file)
}

/// Writes `bytes` straight to `path` (create or truncate, write, close): what
/// `cp` does, so a watcher sees the file change in place.
fn write_in_place(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// Renames `from` to `to` inside the server's plugins directory.
fn rename(server: &StdioServer, from: &str, to: &str) {
    let (from, to) = (path_in(server, from), path_in(server, to));
    std::fs::rename(&from, &to).unwrap_or_else(|e| panic!("rename {} to {}: {e}", from.display(), to.display()));
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// The text of calling the tool `name` with `arguments`, which must succeed.
fn call_text(server: &mut StdioServer, name: &str, arguments: Value) -> String {
    let result = server.call_tool(name, arguments).result().clone();
    tool_ok(&result);
    single_text(&result)
}

/// Calls `version` until it answers `want` (a reload is under way until then).
fn wait_for_version(server: &mut StdioServer, tool: &str, want: &str) {
    let deadline = Instant::now() + timeout();
    loop {
        let response = server.call_tool(tool, json!({}));
        let answer = response
            .raw
            .get("result")
            .filter(|r| !is_tool_error(r))
            .map(single_text);
        if answer.as_deref() == Some(want) {
            return;
        }
        if Instant::now() >= deadline {
            panic!(
                "`{tool}` never answered {want:?} within {:?} (last: {}); stderr:\n{}",
                timeout(),
                response.raw,
                server.stderr()
            );
        }
        server.drain_until(Instant::now() + Duration::from_millis(50));
    }
}

/// Re-lists tools until `done` holds for their names (each change may send
/// its own list_changed, so the test re-lists rather than counting them).
fn wait_for_tools(server: &mut StdioServer, what: &str, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    let deadline = Instant::now() + timeout();
    loop {
        let tools = names(&server.list_all("tools/list", "tools"));
        if done(&tools) {
            return tools;
        }
        if Instant::now() >= deadline {
            panic!("tools never became {what} within {:?}: {tools:?}", timeout());
        }
        server.drain_until(Instant::now() + Duration::from_millis(50));
    }
}

/// stderr lines that say `plugin` was loaded (a good version swapped in).
fn loads_of(stderr: &str, plugin: &str) -> usize {
    let field = format!("plugin=\"{plugin}\"");
    stderr
        .lines()
        .filter(|line| line.contains("plugin loaded") && line.contains(&field))
        .count()
}

/// Adds a marker plugin and waits until it is loaded: every reload caused by
/// an earlier change has been logged by then.
fn settle_with_marker(server: &mut StdioServer, marker: &str) {
    server.plugin_dir().add_plugin_as("raw-echo", marker);
    server.wait_for_stderr(&format!("marker {marker} loaded"), |stderr| {
        loads_of(stderr, marker) == 1
    });
}

/// The error-level notifications/message from logger `plugin` received so far.
fn load_errors(server: &StdioServer, plugin: &str) -> Vec<Value> {
    server
        .notifications_of("notifications/message")
        .into_iter()
        .filter(|n| n["params"]["level"] == "error" && n["params"]["logger"] == plugin)
        .collect()
}

/// Waits for a load-failure notification for `plugin` and checks that it
/// names `path` and gives a reason.
fn wait_for_load_error(server: &mut StdioServer, plugin: &str, path: &Path) -> Value {
    let note = server.wait_for_notification(&format!("a load error for {plugin}"), |n| {
        n["method"] == "notifications/message" && n["params"]["level"] == "error" && n["params"]["logger"] == plugin
    });
    let data = &note["params"]["data"];
    let path = path.display().to_string();
    assert_eq!(data["path"], json!(path), "the error names the file: {note}");
    let reason = data["error"].as_str().unwrap_or_default();
    assert!(!reason.is_empty(), "the error gives a reason: {note}");
    note
}

/// Round trip through the server: every notification it queued before this
/// request has arrived once this returns.
fn sync(server: &mut StdioServer) {
    server.request("ping", Value::Null).result();
}

/// Subscribes to the resource at `uri`.
fn subscribe(server: &mut StdioServer, uri: &str) {
    server.request("resources/subscribe", json!({"uri": uri})).result();
}

/// A server over a directory without `versioned`, its tools listed.
fn serve_without_versioned() -> StdioServer {
    let mut server = StdioServer::start_initialized(&["text-tools"]);
    server.list_all("tools/list", "tools");
    server
}

/// After `versioned` v1 arrived in a server started without it: waits for the
/// tools list change (`what` says which), for `version` in the listing and for
/// every load to be logged, checking that the tool answers "v1".
fn wait_for_v1_to_arrive(server: &mut StdioServer, what: &str) {
    server.wait_for_notification(what, is(TOOLS_CHANGED));
    wait_for_tools(server, "with `version`", |t| t.iter().any(|n| n == "version"));
    assert_eq!(call_text(server, "version", json!({})), "v1");
    settle_with_marker(server, "marker");
}

/// After a save of v2 over v1 (subscribed to [`VERSION_URI`]): waits for its
/// resources/updated, then checks that v2 serves, that no list changed
/// (`same_listing` says why not), and that the plugin was loaded just once
/// more and never removed on the way.
fn assert_saved_over_once(server: &mut StdioServer, same_listing: &str) {
    server.wait_for_notification("resources/updated for the replaced plugin", |n| {
        n["method"] == "notifications/resources/updated" && n["params"]["uri"] == VERSION_URI
    });
    assert_eq!(call_text(server, "version", json!({})), "v2");
    assert_eq!(list_changes(server), Vec::<Value>::new(), "{same_listing}");
    settle_with_marker(server, "marker");
    let stderr = server.stderr();
    assert_eq!(loads_of(&stderr, PLUGIN), 2, "start + one reload; stderr:\n{stderr}");
    assert!(
        !stderr.contains("plugin removed"),
        "never removed on the way; stderr:\n{stderr}"
    );
}

fn list_changes(server: &StdioServer) -> Vec<Value> {
    server
        .notifications()
        .iter()
        .filter(|n| n["method"].as_str().is_some_and(|m| m.ends_with("/list_changed")))
        .cloned()
        .collect()
}

// ---- add, replace, corrupt, fix, delete -------------------------------------

#[test]
fn a_plugin_copied_in_place_is_announced_loaded_once_and_callable() {
    let mut server = serve_without_versioned();

    // `cp`, not an atomic rename: the watcher sees the file created, written and closed.
    write_in_place(&path_in(&server, "versioned.wasm"), &read(&build_of(1)));
    wait_for_v1_to_arrive(&mut server, "tools/list_changed after copying versioned in");
    assert_eq!(
        loads_of(&server.stderr(), PLUGIN),
        1,
        "one load per copy; stderr:\n{}",
        server.stderr()
    );
    assert_eq!(
        load_errors(&server, PLUGIN),
        Vec::<Value>::new(),
        "a copy is no failure"
    );
    server.shutdown();
}

#[test]
fn a_call_running_on_the_old_version_finishes_on_it_and_new_calls_get_the_new_one() {
    let mut server = serve_version(1, &[], json!({"roots": {}}));
    assert_eq!(call_text(&mut server, "version", json!({})), "v1");

    // A call held open by the client (it waits for roots/list) and one that sleeps.
    let held = server.start_request("tools/call", json!({"name": "held_version", "arguments": {}}));
    let roots = server.wait_for_client_request("roots/list");
    let slow = server.start_request("tools/call", json!({"name": "slow_version", "arguments": {"ms": 3000}}));
    sync(&mut server);

    server.plugin_dir().add_plugin_as("versioned-v2", PLUGIN);
    wait_for_version(&mut server, "version", "v2");
    assert!(
        !server.has_response_for(&held),
        "the held call is still running after the swap"
    );

    server.respond(&roots["id"], json!({"roots": []}));
    let held = server.wait_response(&held, "tools/call").result().clone();
    tool_ok(&held);
    assert_eq!(single_text(&held), "v1", "the call that started on v1 finishes on v1");
    let slow = server.wait_response(&slow, "tools/call").result().clone();
    tool_ok(&slow);
    assert_eq!(single_text(&slow), "v1 after 3000 ms");

    assert_eq!(call_text(&mut server, "version", json!({})), "v2");
    assert_eq!(
        call_text(&mut server, "slow_version", json!({"ms": 1})),
        "v2 after 1 ms"
    );
    server.shutdown();
}

#[test]
fn a_call_running_when_its_plugin_is_deleted_finishes() {
    let mut server = serve_version(1, &[], json!({"roots": {}}));
    let held = server.start_request("tools/call", json!({"name": "held_version", "arguments": {}}));
    let roots = server.wait_for_client_request("roots/list");

    server.plugin_dir().remove_file("versioned.wasm");
    server.wait_for_notification("tools/list_changed after deleting", is(TOOLS_CHANGED));
    wait_for_tools(&mut server, "empty", |t| t.is_empty());
    assert!(!server.has_response_for(&held), "the held call is still running");

    server.respond(&roots["id"], json!({"roots": []}));
    let held = server.wait_response(&held, "tools/call").result().clone();
    tool_ok(&held);
    assert_eq!(single_text(&held), "v1");
    server.shutdown();
}

#[test]
fn no_call_fails_because_of_a_reload() {
    let mut server = serve_version(1, &[], json!({}));
    let mut calls = Vec::new();
    for version in [2, 1, 2, 1] {
        server
            .plugin_dir()
            .add_plugin_as(&format!("versioned-v{version}"), PLUGIN);
        let want = format!("v{version}");
        let deadline = Instant::now() + timeout();
        // Keep calls arriving while the new version loads and swaps in.
        loop {
            calls.push(server.start_request("tools/call", json!({"name": "slow_version", "arguments": {"ms": 20}})));
            calls.push(server.start_request("resources/read", json!({"uri": VERSION_URI})));
            let text = call_text(&mut server, "version", json!({}));
            if text == want {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "v{version} never came in; stderr:\n{}",
                server.stderr()
            );
        }
    }
    for id in calls {
        let response = server.wait_response(&id, "tools/call or resources/read");
        let result = response.result();
        assert!(
            !is_tool_error(result),
            "a call during a reload failed: {}",
            response.raw
        );
    }
    server.shutdown();
}

#[test]
fn a_corrupt_file_keeps_the_good_version_serving_and_is_reported_then_a_fix_loads() {
    let mut server = serve_version(1, &[], json!({}));
    let target = path_in(&server, "versioned.wasm");

    // Garbage, renamed into place.
    server
        .plugin_dir()
        .add_file("versioned.wasm", b"this is not a WebAssembly component");
    let first = wait_for_load_error(&mut server, PLUGIN, &target);
    assert_eq!(
        call_text(&mut server, "version", json!({})),
        "v1",
        "the good version keeps serving"
    );
    server.wait_for_stderr("the failure on stderr with the path", |s| {
        s.lines()
            .any(|l| l.contains("ERROR") && l.contains(&target.display().to_string()))
    });

    // A real component cut in half, written in place.
    let v2 = read(&build_of(2));
    write_in_place(&target, &v2[..v2.len() / 2]);
    let second = wait_for_load_error(&mut server, PLUGIN, &target);
    assert_ne!(first, second);
    assert_eq!(
        call_text(&mut server, "version", json!({})),
        "v1",
        "the good version keeps serving"
    );
    let tools = names(&server.list_all("tools/list", "tools"));
    assert!(tools.contains(&"version".to_string()), "{tools:?}");
    assert_eq!(
        list_changes(&server),
        Vec::<Value>::new(),
        "a failed load changes no list"
    );

    // Fixed: the new version comes in.
    server.plugin_dir().add_plugin_as("versioned-v2", PLUGIN);
    wait_for_version(&mut server, "version", "v2");

    // Deleted: its tools and its resource go, with list_changed for those two lists only.
    server.plugin_dir().remove_file("versioned.wasm");
    server.wait_for_notification("tools/list_changed after deleting", is(TOOLS_CHANGED));
    server.wait_for_notification("resources/list_changed after deleting", is(RESOURCES_CHANGED));
    sync(&mut server);
    assert!(
        server.notifications_of(PROMPTS_CHANGED).is_empty(),
        "versioned has no prompts"
    );
    assert_eq!(server.list_all("tools/list", "tools"), Vec::<Value>::new());
    assert_eq!(server.list_all("resources/list", "resources"), Vec::<Value>::new());
    server.call_tool("version", json!({})).expect_error_code(-32602);
    server.shutdown();
}

#[test]
fn a_new_plugin_that_fails_to_load_is_reported_and_not_served() {
    let mut server = serve_without_versioned();
    let path = server
        .plugin_dir()
        .add_file("broken.wasm", &[0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00]);
    wait_for_load_error(&mut server, "broken", &path);
    sync(&mut server);
    assert_eq!(list_changes(&server), Vec::<Value>::new());
    assert_eq!(server.list_all("tools/list", "tools").len(), 6, "text-tools only");
    server.shutdown();
}

// ---- rename, editors, slow copies, bursts -----------------------------------

#[test]
fn renaming_a_plugin_moves_it_and_renaming_it_away_removes_it() {
    let mut server = serve_version(1, &[], json!({}));

    // Away from `.wasm`: no longer a plugin.
    rename(&server, "versioned.wasm", "versioned.wasm.disabled");
    server.wait_for_notification("tools/list_changed after renaming away", is(TOOLS_CHANGED));
    wait_for_tools(&mut server, "empty", |t| t.is_empty());

    // Back: served again.
    rename(&server, "versioned.wasm.disabled", "versioned.wasm");
    server.wait_for_notification("tools/list_changed after renaming back", is(TOOLS_CHANGED));
    wait_for_tools(&mut server, "with `version`", |t| t.iter().any(|n| n == "version"));
    assert_eq!(call_text(&mut server, "version", json!({})), "v1");

    // To another plugin name: the same tools, served by `renamed`.
    rename(&server, "versioned.wasm", "renamed.wasm");
    server.wait_for_stderr("renamed loaded and versioned removed", |s| {
        loads_of(s, "renamed") == 1 && s.contains("plugin removed plugin=\"versioned\"")
    });
    let tools = wait_for_tools(&mut server, "the three tools under their own names", |t| {
        t.len() == 3
            && t.iter()
                .all(|n| !n.starts_with("versioned_") && !n.starts_with("renamed_"))
    });
    assert!(tools.contains(&"held_version".to_string()), "{tools:?}");
    assert_eq!(call_text(&mut server, "version", json!({})), "v1");
    server.shutdown();
}

#[test]
fn an_editor_style_save_through_a_temp_file_reloads_once() {
    let mut server = serve_version(1, &[], json!({}));
    subscribe(&mut server, VERSION_URI);

    // Write a temp file beside the target (not hidden, not `.wasm`), then rename over it.
    let temp = path_in(&server, "versioned.wasm.tmp.4913");
    write_in_place(&temp, &read(&build_of(2)));
    rename(&server, "versioned.wasm.tmp.4913", "versioned.wasm");

    assert_saved_over_once(&mut server, "the listing is the same");
    assert_eq!(load_errors(&server, PLUGIN), Vec::<Value>::new());
    server.shutdown();
}

#[test]
fn an_editor_style_save_with_a_backup_reloads_once() {
    let mut server = serve_version(1, &[], json!({}));
    subscribe(&mut server, VERSION_URI);

    // vim with `backupcopy=no`: move the original to `NAME~`, write the new one in its place.
    rename(&server, "versioned.wasm", "versioned.wasm~");
    write_in_place(&path_in(&server, "versioned.wasm"), &read(&build_of(2)));
    std::fs::remove_file(path_in(&server, "versioned.wasm~")).expect("remove the backup");

    assert_saved_over_once(&mut server, "never gone, same listing");
    server.shutdown();
}

#[test]
fn a_copy_still_in_progress_ends_in_one_good_load() {
    let mut server = serve_without_versioned();

    // Half the file, a pause longer than any debounce, then the rest.
    let bytes = read(&build_of(1));
    let target = path_in(&server, "versioned.wasm");
    let mut file = std::fs::File::create(&target).expect("create versioned.wasm");
    let half = bytes.len() / 2;
    file.write_all(&bytes[..half]).expect("write the first half");
    file.flush().expect("flush");
    server.drain_until(Instant::now() + Duration::from_millis(1500));
    file.write_all(&bytes[half..]).expect("write the rest");
    drop(file);

    wait_for_v1_to_arrive(&mut server, "tools/list_changed once the copy is done");
    assert_eq!(
        load_errors(&server, PLUGIN),
        Vec::<Value>::new(),
        "half a file is not a failure to report; stderr:\n{}",
        server.stderr()
    );
    assert_eq!(loads_of(&server.stderr(), PLUGIN), 1, "stderr:\n{}", server.stderr());
    server.shutdown();
}

#[test]
fn a_burst_of_changes_reloads_once() {
    let mut server = serve_version(1, &[], json!({}));
    let target = path_in(&server, "versioned.wasm");
    let (v1, v2) = (read(&build_of(1)), read(&build_of(2)));
    // Renames and in-place rewrites back to back, ending on v2.
    for i in 0..4 {
        let bytes = if i % 2 == 0 { &v2 } else { &v1 };
        server.plugin_dir().add_file("versioned.wasm", bytes);
        write_in_place(&target, bytes);
    }
    write_in_place(&target, &v2);
    wait_for_version(&mut server, "version", "v2");
    settle_with_marker(&mut server, "marker");
    let stderr = server.stderr();
    assert_eq!(
        loads_of(&stderr, PLUGIN),
        2,
        "start + one reload for the burst; stderr:\n{stderr}"
    );
    server.shutdown();
}

// ---- manifests --------------------------------------------------------------

#[test]
fn a_manifest_change_takes_effect_without_restart() {
    let mut server = serve_version(1, &[], json!({}));
    let manifest = path_in(&server, "versioned.toml");

    // A prefix renames the tools.
    server.plugin_dir().add_file("versioned.toml", b"prefix = \"vv\"\n");
    server.wait_for_notification("tools/list_changed for the prefix", is(TOOLS_CHANGED));
    wait_for_tools(&mut server, "prefixed", |t| t.iter().any(|n| n == "vv_version"));
    assert_eq!(call_text(&mut server, "vv_version", json!({})), "v1");
    server.call_tool("version", json!({})).expect_error_code(-32602);

    // A limit: the same listing, calls now stop at the deadline.
    let loads = loads_of(&server.stderr(), PLUGIN);
    server
        .plugin_dir()
        .add_file("versioned.toml", b"prefix = \"vv\"\n[limits]\ntimeout_secs = 0.5\n");
    server.wait_for_stderr("the reload for the new limit", |s| loads_of(s, PLUGIN) > loads);
    let deadline = Instant::now() + timeout();
    let stopped = loop {
        let result = server
            .call_tool("vv_slow_version", json!({"ms": 5000}))
            .result()
            .clone();
        if is_tool_error(&result) {
            break result;
        }
        assert!(Instant::now() < deadline, "the new limit never applied: {result}");
    };
    assert!(
        single_text(&stopped).contains("wall-clock"),
        "stopped by the deadline the manifest set: {stopped}"
    );

    // Task support: the listing changes again.
    server.plugin_dir().add_file(
        "versioned.toml",
        b"prefix = \"vv\"\n[tools.slow_version]\ntask_support = \"required\"\n",
    );
    let deadline = Instant::now() + timeout();
    loop {
        server.wait_for_notification("tools/list_changed for task support", is(TOOLS_CHANGED));
        let tools = server.list_all("tools/list", "tools");
        if by_name(&tools, "vv_slow_version")["execution"]["taskSupport"] == "required" {
            break;
        }
        assert!(Instant::now() < deadline, "task support never changed: {tools:?}");
    }
    assert_eq!(call_text(&mut server, "vv_version", json!({})), "v1");

    // An invalid manifest is reported; the last good version (and its prefix) keeps serving.
    server
        .plugin_dir()
        .add_file("versioned.toml", b"prefix = \"not valid!\"\n");
    let wasm = path_in(&server, "versioned.wasm");
    let error = wait_for_load_error(&mut server, PLUGIN, &wasm);
    assert!(
        error["params"]["data"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("versioned.toml")),
        "the reason names the manifest: {error}"
    );
    assert_eq!(call_text(&mut server, "vv_version", json!({})), "v1");

    // No manifest: the plain names are back.
    std::fs::remove_file(&manifest).expect("remove the manifest");
    wait_for_tools(&mut server, "unprefixed", |t| t.iter().any(|n| n == "version"));
    assert_eq!(call_text(&mut server, "version", json!({})), "v1");
    server.shutdown();
}

// ---- what is announced ------------------------------------------------------

#[test]
fn only_the_lists_that_changed_are_announced() {
    let mut server = serve_version(1, &[], json!({}));

    // Tools only: tools/list_changed and nothing else.
    server.plugin_dir().add_plugin("raw-echo");
    server.wait_for_notification("tools/list_changed after adding raw-echo", is(TOOLS_CHANGED));
    sync(&mut server);
    assert_eq!(
        list_changes(&server),
        vec![json!({"jsonrpc": "2.0", "method": TOOLS_CHANGED, "params": {}})],
        "raw-echo has tools only; stderr:\n{}",
        server.stderr()
    );

    // The same listing, new code: no list changed.
    subscribe(&mut server, VERSION_URI);
    let before = list_changes(&server).len();
    server.plugin_dir().add_plugin_as("versioned-v2", PLUGIN);
    // resources/updated is sent after any list_changed of the same swap.
    server.wait_for_notification("resources/updated for the new version", |n| {
        n["method"] == "notifications/resources/updated"
    });
    assert_eq!(list_changes(&server).len(), before, "{:?}", list_changes(&server));
    server.shutdown();
}

#[test]
fn replacing_a_plugin_updates_its_subscribed_resources() {
    let mut server = StdioServer::start(dir_with_version(1, &["notes"]));
    server.initialize(json!({}));
    server.list_all("resources/list", "resources");
    subscribe(&mut server, VERSION_URI);
    subscribe(&mut server, "notes://index");
    let read_version = |server: &mut StdioServer| {
        let read = server
            .request("resources/read", json!({"uri": VERSION_URI}))
            .result()
            .clone();
        read["contents"][0]["text"].as_str().unwrap_or_default().to_string()
    };
    assert_eq!(read_version(&mut server), "v1");

    server.plugin_dir().add_plugin_as("versioned-v2", PLUGIN);
    let updated = server.wait_for_notification("resources/updated", |n| {
        n["method"] == "notifications/resources/updated"
    });
    assert_eq!(updated["params"]["uri"], VERSION_URI, "{updated}");
    assert_eq!(read_version(&mut server), "v2");
    sync(&mut server);
    let updates = server.notifications_of("notifications/resources/updated");
    assert_eq!(updates.len(), 1, "only the replaced plugin's URI: {updates:?}");
    server.shutdown();
}

// ---- --no-watch and startup -------------------------------------------------

#[test]
fn no_watch_ignores_changes_to_the_directory() {
    let mut server = serve_version(1, &["--no-watch"], json!({}));
    server.plugin_dir().add_plugin_as("versioned-v2", PLUGIN);
    server.plugin_dir().add_plugin("raw-echo");
    server.plugin_dir().add_file("versioned.toml", b"prefix = \"vv\"\n");
    // Nothing can be waited for here: give a watcher ample time to have acted.
    server.drain_until(Instant::now() + Duration::from_secs(3));
    assert_eq!(call_text(&mut server, "version", json!({})), "v1");
    let tools = names(&server.list_all("tools/list", "tools"));
    assert!(!tools.contains(&"echo".to_string()), "{tools:?}");
    assert_eq!(list_changes(&server), Vec::<Value>::new());
    assert!(!server.stderr().contains("watching the plugins directory"));
    server.shutdown();
}

#[test]
fn a_change_during_the_initial_load_is_not_undone_by_it() {
    // v1 loads slowly (its instances sleep 1.5 s); v2, without the manifest, loads at once.
    let plugins = dir_with_version(1, &[]);
    plugins.add_file("versioned.toml", b"[env]\nVERSIONED_START_DELAY_MS = \"1500\"\n");
    let mut server = StdioServer::start_with_args(plugins, &["--no-cache"]);
    // Once v1 is compiled the start is busy listing it for seconds: change it now.
    server.wait_for_stderr("v1 compiled during the start", |s| {
        s.lines()
            .any(|l| l.contains("compiled plugin") && l.contains("versioned.wasm"))
    });
    server.plugin_dir().remove_file("versioned.toml");
    server.plugin_dir().add_plugin_as("versioned-v2", PLUGIN);

    server.initialize(json!({}));
    server.list_all("tools/list", "tools");
    server.wait_for_stderr("both versions loaded", |s| loads_of(s, PLUGIN) == 2);
    // The directory holds v2, so v2 must be what serves in the end, whichever load finished last.
    wait_for_version(&mut server, "version", "v2");
    settle_with_marker(&mut server, "marker");
    assert_eq!(call_text(&mut server, "version", json!({})), "v2");
    server.shutdown();
}

#[test]
fn initialize_is_answered_at_once_while_plugins_still_load() {
    // Every instance of this `versioned` sleeps 1.5 s before answering
    // anything, so loading it (four list calls) takes several seconds.
    let plugins = dir_with_version(1, &["text-tools", "notes"]);
    plugins.add_file("versioned.toml", b"[env]\nVERSIONED_START_DELAY_MS = \"1500\"\n");
    let mut server = StdioServer::start_with_args(plugins, &["--no-cache"]);
    server.initialize(json!({}));
    server.request("ping", Value::Null).result();
    let stderr = server.stderr();
    assert!(
        loads_of(&stderr, PLUGIN) == 0 && !stderr.contains("plugins directory loaded"),
        "initialize and ping were answered while the slow plugin was loading; stderr:\n{stderr}"
    );
    // A list waits for the plugins present at start.
    let tools = names(&server.list_all("tools/list", "tools"));
    for tool in ["version", "reverse", "search_notes"] {
        assert!(tools.iter().any(|t| t == tool), "{tool} in {tools:?}");
    }
    server.shutdown();
}

// ---- the compiled-code cache ------------------------------------------------

/// Counts of the cache's info lines in `stderr`: (compiled, loaded from cache).
fn compile_counts(stderr: &str) -> (usize, usize) {
    let lines = || stderr.lines().filter(|l| l.contains("compiled plugin"));
    (
        lines().filter(|l| !l.contains("from cache")).count(),
        lines().filter(|l| l.contains("from cache")).count(),
    )
}

const CACHED_PLUGINS: [&str; 3] = ["text-tools", "notes", "raw-echo"];

/// Starts over `dir` with `--cache-dir cache`, checks every plugin serves,
/// shuts down and returns (compiled, loaded from cache) and stderr.
fn start_with_cache(dir: &Path, cache: &Path) -> ((usize, usize), String) {
    let mut server = StdioServer::spawn(dir, &["--cache-dir", cache.to_str().expect("a UTF-8 path")]);
    server.initialize(json!({}));
    let tools = names(&server.list_all("tools/list", "tools"));
    for tool in ["reverse", "search_notes", "echo"] {
        assert!(tools.iter().any(|t| t == tool), "{tool} in {tools:?}");
    }
    assert_eq!(call_text(&mut server, "reverse", json!({"text": "abc"})), "cba");
    assert_eq!(call_text(&mut server, "echo", json!({"message": "hi"})), "hi");
    let stderr = server.wait_for_stderr("the start to finish", |s| s.contains("plugins directory loaded"));
    server.shutdown();
    (compile_counts(&stderr), stderr)
}

fn cache_files(cache: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(cache, &mut files);
    files.sort();
    files
}

#[test]
fn a_second_start_with_an_unchanged_directory_compiles_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let plugins = PluginDir::with(&CACHED_PLUGINS);
    let cache = tempfile::tempdir().expect("a cache directory");
    let cache_dir = cache.path().join("compiled");

    let (first, stderr) = start_with_cache(plugins.path(), &cache_dir);
    assert_eq!(first, (3, 0), "a cold cache compiles every plugin; stderr:\n{stderr}");
    let mode = std::fs::metadata(&cache_dir)
        .expect("the cache directory exists")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "the cache directory is private");
    for file in cache_files(&cache_dir) {
        let mode = std::fs::metadata(&file).expect("stat an entry").permissions().mode();
        assert_eq!(mode & 0o077, 0, "{} is private to the user", file.display());
    }

    let (second, stderr) = start_with_cache(plugins.path(), &cache_dir);
    assert_eq!(second, (0, 3), "a warm cache compiles nothing; stderr:\n{stderr}");

    // A changed plugin is compiled again; the others still come from the cache.
    plugins.add_plugin_as("versioned-v1", PLUGIN);
    let (third, stderr) = start_with_cache(plugins.path(), &cache_dir);
    assert_eq!(third, (1, 3), "only the new plugin is compiled; stderr:\n{stderr}");
}

#[test]
fn a_kill_while_the_cache_is_written_leaves_no_entry_that_loads_and_no_leftovers() {
    let plugins = PluginDir::with(&CACHED_PLUGINS);
    let cache = tempfile::tempdir().expect("a cache directory");
    let cache_dir = cache.path().join("compiled");
    std::fs::create_dir_all(&cache_dir).expect("create the cache directory");
    // A write abandoned by a process long gone (no process has this id).
    let abandoned = cache_dir.join("0123-abcd.tmp4294967294-0");
    std::fs::write(&abandoned, b"half of a compiled plugin").expect("plant an abandoned write");
    // Killed while it compiles and writes its cold cache, wherever that is.
    let mut killed = StdioServer::spawn(
        plugins.path(),
        &["--cache-dir", cache_dir.to_str().expect("a UTF-8 path")],
    );
    killed.wait_for_stderr("the start to begin", |s| s.contains("watching the plugins directory"));
    killed.send_signal("KILL");
    killed.wait_for_exit("SIGKILL");

    let ((compiled, from_cache), stderr) = start_with_cache(plugins.path(), &cache_dir);
    assert_eq!(compiled + from_cache, 3, "stderr:\n{stderr}");
    assert!(
        !stderr.contains("stale or corrupt"),
        "the kill left a damaged entry behind; stderr:\n{stderr}"
    );
    let leftovers: Vec<PathBuf> = cache_files(&cache_dir)
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e.to_string_lossy().starts_with("tmp")))
        .collect();
    assert!(
        leftovers.is_empty(),
        "abandoned writes are removed at start: {leftovers:?}"
    );
}

#[test]
fn a_corrupt_cache_entry_is_detected_and_rebuilt_never_loaded() {
    let plugins = PluginDir::with(&CACHED_PLUGINS);
    let cache = tempfile::tempdir().expect("a cache directory");
    let cache_dir = cache.path().join("compiled");
    let (first, stderr) = start_with_cache(plugins.path(), &cache_dir);
    assert_eq!(first, (3, 0), "stderr:\n{stderr}");

    // Damage every entry a different way: a flipped byte, garbage, a truncation.
    let files = cache_files(&cache_dir);
    assert!(!files.is_empty(), "the cache holds entries");
    for (i, file) in files.iter().enumerate() {
        let mut bytes = read(file);
        match i % 3 {
            0 => {
                let middle = bytes.len() / 2;
                bytes[middle] ^= 0xff;
            }
            1 => bytes = b"garbage where compiled code was".repeat(100),
            _ => bytes.truncate(bytes.len() / 3),
        }
        std::fs::write(file, &bytes).unwrap_or_else(|e| panic!("damage {}: {e}", file.display()));
    }

    // Every plugin still serves (start_with_cache calls them), compiled afresh.
    let (second, stderr) = start_with_cache(plugins.path(), &cache_dir);
    assert_eq!(second, (3, 0), "every damaged entry is rebuilt; stderr:\n{stderr}");
    // And the rebuilt entries are good.
    let (third, stderr) = start_with_cache(plugins.path(), &cache_dir);
    assert_eq!(third, (0, 3), "stderr:\n{stderr}");
}

#[test]
fn a_cache_entry_filed_under_another_plugin_is_not_used() {
    let plugins = PluginDir::with(&["text-tools", "raw-echo"]);
    let cache = tempfile::tempdir().expect("a cache directory");
    let cache_dir = cache.path().join("compiled");
    let start = |expect: (usize, usize)| {
        let mut server = StdioServer::spawn(plugins.path(), &["--cache-dir", cache_dir.to_str().unwrap()]);
        server.initialize(json!({}));
        let tools = names(&server.list_all("tools/list", "tools"));
        let stderr = server.wait_for_stderr("the start to finish", |s| s.contains("plugins directory loaded"));
        assert_eq!(compile_counts(&stderr), expect, "stderr:\n{stderr}");
        // text-tools' six and raw-echo's two, each under its own plugin.
        assert_eq!(tools.len(), 8, "{tools:?}");
        let raw_echo: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("plugin loaded") && l.contains("plugin=\"raw-echo\""))
            .collect();
        assert!(
            raw_echo.len() == 1 && raw_echo[0].contains("tools=2"),
            "raw-echo loaded once, with its own two tools: {raw_echo:?}"
        );
        assert_eq!(call_text(&mut server, "echo", json!({"message": "mine"})), "mine");
        server.shutdown();
    };
    start((2, 0));

    // Swap the two entries' contents: each is intact, but filed under the other plugin.
    let files = cache_files(&cache_dir);
    assert_eq!(files.len(), 2, "{files:?}");
    let (a, b) = (read(&files[0]), read(&files[1]));
    std::fs::write(&files[0], &b).expect("swap");
    std::fs::write(&files[1], &a).expect("swap");

    start((2, 0));
}
