//! Credentials the host adds to plugins' outgoing HTTP requests: secrets the
//! operator names in the config file (from an environment variable or a
//! file), bound to a plugin and a target. Each test runs recording upstreams
//! on 127.0.0.1 (HTTPS with a private CA the plugin trusts through its
//! `ca_file`, or plain HTTP) and the `http-client` test plugin, which tries
//! to see the credential: in its environment, in the request it built, in
//! the response headers it got back (the upstream echoes what it received).

use std::process::{Command, Stdio};

use serde_json::{Value, json};
use wasm_mcp_tests::expect::{is_tool_error, single_text, tool_ok};
use wasm_mcp_tests::http::{HttpServer, McpClient};
use wasm_mcp_tests::https::TestCa;
use wasm_mcp_tests::process::serve_command;
use wasm_mcp_tests::recorder::Recorder;
use wasm_mcp_tests::wasi_http::plugins;
use wasm_mcp_tests::{PluginDir, StdioServer, binary};

/// The value the operator's environment holds: never to be seen by the plugin or printed.
const TOKEN: &str = "s3cr3t-bearer-token-7f1e";
const API_KEY: &str = "s3cr3t-api-key-99ab";
const PASSWORD: &str = "s3cr3t-password-c0de";

/// The http-client plugin under a manifest granting `rules` (TOML values; trusting `ca`),
/// served with the config file `config` and the operator's secrets in its environment.
fn serve(ca: &TestCa, rules: &[String], config: &str) -> StdioServer {
    let plugins = plugins(&format!(
        "[network]\nallow = [{}]\nca_file = \"ca.pem\"\n",
        rules.join(", ")
    ));
    plugins.add_file("ca.pem", ca.pem().as_bytes());
    let config_file = plugins.add_file("host.toml", config.as_bytes());
    let mut command = serve_command(plugins.path());
    command
        .arg("--config")
        .arg(config_file)
        .env("UPSTREAM_TOKEN", TOKEN)
        .env("UPSTREAM_KEY", API_KEY)
        .env("UPSTREAM_PASSWORD", PASSWORD)
        .env("WASM_MCP_LOG", "debug");
    let mut server = StdioServer::spawn_command(command).keeping(plugins);
    server.initialize(json!({}));
    server
}

/// The plugin's `request` tool: what it sent and got, as it saw them.
fn request(server: &mut StdioServer, args: Value) -> Value {
    server.call_tool("request", args).result().clone()
}

/// A request the plugin saw through, and whose every hop it could read.
#[track_caller]
fn seen(server: &mut StdioServer, args: Value) -> String {
    let result = request(server, args.clone());
    tool_ok(&result);
    let text = single_text(&result);
    for secret in [TOKEN, API_KEY, PASSWORD] {
        assert!(!text.contains(secret), "the plugin saw a secret ({args}): {text}");
    }
    text
}

/// Whether the recorder's requests carried the header `name` with `value`, in order.
#[track_caller]
fn carried(recorder: &Recorder, name: &str, expected: &[Option<&str>]) {
    let got = recorder.header_of_each(name);
    let got: Vec<Option<&str>> = got.iter().map(Option::as_deref).collect();
    assert_eq!(got, expected, "{name} in the requests to port {}", recorder.port);
}

fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

