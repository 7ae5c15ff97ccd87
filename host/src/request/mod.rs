//! One request, from the moment its envelope is read to its response, over
//! whichever client sent it: a [`Peer`] (what its requests go out through,
//! whom they act for, which are in flight, its listen streams) serves each
//! request once, in its era: checks, its span and metric ([`Served`]: what
//! was asked, of which tool, how long it took and how it ended, recorded
//! as `mcp.server.operation.duration` and on its span), typed
//! dispatch (`methods.rs`), the call scope a plugin call acts on
//! (`link.rs`), multi round-trip suspend and replay (`mrtr.rs`), tasks
//! (`tasks.rs`, `task_extension.rs`), listening (`listen.rs`), and an
//! [`Answer`] (a result, input required, a task created, an error) typed
//! until it is rendered once into the JSON-RPC response of its revision.
//!
//! A 2025-11-25 session (see `crate::session`) owns one peer for all its
//! requests and lends them what it holds through [`Lifecycle`]; a 2026-07-28
//! request over HTTP has a peer of its own and no session at all.
//!
//! The answer's [`AnswerKind`] travels with the response, so a transport
//! decides what it needs (the HTTP status of a 2026-07-28 answer, the end
//! of a request's stream) from it, never by reading the response back.

mod answer;
mod capabilities;
mod link;
mod listen;
mod log_rate;
mod methods;
mod mrtr;
mod outbound;
mod results;
mod skills;
mod task_extension;
mod tasks;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Instant;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::call::{BoxFuture, ClientRequestError};
use crate::catalog::skills::SKILL_CACHE;
use crate::metrics::{METRICS, Operation};
use crate::principal::{LOCAL_CALLER, Principal};
use crate::protocol::Target;
use crate::protocol::envelope::TraceContext;
use crate::protocol::envelope::{ModernFields, Revision};
use crate::protocol::jsonrpc::{self, INVALID_REQUEST, SERVER_ERROR};
use crate::protocol::modern::CacheHint;
use crate::protocol::requests::{ListKind, Request};
use crate::protocol::{Envelope, LATEST_PROTOCOL_VERSION, LogLevel, Method, RequestId, RpcError, modern};
use crate::server::Hub;
use crate::settings;
use crate::tasks::{Task, TaskStore};
use crate::telemetry::{self, RequestSpan, Traced};
use listen::Listens;
use log_rate::LogRate;
use mrtr::ModernRequest;
use outbound::{Key, Outbound};

pub use answer::{Answer, AnswerKind, Reply};
pub use capabilities::ClientCapabilities;
pub use methods::{server_capabilities, server_info};
pub use outbound::{Charge, Outbox, Outgoing};
pub use task_extension::keep_tasks;

/// How long a client may keep server/discover's answer: what this server
/// speaks and offers changes only with its binary.
const DISCOVER_TTL_MS: u64 = 3_600_000;

/// How long and by whom a result may be cached: known when the request
/// arrives, or, for a read, what the manifest of the plugin serving the
/// resource says (known once the catalog that serves it is loaded).
enum Caching {
    Known(Option<CacheHint>),
    OfResource(String),
}

impl Caching {
    /// No hint.
    const NONE: Caching = Caching::Known(None);

    fn hint(self, hub: &Hub) -> Option<CacheHint> {
        match self {
            Caching::Known(hint) => hint,
            Caching::OfResource(uri) => Some(
                hub.catalog()
                    .resource_owner(&uri)
                    .map_or(CacheHint::default(), |(_, cache)| cache),
            ),
        }
    }
}

/// What a 2025-11-25 session lends the requests it serves: its phase, the
/// revision and log level it negotiated, its subscriptions, its way of
/// asking the client, its tasks, and the methods only it answers.
pub trait Lifecycle: Send + Sync {
    /// Whether `method` may be served in the session's phase (initialize first).
    fn admit(&self, method: &Method) -> Result<(), RpcError>;

    /// The revision its `initialize` negotiated (the latest before).
    fn version(&self) -> &'static str;

    /// Answers a request that only touches the session's state, in the
    /// order requests arrive; hands back any other.
    fn answer_own(&self, request: Request) -> Result<Result<Value, RpcError>, Request>;

