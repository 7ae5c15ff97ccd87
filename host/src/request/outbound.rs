//! The way out of one session: every message for the client goes through
//! [`Outbound`], which bounds in bytes (`max_outbound_bytes`) the
//! notifications plugins cause that the client has not read yet. A transport
//! releases a message's [`Charge`] once it has written it (or has nowhere to
//! keep it). Responses and the server's own messages are never held or
//! dropped. Past the bound:
//!
//! - a log message waits for room (the plugin waits in its host call, under
//!   its deadline and cancellation); one whose wait is given up is dropped and
//!   counted, and once there is room one warning per plugin says how many;
//! - progress, resource updates and list changes are coalesced: the latest
//!   per request, per URI, per list, sent as room frees;
//! - what is held for a request goes out before its response.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};

use serde_json::Value;
use tokio::sync::{Notify, mpsc};

use crate::metrics::METRICS;
use crate::protocol::{LogLevel, RequestId, jsonrpc};
use crate::request::AnswerKind;
use crate::settings;

/// A message for the client, and the client request it belongs to (if any),
/// so a transport can deliver it on that request's stream.
#[derive(Debug)]
pub struct Outgoing {
    /// The JSON-RPC message.
    pub message: Value,
    /// The client request it belongs to, if any.
    pub related_request: Option<RequestId>,
    /// Its bytes, counted against the session's bound until dropped (none:
    /// not counted). A transport drops it once the message is written.
    pub charge: Option<Charge>,
    /// For the response to a request: how the request ended.
    pub(crate) answer: Option<AnswerKind>,
}

impl Outgoing {
    /// A message counted against no bound.
    pub fn new(message: Value, related_request: Option<RequestId>) -> Self {
        Self {
            message,
            related_request,
            charge: None,
            answer: None,
        }
    }
}

/// The sending end a transport gives a session.
pub type Outbox = mpsc::UnboundedSender<Outgoing>;

/// Bytes handed to the transport and not yet written, and the wake-up of
/// whoever waits for room.
#[derive(Debug, Default)]
struct Meter {
    used: Mutex<usize>,
    room: Notify,
}

/// The bytes of one message, counted until it is dropped.
#[derive(Debug)]
pub struct Charge {
    meter: Arc<Meter>,
    bytes: usize,
}

impl Drop for Charge {
    fn drop(&mut self) {
        *self.meter.used.lock().unwrap() -= self.bytes;
        self.meter.room.notify_waiters();
    }
}

/// What a coalesced notification replaces: the one before it with the same key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    /// The progress of a request.
    Progress(RequestId),
    /// A notification about `subject` (a resource URI, a task, none for a
    /// list change) on a stream (none: the session's own).
    About {
        method: String,
        subject: Option<String>,
        stream: Option<RequestId>,
    },
}

/// Notifications held while there was no room, and log messages dropped.
#[derive(Default)]
struct Held {
    /// In arrival order, one per key: (key, message, its bytes).
    coalesced: Vec<(Key, Outgoing, usize)>,
    /// Log messages dropped per plugin, not yet reported.
    dropped: BTreeMap<String, u64>,
    /// A task sends what is held as room frees.
    flushing: bool,
}

pub struct Outbound {
    sender: Outbox,
    limit: usize,
    meter: Arc<Meter>,
    held: Mutex<Held>,
}

impl Outbound {
    pub fn new(sender: Outbox, limit: usize) -> Arc<Self> {
        Arc::new(Self {
            sender,
            limit,
            meter: Arc::default(),
            held: Mutex::default(),
        })
    }

    /// Sends a message that is never held (a request, a response, the
    /// server's own notification).
    pub fn send(&self, message: Value, related_request: Option<RequestId>) {
        // The transport is gone when this fails; nothing is left to tell.
        let _ = self.sender.send(Outgoing::new(message, related_request));
    }

    /// Sends the response to `id` (`answer` says how the request ended),
    /// after what is held for that request.
    pub fn respond(&self, id: &RequestId, message: Value, answer: AnswerKind) {
        let mut held = self.held.lock().unwrap();
        if held
            .coalesced
            .iter()
            .any(|(_, out, _)| out.related_request.as_ref() == Some(id))
        {
            let (before, keep) = std::mem::take(&mut held.coalesced)
                .into_iter()
                .partition(|(_, out, _)| out.related_request.as_ref() == Some(id));
            held.coalesced = keep;
            for (_, out, _) in before {
                let _ = self.sender.send(out);
            }
        }
        let _ = self.sender.send(Outgoing {
            answer: Some(answer),
            ..Outgoing::new(message, Some(id.clone()))
        });
    }

