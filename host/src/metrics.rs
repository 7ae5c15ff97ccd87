//! What the process counts for the people who run it, served in the
//! Prometheus text format at `/metrics`: request durations by method, tool
//! and outcome and session durations (the OpenTelemetry semantic conventions
//! for MCP, `mcp.server.operation.duration` and `mcp.server.session.duration`,
//! as Prometheus spells them), plugin calls by outcome, limit hits by kind,
//! fuel, memory, plugin loads and reloads, tasks by status, sessions,
//! subscriptions, calls running and waiting, and outbound drops.
//!
//! It also keeps what the status page shows beyond counters ([`Metrics::status`]):
//! each tool's recent latencies, the last load error of each plugin, and the
//! latest limit hits and refused egress.
//!
//! One set per process ([`METRICS`]); recording one value is a few atomic
//! operations (a tool call also takes one short lock). Every label value
//! comes from the server's own vocabulary (the methods it serves, the names
//! of loaded plugins and their tools, fixed kinds), never from what a client
//! sends, so the series stay bounded.
//!
//! [`METRICS`] is the one process-wide static the host keeps, on purpose,
//! rather than a handle passed through the hub and the call scope: what it
//! counts is the process's by definition (one `/metrics` per process, and
//! nothing ever wants a second set), and it is counted far below any
//! context a request carries (the DNS and HTTP gates of the sandbox, a
//! call's guard, the task stores, plugin loads). A handle would be one more
//! field in every call's store and one more argument through about twenty
//! constructors, on the hot path, to reach the same counters; the static
//! costs one pointer load once initialized. Tests see no cross-talk: each
//! server a test starts is a process of its own.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{LazyLock, Mutex, OnceLock};
use std::time::Duration;
use std::time::SystemTime;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use serde_json::{Value, json};

use crate::limits::LimitHit;
use crate::protocol::SUPPORTED_PROTOCOL_VERSIONS;

/// The process's metrics.
pub static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

/// The content type of [`Metrics::render`].
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Upper bounds, in seconds, of the duration buckets: the ones the
/// OpenTelemetry MCP conventions advise.
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Upper bounds, in seconds, of the session duration buckets.
const SESSION_BUCKETS: [f64; 8] = [1.0, 10.0, 60.0, 300.0, 1800.0, 3600.0, 14400.0, 86400.0];

/// Latencies kept per tool for the status page's percentiles.
const RECENT_LATENCIES: usize = 512;

/// Limit hits, refused egress and load failures the status page lists.
const RECENT_EVENTS: usize = 50;

/// Every status a task can have.
const TASK_STATUSES: [&str; 5] = ["working", "input_required", "completed", "failed", "cancelled"];

