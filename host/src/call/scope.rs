//! The request a plugin call is serving: what the plugin's host imports act on.
//!
//! The session builds a [`CallScope`] for every request it hands to a plugin. The
//! plugin never sees request ids or progress tokens; the scope binds them. It
//! also holds the call to its [`NotificationBounds`]: log and progress
//! messages are truncated to their caps, progress is sent at most at its rate
//! (the values in between coalesced into the latest, which is sent when the
//! call ends), and past the call's byte budget log messages are dropped and
//! counted, with one warning saying so when the call ends.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::limits::{NotificationBounds, truncated};
use crate::metrics::METRICS;
use crate::protocol::LogLevel;
use crate::settings;

/// A boxed future a [`ClientLink`] returns (its methods are called through `dyn`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a request to the client produced no answer.
#[derive(Debug, Clone)]
pub enum ClientRequestError {
    /// The client did not declare what the request needs.
    NotSupported(String),
    /// The client answered with a JSON-RPC error.
    Rejected {
        /// The JSON-RPC error code.
        code: i32,
        /// The error's message.
        message: String,
    },
    /// The client did not answer within the client timeout.
    TimedOut,
    /// The request the call serves was cancelled, or the session ended, before an answer.
    Cancelled,
}

/// One question for the client: the key it goes by (none: the link names
/// it), the request's method and its params.
pub struct Question {
    pub key: Option<String>,
    pub method: &'static str,
    pub params: Value,
}

/// Which of a plugin's lists it said may have changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChangedLists {
    pub(crate) tools: bool,
    /// Resources and resource templates.
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
}

impl ChangedLists {
    /// Both sets of lists.
    pub(crate) fn union(self, other: ChangedLists) -> ChangedLists {
        ChangedLists {
            tools: self.tools || other.tools,
            resources: self.resources || other.resources,
            prompts: self.prompts || other.prompts,
        }
    }
}

/// The session as a plugin call sees it.
pub trait ClientLink: Send + Sync {
    /// Sends a notification that belongs to the current request.
    fn notify(&self, method: &str, params: Value);
    /// Sends notifications/message from `logger` (`bytes` long) if the
    /// session's level lets it through. What it returns is the wait for
    /// room when the client is behind: the message is sent once it ends,
    /// and dropped (and counted) if it is dropped first.
    fn log(&self, level: LogLevel, logger: &str, data: Value, bytes: usize) -> BoxFuture<'_, ()>;
    /// Sends notifications/progress of the current request.
    fn progress(&self, params: Value) {
        self.notify("notifications/progress", params);
    }
    /// Sends a request to the client and waits for its answer. Refuses at
    /// once, with `NotSupported`, what the client did not declare.
    fn request(&self, method: &'static str, params: Value) -> BoxFuture<'_, Result<Value, ClientRequestError>>;
    /// Asks several questions at once; the answers come in the order asked.
    /// By default, as concurrent requests.
    fn ask(&self, questions: Vec<Question>) -> BoxFuture<'_, Vec<Result<Value, ClientRequestError>>> {
        ask_each(self, questions)
    }
    /// A plugin announced that a resource changed.
    fn resource_updated(&self, uri: &str);
    /// Plugin `plugin` said its `lists` may have changed. Ignored by default
    /// (while a plugin loads, nobody has seen its lists yet).
    fn lists_changed(&self, _plugin: &str, _lists: ChangedLists) {}
    /// The call is waiting for a turn (`true`) or got one (`false`).
    fn queued(&self, _waiting: bool) {}
    /// The plugin says its call will take a while: whether it now runs as a
    /// task (only where the request allows one; by default it does not).
    fn run_as_task(&self) -> bool {
        false
    }
}

/// Asks `questions` through `link` as concurrent requests, one each: what
/// [`ClientLink::ask`] does unless a link asks otherwise.
pub fn ask_each<L: ClientLink + ?Sized>(
    link: &L,
    questions: Vec<Question>,
) -> BoxFuture<'_, Vec<Result<Value, ClientRequestError>>> {
    Box::pin(futures_util::future::join_all(
        questions
            .into_iter()
            .map(|question| link.request(question.method, question.params)),
    ))
}

