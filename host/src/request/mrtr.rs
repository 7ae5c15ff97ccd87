//! Multi round-trip requests (2026-07-28): what a plugin asks the client
//! inside a modern `tools/call`, `prompts/get` or `resources/read` becomes
//! the request's answer, an `InputRequiredResult` (`inputRequests`,
//! `requestState`), and the client's retry brings the answers
//! (`inputResponses`).
//!
//! Between rounds the call waits, suspended in this process (bounded in
//! number and time), and a retry that finds it resumes it where it asked.
//! A retry that does not (another replica, a restart, evicted) replays the
//! call in a fresh instance: each question it asks again is answered from
//! the answers sealed in `requestState`, in order and without a round trip,
//! until it reaches a new one.
//!
//! A call of a task-supporting tool, for a client that negotiated the tasks
//! extension, may leave the conversation instead: when it has run long
//! enough in one round, or when the plugin asks to, the request is answered
//! with a task and the call goes on in the background (see
//! [`super::task_extension`]). The calls waiting between rounds are kept
//! in the hub (see [`crate::server::suspended::SuspendedCalls`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::capabilities::ClientCapabilities;
use super::{Answer, Era, Peer, Reply};
use crate::call::{BoxFuture, ClientRequestError, Question};
use crate::protocol::envelope::RoundTrip;
use crate::protocol::modern::{self, RequestMeta};
use crate::protocol::requests::Request;
use crate::protocol::{RequestId, RpcError};
use crate::tasks::Task;

/// A modern request: its `_meta`, and for a request that may ask the
/// client, the exchange its plugin call asks through (set once its round
/// is opened).
#[derive(Debug)]
pub struct ModernRequest {
    pub meta: RequestMeta,
    exchange: OnceLock<Arc<Exchange>>,
}

impl ModernRequest {
    pub fn new(meta: RequestMeta) -> Self {
        Self {
            meta,
            exchange: OnceLock::new(),
        }
    }

    /// The exchange its plugin call asks through, for a request that may ask.
    pub fn exchange(&self) -> Option<&Arc<Exchange>> {
        self.exchange.get()
    }
}

/// A modern request that may ask the client, as it arrives: its round-trip
/// fields, and (for a call run again after its replica stopped) the task it
/// continues.
pub struct Rounds<'a> {
    pub request: &'a ModernRequest,
    pub round_trip: RoundTrip,
    pub resumes: Option<Arc<Task>>,
}

/// What a fresh round runs: the request, dispatched in its era.
pub struct Dispatch {
    pub request: Request,
    pub era: Era,
    pub progress_token: Option<Value>,
}

/// One call's questions and the client's answers, across the rounds of one
/// multi round-trip request.
pub struct Exchange {
    capabilities: ClientCapabilities,
    /// The digest of the request (see [`crate::protocol::request_digest`]).
    request: String,
    answers: Mutex<Map<String, Value>>,
    /// Keys named so far for questions the plugin did not name.
    named: AtomicUsize,
    asks: mpsc::UnboundedSender<Asked>,
    /// Set when the call asked for something the request's client
    /// capabilities do not declare: the request's answer is -32021.
    missing: Mutex<Option<RpcError>>,
    /// Where the call's notifications go: the request now being served
    /// (none once the call runs as a task: no request is open any more).
    target: Mutex<Option<(Arc<Peer>, RequestId)>>,
    /// Whether and when the call leaves the conversation to run as a task.
    detach: watch::Sender<Detach>,
    /// Once it is a task: the task it continues (a call run again after its
    /// replica stopped), rather than a new one.
    resumes: Mutex<Option<Arc<Task>>>,
    /// Once it is a task: the `tools/call` params to keep with it, for a
    /// tool that may run again from the start.
    rerunnable: Mutex<Option<Value>>,
}

/// Whether a call may run as a task (2026-07-28 tasks extension), and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Detach {
    /// It may not: the request is answered when the call ends or asks.
    Never,
    /// Once it has run this long in one round (or sooner, if the plugin asks).
    After(Duration),
    /// Now: the plugin asked, or the call already runs as a task.
    Now,
}

impl std::fmt::Debug for Exchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchange")
            .field("request", &self.request)
            .finish_non_exhaustive()
    }
}

