//! Request dispatch over a real session: the host library with real plugins
//! from plugins/dist and tests/plugins/dist (`make plugins`), an initialized
//! session, then the input as the client's stdin, one message a line. Every
//! request gets exactly one well-formed response (unless the client cancelled
//! it), nothing panics, and the session winds down in bounded time.
#![no_main]

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tokio::sync::mpsc;
use wasm_mcp::fuzzing::{Catalog, ChangedLists, Hub, Incoming, Limits, Outgoing, RequestId, ServerValues, Session};
use wasm_mcp::{PluginRuntime, Settings, StateStore};
use wasm_mcp_fuzz::assert_response;

/// The plugins served: every method has an owner (tools with structured
/// output, sampling, elicitation, roots, progress and logging; resources,
/// templates, prompts and completion).
const PLUGINS: [&str; 4] = [
    "plugins/dist/conformance.wasm",
    "plugins/dist/raw-echo.wasm",
    "plugins/dist/text-tools.wasm",
    "tests/plugins/dist/probe.wasm",
];

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{"tools":{}},"elicitation":{"form":{},"url":{}},"roots":{"listChanged":true}},"clientInfo":{"name":"fuzz","version":"0"}}}"#;

struct Host {
    runtime: tokio::runtime::Runtime,
    hub: Arc<Hub>,
    _plugins: Arc<PluginRuntime>,
}

fn host() -> &'static Host {
    static HOST: OnceLock<Host> = OnceLock::new();
    HOST.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let settings = Settings {
            limits: Limits {
                fuel: 500_000_000,
                timeout_secs: 0.5,
                memory_mib: 64,
                max_output_kib: 1024,
                max_concurrent_calls: 8,
            },
            server: ServerValues {
                // Small pages, so lists hand out cursors.
                page_size: 3,
                client_timeout_secs: 0.05,
                max_concurrent_calls: 16,
                max_tasks: 8,
                ..ServerValues::default()
            },
            ..Settings::default()
        };
        let cache = root.join("fuzz/target/plugin-cache");
        std::fs::create_dir_all(&cache).unwrap();
        let store = StateStore::in_memory();
        let plugins = Arc::new(PluginRuntime::new(&settings, Some(cache), store.clone()).unwrap());
        let hub = Hub::new(settings.server, store).expect("the default settings make a hub");
        let loaded =
            runtime.block_on(async {
                let mut loaded = Vec::new();
                for path in PLUGINS {
                    let path = root.join(path);
                    loaded.push(plugins.load(&path).await.unwrap_or_else(|e| {
                        panic!("cannot load {} (run `make plugins` first): {e:#}", path.display())
                    }));
                }
                loaded
            });
        hub.publish(
            Catalog::build(&loaded, &Catalog::default()),
            &BTreeSet::new(),
            ChangedLists::default(),
        );
        hub.startup_done();
        Host {
            runtime,
            hub,
            _plugins: plugins,
        }
    })
}

/// What the client's lines ask for: the ids that must be answered, the ids it
/// cancelled (which may go unanswered), and how many unreadable lines must be
/// answered with an error that names no request.
#[derive(Default)]
struct Expected {
    answers: Vec<Value>,
    cancelled: Vec<Value>,
    anonymous_errors: usize,
}

impl Expected {
    fn note(&mut self, line: &[u8]) {
        match Incoming::parse_bytes(line) {
            Ok(Incoming::Request(envelope)) => self.answers.push(envelope.id.to_value()),
            Ok(Incoming::Notification { method, params }) if method == "notifications/cancelled" => {
                if let Some(id) = params.get("requestId").and_then(RequestId::from_value) {
                    self.cancelled.push(id.to_value());
                }
            }
            Ok(_) => {}
            Err(bad) => match bad.id {
                Some(id) => self.answers.push(id.to_value()),
                None => self.anonymous_errors += 1,
            },
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let host = host();
    host.runtime.block_on(async {
        let (outbox, mut outgoing) = mpsc::unbounded_channel::<Outgoing>();
        let session = Session::new(host.hub.clone(), outbox);
        let mut expected = Expected::default();
        for line in std::iter::once(INITIALIZE.as_bytes()).chain(data.split(|b| *b == b'\n')) {
            if !line.trim_ascii().is_empty() {
                expected.note(line);
                session.receive(line);
            }
        }
        let closing = session.close(Duration::from_secs(10), "the input ended");
        tokio::time::timeout(Duration::from_secs(20), closing)
            .await
            .expect("the session ends in bounded time");
        drop(session);
        let mut sent = Vec::new();
        while let Ok(out) = outgoing.try_recv() {
            sent.push(out.message);
        }
        for message in &sent {
            assert_eq!(message["jsonrpc"], "2.0", "{message}");
            if message.get("method").is_some() {
                continue; // a notification or a request to the client
            }
            match message.get("id") {
                Some(id) => {
                    let Some(at) = expected.answers.iter().position(|want| want == id) else {
                        panic!("a response to no request (or a second one): {message}");
                    };
                    expected.answers.swap_remove(at);
                    assert_response(message, Some(id));
                }
                None => {
                    assert!(expected.anonymous_errors > 0, "an unasked anonymous error: {message}");
                    expected.anonymous_errors -= 1;
                    assert_response(message, None);
                }
            }
        }
        expected.answers.retain(|id| !expected.cancelled.contains(id));
        assert!(
            expected.answers.is_empty(),
            "requests never answered: {:?}",
            expected.answers
        );
        assert_eq!(expected.anonymous_errors, 0, "unreadable messages never answered");
    });
});
