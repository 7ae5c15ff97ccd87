//! The deny-by-default sandbox, attacked by a real hostile plugin
//! (`tests/plugins/hostile`, built from source) that takes every target from
//! its tool arguments, as a model steered by untrusted content would.
//!
//! Each attempt must fail with a clear error while the host keeps serving,
//! and the same plugin must succeed at exactly what its manifest grants. The
//! harness fails any test on a non-JSON line (or an invalid message) on the
//! server's stdout, so every test also proves the protocol stream stayed clean.
//!
//! Network tests use servers the test itself runs on 127.0.0.1 (random
//! ports); nothing here needs the internet. The example plugins that use
//! grants (`docs-search`, `http-get`) are exercised at the end.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};
use wasm_mcp_tests::expect::{is_tool_error, single_text, tool_ok};
use wasm_mcp_tests::loopback::{TestServer, loopback_alias};
use wasm_mcp_tests::{PluginDir, StdioServer, binary};

const SECRET: &str = "the host's secret, never to be seen by a plugin";
const GREETING: &str = "hello from the granted test server";

/// A host folder layout: a read-only grant, a writable grant, and a secret
/// outside both (next to them, so `..` from a grant reaches it on the host).
struct Layout {
    root: tempfile::TempDir,
}

impl Layout {
    fn new() -> Self {
        let root = tempfile::Builder::new().prefix("wasm-mcp-sandbox-").tempdir().unwrap();
        let layout = Layout { root };
        std::fs::create_dir(layout.docs()).unwrap();
        std::fs::create_dir(layout.scratch()).unwrap();
        std::fs::write(layout.docs().join("readme.md"), "# Granted docs\n").unwrap();
        std::fs::write(layout.secret(), SECRET).unwrap();
        // Planted inside the read-only grant by someone else, pointing out of it.
        std::os::unix::fs::symlink(layout.secret(), layout.docs().join("absolute-link")).unwrap();
        std::os::unix::fs::symlink("../secret.txt", layout.docs().join("relative-link")).unwrap();
        layout
    }

    fn docs(&self) -> PathBuf {
        self.root.path().join("docs")
    }

    fn scratch(&self) -> PathBuf {
        self.root.path().join("scratch")
    }

    fn secret(&self) -> PathBuf {
        self.root.path().join("secret.txt")
    }

    /// `/docs` read-only, `/scratch` writable, and `extra` (more TOML).
    fn manifest(&self, extra: &str) -> String {
        format!(
            "[[directories]]\nhost = {:?}\nguest = \"/docs\"\n\n\
             [[directories]]\nhost = {:?}\nguest = \"/scratch\"\nwritable = true\n\n{extra}\n",
            self.docs().display().to_string(),
            self.scratch().display().to_string(),
        )
    }
}

/// A plugins directory with the hostile plugin (under `manifest`, if any)
/// and text-tools, to show the host still serves other plugins.
fn plugins(manifest: Option<&str>) -> PluginDir {
    let dir = PluginDir::with(&["text-tools"]);
    if let Some(manifest) = manifest {
        dir.add_file("hostile.toml", manifest.as_bytes());
    }
    dir.add_plugin("hostile");
    dir
}

fn serve(manifest: Option<&str>) -> StdioServer {
    let mut server = StdioServer::start(plugins(manifest));
    server.initialize(json!({}));
    server
}

/// Calls a hostile tool and returns its result.
fn call(server: &mut StdioServer, tool: &str, arguments: Value) -> Value {
    server.call_tool(tool, arguments).result().clone()
}

/// The call fails as a tool error whose text contains `needle`, and leaks no secret.
#[track_caller]
fn refused(server: &mut StdioServer, tool: &str, arguments: Value, needle: &str) -> String {
    let result = call(server, tool, arguments.clone());
    let text = single_text(&result);
    assert!(
        is_tool_error(&result),
        "{tool} {arguments} should have failed, got: {result}"
    );
    assert!(
        text.contains(needle),
        "{tool} {arguments}: the error should say {needle:?}, got: {text}"
    );
    assert!(!text.contains(SECRET), "{tool} {arguments} leaked the secret: {text}");
    text
}

