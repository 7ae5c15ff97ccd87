//! Plugins from an OCI registry, against a real one (Debian's
//! `docker-registry`, over HTTPS from a test CA, with a password): published
//! with `push`, pinned with `add`, served and called, followed by `update`
//! (with list_changed) and `remove`; served from the store with the registry
//! down; and every refusal said clearly: content that does not match its
//! digest, a plugin over the size bound, a bad reference, a missing tag,
//! wrong or missing credentials, an untrusted certificate. Three servers
//! given one lockfile serve the same bytes. A registry that asks for bearer
//! tokens (the distribution spec's handshake) is reached with the same
//! credentials, and Docker's credential helpers are asked when named.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use wasm_mcp_tests::command::{fails, succeeds};
use wasm_mcp_tests::expect::{names, single_text};
use wasm_mcp_tests::process::serve_command;
use wasm_mcp_tests::registry::{PASSWORD, TestRegistry, USER};
use wasm_mcp_tests::{PluginDir, StdioServer, plugin_wasm};

fn is(method: &'static str) -> impl Fn(&Value) -> bool {
    move |n| n["method"] == method
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// A folder to publish from: `NAME.wasm` copied from the built plugin
/// `built`, with `manifest` as `NAME.toml` if given.
struct Publishing {
    dir: tempfile::TempDir,
}

impl Publishing {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn plugin(&self, built: &str, name: &str, manifest: Option<&str>) -> PathBuf {
        let folder = self.dir.path().join(format!("{built}-{}", manifest.is_some()));
        std::fs::create_dir_all(&folder).unwrap();
        let wasm = folder.join(format!("{name}.wasm"));
        std::fs::copy(plugin_wasm(built), &wasm).unwrap();
        if let Some(manifest) = manifest {
            std::fs::write(wasm.with_extension("toml"), manifest).unwrap();
        }
        wasm
    }
}

/// `wasm-mcp push WASM REF`: the digest pushed.
fn push(registry: &TestRegistry, cache: &Path, wasm: &Path, reference: &str) -> String {
    let mut command = registry.wasm_mcp(cache);
    command.arg("push").arg(wasm).arg(reference);
    let out = succeeds(command);
    let pinned = out.trim();
    assert!(pinned.starts_with(&format!("{reference}@sha256:")), "{out}");
    pinned.rsplit('@').next().unwrap().to_owned()
}

fn add(registry: &TestRegistry, cache: &Path, plugins: &Path, reference: &str) -> Command {
    let mut command = registry.wasm_mcp(cache);
    command.arg("add").arg(reference).arg("--plugins").arg(plugins);
    command
}

fn serve(registry: &TestRegistry, cache: &Path, plugins: &Path, args: &[&str]) -> StdioServer {
    let mut command = serve_command(plugins);
    registry.configure(&mut command, cache);
    command.args(args);
    let mut server = StdioServer::spawn_command(command);
    server.initialize(json!({}));
    server.wait_until_loaded();
    server
}

fn tools(server: &mut StdioServer) -> Vec<String> {
    names(&server.list_all("tools/list", "tools"))
}

/// Waits, through tools/list_changed notifications, until the tools served
/// satisfy `done` (`what` says what is awaited).
fn wait_for_tools(server: &mut StdioServer, what: &str, done: impl Fn(&[String]) -> bool) {
    while !done(&tools(server)) {
        server.wait_for_notification(
            &format!("tools/list_changed: {what}"),
            is("notifications/tools/list_changed"),
        );
    }
}

#[test]
fn a_pushed_plugin_is_added_served_updated_with_list_changed_and_removed() {
    let registry = TestRegistry::start();
    let cache = tempfile::tempdir().unwrap();
    let plugins = PluginDir::empty();
    let publishing = Publishing::new();
    let reference = registry.reference("tools/versioned:stable");

    let v1 = push(
        &registry,
        cache.path(),
        &publishing.plugin("versioned-v1", "versioned", None),
        &reference,
    );
    let added = succeeds(add(&registry, cache.path(), plugins.path(), &reference));
    for line in [
        "Added versioned from",
        &format!("digest    {v1}"),
        &format!("registry  {}", registry.addr),
        "manifest  none published: it is granted nothing",
    ] {
        assert!(added.contains(line), "{line:?} in:\n{added}");
    }
    let lock = std::fs::read_to_string(plugins.path().join("plugins.lock")).unwrap();
    assert!(
        lock.contains(&format!("reference = \"{reference}\"")) && lock.contains(&v1),
        "{lock}"
    );

    let mut server = serve(&registry, cache.path(), plugins.path(), &[]);
    assert!(tools(&mut server).contains(&"version".to_owned()));
    assert_eq!(single_text(server.call_tool("version", json!({})).result()), "v1");

    // A new version under the same tag, published with a manifest that
    // prefixes its names: `update` pins it, and the server follows.
    let v2 = push(
        &registry,
        cache.path(),
        &publishing.plugin("versioned-v2", "versioned", Some("prefix = \"next\"\n")),
        &reference,
    );
    assert_ne!(v1, v2);
    let mut update = registry.wasm_mcp(cache.path());
    update.arg("update").arg("--plugins").arg(plugins.path());
    let updated = succeeds(update);
    assert!(updated.contains(&format!("{v1} -> {v2}")), "{updated}");
    assert!(updated.contains("manifest  published with it"), "{updated}");
    assert!(updated.contains("1 plugin(s) updated"), "{updated}");
    server.wait_for_notification(
        "tools/list_changed after update",
        is("notifications/tools/list_changed"),
    );
    wait_for_tools(&mut server, "the update", |t| t.contains(&"next_version".to_owned()));
    assert_eq!(single_text(server.call_tool("next_version", json!({})).result()), "v2");

    // `pull` fetches it back as a drop-in pair.
    let out = cache.path().join("fetched.wasm");
    let mut pull = registry.wasm_mcp(cache.path());
    pull.arg("pull").arg(&reference).arg("-o").arg(&out);
    assert_eq!(succeeds(pull).trim(), format!("{reference}@{v2}"));
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(plugin_wasm("versioned-v2")).unwrap()
    );
    assert_eq!(
        std::fs::read_to_string(out.with_extension("toml")).unwrap(),
        "prefix = \"next\"\n"
    );

    // `check` says where it comes from.
    let mut check = registry.wasm_mcp(cache.path());
    check.arg("check").arg(plugins.path());
    let report = succeeds(check);
    for line in [
        format!("source    {reference} (plugins.lock)"),
        format!("registry  {}", registry.addr),
        format!("digest    {v2}"),
    ] {
        assert!(report.contains(&line), "{line:?} in:\n{report}");
    }

    let mut remove = registry.wasm_mcp(cache.path());
    remove
        .arg("remove")
        .arg("versioned")
        .arg("--plugins")
        .arg(plugins.path());
    assert!(succeeds(remove).contains("removed versioned"));
    wait_for_tools(&mut server, "the removal", |t| t.is_empty());
    server.shutdown();
}

