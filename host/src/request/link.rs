//! A request as the plugin call serving it sees the client: where its
//! notifications, log messages and progress go, how it asks the client
//! something (a 2025-11-25 session's request to the client, or a 2026-07-28
//! request's `inputRequests`), and the hub it tells of changes.

use std::sync::Arc;

use serde_json::Value;

use super::mrtr::Exchange;
use super::outbound::Key;
use super::{Era, Peer};
use crate::call::{BoxFuture, ChangedLists, ClientLink, ClientRequestError, Question, ask_each};
use crate::protocol::{LogLevel, RequestId};

/// The client as seen by one plugin call serving request `request`, in its era.
pub struct RequestLink {
    pub peer: Arc<Peer>,
    pub request: RequestId,
    pub era: Era,
}

impl RequestLink {
    /// The peer and request a notification of this call belongs to: for
    /// a multi round-trip request, the round now being served (none once
    /// the call runs as a task).
    fn target(&self) -> Option<(Arc<Peer>, RequestId)> {
        match exchange(&self.era) {
            Some(exchange) => exchange.target(),
            None => Some((self.peer.clone(), self.request.clone())),
        }
    }
}

fn exchange(era: &Era) -> Option<&Arc<Exchange>> {
    match era {
        Era::Modern(request) => request.exchange(),
        Era::Legacy(_) => None,
    }
}

impl ClientLink for RequestLink {
    fn notify(&self, method: &str, params: Value) {
        if let Some((peer, request)) = self.target() {
            peer.notify(method, params, Some(request));
        }
    }

    /// In a session, at the session's level; a modern request sets its own
    /// (none: no log messages at all).
    fn log(&self, level: LogLevel, logger: &str, data: Value, bytes: usize) -> BoxFuture<'_, ()> {
        match &self.era {
            Era::Legacy(session) => {
                let related = Some(self.request.clone());
                let wants = session.wants_log(level);
                self.peer.plugin_log(wants, level, logger, data, bytes, related)
            }
            Era::Modern(modern) => match (modern.meta.log_level, self.target()) {
                (Some(wanted), Some((peer, request))) => {
                    peer.plugin_log(level >= wanted, level, logger, data, bytes, Some(request))
                }
                _ => Box::pin(std::future::ready(())),
            },
        }
    }

    /// The latest progress of the request replaces one the client has not
    /// been sent yet.
    fn progress(&self, params: Value) {
        if let Some((peer, request)) = self.target() {
            peer.notify_latest(
                Key::Progress(request.clone()),
                "notifications/progress",
                params,
                Some(request),
            );
        }
    }

    /// A multi round-trip request asks through its exchange; any other
    /// asks the client of its peer's session (a peer without one has no
    /// client to ask).
    fn request(&self, method: &'static str, params: Value) -> BoxFuture<'_, Result<Value, ClientRequestError>> {
        if let Some(exchange) = exchange(&self.era) {
            return Box::pin(async move {
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
            });
        }
        let session = match &self.era {
            Era::Legacy(session) => Some(session.clone()),
            Era::Modern(_) => self.peer.session(),
        };
        let related = Some(self.request.clone());
        Box::pin(async move {
            match session {
                Some(session) => session.ask(method, params, related).await,
                None => Err(ClientRequestError::NotSupported(
                    match super::ClientCapabilities::default().check(method, &params) {
                        Err(missing) => missing.why(),
                        Ok(()) => format!("{method} needs a client that keeps a session, and this request has none"),
                    },
                )),
            }
        })
    }

    /// A modern request's questions are its `inputRequests` (see [`super::mrtr`]).
    fn ask(&self, questions: Vec<Question>) -> BoxFuture<'_, Vec<Result<Value, ClientRequestError>>> {
        match exchange(&self.era) {
            Some(exchange) => exchange.ask(questions),
            None => ask_each(self, questions),
        }
    }

    fn resource_updated(&self, uri: &str) {
        self.peer.hub.resource_updated(uri);
    }

    fn lists_changed(&self, plugin: &str, lists: ChangedLists) {
        self.peer.hub.relist(plugin, lists);
    }

    /// Only a 2026-07-28 call allowed to (see [`Exchange::allow_task`]).
    fn run_as_task(&self) -> bool {
        exchange(&self.era).is_some_and(|exchange| exchange.run_as_task())
    }
}
