//! Requests the server sends to the client on a plugin's behalf (sampling,
//! elicitation, roots): capability checks, ids, timeouts and answers.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::Session;
use crate::call::ClientRequestError;
use crate::protocol::jsonrpc;
use crate::protocol::{RequestId, RpcError};
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
            self.session.peer.notify(
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
        related: Option<RequestId>,
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
        self.peer.send(jsonrpc::request(number, method, params), related);
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