/// Questions a call waits on, the ones the client has not answered yet.
pub struct Asked {
    pub(super) requests: Map<String, Value>,
    /// Told when new answers are in (dropped: the call is abandoned).
    pub(super) answered: oneshot::Sender<()>,
}

impl Exchange {
    /// The peer and request the call's notifications go to now; none
    /// once it runs as a task.
    pub fn target(&self) -> Option<(Arc<Peer>, RequestId)> {
        self.target.lock().unwrap().clone()
    }

    /// The call may run as a task: it becomes one once it has run for
    /// `after` in a round without ending or asking, or when the plugin asks.
    pub fn allow_task(&self, after: Duration) {
        self.detach.send_if_modified(|detach| {
            let allowed = *detach == Detach::Never;
            if allowed {
                *detach = Detach::After(after);
            }
            allowed
        });
    }

    /// The call continues `task` (which another replica ran until it
    /// stopped): it leaves the conversation at once, as that task.
    pub(super) fn resume(&self, task: Arc<Task>) {
        *self.resumes.lock().unwrap() = Some(task);
        self.detach.send_replace(Detach::Now);
    }

    /// The task the call continues, if it does.
    pub(super) fn resumed_task(&self) -> Option<Arc<Task>> {
        self.resumes.lock().unwrap().take()
    }

    /// Should the call become a task, `params` (the `tools/call` params) are
    /// kept with it so that it can run again from the start.
    pub(super) fn keep_for_rerun(&self, params: Value) {
        *self.rerunnable.lock().unwrap() = Some(params);
    }

    /// The params kept by [`Exchange::keep_for_rerun`].
    pub(super) fn rerunnable(&self) -> Option<Value> {
        self.rerunnable.lock().unwrap().take()
    }

    /// The plugin asked to run as a task: whether the call does (or will,
    /// as soon as its round notices).
    pub fn run_as_task(&self) -> bool {
        self.detach.send_if_modified(|detach| {
            let now = matches!(*detach, Detach::After(_));
            if now {
                *detach = Detach::Now;
            }
            now
        });
        *self.detach.borrow() == Detach::Now
    }

    /// Whether the call runs as a task now.
    pub fn is_task(&self) -> bool {
        self.target.lock().unwrap().is_none()
    }

    /// Resolves when the call should leave the conversation as a task;
    /// never, for a call that may not.
    async fn detach_point(&self) {
        let mut changes = self.detach.subscribe();
        loop {
            let detach = *changes.borrow_and_update();
            match detach {
                Detach::Now => return,
                Detach::After(after) => tokio::select! {
                    () = tokio::time::sleep(after) => return,
                    _ = changes.changed() => {}
                },
                Detach::Never => {
                    let _ = changes.changed().await;
                }
            }
        }
    }