    /// A charge of `bytes` if the bound has room for it (a message larger
    /// than the bound fits when nothing else is waiting).
    fn try_charge(&self, bytes: usize) -> Option<Charge> {
        let mut used = self.meter.used.lock().unwrap();
        if *used > 0 && *used + bytes > self.limit {
            return None;
        }
        *used += bytes;
        Some(Charge {
            meter: self.meter.clone(),
            bytes,
        })
    }

    /// A charge of `bytes`, once the bound has room for it.
    async fn charge(&self, bytes: usize) -> Charge {
        loop {
            let room = self.meter.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            if let Some(charge) = self.try_charge(bytes) {
                return charge;
            }
            room.await;
        }
    }

    fn send_charged(&self, message: Value, related_request: Option<RequestId>, charge: Charge) {
        let _ = self.sender.send(Outgoing {
            charge: Some(charge),
            ..Outgoing::new(message, related_request)
        });
    }

    /// Sends a plugin's log message (`bytes` of data, made into a message by
    /// `message`) now if there is room; else returns the wait for room, after
    /// which it is sent. If that wait is dropped first, the message is dropped
    /// and counted for `plugin`'s report.
    pub fn log(
        self: &Arc<Self>,
        plugin: &str,
        bytes: usize,
        related_request: Option<RequestId>,
        message: impl FnOnce() -> Value + Send + 'static,
    ) -> Option<impl Future<Output = ()> + Send + 'static> {
        if let Some(charge) = self.try_charge(bytes) {
            self.send_charged(message(), related_request, charge);
            return None;
        }
        let unsent = Unsent {
            outbound: Arc::downgrade(self),
            plugin: Some(plugin.to_owned()),
        };
        let outbound = self.clone();
        Some(async move {
            let charge = outbound.charge(bytes).await;
            unsent.sent();
            outbound.send_charged(message(), related_request, charge);
        })
    }

    /// Sends a notification that a later one with the same `key` replaces:
    /// now if there is room and none is held for `key`, else held (replacing
    /// the one held) and sent as room frees.
    pub fn coalesce(self: &Arc<Self>, key: Key, message: Value, related_request: Option<RequestId>) {
        let bytes = message_bytes(&message);
        let mut held = self.held.lock().unwrap();
        if let Some(slot) = held.coalesced.iter_mut().find(|(k, _, _)| *k == key) {
            *slot = (key, Outgoing::new(message, related_request), bytes);
            METRICS.outbound_dropped("replaced_by_newer", 1);
            return;
        }
        match self.try_charge(bytes) {
            Some(charge) => self.send_charged(message, related_request, charge),
            None => {
                held.coalesced
                    .push((key, Outgoing::new(message, related_request), bytes));
                self.start_flushing(&mut held);
            }
        }
    }

    /// Starts the task that sends what is held as room frees, unless it runs
    /// (or the runtime is gone: then nothing more is sent anyway).
    fn start_flushing(self: &Arc<Self>, held: &mut Held) {
        if held.flushing {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            held.flushing = true;
            runtime.spawn(flush(Arc::downgrade(self), self.meter.clone()));
        }
    }

    /// Sends what is held, oldest first, while there is room, then the
    /// reports of dropped messages; whether anything is left.
    fn flush_some(&self) -> bool {
        let mut held = self.held.lock().unwrap();
        while let Some((_, _, bytes)) = held.coalesced.first()
            && let Some(charge) = self.try_charge(*bytes)
        {
            let (_, out, _) = held.coalesced.remove(0);
            self.send_charged(out.message, out.related_request, charge);
        }
        while held.coalesced.is_empty()
            && let Some(plugin) = held.dropped.keys().next().cloned()
        {
            let report = dropped_report(&plugin, held.dropped[&plugin], self.limit);
            let Some(charge) = self.try_charge(message_bytes(&report)) else {
                break;
            };
            held.dropped.remove(&plugin);
            self.send_charged(report, None, charge);
        }
        let more = !held.coalesced.is_empty() || !held.dropped.is_empty();
        held.flushing = more;
        more
    }
}