/// The call succeeds; returns its text.
#[track_caller]
fn granted(server: &mut StdioServer, tool: &str, arguments: Value) -> String {
    let result = call(server, tool, arguments.clone());
    assert!(
        !is_tool_error(&result),
        "{tool} {arguments} should have succeeded, got: {result}"
    );
    single_text(&result)
}

/// The host still serves: another plugin answers, and so does the hostile one.
#[track_caller]
fn still_serving(server: &mut StdioServer) {
    let result = call(server, "reverse", json!({"text": "abc"}));
    tool_ok(&result);
    assert_eq!(single_text(&result), "cba");
    let result = call(server, "env_all", json!({}));
    tool_ok(&result);
}

// ---- files -------------------------------------------------------------------

#[test]
fn files_outside_the_grants_cannot_be_read() {
    let layout = Layout::new();
    let mut server = serve(Some(&layout.manifest("")));
    let secret = layout.secret().display().to_string();
    let plugins_dir = server.plugin_dir().path().display().to_string();

    // Granted: the read-only directory, as the plugin sees it.
    assert_eq!(
        granted(&mut server, "read_file", json!({"path": "/docs/readme.md"})),
        "# Granted docs\n"
    );
    let listing = granted(&mut server, "list_dir", json!({"path": "/docs"}));
    assert!(listing.contains("readme.md"), "{listing}");

    let host_docs = layout.docs().join("readme.md").display().to_string();
    let (absent, not_permitted) = ("No such file or directory", "Operation not permitted");
    let outside: [(&str, String, &str); 12] = [
        // The host path of the secret, and of the grant itself: not in the sandbox's namespace.
        ("read_file", secret, absent),
        ("read_file", host_docs, absent),
        ("read_file", "/etc/passwd".into(), absent),
        ("list_dir", "/".into(), absent),
        // Its own component and manifest.
        ("read_file", format!("{plugins_dir}/hostile.toml"), "No such file"),
        // `..` out of a grant.
        ("read_file", "/docs/../secret.txt".into(), not_permitted),
        ("read_file", "/docs/../../../../etc/passwd".into(), not_permitted),
        ("list_dir", "/docs/..".into(), not_permitted),
        ("read_file", "/scratch/../secret.txt".into(), not_permitted),
        // Symlinks planted inside the grant, pointing out (absolute and relative).
        ("read_file", "/docs/absolute-link".into(), not_permitted),
        ("read_file", "/docs/relative-link".into(), not_permitted),
        // Relative paths (no current directory leads out either).
        ("read_file", "../secret.txt".into(), absent),
    ];
    for (tool, path, needle) in outside {
        refused(&mut server, tool, json!({"path": path}), needle);
    }

    still_serving(&mut server);
    server.shutdown();
}

#[test]
fn a_read_only_grant_refuses_writes_and_a_writable_one_takes_them() {
    let layout = Layout::new();
    let mut server = serve(Some(&layout.manifest("")));

    refused(
        &mut server,
        "write_file",
        json!({"path": "/docs/new.md", "content": "x"}),
        "Operation not permitted",
    );
    refused(
        &mut server,
        "write_file",
        json!({"path": "/docs/readme.md", "content": "overwritten"}),
        "Operation not permitted",
    );
    refused(
        &mut server,
        "delete_file",
        json!({"path": "/docs/readme.md"}),
        "Operation not permitted",
    );
    assert!(!layout.docs().join("new.md").exists());
    assert_eq!(
        std::fs::read_to_string(layout.docs().join("readme.md")).unwrap(),
        "# Granted docs\n"
    );

    // The writable grant takes writes, and only inside it.
    granted(
        &mut server,
        "write_file",
        json!({"path": "/scratch/out.txt", "content": "made by the plugin"}),
    );
    assert_eq!(
        std::fs::read_to_string(layout.scratch().join("out.txt")).unwrap(),
        "made by the plugin"
    );
    assert_eq!(
        granted(&mut server, "read_file", json!({"path": "/scratch/out.txt"})),
        "made by the plugin"
    );
    refused(
        &mut server,
        "write_file",
        json!({"path": "/scratch/../escaped.txt", "content": "x"}),
        "Operation not permitted",
    );
    assert!(!layout.root.path().join("escaped.txt").exists());
    refused(
        &mut server,
        "write_file",
        json!({"path": "/docs/absolute-link", "content": "x"}),
        "Operation not permitted",
    );

    // A symlink the plugin plants itself: an absolute target is refused; a
    // relative one may be created but leads nowhere outside.
    refused(
        &mut server,
        "make_symlink",
        json!({"target": layout.secret().display().to_string(), "link": "/scratch/abs"}),
        "Operation not permitted",
    );
    let _ = call(
        &mut server,
        "make_symlink",
        json!({"target": "../secret.txt", "link": "/scratch/rel"}),
    );
    refused(
        &mut server,
        "read_file",
        json!({"path": "/scratch/rel"}),
        "Operation not permitted",
    );
    refused(
        &mut server,
        "write_file",
        json!({"path": "/scratch/rel", "content": "overwritten"}),
        "Operation not permitted",
    );
    assert_eq!(std::fs::read_to_string(layout.secret()).unwrap(), SECRET);

    still_serving(&mut server);
    server.shutdown();
}