#[test]
fn a_start_with_the_registry_down_serves_what_the_store_holds_and_names_what_it_lacks() {
    let mut registry = TestRegistry::start();
    let (warm, other) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let plugins = PluginDir::empty();
    let publishing = Publishing::new();
    let versioned = registry.reference("tools/versioned:1");
    let echo = registry.reference("tools/raw-echo:1");
    push(
        &registry,
        warm.path(),
        &publishing.plugin("versioned-v1", "versioned", None),
        &versioned,
    );
    push(
        &registry,
        warm.path(),
        &publishing.plugin("raw-echo", "raw-echo", None),
        &echo,
    );
    succeeds(add(&registry, warm.path(), plugins.path(), &versioned));
    // Added through another cache: this one's store never held it.
    succeeds(add(&registry, other.path(), plugins.path(), &echo));
    registry.stop();

    let mut server = serve(&registry, warm.path(), plugins.path(), &["--pull-retries", "1"]);
    let served = tools(&mut server);
    assert!(served.contains(&"version".to_owned()), "{served:?}");
    assert!(!served.contains(&"echo".to_owned()), "{served:?}");
    let stderr = server.stderr();
    let failure = stderr
        .lines()
        .find(|l| l.contains("plugin failed to load") && l.contains("raw-echo"))
        .unwrap_or_else(|| panic!("no load failure for raw-echo:\n{stderr}"));
    assert!(
        failure.contains(&format!("cannot pull {echo}@sha256:")) && failure.contains("cannot reach the registry"),
        "{failure}"
    );
    server.shutdown();
}