#[test]
fn a_bound_secret_reaches_its_target_only_and_the_plugin_never_sees_it() {
    let ca = TestCa::new();
    let api = Recorder::https(ca.server_cert(&["localhost"]));
    let other = Recorder::https(ca.server_cert(&["localhost"]));
    let plain = Recorder::http();
    let config = format!(
        r#"
[secrets.token]
env = "UPSTREAM_TOKEN"
[secrets.key]
env = "UPSTREAM_KEY"
[secrets.password]
env = "UPSTREAM_PASSWORD"

[bindings.api]
plugin = "http-client"
target = "https://localhost:{api}/api/"
secret = "token"

[bindings.keyed]
plugin = "http-client"
target = "https://localhost:{other}/keyed"
methods = ["GET"]
secret = "key"
form = "header"
header = "X-Api-Key"
template = "key={{secret}}"

# The same host and port as the plain server, over HTTPS: never sent over plain HTTP.
[bindings.not-plain]
plugin = "http-client"
target = "https://localhost:{plain}/"
secret = "token"

[bindings.basic]
plugin = "http-client"
target = "http://localhost:{plain}/basic/"
secret = "password"
form = "basic"
username = "svc"
plain_http = true

[bindings.another-plugin]
plugin = "text-tools"
target = "https://localhost:{other}/"
secret = "token"
"#,
        api = api.port,
        other = other.port,
        plain = plain.port,
    );
    let rules = [
        format!("\"https://localhost:{}\"", api.port),
        format!("\"https://localhost:{}\"", other.port),
        format!("\"localhost:{}\"", plain.port),
    ];
    let mut server = serve(&ca, &rules, &config);

    // The bound target: the bearer token goes in; the echo of it does not come back.
    let url = |port: u16, path: &str| format!("https://localhost:{port}{path}");
    let text = seen(&mut server, json!({"url": url(api.port, "/api/items")}));
    assert!(
        text.contains("status 200") && text.contains("recorded /api/items"),
        "{text}"
    );
    assert!(
        text.contains("x-echo-key: -") && !text.contains("x-echo-authorization"),
        "the echo of the credential is dropped, other headers are handed back: {text}"
    );
    // Outside the path prefix, another origin, another plugin's binding: nothing added.
    seen(&mut server, json!({"url": url(api.port, "/apiary")}));
    seen(&mut server, json!({"url": url(other.port, "/api/items")}));
    // A redirect to another origin is a request of its own: the credential stays behind.
    let to = url(other.port, "/api/after-redirect");
    let text = seen(
        &mut server,
        json!({"url": url(api.port, &format!("/api/redirect?to={to}")), "follow_redirects": true}),
    );
    assert!(
        text.contains("status 302") && text.contains("recorded /api/after-redirect"),
        "{text}"
    );
    carried(&api, "authorization", &[Some(&bearer()), None, Some(&bearer())]);

    // A header with a template, for GET only.
    seen(&mut server, json!({"url": url(other.port, "/keyed/1")}));
    seen(
        &mut server,
        json!({"url": url(other.port, "/keyed/1"), "method": "DELETE"}),
    );
    let key = format!("key={API_KEY}");
    carried(&other, "x-api-key", &[None, None, Some(&key), None]);
    carried(&other, "authorization", &[None, None, None, None]);

    // Plain HTTP: only where a binding says plain_http.
    seen(
        &mut server,
        json!({"url": format!("http://localhost:{}/api/items", plain.port)}),
    );
    seen(
        &mut server,
        json!({"url": format!("http://localhost:{}/basic/x", plain.port)}),
    );
    let basic = format!("Basic {}", base64_of(&format!("svc:{PASSWORD}")));
    carried(&plain, "authorization", &[None, Some(&basic)]);

    // Not in the plugin's environment either.
    let env = single_text(server.call_tool("env", json!({})).result());
    assert!(!env.contains(TOKEN) && !env.contains("UPSTREAM_"), "{env}");

    // One audit line per use, naming the plugin, the binding, the secret and the URL; no value anywhere.
    let stderr = server.wait_for_stderr("an audit line for each of the four uses", |s| {
        s.matches("credential added to an outgoing request").count() >= 4
    });
    let audits: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("wasm_mcp::secrets::audit"))
        .collect();
    assert_eq!(audits.len(), 4, "{stderr}");
    assert!(
        audits[0].contains("plugin=http-client")
            && audits[0].contains("binding=api")
            && audits[0].contains("secret=\"token\"")
            && audits[0].contains(&url(api.port, "/api/items"))
            && audits[0].contains("caller=\"local user\""),
        "{}",
        audits[0]
    );
    for secret in [TOKEN, API_KEY, PASSWORD] {
        assert!(!stderr.contains(secret), "a secret in the log: {stderr}");
    }
    server.shutdown();
}

