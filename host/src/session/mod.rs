//! The session: one client's conversation with the server, whatever carries it.
//!
//! It owns the lifecycle (initialize, negotiated version, client capabilities),
//! the per-session state (log level, subscriptions), dispatch of each request to
//! its method, cancellation of requests in flight, and the requests the server
//! sends to the client. Transports hand it parsed messages ([`Session::handle`])
//! and deliver what it sends.

mod capabilities;
mod client;
mod hub;
mod listen;
mod log_rate;
mod methods;
mod mrtr;
mod outbound;
mod results;
mod skills;
mod status;
mod task_extension;
mod tasks;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

pub use hub::Hub;
pub use methods::server_info;

use crate::call::BoxFuture;
use crate::metrics::METRICS;
use crate::principal::{LOCAL_CALLER, Principal};
use crate::protocol::envelope::{ModernFields, Revision};
use crate::protocol::jsonrpc::{self, INVALID_REQUEST, SERVER_ERROR};
use crate::protocol::modern;
use crate::protocol::requests::Notification;
use crate::protocol::{Envelope, Incoming, LogLevel, Method, RequestId, RpcError};
use crate::request::{Answer, AnswerKind, Reply, Served};
use crate::settings;
use crate::tasks::{Task, TaskSettings, TaskStore};
use crate::telemetry;
use capabilities::ClientCapabilities;
use client::PendingClientRequests;
use listen::Listens;
use log_rate::LogRate;
use methods::Caching;
use mrtr::ModernRequest;
use outbound::{Key, Outbound};

pub use outbound::{Charge, Outbox, Outgoing};

/// The era a request is served in, and what it brings with it.
#[derive(Debug, Clone)]
pub enum Era {
    /// A request of the session `initialize` opened (2025-11-25 and
    /// earlier): its capabilities and log level are the session's.
    Legacy,
    /// A 2026-07-28 request: everything it needs is in its own `_meta`, and
    /// nothing from an earlier request is relied on.
    Modern(Arc<ModernRequest>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing but initialize (and ping) is accepted.
    AwaitingInitialize,
    /// initialize was answered.
    Initialized,
}

struct State {
    phase: Phase,
    protocol_version: &'static str,
    client: ClientCapabilities,
    log_level: LogLevel,
    subscriptions: HashSet<String>,
}

pub struct Session {
    hub: Arc<Hub>,
    outbound: Arc<Outbound>,
    state: Mutex<State>,
    in_flight: Mutex<HashMap<RequestId, CancellationToken>>,
    running: TaskTracker,
    task_store: TaskStore,
    client_requests: PendingClientRequests,
    log_rate: Arc<LogRate>,
    /// The session is closing: new requests are refused.
    closing: AtomicBool,
    /// Why the requests still running after the closing grace were stopped.
    stopped: OnceLock<String>,
    listens: Listens,
    /// When the session began, for `mcp.server.session.duration`.
    began: Instant,
    /// Whom its requests act for (over HTTP with authentication); the
    /// latest credential of a session's principal brings its scopes.
    principal: Mutex<Option<Principal>>,
    /// Its client is the user who started the server (stdio, `wasm-mcp
    /// call`): the caller a caller bucket keeps keys for without a principal.
    local: bool,
}

impl Drop for Session {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap();
        if state.phase == Phase::Initialized {
            METRICS.session_closed(state.protocol_version, self.began.elapsed());
        }
        if !state.subscriptions.is_empty() {
            METRICS.subscriptions("resource", -(state.subscriptions.len() as i64));
        }
    }
}

/// The error for a client message over the `max_message_bytes` limit.
pub fn message_too_large(limit: usize) -> RpcError {
    RpcError::new(
        INVALID_REQUEST,
        format!(
            "Invalid Request: the message is larger than the limit of {limit} bytes and was discarded; \
             send smaller messages or raise the limit ({})",
            settings::server::max_message_bytes.hint()
        ),
    )
}

/// Pings the client every `interval` once it is initialized, for as long as
/// the session lives; a client that does not answer is reported on stderr.
async fn keep_alive(session: std::sync::Weak<Session>, interval: Duration) {
    loop {
        tokio::time::sleep(interval).await;
        let Some(session) = session.upgrade() else { return };
        if !session.is_initialized() {
            continue;
        }
        if let Err(error) = session.ask_client("ping", serde_json::json!({}), None).await {
            tracing::warn!(?error, "the client did not answer a ping");
        }
    }
}