#[test]
fn content_that_does_not_match_its_digest_is_refused() {
    let registry = TestRegistry::start();
    let cache = tempfile::tempdir().unwrap();
    let plugins = PluginDir::empty();
    let publishing = Publishing::new();
    let wasm = publishing.plugin("raw-echo", "raw-echo", None);
    let reference = registry.reference("tools/raw-echo:1");
    push(&registry, cache.path(), &wasm, &reference);
    // The registry's copy of the component, changed in place (same size).
    let blob = registry.blob_path(&sha256(&std::fs::read(&wasm).unwrap()));
    let mut bytes = std::fs::read(&blob).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&blob, bytes).unwrap();

    let fresh = tempfile::tempdir().unwrap();
    let stderr = fails(add(&registry, fresh.path(), plugins.path(), &reference));
    assert!(stderr.contains("does not match its digest"), "{stderr}");
    assert!(!plugins.path().join("plugins.lock").exists(), "nothing is pinned");
    let mut pull = registry.wasm_mcp(fresh.path());
    pull.arg("pull")
        .arg(&reference)
        .arg("-o")
        .arg(fresh.path().join("out.wasm"));
    assert!(fails(pull).contains("does not match its digest"));
    assert!(!fresh.path().join("out.wasm").exists());
}

#[test]
fn a_plugin_larger_than_the_bound_is_refused_before_it_is_pulled() {
    let registry = TestRegistry::start();
    let cache = tempfile::tempdir().unwrap();
    let plugins = PluginDir::empty();
    // The Python plugin: its interpreter makes it tens of MiB.
    let python = plugin_wasm("stats");
    let size = std::fs::metadata(&python).unwrap().len();
    assert!(size > 2 << 20, "{} is {size} bytes", python.display());
    let publishing = Publishing::new();
    let wasm = publishing.plugin("stats", "stats", None);
    let reference = registry.reference("tools/python:1");
    push(&registry, cache.path(), &wasm, &reference);
    let fresh = tempfile::tempdir().unwrap();
    let mut command = add(&registry, fresh.path(), plugins.path(), &reference);
    command.args(["--max-plugin-mib", "1"]);
    let stderr = fails(command);
    assert!(
        stderr.contains(&format!("is {size} bytes, more than the 1 MiB a plugin may take"))
            && stderr.contains("--max-plugin-mib"),
        "{stderr}"
    );
}

#[test]
fn a_bad_reference_a_missing_tag_and_wrong_credentials_are_each_said_clearly() {
    let registry = TestRegistry::start();
    let cache = tempfile::tempdir().unwrap();
    let plugins = PluginDir::empty();
    let reference = registry.reference("tools/raw-echo:1");
    let publishing = Publishing::new();
    push(
        &registry,
        cache.path(),
        &publishing.plugin("raw-echo", "raw-echo", None),
        &reference,
    );
    let says = |mut command: Command, what: &[&str]| {
        command.args(["--pull-retries", "0"]);
        let stderr = fails(command);
        for w in what {
            assert!(stderr.contains(w), "{w:?} in:\n{stderr}");
        }
    };
    says(
        add(&registry, cache.path(), plugins.path(), "raw-echo:1"),
        &["names no registry"],
    );
    says(
        add(
            &registry,
            cache.path(),
            plugins.path(),
            &registry.reference("tools/raw-echo"),
        ),
        &["names no tag or digest"],
    );
    says(
        add(
            &registry,
            cache.path(),
            plugins.path(),
            &registry.reference("tools/raw-echo:2"),
        ),
        &["has no tag 2 in tools/raw-echo"],
    );
    let wrong = cache.path().join("wrong.json");
    std::fs::write(
        &wrong,
        format!(
            r#"{{"auths": {{"{}": {{"auth": "dGVzdGVyOndyb25n"}}}}}}"#,
            registry.addr
        ),
    )
    .unwrap();
    let mut command = add(&registry, cache.path(), plugins.path(), &reference);
    command.env("REGISTRY_AUTH_FILE", &wrong);
    says(command, &[&format!("refused the credentials from {}", wrong.display())]);
    let mut command = add(&registry, cache.path(), plugins.path(), &reference);
    command.env_remove("REGISTRY_AUTH_FILE");
    says(
        command,
        &["wants credentials", "none are set for it", "WASM_MCP_REGISTRY_USERNAME"],
    );
    let mut command = add(&registry, cache.path(), plugins.path(), &reference);
    command
        .env_remove("REGISTRY_AUTH_FILE")
        .env("WASM_MCP_REGISTRY_USERNAME", USER)
        .env("WASM_MCP_REGISTRY_PASSWORD", "wrong");
    says(
        command,
        &["refused the credentials from the environment (WASM_MCP_REGISTRY_USERNAME"],
    );
    let mut command = add(&registry, cache.path(), plugins.path(), &reference);
    command.env_remove("WASM_MCP_REGISTRY_CA_FILE");
    says(
        command,
        &["cannot reach the registry", "certificate", "--registry-ca-file"],
    );
    assert!(!plugins.path().join("plugins.lock").exists(), "nothing was pinned");
}