/// One request being served by one plugin call.
pub struct CallScope {
    link: std::sync::Arc<dyn ClientLink>,
    progress_token: Option<Value>,
    bounds: NotificationBounds,
    sent: Mutex<Sent>,
    cancel: CancellationToken,
    waited: Mutex<ClientWaits>,
    /// Whom the request acts for, as a caller bucket keeps its keys apart:
    /// the principal's id, or the user of a stdio server; none when the
    /// server cannot tell callers apart (HTTP without authentication).
    caller: Option<String>,
}

/// What a call has sent toward its client, against its bounds.
#[derive(Default)]
struct Sent {
    /// Bytes of log and progress messages sent.
    bytes: usize,
    /// Log messages dropped over the call's budget.
    dropped: u64,
    /// The last progress value taken (sent or held).
    last_progress: Option<f64>,
    /// Progress messages the rate allows now, and when that was reckoned.
    allowance: f64,
    reckoned: Option<Instant>,
    /// The latest progress held back by the rate or the budget, sent when the call ends.
    held_progress: Option<Value>,
}

impl Sent {
    /// Whether the rate lets one more progress message through now: up to
    /// `per_sec` a second, in bursts of as many.
    fn progress_allowed(&mut self, per_sec: u32) -> bool {
        let now = Instant::now();
        let rate = f64::from(per_sec);
        self.allowance = match self.reckoned {
            Some(then) => (self.allowance + now.duration_since(then).as_secs_f64() * rate).min(rate),
            None => rate,
        };
        self.reckoned = Some(now);
        if self.allowance >= 1.0 {
            self.allowance -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Time a call spent waiting on the client: the finished waits, and the
/// start of the one in progress (so a deadline check made during a wait
/// does not charge it).
#[derive(Default)]
struct ClientWaits {
    finished: Duration,
    current: Option<Instant>,
}

impl CallScope {
    /// The scope of a request whose client is reached through `link`: its
    /// progress token (none: progress is not sent), the token that cancels
    /// it, and the bounds on what its call sends the client.
    pub fn new(
        link: std::sync::Arc<dyn ClientLink>,
        progress_token: Option<Value>,
        cancel: CancellationToken,
        bounds: NotificationBounds,
    ) -> Self {
        Self {
            link,
            progress_token,
            bounds,
            sent: Mutex::new(Sent::default()),
            cancel,
            waited: Mutex::new(ClientWaits::default()),
            caller: None,
        }
    }

    /// The scope of a request that acts for `caller` (see [`Self::caller`]).
    pub(crate) fn acting_for(mut self, caller: Option<String>) -> Self {
        self.caller = caller;
        self
    }

    /// Whom the request acts for, if the server can tell.
    pub(crate) fn caller(&self) -> Option<&str> {
        self.caller.as_deref()
    }

    /// A scope with no client behind it (see `NoClient`), never cancelled.
    pub fn detached() -> Self {
        Self::new(
            std::sync::Arc::new(NoClient),
            None,
            CancellationToken::new(),
            NotificationBounds::default(),
        )
    }

    pub(crate) fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Time this call spent waiting on the client, which its deadline does
    /// not count, including the wait in progress, if any.
    pub(crate) fn time_waiting_on_client(&self) -> Duration {
        let waits = self.waited.lock().unwrap();
        waits.finished + waits.current.map_or(Duration::ZERO, |since| since.elapsed())
    }

    /// Logs `text` from `logger`, cut to the log message cap; see `CallScope::log`.
    pub fn log_text(&self, logger: &str, level: LogLevel, text: String) -> BoxFuture<'_, ()> {
        let text = truncated(
            text,
            self.bounds.log_message_bytes,
            &settings::server::max_log_message_bytes,
        );
        let bytes = text.len();
        self.log(logger, level, Value::String(text), bytes)
    }

    /// Logs the JSON `json` from `logger`; over the log message cap, or when
    /// it does not parse, it goes as text (cut to the cap).
    pub fn log_json(&self, logger: &str, level: LogLevel, json: String) -> BoxFuture<'_, ()> {
        if json.len() > self.bounds.log_message_bytes {
            return self.log_text(logger, level, json);
        }
        let bytes = json.len();
        let data = serde_json::from_str(&json).unwrap_or(Value::String(json));
        self.log(logger, level, data, bytes)
    }

    /// Sends a log message of `bytes` within the call's budget (past it, it
    /// is dropped and counted); the returned future waits while the client
    /// is behind (see [`ClientLink::log`]).
    fn log(&self, logger: &str, level: LogLevel, data: Value, bytes: usize) -> BoxFuture<'_, ()> {
        {
            let mut sent = self.sent.lock().unwrap();
            if sent.bytes + bytes > self.bounds.call_bytes {
                sent.dropped += 1;
                METRICS.outbound_dropped("call_budget", 1);
                return Box::pin(std::future::ready(()));
            }
            sent.bytes += bytes;
        }
        self.link.log(level, logger, data, bytes)
    }