impl Session {
    /// A session of the user who started the server (stdio, `wasm-mcp call`).
    pub fn new(hub: Arc<Hub>, outbox: Outbox) -> Arc<Self> {
        Self::open(hub, outbox, None, true)
    }

    /// Whom its requests act for, as a caller bucket of a plugin keeps keys
    /// apart: the principal, else the local user; none over HTTP without
    /// authentication.
    fn caller(&self) -> Option<String> {
        self.principal_id()
            .or_else(|| self.local.then(|| LOCAL_CALLER.to_owned()))
    }

    /// Whom its requests act for, if anyone.
    fn principal(&self) -> Option<Principal> {
        self.principal.lock().unwrap().clone()
    }

    /// The id of the principal its requests act for, if any.
    fn principal_id(&self) -> Option<String> {
        self.principal
            .lock()
            .unwrap()
            .as_ref()
            .map(|principal| principal.id.clone())
    }

    /// The session's principal presented another credential (a refreshed
    /// or stepped-up token): its scopes are now these.
    pub fn act_for(&self, principal: Option<Principal>) {
        *self.principal.lock().unwrap() = principal;
    }

    /// A session whose requests act for `principal`: it lists only what
    /// the principal may use, and what it creates (tasks, request states)
    /// belongs to the principal.
    pub fn acting_for(hub: Arc<Hub>, outbox: Outbox, principal: Option<Principal>) -> Arc<Self> {
        Self::open(hub, outbox, principal, false)
    }

    fn open(hub: Arc<Hub>, outbox: Outbox, principal: Option<Principal>, local: bool) -> Arc<Self> {
        let session = Arc::new(Self {
            hub: hub.clone(),
            outbound: Outbound::new(outbox, hub.config.max_outbound_bytes),
            state: Mutex::new(State {
                phase: Phase::AwaitingInitialize,
                protocol_version: crate::protocol::LATEST_PROTOCOL_VERSION,
                client: ClientCapabilities::default(),
                log_level: LogLevel::Info,
                subscriptions: HashSet::new(),
            }),
            in_flight: Mutex::new(HashMap::new()),
            running: TaskTracker::new(),
            task_store: TaskStore::new(TaskSettings::new(&hub.config)),
            client_requests: PendingClientRequests::default(),
            log_rate: Arc::new(LogRate::new(hub.config.max_log_rate)),
            closing: AtomicBool::new(false),
            stopped: OnceLock::new(),
            listens: Listens::default(),
            began: Instant::now(),
            principal: Mutex::new(principal),
            local,
        });
        hub.register(&session);
        if let Some(interval) = hub.config.ping_interval() {
            tokio::spawn(keep_alive(Arc::downgrade(&session), interval));
        }
        session
    }

    /// Handles one message from the client as framed by its transport (a
    /// line of stdin): parses it, and answers one that does not parse.
    pub fn receive(self: &Arc<Self>, message: &[u8]) {
        match Incoming::parse_bytes(message) {
            Ok(message) => self.handle(message),
            Err(bad) => self.send(jsonrpc::error_response(bad.id.as_ref(), &bad.error), None),
        }
    }

    /// Answers a message that was discarded for being over `max_message_bytes`.
    pub fn refuse_oversized_message(&self) {
        let error = message_too_large(self.hub.config.max_message_bytes);
        self.send(jsonrpc::error_response(None, &error), None);
    }

    /// Handles one message from the client. Requests that reach plugins run
    /// concurrently; their answers are sent when they finish.
    pub fn handle(self: &Arc<Self>, message: Incoming) {
        match message {
            Incoming::Request(envelope) => self.handle_request(*envelope, None),
            Incoming::Notification { method, params } => {
                self.handle_notification(Notification::parse(&method, &params))
            }
            Incoming::Response { id, outcome } => self.client_requests.resolve(&id, outcome),
        }
    }