/// The status page's plugins: name → sha256 of the component served.
fn served_digests(status: &str) -> Vec<(String, String)> {
    let mut stream = TcpStream::connect(status).unwrap();
    write!(
        stream,
        "GET /status.json HTTP/1.1\r\nHost: {status}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    let status: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"));
    status["plugins"]
        .as_object()
        .unwrap_or_else(|| panic!("no plugins in {status}"))
        .iter()
        .map(|(name, p)| (name.clone(), p["sha256"].as_str().unwrap_or("none").to_owned()))
        .collect()
}

#[test]
fn three_servers_given_one_lockfile_serve_the_same_digests() {
    let registry = TestRegistry::start();
    let cache = tempfile::tempdir().unwrap();
    let plugins = PluginDir::empty();
    let publishing = Publishing::new();
    let mut expected = Vec::new();
    for (built, name) in [("versioned-v1", "versioned"), ("raw-echo", "raw-echo")] {
        let wasm = publishing.plugin(built, name, None);
        let reference = registry.reference(&format!("tools/{name}:1"));
        push(&registry, cache.path(), &wasm, &reference);
        succeeds(add(&registry, cache.path(), plugins.path(), &reference));
        expected.push((name.to_owned(), sha256(&std::fs::read(&wasm).unwrap())[7..].to_owned()));
    }
    expected.sort();
    let replicas: Vec<_> = (0..3)
        .map(|_| {
            // Each with a store of its own: each pulls.
            let cache = tempfile::tempdir().unwrap();
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let status = format!("127.0.0.1:{port}");
            let server = serve(&registry, cache.path(), plugins.path(), &["--status", &status]);
            (server, status, cache)
        })
        .collect();
    for (_, status, _) in &replicas {
        assert_eq!(served_digests(status), expected);
    }
    for (server, _, _) in replicas {
        server.shutdown();
    }
}

#[test]
fn a_name_both_a_file_and_the_lockfile_give_serves_neither() {
    let registry = TestRegistry::start();
    let cache = tempfile::tempdir().unwrap();
    let plugins = PluginDir::with(&["text-tools"]);
    let publishing = Publishing::new();
    let reference = registry.reference("tools/raw-echo:1");
    push(
        &registry,
        cache.path(),
        &publishing.plugin("raw-echo", "raw-echo", None),
        &reference,
    );
    // `add` refuses a name a file has.
    let mut taken = add(&registry, cache.path(), plugins.path(), &reference);
    taken.args(["--name", "text-tools"]);
    assert!(fails(taken).contains("text-tools.wasm is already a plugin of"));
    succeeds(add(&registry, cache.path(), plugins.path(), &reference));

    let mut server = serve(&registry, cache.path(), plugins.path(), &[]);
    assert!(tools(&mut server).contains(&"echo".to_owned()));
    // A file of the same name dropped in: neither shadows the other.
    plugins.add_plugin_as("text-tools", "raw-echo");
    wait_for_tools(&mut server, "echo gone with the clash", |t| {
        !t.contains(&"echo".to_owned())
    });
    let clash = server.wait_for_notification("the clash told to the client", |n| {
        n["method"] == "notifications/message" && n["params"]["logger"] == "raw-echo"
    });
    let error = clash["params"]["data"]["error"].as_str().unwrap();
    assert!(
        error.contains("both name plugin raw-echo: neither is served"),
        "{error}"
    );
    // The file goes: the locked plugin is back.
    plugins.remove_file("raw-echo.wasm");
    wait_for_tools(&mut server, "echo back once the file went", |t| {
        t.contains(&"echo".to_owned())
    });
    server.shutdown();
}