/// One request: what was asked, of which tool, how it ended.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    mcp_method_name: &'static str,
    /// The tool of a `tools/call`, when a loaded plugin serves it.
    gen_ai_tool_name: Option<String>,
    /// The JSON-RPC error code, or `tool_error` when the result is an error.
    error_type: Option<String>,
    mcp_protocol_version: &'static str,
    network_transport: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabels {
    mcp_protocol_version: &'static str,
    network_transport: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginLabels {
    plugin: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginCallLabels {
    plugin: String,
    /// What the call was: `tools/call`, `resources/read`, `prompts/get`, `completion/complete`.
    call: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitLabels {
    plugin: String,
    limit: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LoadLabels {
    plugin: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SubscriptionLabels {
    /// `resource` (a 2025-11-25 `resources/subscribe`) or `listen` (a
    /// 2026-07-28 `subscriptions/listen` stream).
    kind: &'static str,
}

fn durations() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

fn session_durations() -> Histogram {
    Histogram::new(SESSION_BUCKETS)
}

fn memory_sizes() -> Histogram {
    // 64 KiB (one wasm page) to 4 GiB, by fours.
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        65536.0, 4.0, 9,
    ))
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// Every metric the process keeps.
pub struct Metrics {
    registry: Registry,
    operations: Histograms<OperationLabels>,
    sessions_ended: Histograms<VersionLabels>,
    sessions: Family<VersionLabels, Gauge>,
    subscriptions: Family<SubscriptionLabels, Gauge>,
    plugin_calls: Family<PluginCallLabels, Counter>,
    plugin_call_duration: Histograms<PluginLabels>,
    fuel: Family<PluginLabels, Counter>,
    peak_memory: Histograms<PluginLabels>,
    limit_hits: Family<LimitLabels, Counter>,
    calls_running: Gauge,
    calls_waiting: Gauge,
    plugin_loads: Family<LoadLabels, Counter>,
    plugins_loaded: Gauge,
    reloads: Counter,
    tasks: Family<StatusLabels, Gauge>,
    outbound_dropped: Family<KindLabels, Counter>,
    egress_refused: Family<PluginLabels, Counter>,
    /// `pipe` (stdio) or `tcp` (HTTP), as the conventions name them.
    transport: OnceLock<&'static str>,
    /// Calls, errors and recent latencies of each served tool.
    tools: Mutex<HashMap<String, ToolStats>>,
    /// The latest limit hits, refused egress and load failures, newest last.
    recent: Mutex<VecDeque<Value>>,
    /// Each plugin's last failure to load, until a version loads.
    load_errors: Mutex<BTreeMap<String, Value>>,
    /// Per plugin, the update held for approval (its digest and what it asks for more).
    held_updates: Mutex<BTreeMap<String, Value>>,
}

/// What the status page shows of one tool.
#[derive(Default)]
struct ToolStats {
    calls: u64,
    errors: u64,
    /// The last [`RECENT_LATENCIES`] durations, in seconds (a ring).
    latencies: Vec<f64>,
    next: usize,
}

impl ToolStats {
    fn record(&mut self, failed: bool, seconds: f64) {
        self.calls += 1;
        self.errors += u64::from(failed);
        if self.latencies.len() < RECENT_LATENCIES {
            self.latencies.push(seconds);
        } else {
            self.latencies[self.next] = seconds;
        }
        self.next = (self.next + 1) % RECENT_LATENCIES;
    }

    fn to_json(&self) -> Value {
        let mut sorted = self.latencies.clone();
        sorted.sort_by(f64::total_cmp);
        let percentile = |p: f64| {
            let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
            sorted.get(at).map(|s| s * 1000.0)
        };
        json!({
            "calls": self.calls,
            "errors": self.errors,
            "p50_ms": percentile(0.5),
            "p95_ms": percentile(0.95),
            "p99_ms": percentile(0.99),
        })
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}

impl Metrics {
    fn new() -> Self {
        let mut metrics = Metrics {
            registry: Registry::default(),
            operations: Family::new_with_constructor(durations),
            sessions_ended: Family::new_with_constructor(session_durations),
            sessions: Family::default(),
            subscriptions: Family::default(),
            plugin_calls: Family::default(),
            plugin_call_duration: Family::new_with_constructor(durations),
            fuel: Family::default(),
            peak_memory: Family::new_with_constructor(memory_sizes),
            limit_hits: Family::default(),
            calls_running: Gauge::default(),
            calls_waiting: Gauge::default(),
            plugin_loads: Family::default(),
            plugins_loaded: Gauge::default(),
            reloads: Counter::default(),
            tasks: Family::default(),
            outbound_dropped: Family::default(),
            egress_refused: Family::default(),
            transport: OnceLock::new(),
            tools: Mutex::default(),
            recent: Mutex::default(),
            load_errors: Mutex::default(),
            held_updates: Mutex::default(),
        };
        metrics.registry.register_with_unit(
            "mcp_server_operation_duration",
            "How long the server took to answer a request (mcp.server.operation.duration)",
            Unit::Seconds,
            metrics.operations.clone(),
        );
        metrics.registry.register_with_unit(
            "mcp_server_session_duration",
            "How long the sessions that ended lasted (mcp.server.session.duration)",
            Unit::Seconds,
            metrics.sessions_ended.clone(),
        );
        metrics.registry.register(
            "wasm_mcp_sessions",
            "Sessions open now (2025-11-25 sessions; a 2026-07-28 request needs none)",
            metrics.sessions.clone(),
        );
        metrics.registry.register(
            "wasm_mcp_subscriptions",
            "Resource subscriptions and subscriptions/listen streams open now",
            metrics.subscriptions.clone(),
        );
        metrics.registry.register(
            "wasm_mcp_plugin_calls",
            "Calls into plugins, by what they were and how they ended",
            metrics.plugin_calls.clone(),
        );
        metrics.registry.register_with_unit(
            "wasm_mcp_plugin_call_duration",
            "Wall time of calls into plugins, from instance to outcome",
            Unit::Seconds,
            metrics.plugin_call_duration.clone(),
        );
        metrics.registry.register(
            "wasm_mcp_plugin_fuel_consumed",
            "Fuel (wasm instructions) the calls of a plugin used",
            metrics.fuel.clone(),
        );
        metrics.registry.register_with_unit(
            "wasm_mcp_plugin_call_peak_memory",
            "The most linear memory one call used",
            Unit::Bytes,
            metrics.peak_memory.clone(),
        );
        metrics.registry.register(
            "wasm_mcp_plugin_limit_hits",
            "Calls stopped by a limit, by which",
            metrics.limit_hits.clone(),
        );
        metrics.registry.register(
            "wasm_mcp_plugin_calls_running",
            "Calls into plugins running now",
            metrics.calls_running.clone(),
        );
        metrics.registry.register(
            "wasm_mcp_plugin_calls_waiting",
            "Calls waiting for their turn (the concurrency limits)",
            metrics.calls_waiting.clone(),
        );
        metrics.registry.register(
            "wasm_mcp_plugin_loads",
            "Plugin versions loaded from the plugins directory, and failures to load one",
            metrics.plugin_loads.clone(),
        );
        metrics.registry.register(
            "wasm_mcp_plugins_loaded",
            "Plugins serving now",
            metrics.plugins_loaded.clone(),
        );
        metrics.registry.register(
            "wasm_mcp_reloads",
            "Changes of the plugins directory applied",
            metrics.reloads.clone(),
        );
        metrics.registry.register(
            "wasm_mcp_tasks",
            "Tasks this process holds, by status",
            metrics.tasks.clone(),
        );
        metrics.registry.register(
            "wasm_mcp_outbound_dropped",
            "Notifications dropped or merged because a client did not read them fast enough or a call's budget ran out",
            metrics.outbound_dropped.clone(),
        );
        metrics.registry.register(
            "wasm_mcp_egress_refused",
            "Outgoing connections, name lookups and HTTP requests of plugins the sandbox refused",
            metrics.egress_refused.clone(),
        );
        metrics
    }

    /// Every metric, in the Prometheus text exposition format.
    pub fn render(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String does not fail");
        text
    }

    /// A request answered after `took`: `error` is the JSON-RPC code, or
    /// `tool_error` for a tool result with `isError`.
    pub fn operation(&self, request: Operation<'_>, error: Option<String>, took: Duration) {
        if let Some(tool) = request.tool {
            let mut tools = self.tools.lock().unwrap();
            let stats = match tools.get_mut(tool) {
                Some(stats) => stats,
                None => tools.entry(tool.to_owned()).or_default(),
            };
            stats.record(error.is_some(), took.as_secs_f64());
        }
        self.operations
            .get_or_create(&OperationLabels {
                mcp_method_name: request.method,
                gen_ai_tool_name: request.tool.map(str::to_owned),
                error_type: error,
                mcp_protocol_version: request.version,
                network_transport: self.transport(),
            })
            .observe(took.as_secs_f64());
    }

    /// The process serves over `transport`: `pipe` (stdio) or `tcp` (HTTP).
    pub fn serving_over(&self, transport: &'static str) {
        let _ = self.transport.set(transport);
    }

    /// `pipe` (stdio) or `tcp` (HTTP).
    pub fn transport(&self) -> &'static str {
        self.transport.get().copied().unwrap_or("pipe")
    }

    /// A session opened (2025-11-25 `initialize`).
    pub fn session_opened(&self, version: &'static str) {
        self.sessions.get_or_create(&self.version_labels(version)).inc();
    }

    /// A session opened with `session_opened` ended after `lasted`.
    pub fn session_closed(&self, version: &'static str, lasted: Duration) {
        let labels = self.version_labels(version);
        self.sessions.get_or_create(&labels).dec();
        self.sessions_ended.get_or_create(&labels).observe(lasted.as_secs_f64());
    }

    /// `count` subscriptions of `kind` (`resource` or `listen`) opened (or closed, when negative).
    pub fn subscriptions(&self, kind: &'static str, count: i64) {
        self.subscriptions
            .get_or_create(&SubscriptionLabels { kind })
            .inc_by(count);
    }

    /// A call into `plugin` ended: what it was, how, what it used.
    pub fn plugin_call(&self, plugin: &str, call: &'static str, ended: PluginCallEnd) {
        let labels = PluginLabels {
            plugin: plugin.to_owned(),
        };
        self.plugin_calls
            .get_or_create(&PluginCallLabels {
                plugin: plugin.to_owned(),
                call,
                outcome: ended.outcome,
            })
            .inc();
        self.plugin_call_duration
            .get_or_create(&labels)
            .observe(ended.took.as_secs_f64());
        self.fuel.get_or_create(&labels).inc_by(ended.fuel);
        self.peak_memory
            .get_or_create(&labels)
            .observe(ended.peak_memory as f64);
    }

    /// A limit stopped a call into `plugin`.
    pub fn limit_hit(&self, plugin: &str, hit: &LimitHit) {
        let limit = hit.kind();
        self.limit_hits
            .get_or_create(&LimitLabels {
                plugin: plugin.to_owned(),
                limit,
            })
            .inc();
        self.remember(json!({ "kind": "limit", "plugin": plugin, "limit": limit, "detail": hit.to_string() }));
    }

    /// The sandbox refused an outgoing connection, name lookup or HTTP
    /// request of `plugin` to `target`, for `why`.
    pub fn egress_refused(&self, plugin: &str, target: &str, why: &str) {
        self.egress_refused
            .get_or_create(&PluginLabels {
                plugin: plugin.to_owned(),
            })
            .inc();
        self.remember(json!({ "kind": "egress_refused", "plugin": plugin, "target": target, "detail": why }));
    }

    /// Keeps `event` (stamped now) among the latest.
    fn remember(&self, mut event: Value) {
        event["at_ms"] = json!(now_ms());
        let mut recent = self.recent.lock().unwrap();
        if recent.len() == RECENT_EVENTS {
            recent.pop_front();
        }
        recent.push_back(event);
    }

    /// Counts a call as running until the returned value is dropped.
    pub fn call_running(&self) -> Held {
        Held::on(&self.calls_running)
    }

    /// Counts a call as waiting for its turn until the returned value is dropped.
    pub fn call_waiting(&self) -> Held {
        Held::on(&self.calls_waiting)
    }

    /// The updates held for approval now: per plugin, the version's digest
    /// and each grant it asks for beyond those approved (replacing the last).
    pub fn held_updates(&self, held: BTreeMap<String, (String, Vec<String>)>) {
        *self.held_updates.lock().unwrap() = held
            .into_iter()
            .map(|(plugin, (digest, asks))| (plugin, json!({ "digest": digest, "asks": asks })))
            .collect();
    }

    /// A version of `plugin` was loaded, or failed to load (`error` says why).
    pub fn plugin_load(&self, plugin: &str, error: Option<&str>) {
        let outcome = match error {
            None => {
                self.load_errors.lock().unwrap().remove(plugin);
                "loaded"
            }
            Some(error) => {
                let failure = json!({ "at_ms": now_ms(), "error": error });
                self.load_errors.lock().unwrap().insert(plugin.to_owned(), failure);
                self.remember(json!({ "kind": "load_failed", "plugin": plugin, "detail": error }));
                "failed"
            }
        };
        self.plugin_loads
            .get_or_create(&LoadLabels {
                plugin: plugin.to_owned(),
                outcome,
            })
            .inc();
    }

    /// A change of the plugins directory was applied; `serving` plugins serve now.
    pub fn reloaded(&self, serving: usize) {
        self.reloads.inc();
        self.plugins_loaded.set(serving as i64);
    }

    /// A task moved from `from` (none: it is new here) to `to` (none: this process let go of it).
    pub fn task_moved(&self, from: Option<&'static str>, to: Option<&'static str>) {
        if let Some(status) = from {
            self.tasks.get_or_create(&StatusLabels { status }).dec();
        }
        if let Some(status) = to {
            self.tasks.get_or_create(&StatusLabels { status }).inc();
        }
    }

    /// What the status page shows from here: each tool's calls, errors and
    /// latency percentiles, calls running and waiting, tasks by status,
    /// sessions, subscriptions, the last load error of each plugin, and the
    /// latest limit hits and refused egress (newest first).
    pub fn status(&self) -> Value {
        let tools: BTreeMap<String, Value> = self
            .tools
            .lock()
            .unwrap()
            .iter()
            .map(|(tool, stats)| (tool.clone(), stats.to_json()))
            .collect();
        let tasks: BTreeMap<&str, i64> = TASK_STATUSES
            .iter()
            .map(|status| (*status, self.tasks.get_or_create(&StatusLabels { status }).get()))
            .collect();
        let sessions: i64 = SUPPORTED_PROTOCOL_VERSIONS
            .iter()
            .map(|version| self.sessions.get_or_create(&self.version_labels(version)).get())
            .sum();
        let subscriptions: i64 = ["resource", "listen"]
            .iter()
            .map(|kind| self.subscriptions.get_or_create(&SubscriptionLabels { kind }).get())
            .sum();
        json!({
            "tools": tools,
            "calls_running": self.calls_running.get(),
            "calls_waiting": self.calls_waiting.get(),
            "tasks": tasks,
            "sessions": sessions,
            "subscriptions": subscriptions,
            "load_errors": *self.load_errors.lock().unwrap(),
            "held_updates": *self.held_updates.lock().unwrap(),
            "recent": self.recent.lock().unwrap().iter().rev().collect::<Vec<_>>(),
        })
    }

    fn version_labels(&self, version: &'static str) -> VersionLabels {
        VersionLabels {
            mcp_protocol_version: version,
            network_transport: self.transport(),
        }
    }

    /// `count` outbound notifications of `kind` were dropped or merged.
    pub fn outbound_dropped(&self, kind: &'static str, count: u64) {
        self.outbound_dropped.get_or_create(&KindLabels { kind }).inc_by(count);
    }
}

/// One count on a gauge, taken back when dropped.
pub struct Held(Gauge);

impl Held {
    fn on(gauge: &Gauge) -> Held {
        gauge.inc();
        Held(gauge.clone())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// What identifies a request in [`Metrics::operation`].
#[derive(Debug, Clone, Copy)]
pub struct Operation<'a> {
    /// A method the server serves (`other` for anything else).
    pub method: &'static str,
    /// The tool a `tools/call` named, if a loaded plugin serves it.
    pub tool: Option<&'a str>,
    pub version: &'static str,
}

/// How a call into a plugin ended, for [`Metrics::plugin_call`].
#[derive(Debug, Clone, Copy)]
pub struct PluginCallEnd {
    /// `ok`, `refused`, `limit`, `crashed`, `cancelled`, `shutting_down`, `unsupported`, `invalid`.
    pub outcome: &'static str,
    pub took: Duration,
    pub fuel: u64,
    pub peak_memory: usize,
}
