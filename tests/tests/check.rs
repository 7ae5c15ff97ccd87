//! `wasm-mcp check PLUGIN.wasm|DIR` (alias `inspect`): the real binary over
//! real plugins. It reports exports with their schemas, WASI imports, manifest
//! grants, notes and warnings on stdout (for a directory, every plugin and the
//! renames serving it makes), exits 0 when the plugins load, non-zero with
//! the reason on stderr when one does not, and with `--strict` non-zero on
//! any warning.

use std::path::Path;
use std::process::{Command, Output};

use wasm_mcp_tests::{PluginDir, binary};

/// Runs `wasm-mcp <subcommand> <plugin>`.
fn run(subcommand: &str, plugin: &Path) -> Output {
    run_with(&[subcommand], plugin)
}

/// Runs `wasm-mcp <args...> <plugin>`.
fn run_with(args: &[&str], plugin: &Path) -> Output {
    Command::new(binary())
        .args(args)
        .arg(plugin)
        .env("WASM_MCP_LOG", "warn")
        .output()
        .expect("run wasm-mcp check")
}

/// Stdout of a run that must succeed.
#[track_caller]
fn loads(subcommand: &str, plugin: &Path) -> String {
    let output = run(subcommand, plugin);
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "check {} should succeed; status {}\nstdout:\n{stdout}\nstderr:\n{}",
        plugin.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Stdout and stderr of a run that must fail.
#[track_caller]
fn fails(plugin: &Path) -> (String, String) {
    let output = run("check", plugin);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    );
    assert!(
        !output.status.success(),
        "check {} should fail\nstdout:\n{stdout}",
        plugin.display()
    );
    assert!(stderr.contains("does not load"), "the reason goes to stderr:\n{stderr}");
    (stdout, stderr)
}

#[track_caller]
fn contains_all(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "expected {needle:?} in:\n{text}");
    }
}

#[test]
fn check_shows_exports_imports_and_grants() {
    let plugins = PluginDir::with(&["docs-search"]);
    let stdout = loads("check", &plugins.path().join("docs-search.wasm"));
    contains_all(
        &stdout,
        &[
            "Plugin docs-search",
            "status    loads",
            "docs-search.toml",
            // Exports, with schemas.
            "tools (2)",
            "search_docs \"Search the docs\"",
            "input schema   {\"type\":\"object\"",
            "output schema  {",
            "hints          read-only",
            "resources (3)",
            "docs:///guides/manifest.md",
            "prompts (0)",
            // Imports.
            "wasi:filesystem/preopens@",
            "wasi:cli/environment@",
            // Grants.
            "/docs (read-only)",
            "network      none",
            "timeout 10 s",
        ],
    );
    assert!(
        !stdout.contains("Warnings"),
        "a plugin using exactly its grants has no warnings:\n{stdout}"
    );
}

#[test]
fn inspect_is_an_alias_and_lists_prompts_with_arguments() {
    let stdout = loads("inspect", &wasm_mcp_tests::plugin_wasm("notes"));
    contains_all(
        &stdout,
        &[
            "Plugin notes",
            "resource templates (1)",
            "notes://note/{slug}",
            "prompts (2)",
            "summarize_note",
            "argument slug (required)",
            "completion  yes",
            "manifest  none",
            "directories  none",
        ],
    );
}