#[test]
fn credentials_from_the_environment_and_a_loopback_registry_without_tls_work() {
    let registry = TestRegistry::start();
    let cache = tempfile::tempdir().unwrap();
    let plugins = PluginDir::empty();
    let publishing = Publishing::new();
    let wasm = publishing.plugin("raw-echo", "raw-echo", None);
    let mut push = registry.wasm_mcp(cache.path());
    push.env_remove("REGISTRY_AUTH_FILE")
        .env("WASM_MCP_REGISTRY_USERNAME", USER)
        .env("WASM_MCP_REGISTRY_PASSWORD", PASSWORD)
        .arg("push")
        .arg(&wasm)
        .arg(registry.reference("tools/raw-echo:1"));
    succeeds(push);

    // Plain HTTP, no password: reached by falling back from HTTPS (loopback only).
    let plain = TestRegistry::start_plain();
    let reference = plain.reference("tools/raw-echo:1");
    push_and_add_over_plain_http(&plain, cache.path(), &wasm, plugins.path(), &reference);
    let mut server = serve(&plain, cache.path(), plugins.path(), &[]);
    let echoed = server.call_tool("echo", json!({"message": "plain"})).result().clone();
    assert_eq!(single_text(&echoed), "plain");
    server.shutdown();
}

fn push_and_add_over_plain_http(plain: &TestRegistry, cache: &Path, wasm: &Path, plugins: &Path, reference: &str) {
    push(plain, cache, wasm, reference);
    let added = succeeds(add(plain, cache, plugins, reference));
    assert!(added.contains(&format!("registry  {}", plain.addr)), "{added}");
}

#[test]
fn a_registry_that_asks_for_bearer_tokens_is_reached_through_the_handshake() {
    let registry = TestRegistry::start_with_token_auth();
    let cache = tempfile::tempdir().unwrap();
    let plugins = PluginDir::empty();
    let publishing = Publishing::new();
    let reference = registry.reference("tokens/versioned:1");
    let digest = push(
        &registry,
        cache.path(),
        &publishing.plugin("versioned-v1", "versioned", None),
        &reference,
    );
    let asked = registry.token_server().requests();
    assert!(
        asked.iter().any(|request| request.admitted
            && request
                .scopes
                .iter()
                .any(|scope| scope.starts_with("repository:tokens/versioned:") && scope.contains("push"))),
        "the push asked for a token to push, with the password: {asked:?}"
    );
    succeeds(add(&registry, cache.path(), plugins.path(), &reference));

    // A server with a store of its own pulls the locked digest through the handshake too.
    let before = registry.token_server().requests().len();
    let fresh = tempfile::tempdir().unwrap();
    let mut server = serve(&registry, fresh.path(), plugins.path(), &[]);
    assert_eq!(single_text(server.call_tool("version", json!({})).result()), "v1");
    server.shutdown();
    let asked = registry.token_server().requests();
    assert!(
        asked[before..].iter().any(|request| request.admitted
            && request
                .scopes
                .iter()
                .any(|scope| scope == "repository:tokens/versioned:pull")),
        "serving asked for a token to pull: {asked:?}"
    );
    assert!(
        std::fs::read_to_string(plugins.path().join("plugins.lock"))
            .unwrap()
            .contains(&digest)
    );

    // The token server refusing the password is said as the registry refusing it.
    let mut command = add(&registry, cache.path(), plugins.path(), &reference);
    command
        .env_remove("REGISTRY_AUTH_FILE")
        .env("WASM_MCP_REGISTRY_USERNAME", USER)
        .env("WASM_MCP_REGISTRY_PASSWORD", "wrong")
        .args(["--name", "another", "--pull-retries", "0"]);
    let stderr = fails(command);
    assert!(
        stderr.contains("refused the credentials from the environment"),
        "{stderr}"
    );
    assert!(!stderr.contains("wrong"), "the password is never shown: {stderr}");
}

