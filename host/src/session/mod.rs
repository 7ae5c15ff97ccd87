//! The session: one client's conversation in the 2025-11-25 revision (and
//! earlier), opened by `initialize`, whatever carries it.
//!
//! It owns what such a session holds: the lifecycle (initialize, the
//! negotiated version, the client's capabilities), its log level and
//! resource subscriptions, the requests the server sends to its client,
//! and its tasks. Each request it is sent is served by the request layer
//! (its [`Peer`], see [`crate::request`]), which asks the session, through
//! [`Lifecycle`], for what only the session knows. Transports hand it
//! parsed messages ([`Session::handle`]) and deliver what it sends.

mod client;
mod methods;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::call::{BoxFuture, ClientRequestError};
use crate::metrics::METRICS;
use crate::principal::Principal;
use crate::protocol::jsonrpc::{self, INVALID_REQUEST};
use crate::protocol::requests::{Notification, Request};
use crate::protocol::{Incoming, LogLevel, Method, RequestId, RpcError};
use crate::request::{ClientCapabilities, Lifecycle, Peer, message_too_large};
use crate::server::Hub;
use crate::tasks::{TaskSettings, TaskStore};
use client::PendingClientRequests;

/// What a transport gives a session to send through, and what it receives.
pub use crate::request::{Outbox, Outgoing};

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

/// One client's 2025-11-25 session: what it holds, and the peer that serves
/// its requests.
pub struct Session {
    hub: Arc<Hub>,
    /// Serves its requests.
    peer: Arc<Peer>,
    state: Mutex<State>,
    task_store: TaskStore,
    client_requests: PendingClientRequests,
    /// When the session began, for `mcp.server.session.duration`.
    began: Instant,
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

/// Pings the client every `interval` once it is initialized, for as long as
/// the session lives; a client that does not answer is reported on stderr.
async fn keep_alive(session: Weak<Session>, interval: Duration) {
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

    /// A session whose requests act for `principal`: it lists only what
    /// the principal may use, and what it creates (tasks, request states)
    /// belongs to the principal.
    pub fn acting_for(hub: Arc<Hub>, outbox: Outbox, principal: Option<Principal>) -> Arc<Self> {
        Self::open(hub, outbox, principal, false)
    }

    fn open(hub: Arc<Hub>, outbox: Outbox, principal: Option<Principal>, local: bool) -> Arc<Self> {
        let session = Arc::new_cyclic(|session: &Weak<Self>| {
            let lent: Weak<dyn Lifecycle> = session.clone();
            Self {
                peer: Peer::new(hub.clone(), outbox, principal, local, Some(lent)),
                state: Mutex::new(State {
                    phase: Phase::AwaitingInitialize,
                    protocol_version: crate::protocol::LATEST_PROTOCOL_VERSION,
                    client: ClientCapabilities::default(),
                    log_level: LogLevel::Info,
                    subscriptions: HashSet::new(),
                }),
                task_store: TaskStore::new(TaskSettings::new(&hub.config)),
                client_requests: PendingClientRequests::default(),
                began: Instant::now(),
                hub,
            }
        });
        if let Some(interval) = session.hub.config.ping_interval() {
            tokio::spawn(keep_alive(Arc::downgrade(&session), interval));
        }
        session
    }

    /// The session's principal presented another credential (a refreshed
    /// or stepped-up token): its scopes are now these.
    pub fn act_for(&self, principal: Option<Principal>) {
        self.peer.act_for(principal);
    }

    /// Handles one message from the client as framed by its transport (a
    /// line of stdin): parses it, and answers one that does not parse.
    pub fn receive(&self, message: &[u8]) {
        match Incoming::parse_bytes(message) {
            Ok(message) => self.handle(message),
            Err(bad) => self
                .peer
                .send(jsonrpc::error_response(bad.id.as_ref(), &bad.error), None),
        }
    }

    /// Answers a message that was discarded for being over `max_message_bytes`.
    pub fn refuse_oversized_message(&self) {
        let error = message_too_large(self.hub.config.max_message_bytes);
        self.peer.send(jsonrpc::error_response(None, &error), None);
    }

    /// Handles one message from the client: a request is served by the
    /// session's peer (those that reach plugins run concurrently; their
    /// answers are sent when they finish).
    pub fn handle(&self, message: Incoming) {
        match message {
            Incoming::Request(envelope) => self.peer.serve(*envelope),
            Incoming::Notification { method, params } => match Notification::parse(&method, &params) {
                Notification::Initialized | Notification::Ignored => {}
                Notification::Cancelled { request_id, reason } => {
                    if let Some(id) = request_id {
                        self.peer.cancel(&id, reason.as_ref());
                    }
                }
                Notification::Unknown(method) => tracing::debug!(method, "ignoring unknown notification"),
            },
            Incoming::Response { id, outcome } => self.client_requests.resolve(&id, outcome),
        }
    }

    /// The protocol version negotiated at initialize (the latest before).
    pub fn protocol_version(&self) -> &'static str {
        self.state.lock().unwrap().protocol_version
    }

    /// Whether initialize was answered.
    pub fn is_initialized(&self) -> bool {
        self.state.lock().unwrap().phase == Phase::Initialized
    }

    /// Whether the session is closing (new requests are refused).
    pub fn is_closing(&self) -> bool {
        self.peer.is_closing()
    }

    /// From now on, new requests are refused (ping and `tasks/*` are still served).
    pub fn refuse_new_requests(&self) {
        self.peer.refuse_new_requests();
    }

    /// Closes the session: new requests are refused; requests and tasks in
    /// flight get up to `grace` to finish; then requests still running are
    /// stopped (and answered with an error saying `why`), and tasks still
    /// running end as cancelled, with `why` as their status message.
    pub async fn close(&self, grace: Duration, why: &str) {
        self.peer.close(grace, why).await;
    }
}

impl Lifecycle for Session {
    /// Before initialize, only initialize (and ping).
    fn admit(&self, method: &Method) -> Result<(), RpcError> {
        let phase = self.state.lock().unwrap().phase;
        if phase == Phase::AwaitingInitialize && !matches!(method, Method::Initialize | Method::Ping) {
            return Err(RpcError::new(
                INVALID_REQUEST,
                format!(
                    "Server not initialized: send \"initialize\" before \"{}\"",
                    method.name()
                ),
            ));
        }
        Ok(())
    }

    fn version(&self) -> &'static str {
        self.protocol_version()
    }

    fn answer_own(&self, request: Request) -> Result<Result<Value, RpcError>, Request> {
        self.answer_in_session(request)
    }

    fn wants_log(&self, level: LogLevel) -> bool {
        let state = self.state.lock().unwrap();
        state.phase == Phase::Initialized && level >= state.log_level
    }

    fn is_initialized(&self) -> bool {
        Session::is_initialized(self)
    }

    fn is_subscribed(&self, uri: &str) -> bool {
        self.state.lock().unwrap().subscriptions.contains(uri)
    }

    fn subscriptions(&self) -> Vec<String> {
        self.state.lock().unwrap().subscriptions.iter().cloned().collect()
    }

    fn ask(
        &self,
        method: &'static str,
        params: Value,
        related: Option<RequestId>,
    ) -> BoxFuture<'_, Result<Value, ClientRequestError>> {
        Box::pin(self.ask_client(method, params, related))
    }

    fn tasks(&self) -> &TaskStore {
        &self.task_store
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
