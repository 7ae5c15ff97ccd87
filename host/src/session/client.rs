//! Requests the server sends to the client on a plugin's behalf (sampling,
//! elicitation, roots): capability checks, ids, timeouts and answers.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::mrtr::Exchange;
use super::outbound::Key;
use super::{Era, Session};
use crate::call::{BoxFuture, ChangedLists, ClientLink, ClientRequestError, Question, ask_each};
use crate::protocol::jsonrpc;
use crate::protocol::{LogLevel, RequestId, RpcError};
use crate::telemetry;

type Answer = Result<Value, RpcError>;

/// Requests sent to the client and not yet answered.
#[derive(Default)]
pub struct PendingClientRequests {
    next_id: AtomicI64,
    waiting: Mutex<HashMap<RequestId, oneshot::Sender<Answer>>>,
}

impl PendingClientRequests {
    pub fn resolve(&self, id: &RequestId, answer: Answer) {
        match self.waiting.lock().unwrap().remove(id) {
            Some(waiter) => {
                let _ = waiter.send(answer);
            }
            None => tracing::debug!(%id, "ignoring a response to no pending request"),
        }
    }
}

/// Forgets a pending request when its waiter goes away (answered, timed out or cancelled).
struct PendingGuard<'a> {
    session: &'a Session,
    id: RequestId,
    answered: bool,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if self
            .session
            .client_requests
            .waiting
            .lock()
            .unwrap()
            .remove(&self.id)
            .is_some()
            && !self.answered
        {
            self.session.notify(
                "notifications/cancelled",
                json!({ "requestId": self.id.to_value(), "reason": "the plugin call that asked stopped waiting" }),
                None,
            );
        }
    }
}

impl Session {
    /// Sends `method` to the client on behalf of request `related` (if it is
    /// still open) and waits for the answer.
    pub(super) async fn ask_client(
        &self,
        method: &'static str,
        params: Value,
        related: Option<&RequestId>,
    ) -> Result<Value, ClientRequestError> {
        let client = self.state.lock().unwrap().client.clone();
        client
            .check(method, &params)
            .map_err(|missing| ClientRequestError::NotSupported(missing.why()))?;
        let number = self.client_requests.next_id.fetch_add(1, Ordering::Relaxed);
        let id = RequestId::from_value(&json!(number)).expect("an integer is a valid id");
        let (sender, receiver) = oneshot::channel();
        self.client_requests.waiting.lock().unwrap().insert(id.clone(), sender);
        let mut guard = PendingGuard {
            session: self,
            id,
            answered: false,
        };
        self.send(jsonrpc::request(number, method, params), related.cloned());
        let timeout = self.hub.config.client_timeout();
        let answer = telemetry::within(
            telemetry::client_round_trip(method),
            tokio::time::timeout(timeout, receiver),
        )
        .await;
        guard.answered = answer.is_ok();
        match answer {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(ClientRequestError::Rejected {
                code: error.code,
                message: error.message,
            }),
            Ok(Err(_)) => Err(ClientRequestError::Cancelled),
            Err(_) => Err(ClientRequestError::TimedOut),
        }
    }
}

/// A session as seen by one plugin call serving request `request`, in its era.
pub struct RequestLink {
    pub session: Arc<Session>,
    pub request: RequestId,
    pub era: Era,
}

impl RequestLink {
    /// The session and request a notification of this call belongs to: for
    /// a multi round-trip request, the round now being served (none once
    /// the call runs as a task).
    fn target(&self) -> Option<(Arc<Session>, RequestId)> {
        match exchange(&self.era) {
            Some(exchange) => exchange.target(),
            None => Some((self.session.clone(), self.request.clone())),
        }
    }
}

fn exchange(era: &Era) -> Option<&Arc<Exchange>> {
    match era {
        Era::Modern(request) => request.exchange.as_ref(),
        Era::Legacy => None,
    }
}

impl ClientLink for RequestLink {
    fn notify(&self, method: &str, params: Value) {
        if let Some((session, request)) = self.target() {
            session.notify(method, params, Some(request));
        }
    }

    /// In a session, at the session's level; a modern request sets its own
    /// (none: no log messages at all).
    fn log(&self, level: LogLevel, logger: &str, data: Value, bytes: usize) -> BoxFuture<'_, ()> {
        match &self.era {
            Era::Legacy => {
                let related = Some(self.request.clone());
                self.session.plugin_log((level, None), logger, data, bytes, related)
            }
            Era::Modern(modern) => match (modern.meta.log_level, self.target()) {
                (Some(wanted), Some((session, request))) => {
                    session.plugin_log((level, Some(wanted)), logger, data, bytes, Some(request))
                }
                _ => Box::pin(std::future::ready(())),
            },
        }
    }

    /// The latest progress of the request replaces one the client has not
    /// been sent yet.
    fn progress(&self, params: Value) {
        if let Some((session, request)) = self.target() {
            session.notify_latest(
                Key::Progress(request.clone()),
                "notifications/progress",
                params,
                Some(request),
            );
        }
    }

    fn request(&self, method: &'static str, params: Value) -> BoxFuture<'_, Result<Value, ClientRequestError>> {
        match exchange(&self.era) {
            Some(exchange) => Box::pin(async move {
                let question = Question {
                    key: None,
                    method,
                    params,
                };
                exchange
                    .ask(vec![question])
                    .await
                    .pop()
                    .expect("one answer to one question")
            }),
            None => Box::pin(self.session.ask_client(method, params, Some(&self.request))),
        }
    }

    /// A modern request's questions are its `inputRequests` (see [`super::mrtr`]).
    fn ask(&self, questions: Vec<Question>) -> BoxFuture<'_, Vec<Result<Value, ClientRequestError>>> {
        match exchange(&self.era) {
            Some(exchange) => exchange.ask(questions),
            None => ask_each(self, questions),
        }
    }

    fn resource_updated(&self, uri: &str) {
        self.session.hub.resource_updated(uri);
    }

    fn lists_changed(&self, plugin: &str, lists: ChangedLists) {
        self.session.hub.relist(plugin, lists);
    }

    /// Only a 2026-07-28 call allowed to (see [`Exchange::allow_task`]).
    fn run_as_task(&self) -> bool {
        exchange(&self.era).is_some_and(|exchange| exchange.run_as_task())
    }
}