#[test]
fn without_a_manifest_a_plugin_sees_no_files_at_all() {
    let layout = Layout::new();
    let mut server = serve(None);
    refused(
        &mut server,
        "read_file",
        json!({"path": "/docs/readme.md"}),
        "No such file or directory",
    );
    let secret = layout.secret().display().to_string();
    refused(
        &mut server,
        "read_file",
        json!({"path": secret}),
        "No such file or directory",
    );
    refused(
        &mut server,
        "write_file",
        json!({"path": "/tmp/x", "content": "x"}),
        "No such file or directory",
    );
    refused(
        &mut server,
        "list_dir",
        json!({"path": "."}),
        "No such file or directory",
    );
    still_serving(&mut server);
    server.shutdown();
}

// ---- environment -------------------------------------------------------------

#[test]
fn only_granted_environment_variables_are_visible() {
    let layout = Layout::new();
    let manifest = layout.manifest(
        "[env]\nGRANTED_LITERAL = \"literal value\"\nGRANTED_COPY = { from_host = \"WASM_MCP_TEST_COPIED\" }\n",
    );
    let dir = plugins(Some(&manifest));
    let mut command = Command::new(binary());
    command
        .arg("serve")
        .arg("--plugins")
        .arg(dir.path())
        .env("WASM_MCP_TEST_COPIED", "copied value")
        .env("WASM_MCP_TEST_SECRET_TOKEN", SECRET);
    let mut server = StdioServer::spawn_command(command);
    server.initialize(json!({}));

    assert_eq!(
        granted(&mut server, "env_var", json!({"name": "GRANTED_LITERAL"})),
        "literal value"
    );
    assert_eq!(
        granted(&mut server, "env_var", json!({"name": "GRANTED_COPY"})),
        "copied value"
    );
    for name in [
        "WASM_MCP_TEST_SECRET_TOKEN",
        "WASM_MCP_TEST_COPIED",
        "HOME",
        "PATH",
        "USER",
    ] {
        refused(
            &mut server,
            "env_var",
            json!({"name": name}),
            "environment variable not found",
        );
    }
    // Exactly the grants, and no arguments.
    assert_eq!(
        granted(&mut server, "env_all", json!({})),
        "GRANTED_COPY=copied value\nGRANTED_LITERAL=literal value\nargs=[]"
    );
    still_serving(&mut server);
    server.shutdown();
    drop(dir);
}

// ---- network -----------------------------------------------------------------

