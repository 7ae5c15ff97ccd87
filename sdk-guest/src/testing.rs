//! Unit-test a plugin natively, without wasm: a scriptable fake host.
//!
//! Off wasm (a plain `cargo test` on your machine) the [`host`](crate::host)
//! functions talk to the [`FakeHost`] that [`FakeHost::run`] installs on the
//! current thread. It records what the code under test logs, reports and
//! announces, counts its cancellation checks, and answers sampling,
//! elicitation and roots requests with the answers you scripted, in order.
//! Outside `run`, native host calls behave as outside a request: logs and
//! progress are dropped, nothing is cancelled, and requests to the client are
//! refused with [`RequestError::NotSupported`].
//!
//! ```
//! use wasm_mcp_sdk::host::{self, LogLevel, SamplingMessage, SamplingRequest};
//! use wasm_mcp_sdk::testing::FakeHost;
//!
//! // The logic of a tool: summarize with the client's model, reporting progress.
//! fn summarize(text: &str) -> Result<String, host::RequestError> {
//!     host::log(LogLevel::Info, "asking the model");
//!     host::progress(0.0, Some(1.0), None);
//!     let answer = host::sample(&SamplingRequest::new(vec![SamplingMessage::user(text)], 100))?;
//!     host::progress(1.0, Some(1.0), Some("done"));
//!     Ok(answer.text())
//! }
//!
//! let fake = FakeHost::new().answer_sampling_text("A short summary.");
//! assert_eq!(fake.run(|| summarize("A long text")).unwrap(), "A short summary.");
//! assert_eq!(fake.log_messages(), ["asking the model"]);
//! assert_eq!(fake.progress().last().unwrap().message.as_deref(), Some("done"));
//! assert_eq!(fake.sampling_requests()[0].max_tokens, 100);
//!
//! // Without a scripted answer, the request is refused as a client without sampling would.
//! assert!(FakeHost::new().run(|| summarize("text")).is_err());
//! ```
//!
//! The fake takes effect only off wasm (`cfg(not(target_arch = "wasm32"))`):
//! the component your plugin builds to always talks to the real host. The
//! module compiles on every target, so tests that use it type-check with
//! `cargo clippy --all-targets --target wasm32-wasip2` too.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use serde_json::Value;

use crate::Role;
use crate::TextContent;
use crate::host::{
    ElicitAction, ElicitResult, Elicitation, ListKind, LogLevel, RequestError, Root, SamplingContent, SamplingRequest,
    SamplingResult,
};

/// One call of [`host::progress`](crate::host::progress), as reported (the
/// real host also drops values that do not increase).
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressReport {
    /// The progress so far.
    pub progress: f64,
    /// The total, if known.
    pub total: Option<f64>,
    /// The message, if any.
    pub message: Option<String>,
}

/// A fake host for native tests: script the client's answers, run the code
/// under test with [`run`](FakeHost::run), then look at what it did. Clones
/// share the same recordings.
#[derive(Clone, Default)]
pub struct FakeHost {
    state: Rc<RefCell<State>>,
}

#[derive(Default)]
struct State {
    logs: Vec<(LogLevel, String)>,
    progress: Vec<ProgressReport>,
    updated_resources: Vec<String>,
    changed_lists: Vec<ListKind>,
    tasks_allowed: bool,
    task_requests: usize,
    completed_elicitations: Vec<String>,
    sampling_requests: Vec<SamplingRequest>,
    elicitations: Vec<Elicitation>,
    sampling_answers: VecDeque<Result<SamplingResult, RequestError>>,
    elicitation_answers: VecDeque<Result<ElicitResult, RequestError>>,
    roots: Option<Result<Vec<Root>, RequestError>>,
    cancelled_after_checks: Option<usize>,
    cancel_checks: usize,
}

thread_local! {
    static CURRENT: RefCell<Option<FakeHost>> = const { RefCell::new(None) };
}

