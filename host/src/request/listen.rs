//! `subscriptions/listen` (2026-07-28): the notification streams a client
//! opens, what each asked for, and what the hub tells a client (list
//! changes, resource updates, task status, the host's log messages; a peer
//! is its [`Audience`]), delivered to the session opened by `initialize` if
//! it asked for it and to every stream that did.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::Peer;
use super::outbound::Key;
use crate::metrics::METRICS;
use crate::protocol::modern::SUBSCRIPTION_ID;
use crate::protocol::requests::SubscriptionFilter;
use crate::protocol::{LogLevel, RequestId};
use crate::protocol::{RpcError, jsonrpc::SERVER_ERROR};
use crate::server::Audience;
use crate::settings;

/// The listen streams open on one peer.
#[derive(Default)]
pub struct Listens {
    open: Mutex<Vec<(RequestId, SubscriptionFilter)>>,
    /// Cancelled when the peer closes: every stream ends gracefully.
    closing: CancellationToken,
}

impl Listens {
    /// Every stream ends gracefully (the peer is closing).
    pub fn close(&self) {
        self.closing.cancel();
    }
}

/// Forgets a stream when its request ends, however it ends.
struct Opened<'a> {
    listens: &'a Listens,
    id: RequestId,
}

impl Drop for Opened<'_> {
    fn drop(&mut self) {
        self.listens.open.lock().unwrap().retain(|(id, _)| *id != self.id);
        METRICS.subscriptions("listen", -1);
    }
}

impl Peer {
    /// subscriptions/listen: acknowledges what it will send, then streams it
    /// until the client closes the stream (no answer) or the peer closes
    /// (a result that ends the subscription gracefully).
    pub(super) async fn listen(
        self: &Arc<Self>,
        id: &RequestId,
        filter: SubscriptionFilter,
        cancel: CancellationToken,
    ) -> Result<Value, RpcError> {
        let subscription = json!({ SUBSCRIPTION_ID: id.to_value() });
        let principal = self.principal_id();
        if principal.is_some() {
            for task in &filter.task_ids {
                self.hub.tasks.stored(task, principal.as_deref()).await?;
            }
        }
        {
            let mut open = self.listens.open.lock().unwrap();
            let limit = self.hub.config.max_subscriptions;
            let count = |f: &SubscriptionFilter| f.resource_subscriptions.len() + f.task_ids.len();
            let held = open.iter().map(|(_, f)| count(f)).sum::<usize>();
            if held + count(&filter) > limit {
                return Err(RpcError::new(
                    SERVER_ERROR,
                    format!(
                        "Too many subscriptions: this session's listen streams would hold more than {limit} resources \
                         and tasks (the max_subscriptions limit); subscribe to fewer, or raise the limit ({})",
                        settings::server::max_subscriptions.hint()
                    ),
                ));
            }
            open.push((id.clone(), filter.clone()));
        }
        METRICS.subscriptions("listen", 1);
        let _opened = Opened {
            listens: &self.listens,
            id: id.clone(),
        };
        self.notify(
            "notifications/subscriptions/acknowledged",
            json!({ "notifications": filter, "_meta": subscription }),
            Some(id.clone()),
        );
        tokio::select! {
            _ = cancel.cancelled() => {}
            _ = self.listens.closing.cancelled() => {}
        }
        Ok(json!({ "_meta": subscription }))
    }
}

impl Audience for Peer {
    /// Tells the client about `method` (a list change, or an update of
    /// resource `uri`): the session `initialize` opened, if it asked for
    /// it, and every listen stream that did.
    fn announce(&self, method: &str, uri: Option<&str>) {
        let params = || match uri {
            Some(uri) => json!({ "uri": uri }),
            None => json!({}),
        };
        let legacy = self.session().is_some_and(|session| match uri {
            Some(uri) => session.is_subscribed(uri),
            None => session.is_initialized(),
        });
        if legacy {
            let key = Key::About {
                method: method.to_owned(),
                subject: uri.map(str::to_owned),
                stream: None,
            };
            self.notify_latest(key, method, params(), None);
        }
        self.tell_listeners(method, uri, &params);
    }

    /// Sends `method` with the params `params` makes on every listen stream
    /// that asked for it (about `subject`: a resource, a task); nothing is
    /// made when none did. While the client is behind, a later one about
    /// the same subject on the same stream replaces it.
    fn tell_listeners(&self, method: &str, subject: Option<&str>, params: &dyn Fn() -> Value) {
        let streams: Vec<RequestId> = self
            .listens
            .open
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, filter)| filter.wants(method, subject))
            .map(|(id, _)| id.clone())
            .collect();
        for stream in streams {
            let mut params = params();
            params["_meta"] = json!({ SUBSCRIPTION_ID: stream.to_value() });
            let key = Key::About {
                method: method.to_owned(),
                subject: subject.map(str::to_owned),
                stream: Some(stream.clone()),
            };
            self.notify_latest(key, method, params, Some(stream));
        }
    }

    /// Every resource URI the client wants updates of.
    fn watched_resources(&self) -> Vec<String> {
        let mut uris = self
            .session()
            .map(|session| session.subscriptions())
            .unwrap_or_default();
        for (_, filter) in self.listens.open.lock().unwrap().iter() {
            uris.extend(filter.resource_subscriptions.iter().cloned());
        }
        uris.sort();
        uris.dedup();
        uris
    }

    /// The host's message, if the client's session asked for messages of `level`.
    fn log(&self, level: LogLevel, logger: &str, data: Value) {
        if self.session().is_some_and(|session| session.wants_log(level)) {
            self.send_log(level, logger, data, None);
        }
    }
}
