//! Requests the server sends to the client on a plugin's behalf (sampling,
//! elicitation, roots): capability checks, ids, timeouts and answers.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::Session;
use crate::call::{BoxFuture, ClientLink, ClientRequestError};
use crate::protocol::jsonrpc;
use crate::protocol::{LogLevel, RequestId, RpcError};

/// What the client said it can do, as far as the server's requests go.
#[derive(Debug, Clone, Default)]
pub struct ClientCapabilities {
    pub sampling: bool,
    pub sampling_tools: bool,
    pub elicitation_form: bool,
    pub elicitation_url: bool,
    pub roots: bool,
}

impl ClientCapabilities {
    pub fn from_initialize(capabilities: &Value) -> Self {
        let elicitation = capabilities.get("elicitation").filter(|v| v.is_object());
        let has = |outer: Option<&Value>, key: &str| outer.and_then(|o| o.get(key)).is_some_and(Value::is_object);
        let sampling = capabilities.get("sampling").filter(|v| v.is_object());
        Self {
            sampling: sampling.is_some(),
            sampling_tools: has(sampling, "tools"),
            // An empty elicitation object means form mode, for older clients.
            elicitation_form: elicitation.is_some_and(|e| has(Some(e), "form") || !has(Some(e), "url")),
            elicitation_url: has(elicitation, "url"),
            roots: capabilities.get("roots").is_some_and(Value::is_object),
        }
    }

    /// Refuses, with the reason, a request the client did not declare support for.
    fn check(&self, method: &str, params: &Value) -> Result<(), String> {
        let missing = |what: &str| {
            Err(format!(
                "the client did not declare the {what} capability, so {method} cannot be used"
            ))
        };
        match method {
            "sampling/createMessage" if !self.sampling => missing("sampling"),
            "sampling/createMessage"
                if !self.sampling_tools && (params.get("tools").is_some() || params.get("toolChoice").is_some()) =>
            {
                missing("sampling.tools")
            }
            "elicitation/create"
                if params.get("mode").and_then(Value::as_str) == Some("url") && !self.elicitation_url =>
            {
                missing("elicitation.url")
            }
            "elicitation/create"
                if params.get("mode").and_then(Value::as_str) != Some("url") && !self.elicitation_form =>
            {
                missing("elicitation (form mode)")
            }
            "roots/list" if !self.roots => missing("roots"),
            _ => Ok(()),
        }
    }
}

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
            .map_err(ClientRequestError::NotSupported)?;
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
        let answer = tokio::time::timeout(timeout, receiver).await;
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

/// A session as seen by one plugin call serving request `request`.
pub struct RequestLink {
    pub session: Arc<Session>,
    pub request: RequestId,
}

impl ClientLink for RequestLink {
    fn notify(&self, method: &str, params: Value) {
        self.session.notify(method, params, Some(self.request.clone()));
    }

    fn log(&self, level: LogLevel, logger: &str, data: Value) {
        self.session.plugin_log(level, logger, data, Some(self.request.clone()));
    }

    fn request(&self, method: &'static str, params: Value) -> BoxFuture<'_, Result<Value, ClientRequestError>> {
        Box::pin(self.session.ask_client(method, params, Some(&self.request)))
    }

    fn resource_updated(&self, uri: &str) {
        self.session.hub.resource_updated(uri);
    }
}