    /// Sends notifications/progress if the request carried a token and the
    /// value increases; anything else is dropped. Over the progress rate or
    /// the call's budget the value is held instead, replacing any held
    /// before; the latest held is sent when the call ends ([`Self::finish`]).
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        let mut sent = self.sent.lock().unwrap();
        if !progress.is_finite() || sent.last_progress.is_some_and(|prev| progress <= prev) {
            return;
        }
        sent.last_progress = Some(progress);
        let mut params = json!({ "progressToken": token, "progress": progress });
        if let Some(total) = total.filter(|t| t.is_finite()) {
            params["total"] = json!(total);
        }
        let mut bytes = 0;
        if let Some(message) = message {
            let message = truncated(
                message,
                self.bounds.progress_message_bytes,
                &settings::server::max_progress_message_bytes,
            );
            bytes = message.len();
            params["message"] = json!(message);
        }
        if sent.bytes + bytes > self.bounds.call_bytes || !sent.progress_allowed(self.bounds.progress_per_sec) {
            sent.held_progress = Some(params);
            return;
        }
        sent.bytes += bytes;
        sent.held_progress = None;
        drop(sent);
        self.link.progress(params);
    }

    /// The call has ended: sends the progress it held back, if any, and one
    /// warning from `logger` if log messages were dropped over its budget.
    pub fn finish(&self, logger: &str) {
        let (held, dropped) = {
            let mut sent = self.sent.lock().unwrap();
            (sent.held_progress.take(), std::mem::take(&mut sent.dropped))
        };
        if let Some(params) = held {
            self.link.progress(params);
        }
        if dropped > 0 {
            let summary = format!(
                "{dropped} log message(s) from plugin {logger} were dropped: this call went over its budget of {} \
                 bytes of notifications (raise it with {})",
                self.bounds.call_bytes,
                settings::server::max_call_notification_bytes.hint()
            );
            tracing::warn!(
                plugin = logger,
                dropped,
                "plugin log messages dropped over the call's notification budget"
            );
            let bytes = summary.len();
            // Sent now if the client has room, else counted with the messages it drops.
            drop(self.link.log(LogLevel::Warning, logger, Value::String(summary), bytes));
        }
    }

    /// Asks the client; stops waiting when the request is cancelled.
    pub(crate) async fn ask_client(&self, questions: Vec<Question>) -> Vec<Result<Value, ClientRequestError>> {
        let asked = questions.len();
        let started = Instant::now();
        self.waited.lock().unwrap().current = Some(started);
        let answers = tokio::select! {
            answers = self.link.ask(questions) => answers,
            _ = self.cancel.cancelled() => vec![Err(ClientRequestError::Cancelled); asked],
        };
        let mut waits = self.waited.lock().unwrap();
        waits.current = None;
        waits.finished += started.elapsed();
        answers
    }

    pub(crate) fn notify(&self, method: &str, params: Value) {
        self.link.notify(method, params);
    }

    pub(crate) fn resource_updated(&self, uri: &str) {
        self.link.resource_updated(uri);
    }

    pub(crate) fn run_as_task(&self) -> bool {
        self.link.run_as_task()
    }

    pub(crate) fn lists_changed(&self, plugin: &str, lists: ChangedLists) {
        self.link.lists_changed(plugin, lists);
    }

    pub(crate) fn set_queued(&self, waiting: bool) {
        self.link.queued(waiting);
    }
}

