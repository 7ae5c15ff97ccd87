//! `wasm-mcp-bench keyvalue`: `wasi:keyvalue` get and set from a plugin, with
//! the embedded store (a redb file) and with Redis: each operation timed by
//! the plugin itself (`kv-probe`'s `timed`: the crossing into the host, the
//! store and back), p50 and p99. The plugin runs in this process on the
//! host's library, as the server runs it; sets write distinct keys of 100
//! bytes, gets read them back.
//!
//! Needs `redis-server` (`make bench` installs it with apt).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use wasm_mcp::{CallScope, Location, Manifest, PluginRuntime, Settings, StateStore};
use wasm_mcp_tests::plugin_wasm;
use wasm_mcp_tests::redis::TestRedis;

use crate::settings::quick;
use crate::stats::{micros, percentile};

/// Operations timed in one call.
const PER_CALL: usize = 200;

/// The times of `calls` × [`PER_CALL`] gets and sets (sets first) from
/// kv-probe keeping its state at `location`.
async fn measure(location: &Location, calls: usize) -> (Vec<Duration>, Vec<Duration>) {
    let store = StateStore::open(location, Duration::from_secs(10)).expect("the state store opens");
    let cache = tempfile::tempdir().expect("a cache directory");
    let runtime = PluginRuntime::new(&Settings::default(), Some(cache.path().to_owned()), store)
        .expect("the plugin runtime starts");
    let wasm = plugin_wasm("kv-probe");
    let manifest = Manifest::parse("[keyvalue]\nbuckets = [\"bench\"]\n", &wasm.with_extension("toml"))
        .expect("the manifest parses");
    let plugin = runtime
        .load_with_manifest(&wasm, manifest)
        .await
        .expect("kv-probe loads");
    let mut timings = [Vec::new(), Vec::new()];
    for (op, took) in ["set", "get"].into_iter().zip(&mut timings) {
        // One call first, not counted: the store's connection and first writes.
        for call in 0..=calls {
            let arguments = json!({"bucket": "bench", "op": op, "count": PER_CALL, "value_bytes": 100}).to_string();
            let scope = Arc::new(CallScope::detached());
            let result = plugin
                .call_tool(scope, &"timed".to_string(), &arguments)
                .await
                .expect("timed answers");
            assert!(!result.is_error, "timed {op} failed: {:?}", result.content);
            let structured: Value =
                serde_json::from_str(result.structured_content.as_deref().expect("structured content")).unwrap();
            if call > 0 {
                took.extend(
                    structured["nanos"]
                        .as_array()
                        .expect("the times")
                        .iter()
                        .map(|nanos| Duration::from_nanos(nanos.as_u64().unwrap_or_default())),
                );
            }
        }
    }
    let [sets, gets] = timings;
    (sets, gets)
}

fn report(store: &str, op: &str, samples: &[Duration]) {
    println!(
        "keyvalue {op} from a plugin, {store:<16} {:>5} ops: p50 {:>8}  p99 {:>8}",
        samples.len(),
        micros(percentile(samples, 50.0)),
        micros(percentile(samples, 99.0)),
    );
}

pub fn run() {
    let calls = if quick() { 2 } else { 10 };
    let work = tempfile::tempdir().expect("a scratch directory");
    let redis = TestRedis::start();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    for (name, location) in [
        ("embedded (redb)", Location::File(work.path().join("state.redb"))),
        ("Redis", Location::Redis(redis.url())),
    ] {
        let (sets, gets) = runtime.block_on(measure(&location, calls));
        report(name, "set", &sets);
        report(name, "get", &gets);
    }
}