#[test]
fn check_warns_about_capabilities_imported_but_not_granted() {
    // The hostile plugin imports files and sockets; without a manifest it is granted neither.
    let plugins = PluginDir::with(&["hostile"]);
    let stdout = loads("check", &plugins.path().join("hostile.wasm"));
    contains_all(
        &stdout,
        &[
            "wasi:sockets/tcp@",
            "wasi:sockets/ip-name-lookup@",
            "DNS: only names granted by [network]",
            "Warnings",
            "imports wasi:filesystem/preopens (files) but its manifest grants no [[directories]]",
            "imports wasi:sockets (network) but its manifest grants no [network] allow rules",
        ],
    );

    // With grants for both, those warnings go; the grants are listed.
    plugins.add_file(
        "hostile.toml",
        format!(
            "[[directories]]\nhost = {:?}\nguest = \"/data\"\nwritable = true\n\n[network]\nallow = [\"api.example.com:443\", \"10.0.0.0/8:*\"]\n\n[env]\nTOKEN = {{ from_host = \"WASM_MCP_TEST_SURELY_UNSET\" }}\n",
            plugins.path().display().to_string()
        )
        .as_bytes(),
    );
    let stdout = loads("check", &plugins.path().join("hostile.wasm"));
    contains_all(
        &stdout,
        &[
            "/data (read-write)",
            "network      api.example.com:443, 10.0.0.0/8:*",
            "TOKEN (from the host's $WASM_MCP_TEST_SURELY_UNSET)",
            "env.TOKEN takes its value from the host variable WASM_MCP_TEST_SURELY_UNSET, which is not set here",
        ],
    );
    assert!(
        !stdout.contains("no [[directories]]") && !stdout.contains("no [network]"),
        "{stdout}"
    );
}

#[test]
fn check_warns_about_grants_the_plugin_cannot_use() {
    let plugins = PluginDir::with(&["text-tools"]);
    let plain = loads("check", &plugins.path().join("text-tools.wasm"));
    assert!(!plain.contains("Warnings"), "{plain}");
    assert!(
        !plain.contains("wasi:sockets"),
        "text-tools imports no sockets:\n{plain}"
    );
    plugins.add_file("text-tools.toml", b"[network]\nallow = [\"example.com:80\"]\n");
    let stdout = loads("check", &plugins.path().join("text-tools.wasm"));
    contains_all(
        &stdout,
        &["its manifest grants [network] access but it imports no wasi:sockets or wasi:http/outgoing-handler"],
    );
}

#[test]
fn check_shows_resource_caching_and_warns_about_a_resource_the_plugin_does_not_list() {
    let plugins = PluginDir::with(&["conformance"]);
    plugins.add_file(
        "conformance.toml",
        b"[resources.\"test://static-text\"]\nttl_ms = 60000\ncache_scope = \"public\"\n\
          [resources.\"test://statik-text\"]\nttl_ms = 1\n",
    );
    let stdout = loads("check", &plugins.path().join("conformance.wasm"));
    contains_all(
        &stdout,
        &[
            "test://static-text",
            "cached  60000 ms, public",
            "its manifest sets [resources.\"test://statik-text\"] but the plugin lists no resource or template with that URI",
        ],
    );
}

#[test]
fn check_lists_wasi_http_as_provided_and_warns_without_a_network_grant() {
    let plugins = PluginDir::with(&["http-client"]);
    let stdout = loads("check", &plugins.path().join("http-client.wasm"));
    contains_all(
        &stdout,
        &[
            "HTTP requests: plain http:// to hosts and ports granted by [network]",
            "imports wasi:http/outgoing-handler (HTTP requests) but its manifest grants no [network] allow rules",
        ],
    );
    assert!(!stdout.contains("NOT PROVIDED"), "{stdout}");
    plugins.add_file("http-client.toml", b"[network]\nallow = [\"example.com:80\"]\n");
    let stdout = loads("check", &plugins.path().join("http-client.wasm"));
    assert!(!stdout.contains("Warnings"), "{stdout}");
}