/// The link used while loading a plugin, when no client is there: notifications
/// are dropped and requests refused.
struct NoClient;

impl ClientLink for NoClient {
    fn notify(&self, _method: &str, _params: Value) {}

    fn log(&self, _level: LogLevel, _logger: &str, _data: Value, _bytes: usize) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }

    fn request(&self, method: &'static str, _params: Value) -> BoxFuture<'_, Result<Value, ClientRequestError>> {
        Box::pin(async move {
            Err(ClientRequestError::NotSupported(format!(
                "{method} is not available while a plugin is loading"
            )))
        })
    }

    fn resource_updated(&self, _uri: &str) {}
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    /// A client that keeps the notifications a call sends it.
    #[derive(Default)]
    struct Notifications(Mutex<Vec<Value>>);

    impl ClientLink for Notifications {
        fn notify(&self, _: &str, params: Value) {
            self.0.lock().unwrap().push(params);
        }
        fn log(&self, _: LogLevel, _: &str, data: Value, _: usize) -> BoxFuture<'_, ()> {
            self.0.lock().unwrap().push(data);
            Box::pin(std::future::ready(()))
        }
        fn request(&self, _: &'static str, _: Value) -> BoxFuture<'_, Result<Value, ClientRequestError>> {
            Box::pin(async { Err(ClientRequestError::TimedOut) })
        }
        fn resource_updated(&self, _: &str) {}
    }

    /// Regression (plugin_output fuzz target): a NaN total went out as `"total": null`.
    #[test]
    fn progress_leaves_out_a_total_without_a_json_form() {
        let client = Arc::new(Notifications::default());
        let scope = CallScope::new(
            client.clone(),
            Some(json!("p")),
            CancellationToken::new(),
            NotificationBounds::default(),
        );
        scope.progress(1.0, Some(f64::NAN), None);
        scope.progress(2.0, Some(f64::INFINITY), None);
        scope.progress(3.0, Some(4.0), None);
        assert_eq!(
            *client.0.lock().unwrap(),
            [
                json!({ "progressToken": "p", "progress": 1.0 }),
                json!({ "progressToken": "p", "progress": 2.0 }),
                json!({ "progressToken": "p", "progress": 3.0, "total": 4.0 }),
            ]
        );
    }

    fn bounded(bounds: NotificationBounds) -> (Arc<Notifications>, CallScope) {
        let client = Arc::new(Notifications::default());
        let scope = CallScope::new(client.clone(), Some(json!("p")), CancellationToken::new(), bounds);
        (client, scope)
    }

    #[test]
    fn progress_over_the_rate_is_coalesced_into_the_latest_sent_at_the_end() {
        let (client, scope) = bounded(NotificationBounds {
            progress_per_sec: 3,
            ..NotificationBounds::default()
        });
        for step in 1..=1000 {
            scope.progress(f64::from(step), Some(1000.0), None);
        }
        assert_eq!(client.0.lock().unwrap().len(), 3, "a burst of 3, then held");
        scope.finish("plugin");
        let sent = client.0.lock().unwrap();
        assert_eq!(sent.len(), 4);
        assert_eq!(sent[3]["progress"], 1000.0, "the final value arrives");
    }

    #[test]
    fn log_messages_past_the_call_budget_are_dropped_and_counted_once() {
        let (client, scope) = bounded(NotificationBounds {
            call_bytes: 100,
            log_message_bytes: 40,
            ..NotificationBounds::default()
        });
        for _ in 0..10 {
            drop(scope.log_text("plugin", LogLevel::Info, "x".repeat(30)));
        }
        drop(scope.log_text("plugin", LogLevel::Info, "y".repeat(1000)));
        let logged = client.0.lock().unwrap().clone();
        assert_eq!(logged.len(), 3, "three of 30 bytes fit 100: {logged:?}");
        scope.finish("plugin");
        let summary = client.0.lock().unwrap().last().unwrap().as_str().unwrap().to_owned();
        assert!(
            summary.starts_with("8 log message(s) from plugin plugin were dropped"),
            "{summary}"
        );
        assert!(summary.contains("--max-call-notification-bytes"), "{summary}");
    }
}