#[test]
fn a_granted_loopback_port_is_reachable_and_nothing_else_is() {
    let allowed = TestServer::greeting(GREETING);
    let forbidden = TestServer::greeting("you should never read this");
    let manifest = format!("[network]\nallow = [\"127.0.0.1:{}\"]\n", allowed.port);
    let mut server = serve(Some(&manifest));

    let answer = granted(
        &mut server,
        "connect",
        json!({"address": format!("127.0.0.1:{}", allowed.port)}),
    );
    assert_eq!(answer, GREETING);
    assert_eq!(allowed.connections(), 1);

    let denied = "Permission denied";
    // Another port on the same (granted) address, live and listening.
    refused(
        &mut server,
        "connect",
        json!({"address": format!("127.0.0.1:{}", forbidden.port)}),
        denied,
    );
    // The same port through other spellings of loopback.
    for address in [format!("127.0.0.2:{}", allowed.port), format!("[::1]:{}", allowed.port)] {
        refused(&mut server, "connect", json!({"address": address}), denied);
    }
    // IPv4-mapped IPv6: wasmtime-wasi rejects it outright (invalid argument).
    let mapped = format!("[::ffff:127.0.0.1]:{}", forbidden.port);
    refused(&mut server, "connect", json!({"address": mapped}), "cannot connect");
    refused(
        &mut server,
        "connect",
        json!({"address": format!("0.0.0.0:{}", forbidden.port)}),
        "cannot connect",
    );
    // A name that is not granted: the lookup itself is refused.
    refused(
        &mut server,
        "connect",
        json!({"address": format!("localhost:{}", forbidden.port)}),
        denied,
    );
    refused(&mut server, "resolve", json!({"name": "localhost"}), denied);
    refused(&mut server, "resolve", json!({"name": "example.com"}), denied);
    refused(&mut server, "connect", json!({"address": "example.com:80"}), denied);
    // Cloud metadata and link-local, refused before any packet is sent.
    refused(&mut server, "connect", json!({"address": "169.254.169.254:80"}), denied);
    refused(&mut server, "connect", json!({"address": "[fd00:ec2::254]:80"}), denied);
    refused(&mut server, "connect", json!({"address": "169.254.1.1:80"}), denied);
    // A routable address nobody granted.
    refused(&mut server, "connect", json!({"address": "93.184.216.34:80"}), denied);

    assert_eq!(
        forbidden.connections(),
        0,
        "a refused connection reached the other server"
    );
    assert_eq!(allowed.connections(), 1);
    let stderr = server.stderr();
    assert!(
        stderr.contains("network access refused") && stderr.contains("name lookup refused"),
        "refusals are logged for the operator:\n{stderr}"
    );
    still_serving(&mut server);
    server.shutdown();
}

#[test]
fn without_a_network_grant_every_socket_and_lookup_is_refused() {
    let target = TestServer::greeting(GREETING);
    let mut server = serve(None);
    refused(
        &mut server,
        "connect",
        json!({"address": format!("127.0.0.1:{}", target.port)}),
        "",
    );
    refused(&mut server, "connect", json!({"address": "169.254.169.254:80"}), "");
    refused(&mut server, "resolve", json!({"name": "localhost"}), "");
    refused(&mut server, "resolve", json!({"name": "example.com"}), "");
    assert_eq!(target.connections(), 0);
    still_serving(&mut server);
    server.shutdown();
}

#[test]
fn the_name_localhost_grants_loopback_by_name() {
    let target = TestServer::greeting(GREETING);
    let other = TestServer::greeting("you should never read this");
    let manifest = format!("[network]\nallow = [\"localhost:{}\"]\n", target.port);
    let mut server = serve(Some(&manifest));
    assert!(granted(&mut server, "resolve", json!({"name": "localhost"})).contains("127.0.0.1"));
    assert_eq!(
        granted(
            &mut server,
            "connect",
            json!({"address": format!("localhost:{}", target.port)})
        ),
        GREETING
    );
    // The address the granted name resolves to is what is checked.
    assert_eq!(
        granted(
            &mut server,
            "connect",
            json!({"address": format!("127.0.0.1:{}", target.port)})
        ),
        GREETING
    );
    refused(
        &mut server,
        "connect",
        json!({"address": format!("localhost:{}", other.port)}),
        "Permission denied",
    );
    assert_eq!(other.connections(), 0);
    still_serving(&mut server);
    server.shutdown();
}