    /// The protocol version negotiated at initialize (the latest before).
    pub fn protocol_version(&self) -> &'static str {
        self.state.lock().unwrap().protocol_version
    }

    /// Runs again from the start, as `task`, the 2026-07-28 `tools/call`
    /// whose `params` started it (its replica stopped; the tool is
    /// idempotent). Nothing is answered to anyone: the task is the answer.
    pub(super) fn run_again(self: &Arc<Self>, task: Arc<Task>, params: Value) {
        let id = RequestId::from_value(&json!(format!("again-{}", task.id))).expect("a string id");
        self.handle_request(Envelope::read(id, Method::CallTool.name(), params), Some(task));
    }

    /// Serves a request; `resumes`: the task a call made again continues.
    fn handle_request(self: &Arc<Self>, envelope: Envelope, resumes: Option<Arc<Task>>) {
        // Every answer, errors included, belongs to its request (over HTTP,
        // on the stream of the POST that carried it).
        let Envelope {
            id,
            method,
            revision,
            target,
            progress_token,
            trace,
            request,
            ..
        } = envelope;
        let mut served = Served::new(&method, target.as_deref());
        let (era, conversation) = match revision {
            Revision::Modern(fields) => {
                let ModernFields { meta, round_trip } = match fields {
                    Ok(fields) => *fields,
                    Err(error) => return self.refuse(&id, &served, error),
                };
                let conversation = match round_trip {
                    Some(round_trip) => match mrtr::open(self, &id, round_trip, &meta) {
                        Ok(conversation) => Some(conversation),
                        Err(error) => return self.refuse(&id, &served, error),
                    },
                    None => None,
                };
                let exchange = conversation
                    .as_ref()
                    .map(|conversation| conversation.exchange().clone());
                if let (Some(exchange), Some(task)) = (&exchange, resumes) {
                    exchange.resume(task);
                }
                (Era::Modern(Arc::new(ModernRequest { meta, exchange })), conversation)
            }
            Revision::Legacy => (Era::Legacy, None),
        };
        if let Err(error) = self.admit(&method, &era) {
            return self.answer(&id, &era, &served, Answer::Error(error), Caching::NONE);
        }
        served.trace(&id, self.version_of(&era), trace.as_ref());
        let request = match request {
            Ok(request) => request,
            Err(error) => return self.answer(&id, &era, &served, Answer::Error(error), Caching::NONE),
        };
        let caching = self.caching(&request);
        // Methods that only touch session state answer in order, at once.
        let request = match self.answer_inline(request) {
            Ok(outcome) => return self.answer(&id, &era, &served, outcome.into(), caching),
            Err(request) => request,
        };
        let token = CancellationToken::new();
        {
            let mut in_flight = self.in_flight.lock().unwrap();
            let limit = self.hub.config.max_pending_requests;
            if in_flight.len() >= limit {
                drop(in_flight);
                let error = RpcError::new(
                    SERVER_ERROR,
                    format!(
                        "Too many requests in flight: this session already has {limit} requests running \
                         (the max_pending_requests limit); wait for some to finish, or raise the limit ({})",
                        settings::server::max_pending_requests.hint()
                    ),
                );
                return self.answer(&id, &era, &served, Answer::Error(error), Caching::NONE);
            }
            in_flight.insert(id.clone(), token.clone());
        }
        let session = self.clone();
        let traced = served.span().cloned();
        // Without a span of its own, a request under the client's trace
        // still names it in the log lines it leaves.
        let logged = trace.filter(|_| traced.is_none()).map(|trace| {
            let client = match &era {
                Era::Modern(request) => request.meta.client_name.as_deref(),
                Era::Legacy => None,
            };
            tracing::info_span!(
                "request", %id, method = method.name(), traceparent = trace.traceparent.as_str(),
                tracestate = trace.tracestate.as_deref(), client
            )
        });
        let running = async move {
            let outcome = match conversation {
                Some(conversation) => {
                    let (caller, call_id, call_era) = (session.clone(), id.clone(), era.clone());
                    let start = move |cancel| -> BoxFuture<'static, Result<Reply, RpcError>> {
                        Box::pin(async move {
                            caller
                                .dispatch(&call_id, request, &call_era, progress_token, cancel)
                                .await
                        })
                    };
                    session.converse(conversation, start, token.clone()).await
                }
                None => tokio::select! {
                    outcome = session.dispatch(&id, request, &era, progress_token, token.clone()) => Some(outcome.into()),
                    _ = token.cancelled() => None,
                },
            };
            session.in_flight.lock().unwrap().remove(&id);
            match outcome {
                Some(answer) if !token.is_cancelled() => session.answer(&id, &era, &served, answer, caching),
                _ => match session.stopped.get() {
                    Some(why) => session.respond(
                        &id,
                        Answer::Error(RpcError::new(
                            SERVER_ERROR,
                            format!("\"{}\" was stopped before it finished: {why}", method.name()),
                        ))
                        .into_response(&id),
                    ),
                    None => tracing::debug!(%id, method = method.name(), "request cancelled; no response sent"),
                },
            }
        };
        let running = telemetry::within(traced, running);
        match logged {
            Some(span) => self.running.spawn(running.instrument(span)),
            None => self.running.spawn(running),
        };
    }

    /// Answers request `id` in its era, rendering its answer once: a modern
    /// result says its type, the server and (for lists, reads and
    /// discovery, per `caching`) how long it may be cached; a modern error
    /// uses the revision's codes.
    fn answer(&self, id: &RequestId, era: &Era, served: &Served, answer: Answer, caching: Caching) {
        served.record(self.version_of(era), &answer, |tool| self.serves_tool(tool));
        let response = match era {
            Era::Legacy => answer.into_response(id),
            Era::Modern(_) => {
                let cache = match answer {
                    Answer::Error(_) => None,
                    _ => caching.hint(&self.hub),
                };
                answer.into_modern_response(id, cache)
            }
        };
        self.respond(id, response);
    }

    /// Whether `method` may be served now: in a session, only initialize
    /// (and ping) before initialize; while closing, only what helps the
    /// client collect running work.
    fn admit(&self, method: &Method, era: &Era) -> Result<(), RpcError> {
        let phase = self.state.lock().unwrap().phase;
        let method_name = method.name();
        if matches!(era, Era::Legacy)
            && phase == Phase::AwaitingInitialize
            && !matches!(method, Method::Initialize | Method::Ping)
        {
            return Err(RpcError::new(
                INVALID_REQUEST,
                format!("Server not initialized: send \"initialize\" before \"{method_name}\""),
            ));
        }
        if self.closing.load(Ordering::Acquire) && !method.is_served_while_closing() {
            return Err(RpcError::new(
                SERVER_ERROR,
                format!("The server is shutting down and accepts no new requests (\"{method_name}\" refused)"),
            ));
        }
        Ok(())
    }

    fn handle_notification(&self, notification: Notification) {
        match notification {
            Notification::Initialized | Notification::Ignored => {}
            Notification::Cancelled { request_id, reason } => {
                let Some(id) = request_id else { return };
                if let Some(token) = self.in_flight.lock().unwrap().get(&id) {
                    tracing::debug!(%id, ?reason, "client cancelled a request");
                    token.cancel();
                }
            }
            Notification::Unknown(method) => tracing::debug!(method, "ignoring unknown notification"),
        }
    }

    /// The protocol revision a request of `era` is served in.
    fn version_of(&self, era: &Era) -> &'static str {
        match era {
            Era::Legacy => self.protocol_version(),
            Era::Modern(_) => modern::MODERN_VERSION,
        }
    }

    /// Answers a request refused before its era was known.
    fn refuse(&self, id: &RequestId, served: &Served, error: RpcError) {
        let answer = Answer::Error(error);
        served.record(modern::MODERN_VERSION, &answer, |tool| self.serves_tool(tool));
        self.respond(id, answer.into_response(id));
    }

    /// Whether the catalog served now has `tool`.
    fn serves_tool(&self, tool: &str) -> bool {
        self.hub.catalog().tools.contains_key(tool)
    }

    fn respond(&self, id: &RequestId, (message, kind): (Value, AnswerKind)) {
        self.outbound.respond(id, message, kind);
    }

    fn send(&self, message: Value, related_request: Option<RequestId>) {
        self.outbound.send(message, related_request);
    }

    /// Sends `method` with `params` unless a later one with the same `key`
    /// replaces it while the client is behind (see [`outbound`]).
    fn notify_latest(&self, key: Key, method: &str, params: Value, related_request: Option<RequestId>) {
        self.outbound
            .coalesce(key, jsonrpc::notification(method, params), related_request);
    }

    pub fn notify(&self, method: &str, params: Value, related_request: Option<RequestId>) {
        self.send(jsonrpc::notification(method, params), related_request);
    }

    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.state.lock().unwrap().subscriptions.contains(uri)
    }

    fn subscriptions(&self) -> Vec<String> {
        self.state.lock().unwrap().subscriptions.iter().cloned().collect()
    }

    /// Whether initialize was answered.
    pub fn is_initialized(&self) -> bool {
        self.state.lock().unwrap().phase == Phase::Initialized
    }

    /// Sends notifications/message if the session's level lets it through.
    pub fn log(&self, level: LogLevel, logger: &str, data: Value, related_request: Option<RequestId>) {
        if self.wants_log(level) {
            self.send_log(level, logger, data, related_request);
        }
    }

    /// Whether the client, once initialized, asked for messages of `level`.
    fn wants_log(&self, level: LogLevel) -> bool {
        let state = self.state.lock().unwrap();
        state.phase == Phase::Initialized && level >= state.log_level
    }

    /// Sends a plugin's log message of `bytes` within the plugin's log rate
    /// (see [`LogRate`]) if it is at `wanted` or above (a modern request's
    /// own level; none: the session's); what it returns waits while the
    /// client is behind (see [`outbound`]).
    pub fn plugin_log(
        self: &Arc<Self>,
        (level, wanted): (LogLevel, Option<LogLevel>),
        plugin: &str,
        data: Value,
        bytes: usize,
        related_request: Option<RequestId>,
    ) -> BoxFuture<'static, ()> {
        let wanted = match wanted {
            Some(wanted) => level >= wanted,
            None => self.wants_log(level),
        };
        if !wanted || !self.log_rate.admit(plugin, Arc::downgrade(self)) {
            return Box::pin(std::future::ready(()));
        }
        let logger = plugin.to_owned();
        let message = move || {
            let params = serde_json::json!({ "level": level, "logger": logger, "data": data });
            jsonrpc::notification("notifications/message", params)
        };
        match self.outbound.log(plugin, bytes, related_request, message) {
            Some(waiting) => Box::pin(waiting),
            None => Box::pin(std::future::ready(())),
        }
    }

    fn send_log(&self, level: LogLevel, logger: &str, data: Value, related_request: Option<RequestId>) {
        let params = serde_json::json!({ "level": level, "logger": logger, "data": data });
        self.notify("notifications/message", params, related_request);
    }

    /// Whether the session is closing (new requests are refused).
    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// From now on, new requests are refused (ping and `tasks/*` are still served).
    pub fn refuse_new_requests(&self) {
        self.closing.store(true, Ordering::Release);
        self.listens.close();
    }

    /// Closes the session: new requests are refused; requests and tasks in
    /// flight get up to `grace` to finish; then requests still running are
    /// stopped (and answered with an error saying `why`), and tasks still
    /// running end as cancelled, with `why` as their status message.
    pub async fn close(&self, grace: Duration, why: &str) {
        self.refuse_new_requests();
        self.running.close();
        if tokio::time::timeout(grace, self.running.wait()).await.is_err() {
            let _ = self.stopped.set(why.to_owned());
            for token in self.in_flight.lock().unwrap().values() {
                token.cancel();
            }
            for task in self.task_store.cancel_all(&format!("cancelled: {why}")) {
                self.announce_task(&task);
            }
            self.running.wait().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::protocol::SUPPORTED_PROTOCOL_VERSIONS;

    proptest! {
        /// initialize with any protocolVersion, over a real session: a supported one
        /// is echoed, any other string gets the latest, anything else is refused
        /// with invalid params; the session answers once either way.
        #[test]
        fn initialize_negotiates_any_requested_version(requested in prop_oneof![
            proptest::sample::select(SUPPORTED_PROTOCOL_VERSIONS.to_vec()).prop_map(|v| json!(v)),
            any::<String>().prop_map(|v| json!(v)),
            any::<i64>().prop_map(|v| json!(v)),
            Just(Value::Null),
        ]) {
            let (outbox, mut sent) = tokio::sync::mpsc::unbounded_channel();
            let session = Session::new(
                Hub::new(Default::default(), crate::state::StateStore::in_memory()).unwrap(),
                outbox,
            );
            let request = json!({
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": { "protocolVersion": requested, "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } },
            });
            session.receive(request.to_string().as_bytes());
            let answer = sent.try_recv().unwrap().message;
            prop_assert!(sent.try_recv().is_err(), "one answer");
            match requested.as_str() {
                Some(v) if SUPPORTED_PROTOCOL_VERSIONS.contains(&v) => {
                    prop_assert_eq!(&answer["result"]["protocolVersion"], &json!(v));
                }
                Some(_) => prop_assert_eq!(&answer["result"]["protocolVersion"], &json!(crate::protocol::LATEST_PROTOCOL_VERSION)),
                None => prop_assert_eq!(&answer["error"]["code"], &json!(crate::protocol::jsonrpc::INVALID_PARAMS)),
            }
        }
    }
}