    /// Whether the client, once initialized, asked for log messages of `level`.
    fn wants_log(&self, level: LogLevel) -> bool;

    /// Whether `initialize` was answered.
    fn is_initialized(&self) -> bool;

    /// Whether the client subscribed to resource `uri`.
    fn is_subscribed(&self, uri: &str) -> bool;

    /// Every resource the client subscribed to.
    fn subscriptions(&self) -> Vec<String>;

    /// Sends `method` to the client on behalf of request `related` (if it
    /// is still open) and waits for the answer.
    fn ask(
        &self,
        method: &'static str,
        params: Value,
        related: Option<RequestId>,
    ) -> BoxFuture<'_, Result<Value, ClientRequestError>>;

    /// The session's tasks (2025-11-25).
    fn tasks(&self) -> &TaskStore;
}

/// The era a request is served in, and what it brings with it.
#[derive(Clone)]
pub enum Era {
    /// A request of the session `initialize` opened (2025-11-25 and
    /// earlier): its capabilities and log level are the session's.
    Legacy(Arc<dyn Lifecycle>),
    /// A 2026-07-28 request: everything it needs is in its own `_meta`, and
    /// nothing from an earlier request is relied on.
    Modern(Arc<ModernRequest>),
}

/// One client as its requests are served: where what they send goes,
/// whom they act for, the requests in flight, its listen streams, and
/// whether it is closing.
pub struct Peer {
    hub: Arc<Hub>,
    outbound: Arc<Outbound>,
    /// The 2025-11-25 session it serves, if it serves one.
    session: Option<Weak<dyn Lifecycle>>,
    in_flight: Mutex<HashMap<RequestId, CancellationToken>>,
    running: TaskTracker,
    log_rate: Arc<LogRate>,
    /// The peer is closing: new requests are refused.
    closing: AtomicBool,
    /// Why the requests still running after the closing grace were stopped.
    stopped: OnceLock<String>,
    listens: Listens,
    /// Whom its requests act for (over HTTP with authentication); the
    /// latest credential of a session's principal brings its scopes.
    principal: Mutex<Option<Principal>>,
    /// Its client is the user who started the server (stdio, `wasm-mcp
    /// call`): the caller a caller bucket keeps keys for without a principal.
    local: bool,
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

impl Peer {
    /// A peer whose requests act for `principal` (`local`: the user who
    /// started the server), serving `session` if it serves one; the hub
    /// tells it what changes for as long as it lives.
    pub fn new(
        hub: Arc<Hub>,
        outbox: Outbox,
        principal: Option<Principal>,
        local: bool,
        session: Option<Weak<dyn Lifecycle>>,
    ) -> Arc<Self> {
        let peer = Arc::new(Self {
            outbound: Outbound::new(outbox, hub.config.max_outbound_bytes),
            session,
            in_flight: Mutex::new(HashMap::new()),
            running: TaskTracker::new(),
            log_rate: Arc::new(LogRate::new(hub.config.max_log_rate)),
            closing: AtomicBool::new(false),
            stopped: OnceLock::new(),
            listens: Listens::default(),
            principal: Mutex::new(principal),
            local,
            hub,
        });
        let audience: Weak<Self> = Arc::downgrade(&peer);
        peer.hub.register(audience);
        peer
    }

    /// A peer of one 2026-07-28 request (or a task run again), with no
    /// session, acting for `principal`.
    pub fn alone(hub: Arc<Hub>, outbox: Outbox, principal: Option<Principal>) -> Arc<Self> {
        Self::new(hub, outbox, principal, false, None)
    }