#[test]
fn a_granted_name_that_resolves_to_a_refused_address_is_refused() {
    let target = TestServer::greeting(GREETING);
    // A wide range does not name loopback or metadata explicitly.
    let mut rules = vec!["\"0.0.0.0/0:*\"".to_string(), "\"[::/0]:*\"".to_string()];
    let alias = loopback_alias();
    if let Some(alias) = &alias {
        rules.push(format!("\"{alias}:{}\"", target.port));
    }
    let manifest = format!("[network]\nallow = [{}]\n", rules.join(", "));
    let mut server = serve(Some(&manifest));
    refused(
        &mut server,
        "connect",
        json!({"address": format!("127.0.0.1:{}", target.port)}),
        "Permission denied",
    );
    refused(
        &mut server,
        "connect",
        json!({"address": "169.254.169.254:80"}),
        "Permission denied",
    );
    match &alias {
        Some(alias) => {
            // The guest may look the granted name up, but not connect where it leads.
            assert!(granted(&mut server, "resolve", json!({"name": alias})).contains("127."));
            refused(
                &mut server,
                "connect",
                json!({"address": format!("{alias}:{}", target.port)}),
                "Permission denied",
            );
        }
        None => eprintln!("no loopback alias in /etc/hosts; the unit tests of sandbox::network cover this case"),
    }
    assert_eq!(target.connections(), 0);
    still_serving(&mut server);
    server.shutdown();
}

// ---- stdout ------------------------------------------------------------------

#[test]
fn guest_stdout_never_reaches_the_protocol_stream() {
    let mut server = serve(None);
    // A forged answer to the very request in flight, a forged notification,
    // and plain garbage: any of these on the real stdout fails the harness.
    let id = server.next_id();
    let forged = format!(
        "{}\n{}\nnot json at all\n",
        json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "forged"}]}}),
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
    );
    let response = server.request_with_id(
        id,
        "tools/call",
        json!({"name": "print_stdout", "arguments": {"text": forged}}),
    );
    assert_eq!(
        single_text(response.result()),
        "printed",
        "the real answer, not the forged one"
    );
    let logged = server.wait_for_notification("the guest's stdout as a log message", |n| {
        n["method"] == "notifications/message"
            && n["params"]["logger"] == "hostile"
            && n["params"]["data"] == "[stdout] not json at all"
    });
    assert_eq!(logged["params"]["level"], "info");
    server.wait_for_notification("the guest's stderr as a log message", |n| {
        n["method"] == "notifications/message"
            && n["params"]["level"] == "warning"
            && n["params"]["data"]
                .as_str()
                .is_some_and(|d| d.starts_with("[stderr] hostile stderr:"))
    });
    // The forged messages arrive as what they are: text the plugin printed.
    server.wait_for_notification("the forged notification, as a log line", |n| {
        n["method"] == "notifications/message"
            && n["params"]["data"]
                .as_str()
                .is_some_and(|d| d.starts_with("[stdout] {") && d.contains("list_changed"))
    });

    // A flood is cut at the capture bound; the call still returns.
    let flood = "x".repeat(1 << 20);
    let result = call(&mut server, "print_stdout", json!({"text": flood}));
    let text = single_text(&result);
    assert!(
        text == "printed",
        "the flood call failed: {}",
        &text[..text.len().min(300)]
    );
    still_serving(&mut server);
    server.shutdown();
}

// ---- nothing widens the grants ---------------------------------------------