#[test]
fn a_plugin_that_sets_the_bound_header_itself_is_refused() {
    let ca = TestCa::new();
    let api = Recorder::https(ca.server_cert(&["localhost"]));
    let other = Recorder::https(ca.server_cert(&["localhost"]));
    let config = format!(
        "[secrets.token]\nenv = \"UPSTREAM_TOKEN\"\n\
         [bindings.api]\nplugin = \"http-client\"\ntarget = \"https://localhost:{}/\"\nsecret = \"token\"\n",
        api.port
    );
    let rules = [
        format!("\"https://localhost:{}\"", api.port),
        format!("\"https://localhost:{}\"", other.port),
    ];
    let mut server = serve(&ca, &rules, &config);
    let own = json!([["Authorization", "Bearer the-plugins-own"]]);
    let result = request(
        &mut server,
        json!({"url": format!("https://localhost:{}/", api.port), "headers": own}),
    );
    assert!(is_tool_error(&result), "{result}");
    let text = single_text(&result);
    assert!(
        text.contains("sets the authorization header, which the host adds"),
        "{text}"
    );
    assert!(
        api.requests().is_empty(),
        "the refused request left: {:?}",
        api.requests()
    );
    // To a target no binding names, the plugin's own header goes as it is.
    seen(
        &mut server,
        json!({"url": format!("https://localhost:{}/", other.port), "headers": own}),
    );
    carried(&other, "authorization", &[Some("Bearer the-plugins-own")]);
    server.shutdown();
}

#[test]
fn a_file_secret_is_read_again_when_its_kubernetes_volume_is_updated() {
    let ca = TestCa::new();
    let api = Recorder::https(ca.server_cert(&["localhost"]));
    // A Secret volume as the kubelet lays it out: token -> ..data/token, ..data -> a timestamped directory.
    let volume = tempfile::tempdir().unwrap();
    let publish = |version: &str, value: &str| {
        let dir = volume.path().join(format!("..{version}"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("token"), value).unwrap();
        let link = volume.path().join("..data_tmp");
        std::os::unix::fs::symlink(format!("..{version}"), &link).unwrap();
        std::fs::rename(&link, volume.path().join("..data")).unwrap();
    };
    publish("2026_01_01_00_00_00.1", "first-file-token");
    std::os::unix::fs::symlink("..data/token", volume.path().join("token")).unwrap();
    let config = format!(
        "[secrets.token]\nfile = {:?}\n\
         [bindings.api]\nplugin = \"http-client\"\ntarget = \"https://localhost:{}/\"\nsecret = \"token\"\n",
        volume.path().join("token"),
        api.port
    );
    let mut server = serve(&ca, &[format!("\"https://localhost:{}\"", api.port)], &config);
    let url = json!({"url": format!("https://localhost:{}/", api.port)});
    seen(&mut server, url.clone());
    publish("2026_01_02_00_00_00.2", "second-file-token\n");
    seen(&mut server, url);
    carried(
        &api,
        "authorization",
        &[Some("Bearer first-file-token"), Some("Bearer second-file-token")],
    );
    let stderr = server.wait_for_stderr("the file read again", |s| {
        s.contains("secret read again: its file changed")
    });
    assert!(!stderr.contains("file-token"), "{stderr}");
    server.shutdown();
}

#[test]
fn the_audit_line_names_the_caller_a_request_acts_for_over_http() {
    let ca = TestCa::new();
    let api = Recorder::https(ca.server_cert(&["localhost"]));
    let plugins = plugins(&format!(
        "[network]\nallow = [\"https://localhost:{}\"]\nca_file = \"ca.pem\"\n",
        api.port
    ));
    plugins.add_file("ca.pem", ca.pem().as_bytes());
    let config = plugins.add_file(
        "host.toml",
        format!(
            "[secrets.token]\nenv = \"UPSTREAM_TOKEN\"\n\
             [bindings.api]\nplugin = \"http-client\"\ntarget = \"https://localhost:{}/\"\nsecret = \"token\"\n",
            api.port
        )
        .as_bytes(),
    );
    let mut server = HttpServer::start_with_env(
        plugins,
        &["--config", config.to_str().unwrap()],
        &[("UPSTREAM_TOKEN", TOKEN), ("WASM_MCP_AUTH_TOKEN", "first-client-token")],
    );
    let mut client = McpClient::new(&server.url);
    client.token = Some("first-client-token".to_owned());
    client.initialize(json!({}));
    let result = client
        .call_tool("request", json!({"url": format!("https://localhost:{}/", api.port)}))
        .result()
        .clone();
    tool_ok(&result);
    carried(&api, "authorization", &[Some(&bearer())]);
    let stderr = server.wait_for_stderr("the audit line", |s| s.contains("credential added"));
    let audit = stderr.lines().find(|line| line.contains("credential added")).unwrap();
    assert!(
        audit.contains("binding=api") && audit.contains("caller=\"token:0\""),
        "{audit}"
    );
    assert!(!stderr.contains(TOKEN), "{stderr}");
}

/// `wasm-mcp serve` with `config` over an empty plugins directory: it must
/// stop at start, saying `needles`.
#[track_caller]
fn refused_at_start(config: &str, needles: &[&str]) {
    let plugins = PluginDir::empty();
    let file = plugins.add_file("host.toml", config.as_bytes());
    let output = Command::new(binary())
        .args(["serve", "--plugins"])
        .arg(plugins.path())
        .arg("--config")
        .arg(&file)
        .env("UPSTREAM_TOKEN", TOKEN)
        .env_remove("UNSET_VARIABLE")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "started with {config}: {stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} not said for {config}: {stderr}");
    }
    assert!(!stderr.contains(TOKEN), "{stderr}");
}