impl FakeHost {
    /// A host whose client supports nothing (requests are refused until you
    /// script answers) and never cancels.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `f` with this fake as the host of the current thread; the host
    /// functions `f` calls act on it.
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        struct Restore(Option<FakeHost>);
        impl Drop for Restore {
            fn drop(&mut self) {
                CURRENT.with(|current| *current.borrow_mut() = self.0.take());
            }
        }
        let _restore = Restore(CURRENT.with(|current| current.borrow_mut().replace(self.clone())));
        f()
    }

    /// Queues the answer to the next [`host::sample`](crate::host::sample).
    pub fn answer_sampling(self, answer: Result<SamplingResult, RequestError>) -> Self {
        self.state.borrow_mut().sampling_answers.push_back(answer);
        self
    }

    /// Queues a text answer from the assistant (model `fake-model`) to the
    /// next [`host::sample`](crate::host::sample).
    pub fn answer_sampling_text(self, text: &str) -> Self {
        self.answer_sampling(Ok(SamplingResult {
            role: Role::Assistant,
            content: vec![SamplingContent::Text(TextContent {
                text: text.to_string(),
                annotations: None,
                meta: None,
            })],
            model: "fake-model".to_string(),
            stop_reason: Some("endTurn".to_string()),
        }))
    }

    /// Queues the answer to the next elicitation (form or URL).
    pub fn answer_elicitation(self, answer: Result<ElicitResult, RequestError>) -> Self {
        self.state.borrow_mut().elicitation_answers.push_back(answer);
        self
    }

    /// Queues a form the user accepts with `content` (a JSON object).
    pub fn accept_form(self, content: Value) -> Self {
        self.answer_elicitation(Ok(ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content.to_string()),
        }))
    }

    /// Queues an elicitation the user answers with `action` and no content
    /// (decline, cancel, or accept of a URL elicitation).
    pub fn answer_elicitation_with(self, action: ElicitAction) -> Self {
        self.answer_elicitation(Ok(ElicitResult { action, content: None }))
    }

    /// The client's roots, for [`host::list_roots`](crate::host::list_roots).
    pub fn roots(self, roots: Vec<Root>) -> Self {
        self.state.borrow_mut().roots = Some(Ok(roots));
        self
    }

    /// Lets the call run as a task: [`host::run_as_task`](crate::host::run_as_task)
    /// returns true (as for a 2026-07-28 client that negotiated tasks).
    pub fn allow_tasks(self) -> Self {
        self.state.borrow_mut().tasks_allowed = true;
        self
    }

    /// How many times the code asked to run as a task.
    pub fn task_requests(&self) -> usize {
        self.state.borrow().task_requests
    }

    /// Reports the request cancelled from the `checks + 1`-th call of
    /// [`host::is_cancelled`](crate::host::is_cancelled) on (`0`: cancelled
    /// from the start).
    pub fn cancel_after_checks(self, checks: usize) -> Self {
        self.state.borrow_mut().cancelled_after_checks = Some(checks);
        self
    }

    /// Every log message with its level, in order; structured data as JSON text.
    pub fn logs(&self) -> Vec<(LogLevel, String)> {
        self.state.borrow().logs.clone()
    }

    /// The text of every log message, in order.
    pub fn log_messages(&self) -> Vec<String> {
        self.state.borrow().logs.iter().map(|(_, text)| text.clone()).collect()
    }

    /// Every progress report, in order.
    pub fn progress(&self) -> Vec<ProgressReport> {
        self.state.borrow().progress.clone()
    }

    /// The URIs announced with [`host::resource_updated`](crate::host::resource_updated).
    pub fn updated_resources(&self) -> Vec<String> {
        self.state.borrow().updated_resources.clone()
    }

    /// The lists announced with `host::lists_changed`, in order.
    pub fn changed_lists(&self) -> Vec<ListKind> {
        self.state.borrow().changed_lists.clone()
    }

    /// The ids passed to [`host::elicitation_complete`](crate::host::elicitation_complete).
    pub fn completed_elicitations(&self) -> Vec<String> {
        self.state.borrow().completed_elicitations.clone()
    }

    /// Every sampling request, in order.
    pub fn sampling_requests(&self) -> Vec<SamplingRequest> {
        self.state.borrow().sampling_requests.clone()
    }

    /// Every elicitation, in order.
    pub fn elicitations(&self) -> Vec<Elicitation> {
        self.state.borrow().elicitations.clone()
    }

    /// How many times the code asked whether it was cancelled.
    pub fn cancel_checks(&self) -> usize {
        self.state.borrow().cancel_checks
    }
}