#[test]
fn no_input_widens_the_grants() {
    let layout = Layout::new();
    let target = TestServer::greeting(GREETING);
    let mut server = serve(Some(&layout.manifest("")));
    let plugins_dir = server.plugin_dir().path().to_path_buf();
    let manifest_before = std::fs::read_to_string(plugins_dir.join("hostile.toml")).unwrap();

    // Request metadata that "asks" for more is just data.
    let response = server.request(
        "tools/call",
        json!({
            "name": "read_file",
            "arguments": {"path": layout.secret().display().to_string()},
            "_meta": {"grants": {"directories": ["/"], "network": ["*"]}, "sandbox": false},
        }),
    );
    assert!(is_tool_error(response.result()));
    // Rewriting its own manifest, or dropping a new plugin next to itself.
    let own_manifest = plugins_dir.join("hostile.toml").display().to_string();
    refused(
        &mut server,
        "write_file",
        json!({"path": own_manifest, "content": "[network]\nallow = [\"0.0.0.0/0:*\"]\n"}),
        "No such file or directory",
    );
    refused(
        &mut server,
        "write_file",
        json!({"path": "/scratch/../hostile.toml", "content": "[env]\nHOME = { from_host = \"HOME\" }\n"}),
        "Operation not permitted",
    );
    let new_plugin = plugins_dir.join("evil.wasm").display().to_string();
    refused(
        &mut server,
        "write_file",
        json!({"path": new_plugin, "content": "\0asm"}),
        "No such file",
    );
    assert_eq!(
        std::fs::read_to_string(plugins_dir.join("hostile.toml")).unwrap(),
        manifest_before
    );
    assert!(!plugins_dir.join("evil.wasm").exists());
    // Arguments naming a host, a variable, a path: refused as before.
    refused(
        &mut server,
        "connect",
        json!({"address": format!("127.0.0.1:{}", target.port)}),
        "",
    );
    refused(
        &mut server,
        "env_var",
        json!({"name": "HOME"}),
        "environment variable not found",
    );
    refused(
        &mut server,
        "read_file",
        json!({"path": "/docs/../secret.txt"}),
        "Operation not permitted",
    );
    assert_eq!(target.connections(), 0);
    // A prompt or resource request naming a file is not a way in either.
    let response = server.request(
        "resources/read",
        json!({"uri": format!("file://{}", layout.secret().display())}),
    );
    let error = response.error();
    assert!(!error.message.contains(SECRET), "{}", error.message);
    still_serving(&mut server);
    server.shutdown();
}

// ---- the example plugins that use grants --------------------------------------

#[test]
fn docs_search_reads_its_granted_folder_and_nothing_else() {
    let mut server = StdioServer::start_initialized(&["docs-search"]);
    let result = call(&mut server, "search_docs", json!({"query": "manifest grants"}));
    tool_ok(&result);
    let matches = result["structuredContent"]["matches"].as_array().unwrap().clone();
    assert!(matches.iter().any(|m| m["path"] == "guides/manifest.md"), "{result}");
    let text = granted(&mut server, "read_doc", json!({"path": "guides/network.md"}));
    assert!(text.starts_with("# Network grants"), "{text}");
    let resources = server.list_all("resources/list", "resources");
    assert!(
        resources.iter().any(|r| r["uri"] == "docs:///getting-started.md"),
        "{resources:?}"
    );
    // The plugin's own check, then the sandbox's (a path it does not check).
    let result = call(&mut server, "read_doc", json!({"path": "../../../etc/passwd"}));
    assert!(is_tool_error(&result), "{result}");
    let cargo_toml = docs_search_dir().join("Cargo.toml").display().to_string();
    let result = call(&mut server, "read_doc", json!({"path": cargo_toml}));
    assert!(
        is_tool_error(&result) && single_text(&result).contains("No such file"),
        "{result}"
    );
    server.shutdown();
}

fn docs_search_dir() -> PathBuf {
    wasm_mcp_tests::workspace_root().join("plugins/docs-search")
}

#[test]
fn http_get_fetches_from_a_granted_host_only() {
    let web = TestServer::http("served to http-get");
    let plugins = PluginDir::empty();
    plugins.add_plugin("http-get");
    // The test's own grant instead of the shipped one (which names example.com).
    plugins.add_file(
        "http-get.toml",
        format!("[network]\nallow = [\"127.0.0.1:{}\"]\n", web.port).as_bytes(),
    );
    let mut server = StdioServer::start(plugins);
    server.initialize(json!({}));
    let result = call(
        &mut server,
        "http_get",
        json!({"url": format!("http://127.0.0.1:{}/hello", web.port)}),
    );
    tool_ok(&result);
    assert_eq!(result["structuredContent"]["status"], 200, "{result}");
    assert_eq!(result["structuredContent"]["body"], "served to http-get");
    for url in [
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://example.com/".to_string(),
        format!("http://localhost:{}/", web.port),
    ] {
        let result = call(&mut server, "http_get", json!({"url": url}));
        assert!(is_tool_error(&result), "{url}: {result}");
        assert!(single_text(&result).contains("Permission denied"), "{url}: {result}");
    }
    assert_eq!(web.connections(), 1);
    server.shutdown();
}