    /// The session it serves, while it lives.
    fn session(&self) -> Option<Arc<dyn Lifecycle>> {
        self.session.as_ref().and_then(Weak::upgrade)
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

    /// The peer's principal presented another credential (a refreshed or
    /// stepped-up token): its scopes are now these.
    pub fn act_for(&self, principal: Option<Principal>) {
        *self.principal.lock().unwrap() = principal;
    }

    /// Serves one request. Requests that reach plugins run concurrently;
    /// their answers are sent when they finish.
    pub fn serve(self: &Arc<Self>, envelope: Envelope) {
        self.handle_request(envelope, None);
    }

    /// The client cancelled request `id`.
    pub fn cancel(&self, id: &RequestId, reason: Option<&Value>) {
        if let Some(token) = self.in_flight.lock().unwrap().get(id) {
            tracing::debug!(%id, ?reason, "client cancelled a request");
            token.cancel();
        }
    }

    /// Runs again from the start, as `task`, the 2026-07-28 `tools/call`
    /// whose `params` started it (its replica stopped; the tool is
    /// idempotent). Nothing is answered to anyone: the task is the answer.
    fn run_again(self: &Arc<Self>, task: Arc<Task>, params: Value) {
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
        let target = target.as_deref();
        // A request that may ask the client has its rounds (see `mrtr.rs`).
        let (era, rounds) = match revision {
            Revision::Modern(fields) => {
                let ModernFields { meta, round_trip } = match fields {
                    Ok(fields) => *fields,
                    Err(error) => return self.refuse(&id, &method, target, modern::MODERN_VERSION, error),
                };
                let request = Arc::new(ModernRequest::new(meta));
                let rounds = round_trip.map(|round_trip| (request.clone(), round_trip));
                (Era::Modern(request), rounds)
            }
            Revision::Legacy => match self.session() {
                Some(session) => (Era::Legacy(session), None),
                None => {
                    let error = RpcError::new(
                        INVALID_REQUEST,
                        format!(
                            "Server not initialized: send \"initialize\" before \"{}\"",
                            method.name()
                        ),
                    );
                    return self.refuse(&id, &method, target, LATEST_PROTOCOL_VERSION, error);
                }
            },
        };
        if let Err(error) = self.admit(&method, &era) {
            let served = Served::new(&method, target);
            return self.answer(&id, &era, &served, Answer::Error(error), Caching::NONE);
        }
        let served = Served::start(&method, target, &id, version_of(&era), trace.as_ref());
        let request = match request {
            Ok(request) => request,
            Err(error) => return self.answer(&id, &era, &served, Answer::Error(error), Caching::NONE),
        };
        let caching = self.caching(&request);
        // Methods that only touch the session's state, and discovery, answer
        // in order, at once.
        let request = match &era {
            Era::Legacy(session) => match session.answer_own(request) {
                Ok(outcome) => return self.answer(&id, &era, &served, outcome.into(), caching),
                Err(request) => request,
            },
            Era::Modern(_) => request,
        };
        if matches!(request, Request::Discover) {
            let discovered = Answer::Result(Reply::from(methods::discover()));
            return self.answer(&id, &era, &served, discovered, caching);
        }
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
        let peer = self.clone();
        let traced = served.span().cloned();
        // Without a span of its own, a request under the client's trace
        // still names it in the log lines it leaves.
        let logged = trace.filter(|_| traced.is_none()).map(|trace| {
            let client = match &era {
                Era::Modern(request) => request.meta.client_name.as_deref(),
                Era::Legacy(_) => None,
            };
            tracing::info_span!(
                "request", %id, method = method.name(), traceparent = trace.traceparent.as_str(),
                tracestate = trace.tracestate.as_deref(), client
            )
        });
        let running = async move {
            let outcome = match rounds {
                Some((modern, round_trip)) => {
                    let rounds = mrtr::Rounds {
                        request: &modern,
                        round_trip,
                        resumes,
                    };
                    let fresh = mrtr::Dispatch {
                        request,
                        era: era.clone(),
                        progress_token,
                    };
                    peer.converse(&id, rounds, fresh, token.clone()).await
                }
                None => tokio::select! {
                    outcome = peer.dispatch(&id, request, &era, progress_token, token.clone()) => Some(outcome.into()),
                    _ = token.cancelled() => None,
                },
            };
            peer.in_flight.lock().unwrap().remove(&id);
            match outcome {
                Some(answer) if !token.is_cancelled() => peer.answer(&id, &era, &served, answer, caching),
                _ => match peer.stopped.get() {
                    Some(why) => peer.respond(
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

    /// How long and by whom the result of `request` may be cached, for the
    /// requests whose modern results carry a hint.
    fn caching(&self, request: &Request) -> Caching {
        Caching::Known(match request {
            Request::Discover => Some(CacheHint {
                ttl_ms: DISCOVER_TTL_MS,
                public: true,
            }),
            Request::List { kind, .. } if *kind != ListKind::Tasks => Some(CacheHint {
                ttl_ms: self.hub.list_cache_ttl_ms(),
                public: true,
            }),
            Request::ReadResource { uri } => return Caching::OfResource(uri.clone()),
            Request::GetSkill { .. } => Some(SKILL_CACHE),
            Request::List { .. }
            | Request::Listen(_)
            | Request::Initialize { .. }
            | Request::Ping
            | Request::SetLogLevel(_)
            | Request::Subscribe { .. }
            | Request::Unsubscribe { .. }
            | Request::CallTool(_)
            | Request::ReadDirectory { .. }
            | Request::GetPrompt { .. }
            | Request::Complete(_)
            | Request::GetTask { .. }
            | Request::TaskResult { .. }
            | Request::CancelTask { .. }
            | Request::UpdateTask { .. } => None,
        })
    }

    /// Answers request `id` in its era, rendering its answer once: a modern
    /// result says its type, the server and (for lists, reads and
    /// discovery, per `caching`) how long it may be cached; a modern error
    /// uses the revision's codes.
    fn answer(&self, id: &RequestId, era: &Era, served: &Served, answer: Answer, caching: Caching) {
        served.record(version_of(era), &answer, |tool| self.serves_tool(tool));
        let response = match era {
            Era::Legacy(_) => answer.into_response(id),
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

    /// Whether `method` may be served now: in a session, only what its
    /// phase allows; while closing, only what helps the client collect
    /// running work.
    fn admit(&self, method: &Method, era: &Era) -> Result<(), RpcError> {
        if let Era::Legacy(session) = era {
            session.admit(method)?;
        }
        if self.closing.load(Ordering::Acquire) && !method.is_served_while_closing() {
            return Err(RpcError::new(
                SERVER_ERROR,
                format!(
                    "The server is shutting down and accepts no new requests (\"{}\" refused)",
                    method.name()
                ),
            ));
        }
        Ok(())
    }

    /// Answers a request refused before its era was known, in `version`.
    fn refuse(&self, id: &RequestId, method: &Method, target: Option<&str>, version: &'static str, error: RpcError) {
        let answer = Answer::Error(error);
        Served::new(method, target).record(version, &answer, |tool| self.serves_tool(tool));
        self.respond(id, answer.into_response(id));
    }

    /// Whether the catalog served now has `tool`.
    fn serves_tool(&self, tool: &str) -> bool {
        self.hub.catalog().tools.contains_key(tool)
    }

    fn respond(&self, id: &RequestId, (message, kind): (Value, AnswerKind)) {
        self.outbound.respond(id, message, kind);
    }

    /// Sends a message that is never held (a request to the client, the
    /// answer to a message that does not parse).
    pub fn send(&self, message: Value, related_request: Option<RequestId>) {
        self.outbound.send(message, related_request);
    }

    /// Sends `method` with `params` unless a later one with the same `key`
    /// replaces it while the client is behind (see [`outbound`]).
    fn notify_latest(&self, key: Key, method: &str, params: Value, related_request: Option<RequestId>) {
        self.outbound
            .coalesce(key, jsonrpc::notification(method, params), related_request);
    }

    /// Sends notification `method` with `params`.
    pub fn notify(&self, method: &str, params: Value, related_request: Option<RequestId>) {
        self.send(jsonrpc::notification(method, params), related_request);
    }

    /// Sends a plugin's log message of `bytes`, if the request it serves
    /// `wants` messages of its level, within the plugin's log rate (see
    /// [`LogRate`]); what it returns waits while the client is behind (see
    /// [`outbound`]).
    fn plugin_log(
        self: &Arc<Self>,
        wants: bool,
        level: LogLevel,
        plugin: &str,
        data: Value,
        bytes: usize,
        related_request: Option<RequestId>,
    ) -> BoxFuture<'static, ()> {
        if !wants || !self.log_rate.admit(plugin, Arc::downgrade(self)) {
            return Box::pin(std::future::ready(()));
        }
        let logger = plugin.to_owned();
        let message = move || {
            let params = json!({ "level": level, "logger": logger, "data": data });
            jsonrpc::notification("notifications/message", params)
        };
        match self.outbound.log(plugin, bytes, related_request, message) {
            Some(waiting) => Box::pin(waiting),
            None => Box::pin(std::future::ready(())),
        }
    }

    /// Sends a log message of the host's.
    fn send_log(&self, level: LogLevel, logger: &str, data: Value, related_request: Option<RequestId>) {
        let params = json!({ "level": level, "logger": logger, "data": data });
        self.notify("notifications/message", params, related_request);
    }

    /// Whether the peer is closing (new requests are refused).
    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// From now on, new requests are refused (ping and `tasks/*` are still served).
    pub fn refuse_new_requests(&self) {
        self.closing.store(true, Ordering::Release);
        self.listens.close();
    }

    /// Closes the peer: new requests are refused; requests and tasks in
    /// flight get up to `grace` to finish; then requests still running are
    /// stopped (and answered with an error saying `why`), and the session's
    /// tasks still running end as cancelled, with `why` as their status
    /// message.
    pub async fn close(&self, grace: std::time::Duration, why: &str) {
        self.refuse_new_requests();
        self.running.close();
        if tokio::time::timeout(grace, self.running.wait()).await.is_err() {
            let _ = self.stopped.set(why.to_owned());
            for token in self.in_flight.lock().unwrap().values() {
                token.cancel();
            }
            if let Some(session) = self.session() {
                for task in session.tasks().cancel_all(&format!("cancelled: {why}")) {
                    self.announce_task(&task);
                }
            }
            self.running.wait().await;
        }
    }
}

/// A request being served.
struct Served {
    method: &'static str,
    /// The tool, prompt or resource it names, as the client named it: for
    /// its span, and (a tool) for its metric's label, once the catalog is
    /// seen to have it (never a name only the client made up).
    target: Option<(Target, String)>,
    started: Instant,
    /// The request's span, when traces are exported.
    span: Option<Traced>,
}

impl Served {
    /// A request of `method`, naming `target` (see [`Method::target`]),
    /// refused before it was admitted: no span.
    fn new(method: &Method, target: Option<&str>) -> Self {
        let kind = method.target();
        Served {
            method: method.label(),
            target: kind
                .filter(|kind| matches!(kind, Target::Tool | Target::Prompt | Target::Resource))
                .zip(target)
                .map(|(kind, target)| (kind, target.to_owned())),
            started: Instant::now(),
            span: None,
        }
    }

    /// A request `id` of `method` admitted in protocol `version`: as
    /// [`Served::new`], with its span open (when traces are exported) under
    /// the client's `trace` context.
    fn start(
        method: &Method,
        target: Option<&str>,
        id: &RequestId,
        version: &'static str,
        trace: Option<&TraceContext>,
    ) -> Self {
        let mut served = Served::new(method, target);
        if telemetry::enabled() {
            let id = id.to_string();
            served.span = telemetry::request(RequestSpan {
                method: served.method,
                target: served.target.as_ref().map(|(kind, target)| (*kind, target.as_str())),
                id: &id,
                version,
                traceparent: trace.map(|t| t.traceparent.as_str()),
                tracestate: trace.and_then(|t| t.tracestate.as_deref()),
            });
        }
        served
    }

    /// The request's span, if it has one.
    fn span(&self) -> Option<&Traced> {
        self.span.as_ref()
    }

    /// Records how it ended, in protocol `version` (see
    /// [`Answer::error_label`]). The tool is labelled if `is_served` says
    /// the catalog served now has it: a call that arrived while the plugins
    /// were loading is labelled by its tool too.
    fn record(&self, version: &'static str, answer: &Answer, is_served: impl FnOnce(&str) -> bool) {
        let error = answer.error_label();
        if let (Some(span), Some(error)) = (&self.span, &error) {
            telemetry::failed(span, error);
        }
        let tool = match &self.target {
            Some((Target::Tool, name)) => Some(name.as_str()).filter(|name| is_served(name)),
            _ => None,
        };
        let operation = Operation {
            method: self.method,
            tool,
            version,
        };
        METRICS.operation(operation, error, self.started.elapsed());
    }
}

/// The protocol revision a request of `era` is served in.
fn version_of(era: &Era) -> &'static str {
    match era {
        Era::Legacy(session) => session.version(),
        Era::Modern(_) => modern::MODERN_VERSION,
    }
}
