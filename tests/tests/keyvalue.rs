//! Plugin state through `wasi:keyvalue`, kept in the host's state store: the
//! embedded database (kept across a restart) and a real Redis (shared by
//! replicas). Every operation of `store`, `atomics` and `batch` from a plugin
//! (`kv-probe`), pages of keys, a bucket the manifest does not grant, quotas
//! and expiry, a plugin filling its bucket while another is served, counters
//! under contention from two replicas, and the example `memory` plugin's
//! notes kept per OAuth principal.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use wasm_mcp_tests::expect::{is_tool_error, single_text};
use wasm_mcp_tests::http::HttpServer;
use wasm_mcp_tests::issuer::Issuer;
use wasm_mcp_tests::redis::TestRedis;
use wasm_mcp_tests::{PluginDir, StdioServer, wait};

/// Where a test's servers keep their state.
enum Backend {
    /// An embedded database file in a directory of the test's own.
    Embedded(tempfile::TempDir),
    Redis(TestRedis),
}

impl Backend {
    fn both() -> [Backend; 2] {
        [
            Backend::Embedded(tempfile::tempdir().unwrap()),
            Backend::Redis(TestRedis::start()),
        ]
    }

    /// The `--state` value.
    fn state(&self) -> String {
        match self {
            Backend::Embedded(dir) => dir.path().join("state.redb").display().to_string(),
            Backend::Redis(redis) => redis.url(),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Backend::Embedded(_) => "embedded",
            Backend::Redis(_) => "redis",
        }
    }
}

/// A plugins directory with `kv-probe` under each of `plugins`, each granted `manifest`.
fn probes(plugins: &[(&str, &str)]) -> PluginDir {
    let dir = PluginDir::empty();
    for (name, manifest) in plugins {
        dir.add_plugin_as("kv-probe", name);
        dir.add_file(&format!("{name}.toml"), manifest.as_bytes());
    }
    dir
}

/// A stdio server of `plugins` keeping its state in `backend`, initialized.
fn serve(plugins: PluginDir, backend: &Backend) -> StdioServer {
    let mut server = StdioServer::start_with_args(plugins, &["--state", &backend.state()]);
    server.initialize(json!({}));
    server
}

/// The structured result of a call that succeeded.
#[track_caller]
fn structured(server: &mut StdioServer, tool: &str, arguments: Value) -> Value {
    let response = server.call_tool(tool, arguments);
    let result = response.result();
    assert!(!is_tool_error(result), "{tool} failed: {result}");
    result["structuredContent"].clone()
}

/// The text of a call's result, and whether it was a tool error.
#[track_caller]
fn text(server: &mut StdioServer, tool: &str, arguments: Value) -> (String, bool) {
    let response = server.call_tool(tool, arguments);
    let result = response.result();
    (single_text(result), is_tool_error(result))
}