    /// Asks `questions`: each is answered from the answers the client has
    /// given, or the call waits while the request is answered with the
    /// questions still open. A question the request's client capabilities
    /// do not cover is refused at once and never sent; if none is covered,
    /// the request itself fails with -32021 naming what is missing.
    pub fn ask(&self, questions: Vec<Question>) -> BoxFuture<'_, Vec<Result<Value, ClientRequestError>>> {
        Box::pin(async move {
            let mut replies: Vec<Option<Result<Value, ClientRequestError>>> = Vec::with_capacity(questions.len());
            let mut askable = Vec::with_capacity(questions.len());
            let mut lacking = None;
            for question in questions {
                let key = question.key.clone().unwrap_or_else(|| self.name(question.method));
                match self.capabilities.check(question.method, &question.params) {
                    Ok(()) => {
                        askable.push((replies.len(), key, question));
                        replies.push(None);
                    }
                    Err(missing) => {
                        replies.push(Some(Err(ClientRequestError::NotSupported(missing.why()))));
                        lacking = Some(missing);
                    }
                }
            }
            if let (true, Some(missing)) = (askable.is_empty(), lacking) {
                let required = missing.as_capabilities().as_object().cloned().unwrap_or_default();
                let why = format!("Missing required client capability: {}", missing.why());
                *self.missing.lock().unwrap() = Some(modern::missing_capability(required, &why));
            }
            loop {
                let open: Map<String, Value> = {
                    let answers = self.answers.lock().unwrap();
                    askable
                        .iter()
                        .filter(|(_, key, _)| !answers.get(key).is_some_and(Value::is_object))
                        .map(|(_, key, question)| {
                            (
                                key.clone(),
                                json!({ "method": question.method, "params": question.params }),
                            )
                        })
                        .collect()
                };
                if open.is_empty() {
                    break;
                }
                let (answered, wait) = oneshot::channel();
                if self
                    .asks
                    .send(Asked {
                        requests: open,
                        answered,
                    })
                    .is_err()
                    || wait.await.is_err()
                {
                    return replies
                        .into_iter()
                        .map(|reply| reply.unwrap_or(Err(ClientRequestError::Cancelled)))
                        .collect();
                }
            }
            let answers = self.answers.lock().unwrap();
            for (slot, key, _) in &askable {
                replies[*slot] = Some(Ok(answers[key].clone()));
            }
            replies
                .into_iter()
                .map(|reply| reply.expect("every question answered"))
                .collect()
        })
    }

    /// A key for a question the plugin did not name: the same on every
    /// replay, since a call asks in the same order.
    fn name(&self, method: &str) -> String {
        let kind = method.split('/').next().unwrap_or(method);
        format!("{kind}-{}", self.named.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn take_answers(&self, answers: Map<String, Value>) {
        self.answers.lock().unwrap().extend(answers);
    }
}

/// How a modern request that may ask the client starts.
pub enum Conversation {
    /// A new call (a first round, or a replay).
    Fresh {
        exchange: Arc<Exchange>,
        asks: mpsc::UnboundedReceiver<Asked>,
    },
    /// The call that asked, found waiting in this process.
    Resumed(Box<Suspended>),
}

impl Conversation {
    pub fn exchange(&self) -> &Arc<Exchange> {
        match self {
            Conversation::Fresh { exchange, .. } => exchange,
            Conversation::Resumed(suspended) => &suspended.exchange,
        }
    }
}

/// Finds how to serve a modern request that may ask the client, from its
/// round-trip fields: the call suspended here that it retries, or a new
/// call (a first round, or a replay of the answers it brings).
fn open(peer: &Arc<Peer>, id: &RequestId, round_trip: RoundTrip, meta: &RequestMeta) -> Result<Conversation, RpcError> {
    let request = round_trip.digest;
    let state = match &round_trip.request_state {
        None => None,
        Some(sealed) => Some(peer.hub.sealer.open(sealed, &request, peer.principal_id().as_deref())?),
    };
    let responses = round_trip.input_responses;
    let mut answers = Map::new();
    let mut suspended = None;
    if let Some(state) = state {
        answers = state.answers;
        suspended = state.suspended;
    }
    answers.extend(responses);
    let waiting = suspended
        .and_then(|key| peer.hub.suspended.take(key, &request))
        .and_then(|call| call.downcast::<Suspended>().ok());
    if let Some(waiting) = waiting {
        waiting.exchange.take_answers(answers);
        *waiting.exchange.target.lock().unwrap() = Some((peer.clone(), id.clone()));
        return Ok(Conversation::Resumed(waiting));
    }
    let (sender, asks) = mpsc::unbounded_channel();
    let exchange = Arc::new(Exchange {
        capabilities: ClientCapabilities::from_initialize(&meta.capabilities),
        request,
        answers: Mutex::new(answers),
        named: AtomicUsize::new(0),
        asks: sender,
        missing: Mutex::new(None),
        target: Mutex::new(Some((peer.clone(), id.clone()))),
        detach: watch::Sender::new(Detach::Never),
        resumes: Mutex::new(None),
        rerunnable: Mutex::new(None),
    });
    Ok(Conversation::Fresh { exchange, asks })
}

/// A call waiting for its client's next round, as the hub's
/// [`crate::server::suspended::SuspendedCalls`] keeps it.
pub struct Suspended {
    call: BoxFuture<'static, Result<Reply, RpcError>>,
    asks: mpsc::UnboundedReceiver<Asked>,
    waiting: Asked,
    exchange: Arc<Exchange>,
    /// Ends the plugin call (its request's cancellation no longer does).
    cancel: CancellationToken,
}

impl Peer {
    /// Serves one round of a request whose plugin call may ask the client:
    /// opens it from its round-trip fields (see [`open`]), then runs (or
    /// resumes) the call until it completes, or until it asks
    /// something not yet answered, which suspends it and answers the request
    /// with an `InputRequiredResult`, or until it leaves as a task, which
    /// answers with the task. None: the request was cancelled.
    pub(super) async fn converse(
        self: &Arc<Self>,
        id: &RequestId,
        rounds: Rounds<'_>,
        fresh: Dispatch,
        cancelled: CancellationToken,
    ) -> Option<Answer> {
        let conversation = match open(self, id, rounds.round_trip, &rounds.request.meta) {
            Ok(conversation) => conversation,
            Err(error) => return Some(Answer::Error(error)),
        };
        let exchange = conversation.exchange().clone();
        if let Some(task) = rounds.resumes {
            exchange.resume(task);
        }
        let _ = rounds.request.exchange.set(exchange);
        let (mut call, mut asks, exchange, cancel) = match conversation {
            Conversation::Fresh { exchange, asks } => {
                let cancel = CancellationToken::new();
                let Dispatch {
                    request,
                    era,
                    progress_token,
                } = fresh;
                let (peer, id, stop) = (self.clone(), id.clone(), cancel.clone());
                let call: BoxFuture<'static, Result<Reply, RpcError>> =
                    Box::pin(async move { peer.dispatch(&id, request, &era, progress_token, stop).await });
                (call, asks, exchange, cancel)
            }
            Conversation::Resumed(suspended) => {
                let _ = suspended.waiting.answered.send(());
                (suspended.call, suspended.asks, suspended.exchange, suspended.cancel)
            }
        };
        let round = tokio::select! {
            biased;
            _ = cancelled.cancelled() => Round::Cancelled,
            () = exchange.detach_point() => Round::Detached(None),
            outcome = &mut call => Round::Done(outcome),
            // A plugin that asks to run as a task and then asks the client
            // something, in one go, has its question go to the task.
            Some(waiting) = asks.recv() => match *exchange.detach.borrow() {
                Detach::Now => Round::Detached(Some(waiting)),
                _ => Round::Asked(waiting),
            },
        };
        match round {
            Round::Done(outcome) => Some(match exchange.missing.lock().unwrap().take() {
                Some(missing) => Answer::Error(missing),
                None => outcome.into(),
            }),
            Round::Asked(waiting) => {
                let requests = waiting.requests.clone();
                let answers = exchange.answers.lock().unwrap().clone();
                let request = exchange.request.clone();
                let suspended = Suspended {
                    call,
                    asks,
                    waiting,
                    exchange,
                    cancel: cancel.clone(),
                };
                let key = self.hub.suspended.park(Box::new(suspended), request.clone(), cancel);
                let state = self.hub.sealer.state(request, self.principal_id(), Some(key), answers);
                Some(Answer::InputRequired {
                    requests,
                    state: self.hub.sealer.seal(&state),
                })
            }
            Round::Detached(asked) => Some(
                match self
                    .run_as_task(Detached {
                        call,
                        asks,
                        asked,
                        exchange,
                        cancel,
                    })
                    .await
                {
                    Ok(task) => Answer::TaskCreated(task),
                    Err(error) => Answer::Error(error),
                },
            ),
            Round::Cancelled => {
                cancel.cancel();
                None
            }
        }
    }
}

/// A call that left its conversation to run as a task.
pub struct Detached {
    pub call: BoxFuture<'static, Result<Reply, RpcError>>,
    pub asks: mpsc::UnboundedReceiver<Asked>,
    /// What the call asked as it left, if it did.
    pub asked: Option<Asked>,
    pub exchange: Arc<Exchange>,
    /// Ends the plugin call.
    pub cancel: CancellationToken,
}

impl Detached {
    /// No request is open any more: the call's notifications have nowhere to go.
    pub(super) fn close_request(&self) {
        *self.exchange.target.lock().unwrap() = None;
    }

    /// The answers to the questions the call waits on are in.
    pub(super) fn answer(&self, asked: Asked, answers: Map<String, Value>) {
        self.exchange.take_answers(answers);
        let _ = asked.answered.send(());
    }
}

/// How one round of a conversation ended.
enum Round {
    Done(Result<Reply, RpcError>),
    Asked(Asked),
    /// With what the call asked as it left, if it did.
    Detached(Option<Asked>),
    Cancelled,
}
