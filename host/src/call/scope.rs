//! The request a plugin call is serving: what the plugin's host imports act on.
//!
//! The session builds a [`CallScope`] for every request it hands to a plugin. The
//! plugin never sees request ids or progress tokens; the scope binds them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::protocol::LogLevel;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a request to the client produced no answer.
#[derive(Debug, Clone)]
pub enum ClientRequestError {
    /// The client did not declare what the request needs.
    NotSupported(String),
    /// The client answered with a JSON-RPC error.
    Rejected {
        code: i32,
        message: String,
    },
    TimedOut,
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
    pub tools: bool,
    /// Resources and resource templates.
    pub resources: bool,
    pub prompts: bool,
}

impl ChangedLists {
    /// Both sets of lists.
    pub fn union(self, other: ChangedLists) -> ChangedLists {
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
    /// Sends notifications/message from `logger` if the session's level lets it through.
    fn log(&self, level: LogLevel, logger: &str, data: Value);
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
    last_progress: Mutex<Option<f64>>,
    cancel: CancellationToken,
    waited: Mutex<ClientWaits>,
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
    pub fn new(link: std::sync::Arc<dyn ClientLink>, progress_token: Option<Value>, cancel: CancellationToken) -> Self {
        Self {
            link,
            progress_token,
            last_progress: Mutex::new(None),
            cancel,
            waited: Mutex::new(ClientWaits::default()),
        }
    }

    /// A scope with no client behind it (see [`NoClient`]), never cancelled.
    pub fn detached() -> Self {
        Self::new(std::sync::Arc::new(NoClient), None, CancellationToken::new())
    }

    pub fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Time this call spent waiting on the client, which its deadline does
    /// not count, including the wait in progress, if any.
    pub fn time_waiting_on_client(&self) -> Duration {
        let waits = self.waited.lock().unwrap();
        waits.finished + waits.current.map_or(Duration::ZERO, |since| since.elapsed())
    }

    pub fn log(&self, logger: &str, level: LogLevel, data: Value) {
        self.link.log(level, logger, data);
    }

    /// Sends notifications/progress if the request carried a token and the
    /// value increases; anything else is dropped.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        let mut last = self.last_progress.lock().unwrap();
        if !progress.is_finite() || last.is_some_and(|prev| progress <= prev) {
            return;
        }
        *last = Some(progress);
        let mut params = json!({ "progressToken": token, "progress": progress });
        if let Some(total) = total.filter(|t| t.is_finite()) {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        self.link.notify("notifications/progress", params);
    }

    /// Asks the client; stops waiting when the request is cancelled.
    pub async fn ask_client(&self, questions: Vec<Question>) -> Vec<Result<Value, ClientRequestError>> {
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

    pub fn notify(&self, method: &str, params: Value) {
        self.link.notify(method, params);
    }

    pub fn resource_updated(&self, uri: &str) {
        self.link.resource_updated(uri);
    }

    pub fn run_as_task(&self) -> bool {
        self.link.run_as_task()
    }

    pub fn lists_changed(&self, plugin: &str, lists: ChangedLists) {
        self.link.lists_changed(plugin, lists);
    }

    pub fn set_queued(&self, waiting: bool) {
        self.link.queued(waiting);
    }
}

/// The link used while loading a plugin, when no client is there: notifications
/// are dropped and requests refused.
pub struct NoClient;

impl ClientLink for NoClient {
    fn notify(&self, _method: &str, _params: Value) {}

    fn log(&self, _level: LogLevel, _logger: &str, _data: Value) {}

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
        fn log(&self, _: LogLevel, _: &str, _: Value) {}
        fn request(&self, _: &'static str, _: Value) -> BoxFuture<'_, Result<Value, ClientRequestError>> {
            Box::pin(async { Err(ClientRequestError::TimedOut) })
        }
        fn resource_updated(&self, _: &str) {}
    }

    /// Regression (plugin_output fuzz target): a NaN total went out as `"total": null`.
    #[test]
    fn progress_leaves_out_a_total_without_a_json_form() {
        let client = Arc::new(Notifications::default());
        let scope = CallScope::new(client.clone(), Some(json!("p")), CancellationToken::new());
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
}