/// Writes the credential helper `docker-credential-NAME` into `dir`: a
/// script that answers `get` for `registry` with `user` and `password`, and
/// that it has nothing for any other registry, as Docker's helpers do.
fn credential_helper(dir: &Path, name: &str, registry: &str, user: &str, password: &str) {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join(format!("docker-credential-{name}"));
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n[ \"$1\" = get ] || exit 2\nread -r server\n\
             if [ \"$server\" = \"{registry}\" ]; then\n\
             printf '{{\"ServerURL\":\"%s\",\"Username\":\"{user}\",\"Secret\":\"{password}\"}}' \"$server\"\n\
             else echo 'credentials not found in native keychain'; exit 1; fi\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn credential_helpers_named_in_the_docker_config_are_asked() {
    let registry = TestRegistry::start();
    let cache = tempfile::tempdir().unwrap();
    let plugins = PluginDir::empty();
    let reference = registry.reference("helped/raw-echo:1");
    let publishing = Publishing::new();
    push(
        &registry,
        cache.path(),
        &publishing.plugin("raw-echo", "raw-echo", None),
        &reference,
    );
    let helpers = tempfile::tempdir().unwrap();
    credential_helper(helpers.path(), "per-registry", &registry.addr, USER, PASSWORD);
    credential_helper(helpers.path(), "wrong-store", &registry.addr, USER, "wrong");
    credential_helper(helpers.path(), "empty-store", "elsewhere.example", USER, PASSWORD);
    let path = format!("{}:{}", helpers.path().display(), std::env::var("PATH").unwrap());
    let docker = tempfile::tempdir().unwrap();
    let with_config = |config: String| {
        std::fs::write(docker.path().join("config.json"), config).unwrap();
        let mut command = add(&registry, cache.path(), plugins.path(), &reference);
        command
            .env_remove("REGISTRY_AUTH_FILE")
            .env("DOCKER_CONFIG", docker.path())
            .env("PATH", &path)
            .args(["--pull-retries", "0"]);
        command
    };
    let addr = &registry.addr;

    // A helper for this registry wins over the store, and over the empty
    // `auths` entry `docker login` leaves beside it.
    let added = succeeds(with_config(format!(
        r#"{{"auths": {{"{addr}": {{}}}}, "credHelpers": {{"{addr}": "per-registry"}}, "credsStore": "wrong-store"}}"#
    )));
    assert!(added.contains("Added raw-echo"), "{added}");
    std::fs::remove_file(plugins.path().join("plugins.lock")).unwrap();

    // The store's answer is used, and its refusal named by the helper.
    let stderr = fails(with_config(r#"{"credsStore": "wrong-store"}"#.to_owned()));
    assert!(
        stderr.contains("refused the credentials from the credential helper docker-credential-wrong-store"),
        "{stderr}"
    );
    assert!(!stderr.contains("\"wrong\""), "the secret is never shown: {stderr}");

    // A store with nothing for it is no credentials at all.
    let stderr = fails(with_config(r#"{"credsStore": "empty-store"}"#.to_owned()));
    assert!(stderr.contains("wants credentials"), "{stderr}");

    // A helper that is not installed is said, with what to do.
    let stderr = fails(with_config(format!(
        r#"{{"credHelpers": {{"{addr}": "not-installed"}}}}"#
    )));
    assert!(
        stderr.contains("cannot run the credential helper docker-credential-not-installed")
            && stderr.contains("on PATH"),
        "{stderr}"
    );
    assert!(!plugins.path().join("plugins.lock").exists(), "nothing was pinned");
}
