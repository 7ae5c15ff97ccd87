//! `wasm-mcp call PLUGIN.wasm TOOL [--args JSON] [--manifest FILE]`: the real
//! binary over real plugins. The result is JSON on stdout, the plugin's logs
//! and progress are on stderr, and every failure (a plugin that does not load,
//! an unknown tool, bad JSON, arguments the schema refuses, a tool error, a
//! limit) exits non-zero with the reason on stderr. Grants and limits come from
//! the manifest as they do for `serve`.

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use wasm_mcp_tests::{PluginDir, binary, plugin_wasm};

struct Run {
    success: bool,
    stdout: String,
    stderr: String,
}

impl Run {
    /// The result printed on stdout.
    #[track_caller]
    fn result(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}\nstderr:\n{}", self.stdout, self.stderr))
    }

    #[track_caller]
    fn succeeded(self) -> Self {
        assert!(
            self.success,
            "call should succeed\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// Asserts the run failed and its stderr says all of `needles`.
    #[track_caller]
    fn failed_saying(self, needles: &[&str]) -> Self {
        assert!(!self.success, "call should fail\nstdout:\n{}", self.stdout);
        for needle in needles {
            assert!(
                self.stderr.contains(needle),
                "expected {needle:?} on stderr:\n{}",
                self.stderr
            );
        }
        self
    }
}

fn call(plugin: &Path, args: &[&str]) -> Run {
    let output = Command::new(binary())
        .arg("call")
        .arg(plugin)
        .args(args)
        .env("WASM_MCP_LOG", "warn")
        .env_remove("WASM_MCP_CONFIG")
        .output()
        .expect("run wasm-mcp call");
    Run {
        success: output.status.success(),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn prints_the_structured_result_of_a_tool() {
    let run = call(
        &plugin_wasm("text-tools"),
        &["word_count", "--args", r#"{"text": "hello wasm world"}"#],
    )
    .succeeded();
    let result = run.result();
    assert_eq!(result["structuredContent"]["words"], 3, "{result}");
    assert_eq!(result["content"][0]["type"], "text");
    assert!(result.get("isError").is_none(), "{result}");
}

#[test]
fn an_unknown_tool_fails_and_lists_the_tools() {
    let run = call(&plugin_wasm("text-tools"), &["no_such_tool"]).failed_saying(&[
        "no tool \"no_such_tool\"",
        "word_count",
        "slugify",
    ]);
    assert!(run.stdout.is_empty(), "nothing is called: {}", run.stdout);
}

#[test]
fn arguments_that_are_not_a_json_object_are_refused() {
    call(&plugin_wasm("text-tools"), &["word_count", "--args", "{\"text\":"])
        .failed_saying(&["--args is not valid JSON"]);
    call(&plugin_wasm("text-tools"), &["word_count", "--args", "[1, 2]"])
        .failed_saying(&["--args must be a JSON object", "not an array"]);
}

#[test]
fn arguments_that_fail_the_input_schema_are_refused_naming_the_field() {
    let run = call(&plugin_wasm("text-tools"), &["word_count", "--args", r#"{"txt": "x"}"#]).failed_saying(&[
        "Invalid arguments for tool word_count",
        "\"text\" is a required property",
    ]);
    assert_eq!(run.result()["isError"], true);
}

#[test]
fn a_tool_error_fails_with_its_text() {
    let run = call(&plugin_wasm("spinner"), &["panic"]).failed_saying(&["the tool returned an error", "panic"]);
    assert_eq!(run.result()["isError"], true);
}

#[test]
fn a_file_that_is_not_a_plugin_fails_to_load() {
    let dir = PluginDir::empty();
    let bogus = dir.add_file("bogus.wasm", b"not a component");
    call(&bogus, &["anything"]).failed_saying(&["does not load", "not a WebAssembly component"]);
    call(&dir.path().join("missing.wasm"), &["anything"]).failed_saying(&["does not exist"]);
}

#[test]
fn logs_and_progress_go_to_stderr_and_never_to_stdout() {
    let run = call(&plugin_wasm("conformance"), &["test_tool_with_logging"]).succeeded();
    assert!(
        run.stderr.contains("[info] conformance: Tool execution started"),
        "{}",
        run.stderr
    );
    run.result();

    let run = call(
        &plugin_wasm("spinner"),
        &["print", "--args", r#"{"text": "written by the guest"}"#],
    )
    .succeeded();
    assert!(run.stderr.contains("written by the guest"), "{}", run.stderr);
    assert!(
        !run.stdout.contains("written by the guest"),
        "guest stdout stays off stdout: {}",
        run.stdout
    );
    assert_eq!(run.result()["content"][0]["text"], "printed");

    let run = call(
        &plugin_wasm("batch-digest"),
        &["digest_batch", "--args", r#"{"items": ["a", "b"], "rounds": 10}"#],
    )
    .succeeded();
    assert!(run.stderr.contains("[progress] 2.0/2"), "{}", run.stderr);
    assert_eq!(run.result()["structuredContent"]["completed"], 2);
}

#[test]
fn requests_to_the_client_are_refused_as_unsupported() {
    call(
        &plugin_wasm("conformance"),
        &["test_sampling", "--args", r#"{"prompt": "hi"}"#],
    )
    .failed_saying(&["did not declare the sampling capability"]);
}

#[test]
fn the_manifest_beside_the_plugin_grants_and_another_can_replace_it() {
    let dir = PluginDir::with(&["docs-search"]);
    let plugin = dir.path().join("docs-search.wasm");
    // Its own manifest grants the docs folder, relative to the manifest's folder.
    std::fs::write(
        dir.path().join("docs-search.toml"),
        format!(
            "[[directories]]\nhost = \"{}\"\nguest = \"/docs\"\n",
            wasm_mcp_tests::workspace_root()
                .join("plugins/docs-search/docs-search")
                .display()
        ),
    )
    .unwrap();
    let granted = call(&plugin, &["search_docs", "--args", r#"{"query": "manifest"}"#]).succeeded();
    assert!(granted.result()["structuredContent"]["documents"].as_u64().unwrap() > 0);

    let bare = dir.add_file("nothing.toml", b"# grants nothing\n");
    call(
        &plugin,
        &[
            "search_docs",
            "--args",
            r#"{"query": "manifest"}"#,
            "--manifest",
            bare.to_str().unwrap(),
        ],
    )
    .failed_saying(&["the tool returned an error", "cannot read /docs"]);
}

#[test]
fn the_manifest_limits_bound_the_call() {
    let dir = PluginDir::empty();
    let manifest = dir.add_file("tight.toml", b"[limits]\nfuel = 1_000_000\n");
    call(
        &plugin_wasm("spinner"),
        &["spin", "--manifest", manifest.to_str().unwrap()],
    )
    .failed_saying(&["Tool spin failed", "fuel"]);
    let bad = dir.add_file("bad.toml", b"[limits]\nfuel = \"lots\"\n");
    call(&plugin_wasm("spinner"), &["spin", "--manifest", bad.to_str().unwrap()])
        .failed_saying(&["invalid manifest", "bad.toml"]);
}

#[test]
fn the_config_file_sets_the_default_limits_as_for_serve() {
    let dir = PluginDir::empty();
    let config = dir.add_file("host.toml", b"[limits]\nfuel = 1_000_000\n");
    call(&plugin_wasm("spinner"), &["spin", "--config", config.to_str().unwrap()])
        .failed_saying(&["Tool spin failed", "fuel limit of 1000000 instructions"]);
    let bad = dir.add_file("bad-host.toml", b"[limits]\nfuels = 1\n");
    call(&plugin_wasm("spinner"), &["spin", "--config", bad.to_str().unwrap()])
        .failed_saying(&["invalid config file", "fuels"]);
}

#[test]
fn reads_a_resource_and_gets_a_prompt() {
    let run = call(&plugin_wasm("notes"), &["--resource", "notes://note/sandbox"]).succeeded();
    let contents = &run.result()["contents"][0];
    assert_eq!(contents["uri"], "notes://note/sandbox");
    assert!(contents["text"].as_str().unwrap().contains("NAME.toml"), "{contents}");

    let run = call(
        &plugin_wasm("notes"),
        &["--prompt", "summarize_note", "--args", r#"{"slug": "limits"}"#],
    )
    .succeeded();
    assert_eq!(run.result()["messages"][0]["role"], "user");

    call(&plugin_wasm("notes"), &["--resource", "notes://nowhere"]).failed_saying(&["resources/read failed"]);
    call(&plugin_wasm("notes"), &["--prompt", "nope"]).failed_saying(&["no prompt \"nope\"", "summarize_note"]);
}

/// The SDK's example `ask_the_client` (built by `make plugins`), run for real:
/// `call` is a client with no roots, sampling or elicitation, and each tool
/// says so in its own way.
#[test]
fn the_sdk_example_plugin_runs_as_a_component() {
    let example =
        wasm_mcp_tests::workspace_root().join("sdk-guest/target/wasm32-wasip2/release/examples/ask_the_client.wasm");
    assert!(
        example.is_file(),
        "{} is not built (run `make plugins`)",
        example.display()
    );
    let run = call(&example, &["shared_folders"]).succeeded();
    assert_eq!(run.result()["content"][0]["text"], "the client shares no roots");
    call(&example, &["order", "--args", r#"{"item": "lamp"}"#]).failed_saying(&["cannot ask the user", "elicitation"]);
    call(&example, &["summarize", "--args", r#"{"text": "long"}"#]).failed_saying(&["sampling"]);
}

/// `call` works the same for plugins written in Python and JavaScript (built
/// by `make plugins` with componentize-py and componentize-js): a tool with
/// its log and progress, a resource, a prompt, and a tool error. The first
/// run compiles each large component into the shared cache directory; the
/// others load it from there.
#[test]
fn calls_python_and_javascript_plugins() {
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap();
    let stats = plugin_wasm("stats");
    let with_cache = |args: &[&'static str]| -> Vec<&str> { [args, &["--cache-dir", cache_dir]].concat() };

    let run = call(
        &stats,
        &with_cache(&["describe", "--args", r#"{"numbers": [1, 2, 3, 4]}"#]),
    )
    .succeeded();
    let result = run.result();
    assert_eq!(result["structuredContent"]["count"], 4, "{result}");
    assert_eq!(result["structuredContent"]["mean"], 2.5, "{result}");
    assert!(run.stderr.contains("describing 4 numbers"), "{}", run.stderr);
    assert!(run.stderr.contains("[progress] 4"), "{}", run.stderr);
    let about = call(&stats, &with_cache(&["--resource", "stats://about"]))
        .succeeded()
        .result();
    assert!(
        about["contents"][0]["text"].as_str().unwrap().contains("percentile"),
        "{about}"
    );
    let prompt = call(
        &stats,
        &with_cache(&["--prompt", "explain", "--args", r#"{"numbers": "1,2"}"#]),
    )
    .succeeded()
    .result();
    assert!(
        prompt["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("[1,2]"),
        "{prompt}"
    );
    call(
        &stats,
        &with_cache(&["percentile", "--args", r#"{"numbers": [1], "p": 101}"#]),
    )
    .failed_saying(&["p must be between 0 and 100"]);

    let textkit = plugin_wasm("textkit");
    let run = call(
        &textkit,
        &with_cache(&["convert_case", "--args", r#"{"text": "helloWasmWorld", "to": "kebab"}"#]),
    )
    .succeeded();
    assert_eq!(run.result()["content"][0]["text"], "hello-wasm-world", "{}", run.stdout);
    let run = call(
        &textkit,
        &with_cache(&["char_stats", "--args", r#"{"text": "ab 1\n!"}"#]),
    )
    .succeeded();
    assert!(
        run.stderr.contains("counting 6 characters on 2 lines"),
        "{}",
        run.stderr
    );
    let cases = call(&textkit, &with_cache(&["--resource", "textkit://cases"]))
        .succeeded()
        .result();
    assert!(
        cases["contents"][0]["text"].as_str().unwrap().contains("pascal"),
        "{cases}"
    );
    let prompt = call(
        &textkit,
        &with_cache(&["--prompt", "rename", "--args", r#"{"identifier": "x1"}"#]),
    )
    .succeeded()
    .result();
    assert!(
        prompt["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("`x1`"),
        "{prompt}"
    );
    call(
        &textkit,
        &with_cache(&["convert_case", "--args", r#"{"text": "a", "to": "title"}"#]),
    )
    .failed_saying(&["/to: \"title\" is not one of"]);

    let cached = std::fs::read_dir(cache.path()).unwrap().count();
    assert!(
        cached >= 2,
        "both components are in the cache directory ({cached} entries)"
    );
}

/// `plugins/dist` copied elsewhere as it is (`cp -R`), as a user does: the
/// docs-search manifest's grant goes along with it and still resolves.
#[test]
fn a_copy_of_the_built_plugins_directory_keeps_its_grants_working() {
    let copy = tempfile::tempdir().expect("a temporary directory");
    let status = Command::new("cp")
        .arg("-R")
        .arg(wasm_mcp_tests::plugins_dist())
        .arg(copy.path().join("my-plugins"))
        .status()
        .expect("run cp");
    assert!(status.success());
    let plugin = copy.path().join("my-plugins/docs-search.wasm");
    let found = call(&plugin, &["search_docs", "--args", r#"{"query": "manifest"}"#]).succeeded();
    assert!(found.result()["structuredContent"]["documents"].as_u64().unwrap() > 0);
}

/// A tool whose task support is `required` runs as a task, as a client runs
/// it: its result on stdout, its progress and status changes on stderr.
#[test]
fn a_tool_that_runs_only_as_a_task_runs_as_one() {
    let dir = PluginDir::with(&["batch-digest"]);
    dir.add_file(
        "batch-digest.toml",
        b"[tools.digest_batch]\ntask_support = \"required\"\n",
    );
    let plugin = dir.path().join("batch-digest.wasm");
    let run = call(
        &plugin,
        &[
            "digest_batch",
            "--args",
            r#"{"items": ["alpha", "beta"], "rounds": 10}"#,
        ],
    )
    .succeeded();
    let result = run.result();
    assert_eq!(result["structuredContent"]["completed"], 2, "{result}");
    let task_id = result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("the result names its task: {result}"));
    for said in [
        format!("[task] {task_id} created: digest_batch runs as a task"),
        "[progress] 2.0/2.0 digested 2 of 2 inputs".to_owned(),
        format!("[task] {task_id} completed"),
    ] {
        assert!(
            run.stderr.contains(&said),
            "expected {said:?} on stderr:\n{}",
            run.stderr
        );
    }
}