#[test]
fn check_fails_clearly_when_the_plugin_does_not_load() {
    let plugins = PluginDir::empty();

    let garbage = plugins.add_file("garbage.wasm", b"not wasm at all");
    let (stdout, stderr) = fails(&garbage);
    contains_all(&stdout, &["DOES NOT LOAD", "not a WebAssembly binary"]);
    contains_all(&stderr, &["garbage.wasm", "not a WebAssembly component"]);

    // A core module (valid wasm, not a component).
    let core = plugins.add_file("core.wasm", &[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);
    let (stdout, _) = fails(&core);
    contains_all(&stdout, &["a core WebAssembly module, not a component"]);

    // An invalid network rule names the key and the file.
    let bad_rule = plugins.add_plugin_as("text-tools", "bad-rule");
    plugins.add_file("bad-rule.toml", b"[network]\nallow = [\"example.com\"]\n");
    let (stdout, stderr) = fails(&bad_rule);
    contains_all(
        &stdout,
        &[
            "manifest  INVALID",
            "network.allow",
            "DOES NOT LOAD: its manifest is invalid",
        ],
    );
    assert_eq!(
        stdout.matches("no port").count(),
        1,
        "the report says the error once:\n{stdout}"
    );
    contains_all(
        &stderr,
        &["bad-rule.toml", "network.allow", "\"example.com\"", "no port"],
    );

    // An unknown key in [network].
    let typo = plugins.add_plugin_as("text-tools", "typo");
    plugins.add_file("typo.toml", b"[network]\nalow = [\"example.com:80\"]\n");
    let (_, stderr) = fails(&typo);
    contains_all(&stderr, &["typo.toml", "alow"]);

    // A granted directory that does not exist.
    let missing_dir = plugins.add_plugin_as("text-tools", "missing-dir");
    plugins.add_file(
        "missing-dir.toml",
        b"[[directories]]\nhost = \"/surely/not/here\"\nguest = \"/data\"\n",
    );
    let (_, stderr) = fails(&missing_dir);
    contains_all(&stderr, &["/surely/not/here", "does not exist"]);

    // No file at all.
    let (_, stderr) = fails(&plugins.path().join("absent.wasm"));
    contains_all(&stderr, &["absent.wasm", "does not exist"]);
}

#[test]
fn check_shows_tls_only_rules_and_the_ca_file() {
    let plugins = PluginDir::with(&["http-client"]);
    plugins.add_file("ca.pem", wasm_mcp_tests::https::TestCa::new().pem().as_bytes());
    plugins.add_file(
        "http-client.toml",
        b"[network]\nallow = [\"https://api.example.com\", \"example.com:80\"]\nca_file = \"ca.pem\"\n",
    );
    let stdout = loads("check", &plugins.path().join("http-client.wasm"));
    contains_all(
        &stdout,
        &[
            "network      https://api.example.com (TLS only), example.com:80",
            &format!(
                "ca_file      {} (CA certificates https:// requests trust besides the platform's)",
                plugins.path().join("ca.pem").display()
            ),
            "https:// to any of them, TLS verified by the host",
        ],
    );
    assert!(!stdout.contains("Warnings"), "{stdout}");

    // A ca_file that holds no certificate stops the plugin from loading, naming the key.
    plugins.add_file("ca.pem", b"no certificate here\n");
    let (stdout, stderr) = fails(&plugins.path().join("http-client.wasm"));
    contains_all(
        &format!("{stdout}{stderr}"),
        &["[network] ca_file", "ca.pem", "holds no certificate"],
    );
}

#[test]
fn check_warns_about_manifest_settings_for_a_tool_the_plugin_does_not_list_and_strict_fails_on_it() {
    let plugins = PluginDir::with(&["text-tools"]);
    let wasm = plugins.path().join("text-tools.wasm");
    plugins.add_file("text-tools.toml", b"[tools.revers.limits]\ntimeout_secs = 5\n");
    let stdout = loads("check", &wasm);
    contains_all(
        &stdout,
        &[
            "status    loads",
            "Warnings",
            "its manifest sets [tools.revers] but the plugin lists no tool revers",
            "reverse",
        ],
    );

    let strict = run_with(&["check", "--strict"], &wasm);
    let stderr = String::from_utf8_lossy(&strict.stderr);
    assert_eq!(strict.status.code(), Some(2), "--strict fails on a warning: {stderr}");
    contains_all(&stderr, &["1 warning(s)", "--strict"]);

    // Without the warning, --strict passes.
    plugins.add_file("text-tools.toml", b"[tools.reverse.limits]\ntimeout_secs = 5\n");
    let clean = run_with(&["check", "--strict"], &wasm);
    assert!(clean.status.success(), "{}", String::from_utf8_lossy(&clean.stderr));
}

#[test]
fn check_tells_the_python_runtimes_imports_from_what_the_plugin_uses() {
    let plugins = PluginDir::with(&["stats", "hostile"]);
    let python = loads("check", &plugins.path().join("stats.wasm"));
    contains_all(
        &python,
        &[
            "wasi:filesystem/preopens@",
            "wasi:sockets/tcp@",
            "Notes",
            "built with componentize-py (the Python runtime), which imports wasi:filesystem and wasi:sockets",
            "cannot tell whether this plugin uses them",
        ],
    );
    assert!(!python.contains("Warnings"), "nothing its author can act on: {python}");
    let strict = run_with(&["check", "--strict"], &plugins.path().join("stats.wasm"));
    assert!(strict.status.success(), "a note is no warning");

    // A component that is no Python plugin and imports them still gets the warnings.
    let rust = loads("check", &plugins.path().join("hostile.wasm"));
    assert!(!rust.contains("Notes"), "{rust}");
    contains_all(
        &rust,
        &["imports wasi:sockets (network) but its manifest grants no [network] allow rules"],
    );
}

#[test]
fn check_of_a_directory_shows_every_plugin_and_the_renames_serving_it_makes() {
    let plugins = PluginDir::with(&["text-tools"]);
    let clean = loads("check", plugins.path());
    contains_all(
        &clean,
        &[
            "Plugin text-tools",
            "1 plugin(s), 1 loading",
            "every tool and prompt is served under its own name",
        ],
    );

    // The same plugin under a file name that sorts first, with no manifest.
    plugins.add_plugin_as("text-tools", "My Tools");
    let stdout = loads("check", plugins.path());
    contains_all(
        &stdout,
        &[
            "Plugin My Tools",
            "Plugin text-tools",
            "2 plugin(s), 2 loading",
            "Renamed at start",
            "the tool reverse of plugin text-tools is served as text-tools_reverse: plugin My Tools already serves reverse",
        ],
    );
    let strict = run_with(&["check", "--strict"], plugins.path());
    assert_eq!(strict.status.code(), Some(2), "a rename is a warning");

    // A plugin that does not load fails the directory's check, naming it.
    plugins.add_file("broken.wasm", b"not wasm");
    let broken = run("check", plugins.path());
    assert_eq!(broken.status.code(), Some(1));
    contains_all(&String::from_utf8_lossy(&broken.stderr), &["broken.wasm does not load"]);
}

#[test]
fn check_shows_refused_entries_as_errors_and_exits_1() {
    let plugins = PluginDir::with(&["misnamed"]);
    let output = run("check", &plugins.path().join("misnamed.wasm"));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert_eq!(output.status.code(), Some(1), "stdout:\n{stdout}\nstderr:\n{stderr}");
    contains_all(
        &stdout,
        &[
            "status    loads",
            "Errors",
            "x the tool \"\" of plugin misnamed is refused: the name is empty",
            "x the tool \"has space\" of plugin misnamed is refused",
            "x the tool \"fine\" of plugin misnamed is refused: plugin misnamed already lists a tool named fine",
            "x the prompt \"greet\" of plugin misnamed is refused",
            "tools (1)",
            "prompts (1)",
        ],
    );
    assert!(stderr.contains("7 entr(ies) refused"), "{stderr}");
    // The same in a directory.
    let dir = run("check", plugins.path());
    assert_eq!(dir.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&dir.stdout).contains("x the tool \"naïve\" of plugin misnamed is refused"));
}

#[test]
fn check_lists_the_skills_a_plugin_ships_and_makes_with_what_the_manifest_says_of_them() {
    let plugins = PluginDir::with(&["playbook"]);
    plugins.add_file(
        "playbook.toml",
        b"[deny]\nskills = [\"reports/daily\"]\n[scopes]\nskills = { \"git-workflow\" = [\"git:read\"] }\n",
    );
    let stdout = loads("check", &plugins.path().join("playbook.wasm"));
    contains_all(
        &stdout,
        &[
            "skills (2)",
            "skill://git-workflow/SKILL.md  2 files: Follow this team's Git conventions",
            "scopes         git:read (with --auth-issuer)",
            "skill://reports/daily/SKILL.md  made by the plugin as it is read",
            "NOT SERVED     the manifest's",
        ],
    );
}