/// The keys kv-probe's `list` found.
fn key_set(listed: &Value) -> BTreeSet<&str> {
    listed["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

#[test]
fn every_operation_of_store_atomics_and_batch_from_a_plugin() {
    for backend in Backend::both() {
        let mut server = serve(probes(&[("kv-probe", "[keyvalue]\nbuckets = [\"data\"]\n")]), &backend);
        let (seen, failed) = text(&mut server, "operations", json!({"bucket": "data"}));
        assert!(!failed, "{}: {seen}", backend.name());
        let seen: Value = serde_json::from_str(&seen).unwrap();
        let expected = json!({
            "get a": "1",
            "exists a": true,
            "exists z": false,
            "get a after delete": null,
            "get-many b z c": ["x", null, "y"],
            "exists b after delete-many": false,
            "increment n 5": 5,
            "increment n -2": 3,
            "get n": "3",
            "increment n 2 after set 40": 42,
            "cas current before": null,
            "first swap": "failed",
            "cas current after": "other",
            "second swap": true,
            "get k": "mine",
        });
        for (what, value) in expected.as_object().unwrap() {
            assert_eq!(&seen[what], value, "{}: {what} in {seen}", backend.name());
        }
        for counter in ["increment s", "increment max"] {
            let error = seen[counter].as_str().unwrap_or_default();
            assert!(
                error.contains("not a decimal integer"),
                "{}: {counter}: {seen}",
                backend.name()
            );
        }

        // 250 keys in batches of 100 come back over several pages of list-keys.
        let filled = structured(
            &mut server,
            "fill",
            json!({"bucket": "data", "prefix": "page", "count": 250, "value_bytes": 8, "batch": 100}),
        );
        assert_eq!(filled, json!({"written": 250}), "{}", backend.name());
        let listed = structured(&mut server, "list", json!({"bucket": "data"}));
        let keys = key_set(&listed);
        let expected: BTreeSet<String> = (0..250).map(|i| format!("page-{i}")).collect();
        assert_eq!(
            keys,
            expected.iter().map(String::as_str).collect(),
            "{}: every key once the operations' keys are deleted",
            backend.name()
        );
        assert!(listed["pages"].as_u64().unwrap() > 1, "{}: {listed}", backend.name());
        server.shutdown();
    }
}

#[test]
fn a_bucket_the_manifest_does_not_grant_is_refused_with_the_line_to_add() {
    let backend = Backend::Embedded(tempfile::tempdir().unwrap());
    let plugins = probes(&[("kv-probe", "prefix = \"probe\"\n[keyvalue]\nbuckets = [\"data\"]\n")]);
    // The same component with no manifest at all loads, and opens nothing.
    plugins.add_plugin_as("kv-probe", "bare");
    let mut server = serve(plugins, &backend);
    let (error, failed) = text(&mut server, "probe_get", json!({"bucket": "secrets", "key": "k"}));
    let (bare, bare_failed) = text(&mut server, "get", json!({"bucket": "data", "key": "k"}));
    assert!(failed && bare_failed, "{error} / {bare}");
    assert!(
        error.contains("bucket \"secrets\" is not granted to plugin kv-probe")
            && error.contains("(kv-probe.toml): [keyvalue] buckets = [\"data\", \"secrets\"]"),
        "{error}"
    );
    assert!(bare.contains("(bare.toml): [keyvalue] buckets = [\"data\"]"), "{bare}");
    let (granted, failed) = text(&mut server, "probe_get", json!({"bucket": "data", "key": "k"}));
    assert!(!failed && granted == "null", "{granted}");
    server.shutdown();
}

#[test]
fn quotas_and_sizes_stop_a_plugin_filling_its_bucket_while_another_is_served() {
    let hog = "prefix = \"hog\"\n[keyvalue]\nbuckets = [\"data\", \"big\"]\n\
               [keyvalue.bucket.data]\nmax_keys = 50\n\
               [keyvalue.bucket.big]\nmax_bytes = 1000\nmax_value_bytes = 300\n";
    for backend in Backend::both() {
        let neighbour = "prefix = \"neighbour\"\n[keyvalue]\nbuckets = [\"data\"]\n";
        let plugins = probes(&[("hog", hog), ("neighbour", neighbour)]);
        let mut server = serve(plugins, &backend);
        let name = backend.name();

        let filled = structured(
            &mut server,
            "hog_fill",
            json!({"bucket": "data", "prefix": "k", "count": 100000, "value_bytes": 10}),
        );
        assert_eq!(filled["written"], 50, "{name}: {filled}");
        let error = filled["error"].as_str().unwrap();
        assert!(
            error.contains("bucket \"data\" is full: it holds its quota of 50 keys")
                && error.contains("max_keys ([keyvalue.bucket.data] in hog.toml)"),
            "{name}: {error}"
        );
        // Full stays full: nothing more goes in, a changed value still does.
        let again = structured(
            &mut server,
            "hog_fill",
            json!({"bucket": "data", "prefix": "more", "count": 1, "value_bytes": 10}),
        );
        assert_eq!(again["written"], 0, "{name}: {again}");
        let rewrite = structured(
            &mut server,
            "hog_fill",
            json!({"bucket": "data", "prefix": "k", "count": 50, "value_bytes": 10}),
        );
        assert_eq!(rewrite, json!({"written": 50}), "{name}");

        // Bytes: key and value count; a value over its size is refused first.
        let bytes = structured(
            &mut server,
            "hog_fill",
            json!({"bucket": "big", "prefix": "b", "count": 100, "value_bytes": 200}),
        );
        assert_eq!(bytes["written"], 4, "{name}: 4 of 203 bytes fit 1000: {bytes}");
        assert!(
            bytes["error"]
                .as_str()
                .unwrap()
                .contains("past its quota of 1000 bytes"),
            "{name}: {bytes}"
        );
        let large = structured(
            &mut server,
            "hog_fill",
            json!({"bucket": "big", "prefix": "l", "count": 1, "value_bytes": 301}),
        );
        assert!(
            large["error"].as_str().unwrap().contains(
                "the value of 301 bytes for key \"l-0\" is larger than bucket \"big\" allows (300 bytes; \
                 [keyvalue.bucket.big] in hog.toml max_value_bytes)"
            ),
            "{name}: {large}"
        );

        // The other plugin's bucket of the same name is its own, and served.
        let listed = structured(&mut server, "neighbour_list", json!({"bucket": "data"}));
        assert_eq!(listed["keys"], json!([]), "{name}: {listed}");
        let filled = structured(
            &mut server,
            "neighbour_fill",
            json!({"bucket": "data", "prefix": "n", "count": 200, "value_bytes": 10}),
        );
        assert_eq!(filled, json!({"written": 200}), "{name}");
        server.shutdown();
    }
}

#[test]
fn expired_keys_are_gone_and_free_their_quota() {
    let manifest = "[keyvalue]\nbuckets = [\"cache\"]\n\
                    [keyvalue.bucket.cache]\nmax_keys = 5\nexpire_after_secs = 1\n";
    for backend in Backend::both() {
        let mut server = serve(probes(&[("kv-probe", manifest)]), &backend);
        let name = backend.name();
        let fill = |server: &mut StdioServer, prefix: &str| {
            structured(
                server,
                "fill",
                json!({"bucket": "cache", "prefix": prefix, "count": 5, "value_bytes": 4}),
            )
        };
        assert_eq!(fill(&mut server, "first"), json!({"written": 5}), "{name}");
        let full = fill(&mut server, "second");
        assert_eq!(full["written"], 0, "{name}: {full}");
        let gone = wait::poll(wait::timeout(), || {
            let listed = structured(&mut server, "list", json!({"bucket": "cache"}));
            (listed["keys"] == json!([])).then_some(())
        });
        assert!(gone.is_some(), "{name}: the first keys never expired");
        let (value, _) = text(&mut server, "get", json!({"bucket": "cache", "key": "first-0"}));
        assert_eq!(value, "null", "{name}");
        assert_eq!(
            fill(&mut server, "second"),
            json!({"written": 5}),
            "{name}: the expired keys made room"
        );
        let listed = structured(&mut server, "list", json!({"bucket": "cache"}));
        let keys = key_set(&listed);
        assert!(keys.iter().all(|key| key.starts_with("second-")), "{name}: {listed}");
        server.shutdown();
    }
}

/// The memory example's note and counter, remembered by one server and
/// read by `next`.
fn remember_then_recall(first: &mut StdioServer, next: &mut StdioServer) {
    let (said, failed) = text(first, "remember", json!({"key": "plan", "text": "ship it"}));
    assert!(!failed, "{said}");
    let count = structured(first, "count", json!({"name": "visits"}));
    assert_eq!(count["value"], 1);

    assert_eq!(
        text(next, "recall", json!({"key": "plan"})),
        ("ship it".to_owned(), false)
    );
    let count = structured(next, "count", json!({"name": "visits"}));
    assert_eq!(count["value"], 2);
}

#[test]
fn the_memory_plugin_remembers_across_a_restart_with_the_embedded_store() {
    let backend = Backend::Embedded(tempfile::tempdir().unwrap());
    let plugins = PluginDir::with(&["memory"]);
    let mut first = StdioServer::spawn(plugins.path(), &["--state", &backend.state()]);
    first.initialize(json!({}));
    // Stopped before the next starts: the embedded file is one process's at a time.
    let (said, failed) = text(&mut first, "remember", json!({"key": "plan", "text": "ship it"}));
    assert!(!failed, "{said}");
    assert_eq!(structured(&mut first, "count", json!({"name": "visits"}))["value"], 1);
    first.shutdown();

    let mut restarted = StdioServer::spawn(plugins.path(), &["--state", &backend.state()]);
    restarted.initialize(json!({}));
    assert_eq!(
        text(&mut restarted, "recall", json!({"key": "plan"})),
        ("ship it".to_owned(), false)
    );
    assert_eq!(
        structured(&mut restarted, "count", json!({"name": "visits"}))["value"],
        2
    );
    restarted.shutdown();
    assert!(Path::new(&backend.state()).is_file());
}

#[test]
fn replicas_sharing_redis_see_the_memory_plugins_state() {
    let backend = Backend::Redis(TestRedis::start());
    let mut first = serve(PluginDir::with(&["memory"]), &backend);
    let mut second = serve(PluginDir::with(&["memory"]), &backend);
    remember_then_recall(&mut first, &mut second);
    first.shutdown();
    second.shutdown();
}

/// `tool` of kv-probe called `calls` times from each of `threads` sessions
/// of each of `servers` at once, each call adding `times`; the counter's value.
fn count_concurrently(servers: &[HttpServer], tool: &str, threads: usize, calls: usize, times: usize) -> u64 {
    std::thread::scope(|scope| {
        for server in servers {
            for _ in 0..threads {
                scope.spawn(move || {
                    let mut client = server.session(json!({}));
                    for _ in 0..calls {
                        let exchange =
                            client.call_tool(tool, json!({"bucket": "counters", "key": tool, "times": times}));
                        assert!(!is_tool_error(exchange.result()), "{:?}", exchange.response);
                    }
                });
            }
        }
    });
    let mut client = servers[0].session(json!({}));
    let exchange = client.call_tool("get", json!({"bucket": "counters", "key": tool}));
    let value: Value = serde_json::from_str(&single_text(exchange.result())).unwrap();
    value.as_str().unwrap().parse().unwrap()
}

#[test]
fn two_replicas_counting_at_once_lose_no_increment_and_no_swap() {
    let redis = TestRedis::start();
    let url = redis.url();
    let replica = || {
        let plugins = probes(&[("kv-probe", "[keyvalue]\nbuckets = [\"counters\"]\n")]);
        HttpServer::start(plugins, &["--state", &url])
    };
    let servers = [replica(), replica()];
    // 2 replicas × 4 sessions × 25 calls × 50 increments.
    assert_eq!(count_concurrently(&servers, "increment_times", 4, 25, 50), 10_000);
    // 2 replicas × 4 sessions × 25 calls × 10 compare-and-swaps, each retried until it lands.
    assert_eq!(count_concurrently(&servers, "cas_add_times", 4, 25, 10), 2_000);
}

#[test]
fn each_oauth_principal_sees_only_its_own_notes_and_shares_the_counters() {
    let issuer = Issuer::start();
    let redis = TestRedis::start();
    let server = HttpServer::start(
        PluginDir::with(&["memory"]),
        &["--auth-issuer", &issuer.url, "--state", &redis.url()],
    );
    let session = |subject: &str| {
        let mut client = server.client();
        client.token = Some(issuer.token(subject, &server.url, "", Duration::from_secs(600)));
        client.initialize(json!({}));
        client
    };
    let (mut ada, mut grace) = (session("ada"), session("grace"));
    let call = |client: &mut wasm_mcp_tests::http::McpClient, tool: &str, arguments: Value| {
        let exchange = client.call_tool(tool, arguments);
        let result = exchange.result().clone();
        (single_text(&result), is_tool_error(&result), result)
    };

    call(&mut ada, "remember", json!({"key": "plan", "text": "ada's plan"}));
    let (missing, failed, _) = call(&mut grace, "recall", json!({"key": "plan"}));
    assert!(
        failed && missing.contains("Nothing is remembered under \"plan\""),
        "{missing}"
    );
    call(&mut grace, "remember", json!({"key": "plan", "text": "grace's plan"}));
    call(&mut grace, "remember", json!({"key": "other", "text": "x"}));
    assert_eq!(call(&mut ada, "recall", json!({"key": "plan"})).0, "ada's plan");
    assert_eq!(call(&mut grace, "recall", json!({"key": "plan"})).0, "grace's plan");
    let listed = call(&mut ada, "list_memories", json!({})).2;
    assert_eq!(listed["structuredContent"]["keys"], json!(["plan"]), "{listed}");
    call(&mut ada, "forget", json!({"key": "plan"}));
    assert_eq!(call(&mut grace, "recall", json!({"key": "plan"})).0, "grace's plan");

    // Counters are the plugin's: every caller counts on one.
    assert_eq!(
        call(&mut ada, "count", json!({"name": "c"})).2["structuredContent"]["value"],
        1
    );
    assert_eq!(
        call(&mut grace, "count", json!({"name": "c"})).2["structuredContent"]["value"],
        2
    );

    // A server that authenticates nobody cannot keep notes per caller.
    let open = HttpServer::start(PluginDir::with(&["memory"]), &["--state", &redis.url()]);
    let mut anyone = open.session(json!({}));
    let (refused, failed, _) = call(&mut anyone, "recall", json!({"key": "plan"}));
    assert!(
        failed && refused.contains("is kept per caller, and this request has no caller to keep it for"),
        "{refused}"
    );
    assert_eq!(
        call(&mut anyone, "count", json!({"name": "c"})).2["structuredContent"]["value"],
        3
    );
}

#[test]
fn the_python_and_javascript_helpers_keep_state_seen_from_a_second_replica() {
    let backend = Backend::Redis(TestRedis::start());
    for plugin in ["scratchpad", "jotter"] {
        let mut first = serve(PluginDir::with(&[plugin]), &backend);
        let mut second = serve(PluginDir::with(&[plugin]), &backend);
        // The manifest's prefix keeps the two examples' tools apart.
        let tool = |name: &str| format!("{plugin}_{name}");
        let jot =
            |server: &mut StdioServer, line: &str| text(server, &tool("jot"), json!({"key": "todo", "text": line}));
        assert_eq!(
            jot(&mut first, "a"),
            ("todo has 1 line(s)".to_owned(), false),
            "{plugin}"
        );
        assert_eq!(
            jot(&mut second, "b"),
            ("todo has 2 line(s)".to_owned(), false),
            "{plugin}"
        );
        assert_eq!(
            text(&mut first, &tool("read"), json!({"key": "todo"})),
            ("a\nb".to_owned(), false),
            "{plugin}"
        );
        assert_eq!(
            structured(&mut first, &tool("tally"), json!({"name": "t"}))["value"],
            1,
            "{plugin}"
        );
        assert_eq!(
            structured(&mut second, &tool("tally"), json!({"name": "t"}))["value"],
            2,
            "{plugin}"
        );
        let (keys, failed) = text(&mut second, &tool("peek"), json!({"bucket": "pages"}));
        assert_eq!((keys.as_str(), failed), ("tally:t, todo", false), "{plugin}");
        let (refused, failed) = text(&mut second, &tool("peek"), json!({"bucket": "secret"}));
        assert!(
            failed
                && refused.contains(&format!(
                    "({plugin}.toml): [keyvalue] buckets = [\"pages\", \"secret\"]"
                )),
            "{plugin}: {refused}"
        );
        first.shutdown();
        second.shutdown();
    }
}