#[test]
fn a_start_refused_after_initialize_was_answered_still_ends_the_serve() {
    // The transport answers while the plugins' side is made; what that side
    // refuses ends the serve with its error, with the client still connected.
    let plugins = PluginDir::empty();
    let file = plugins.add_file("host.toml", b"[secrets.missing]\nenv = \"UNSET_VARIABLE\"\n");
    let mut command = serve_command(plugins.path());
    command.arg("--config").arg(&file).env_remove("UNSET_VARIABLE");
    let mut server = StdioServer::spawn_command(command);
    server.send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } }));
    let status = server.wait_for_exit("a refused start");
    assert!(!status.success(), "{}", server.stderr());
    assert!(server.stderr().contains("UNSET_VARIABLE"), "{}", server.stderr());
}

#[test]
fn a_binding_that_does_not_hold_together_stops_the_start_naming_it() {
    let secret = "[secrets.token]\nenv = \"UPSTREAM_TOKEN\"\n";
    let binding = |body: &str| format!("{secret}[bindings.github]\nplugin = \"p\"\n{body}");
    refused_at_start(
        &binding("target = \"https://api.example.com/\"\nsecret = \"tokn\"\n"),
        &["binding \"github\"", "the secret \"tokn\" is not defined"],
    );
    refused_at_start(
        &binding("target = \"https://api.example.com/\"\nsecret = \"token\"\nform = \"digest\"\n"),
        &["binding \"github\"", "form \"digest\" is unknown"],
    );
    refused_at_start(
        &binding("target = \"api.example.com\"\nsecret = \"token\"\n"),
        &["binding \"github\"", "target \"api.example.com\" is not a URL"],
    );
    refused_at_start(
        &binding("target = \"http://api.example.com/\"\nsecret = \"token\"\n"),
        &["binding \"github\"", "plain_http = true"],
    );
    refused_at_start(
        &binding("target = \"https://api.example.com/\"\nsecret = \"token\"\nform = \"header\"\n"),
        &["binding \"github\"", "form = \"header\" needs header"],
    );
    refused_at_start(
        "[secrets.missing]\nenv = \"UNSET_VARIABLE\"\n",
        &["secret \"missing\"", "UNSET_VARIABLE is not set"],
    );
    refused_at_start(
        &format!("{secret}[secrets.nowhere]\nfile = \"/nonexistent/token\"\n"),
        &["secret \"nowhere\"", "/nonexistent/token"],
    );
}

fn base64_of(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}