/// The host imports off wasm: what [`crate::host`] calls instead of the
/// component's imports. Each acts on the current thread's [`FakeHost`].
#[cfg(not(target_arch = "wasm32"))]
pub(crate) mod imports {
    use super::*;
    use crate::bindings::wasm_mcp::plugin::host::{Answer, ClientError, Question, RpcError};

    fn with<R>(absent: R, f: impl FnOnce(&mut State) -> R) -> R {
        CURRENT.with(|current| match &*current.borrow() {
            Some(fake) => f(&mut fake.state.borrow_mut()),
            None => absent,
        })
    }

    fn refused(what: &str, how: &str) -> ClientError {
        ClientError::NotSupported(format!("{what}: no answer scripted (script one with FakeHost::{how})"))
    }

    /// A scripted answer as the component's import returns it.
    fn answer<T>(scripted: Result<T, RequestError>) -> Result<T, ClientError> {
        scripted.map_err(|e| match e {
            RequestError::NotSupported(why) => ClientError::NotSupported(why),
            RequestError::Rejected { code, message } => ClientError::Rejected(RpcError { code, message }),
            RequestError::TimedOut => ClientError::TimedOut,
            RequestError::Cancelled => ClientError::Cancelled,
        })
    }

    pub fn log(level: LogLevel, message: &str) {
        with((), |s| s.logs.push((level, message.to_string())));
    }

    pub fn log_json(level: LogLevel, data: &str) {
        log(level, data);
    }

    pub fn progress(progress: f64, total: Option<f64>, message: Option<&str>) {
        with((), |s| {
            s.progress.push(ProgressReport {
                progress,
                total,
                message: message.map(str::to_string),
            })
        });
    }

    pub fn is_cancelled() -> bool {
        with(false, |s| {
            s.cancel_checks += 1;
            s.cancelled_after_checks.is_some_and(|after| s.cancel_checks > after)
        })
    }

    pub fn sample(request: &SamplingRequest) -> Result<SamplingResult, ClientError> {
        let no_answer = || refused("sampling", "answer_sampling");
        with(Err(no_answer()), |s| {
            s.sampling_requests.push(request.clone());
            s.sampling_answers.pop_front().map_or_else(|| Err(no_answer()), answer)
        })
    }

    pub fn elicit(request: &Elicitation) -> Result<ElicitResult, ClientError> {
        let no_answer = || refused("elicitation", "answer_elicitation");
        with(Err(no_answer()), |s| {
            s.elicitations.push(request.clone());
            s.elicitation_answers
                .pop_front()
                .map_or_else(|| Err(no_answer()), answer)
        })
    }

    pub fn elicitation_complete(elicitation_id: &str) {
        with((), |s| s.completed_elicitations.push(elicitation_id.to_string()));
    }

    pub fn list_roots() -> Result<Vec<Root>, ClientError> {
        let no_answer = || refused("roots", "roots");
        with(Err(no_answer()), |s| {
            s.roots.clone().map_or_else(|| Err(no_answer()), answer)
        })
    }

    pub fn resource_updated(uri: &str) {
        with((), |s| s.updated_resources.push(uri.to_string()));
    }

    pub fn lists_changed(lists: &[ListKind]) {
        with((), |s| s.changed_lists.extend_from_slice(lists));
    }

    pub fn run_as_task() -> bool {
        with(false, |s| {
            s.task_requests += 1;
            s.tasks_allowed
        })
    }

    /// Each question answered as the one-question import would answer it.
    pub fn ask(questions: &[(String, Question)]) -> Vec<Result<Answer, ClientError>> {
        questions
            .iter()
            .map(|(_, question)| match question {
                Question::Sample(request) => sample(request).map(Answer::Sample),
                Question::Elicit(request) => elicit(request).map(Answer::Elicit),
                Question::ListRoots => list_roots().map(Answer::ListRoots),
            })
            .collect()
    }
}