/// Sends what `outbound` holds as room frees, until nothing is held or the
/// session is gone.
async fn flush(outbound: Weak<Outbound>, meter: Arc<Meter>) {
    loop {
        let room = meter.room.notified();
        tokio::pin!(room);
        room.as_mut().enable();
        match outbound.upgrade() {
            Some(outbound) if outbound.flush_some() => {}
            _ => return,
        }
        room.await;
    }
}

/// A log message waiting for room: counted as dropped if the wait ends first.
struct Unsent {
    outbound: Weak<Outbound>,
    /// Cleared once the message is sent.
    plugin: Option<String>,
}

impl Unsent {
    fn sent(mut self) {
        self.plugin = None;
    }
}

impl Drop for Unsent {
    fn drop(&mut self) {
        let (Some(plugin), Some(outbound)) = (self.plugin.take(), self.outbound.upgrade()) else {
            return;
        };
        let mut held = outbound.held.lock().unwrap();
        *held.dropped.entry(plugin).or_default() += 1;
        METRICS.outbound_dropped("log_client_behind", 1);
        outbound.start_flushing(&mut held);
    }
}

/// The warning that `dropped` log messages of `plugin` were dropped.
fn dropped_report(plugin: &str, dropped: u64, limit: usize) -> Value {
    tracing::warn!(
        plugin,
        dropped,
        "plugin log messages dropped: the client was not reading them"
    );
    let text = format!(
        "{dropped} log message(s) from plugin {plugin} were dropped: the client was not reading them as fast as \
         the plugin sent them, and this session holds at most {limit} bytes of notifications for it (raise it \
         with {})",
        settings::server::max_outbound_bytes.hint()
    );
    jsonrpc::notification(
        "notifications/message",
        serde_json::json!({ "level": LogLevel::Warning, "logger": plugin, "data": text }),
    )
}

/// What a small notification is counted as: its parameters' strings, plus a
/// fixed allowance for the rest of the message.
fn message_bytes(message: &Value) -> usize {
    const FRAME: usize = 128;
    fn strings(value: &Value) -> usize {
        match value {
            Value::String(s) => s.len(),
            Value::Array(items) => items.iter().map(strings).sum(),
            Value::Object(fields) => fields.iter().map(|(k, v)| k.len() + strings(v)).sum(),
            _ => 8,
        }
    }
    FRAME + strings(message)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn id(n: i64) -> RequestId {
        RequestId::from_value(&json!(n)).unwrap()
    }

    fn progress(n: u32) -> Value {
        jsonrpc::notification("notifications/progress", json!({ "progressToken": "t", "progress": n }))
    }

    #[tokio::test]
    async fn past_the_bound_progress_is_coalesced_and_goes_out_before_its_response() {
        let (sender, mut sent) = mpsc::unbounded_channel();
        // Room for two of them (about 200 bytes each).
        let outbound = Outbound::new(sender, 450);
        for n in 1..=100 {
            outbound.coalesce(Key::Progress(id(1)), progress(n), Some(id(1)));
        }
        outbound.respond(
            &id(1),
            json!({ "jsonrpc": "2.0", "id": 1, "result": {} }),
            AnswerKind::Result,
        );
        let mut out = Vec::new();
        while let Ok(message) = sent.try_recv() {
            out.push(message);
        }
        let values: Vec<&Value> = out.iter().map(|o| &o.message["params"]["progress"]).collect();
        assert_eq!(values[..values.len() - 1], [&json!(1), &json!(2), &json!(100)]);
        assert!(
            out.last().unwrap().message.get("result").is_some(),
            "the response comes last"
        );
    }

    #[tokio::test]
    async fn a_log_message_waits_for_room_and_one_given_up_is_reported() {
        let (sender, mut sent) = mpsc::unbounded_channel();
        let outbound = Outbound::new(sender, 100);
        assert!(outbound.log("p", 80, None, || json!(1)).is_none(), "room: sent at once");
        let waiting = outbound.log("p", 80, None, || json!(2)).expect("no room: it waits");
        drop(outbound.log("p", 80, None, || json!(3)).expect("no room"));
        let first = sent.try_recv().unwrap();
        assert!(sent.try_recv().is_err());
        drop(first);
        waiting.await;
        let second = sent.recv().await.unwrap();
        assert_eq!(second.message, json!(2));
        drop(second);
        let report = sent.recv().await.unwrap();
        let text = report.message["params"]["data"].as_str().unwrap();
        assert!(
            text.starts_with("1 log message(s) from plugin p were dropped"),
            "{text}"
        );
        assert!(text.contains("--max-outbound-bytes"), "{text}");
    }
}
