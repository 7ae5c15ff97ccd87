//! MCP tasks: tool calls that run in the background while the client polls,
//! waits on or cancels them. The same task serves both revisions, each with
//! its own wire shape: 2025-11-25 (`ttl`, `tasks/result`, one store per
//! session, so a task is visible only to the session that created it) and
//! the 2026-07-28 tasks extension (`ttlMs`, the result inlined in
//! `tasks/get`, questions to the client as `inputRequests`, one store for
//! the whole server, since its requests belong to no session).
//!
//! A task keeps its status, its result once it has one, and its expiry: past
//! its ttl it is purged with its result, so memory stays bounded however
//! many tasks a client starts. The server's tasks are also recorded in the
//! state store at every change (see [`server`]), where every replica reads
//! them and where they outlive the process.

mod server;

pub use server::ServerTasks;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value, json};
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::metrics::METRICS;
use crate::protocol::RpcError;
use crate::protocol::jsonrpc::SERVER_ERROR;
use crate::settings::{self, ServerValues};
use crate::state::TaskEntry;

/// The key under `_meta` that ties a message to a task.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The 2026-07-28 tasks extension, as named under `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The names of a task's two durations (in ms) in the 2025-11-25 revision,
/// and in the 2026-07-28 tasks extension.
const LEGACY_DURATIONS: (&str, &str) = ("ttl", "pollInterval");
const EXTENSION_DURATIONS: (&str, &str) = ("ttlMs", "pollIntervalMs");

/// Retention when the client asks for none (or less if the most allowed is less).
const DEFAULT_TTL: Duration = Duration::from_secs(3600);
/// How often clients are advised to poll.
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// Retention and polling settings.
#[derive(Debug, Clone)]
pub struct TaskSettings {
    /// Retention when the client asks for none.
    pub default_ttl: Duration,
    /// The longest retention a client may ask for.
    pub max_ttl: Duration,
    /// How often clients are advised to poll.
    pub poll_interval: Duration,
    /// Tasks one session may hold at once (finished ones count until purged).
    pub max_tasks: usize,
}

impl TaskSettings {
    /// The settings of the server's `max_task_ttl_secs` and `max_tasks`.
    pub(crate) fn new(server: &ServerValues) -> Self {
        let max_ttl = server.max_task_ttl();
        Self {
            default_ttl: DEFAULT_TTL.min(max_ttl),
            max_ttl,
            poll_interval: POLL_INTERVAL,
            max_tasks: server.max_tasks,
        }
    }
}

impl Default for TaskSettings {
    fn default() -> Self {
        Self::new(&ServerValues::default())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl State {
    /// Moves to `status`, one revision on, now.
    fn move_to(&mut self, status: Status) {
        METRICS.task_moved(Some(self.status.as_str()), Some(status.as_str()));
        self.status = status;
        self.touch();
    }

    /// Records a change, one revision on, now.
    fn touch(&mut self) {
        self.revision += 1;
        self.updated_at = SystemTime::now();
    }
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

struct State {
    /// Counts the changes, so the store keeps the latest.
    revision: u64,
    status: Status,
    message: Option<String>,
    updated_at: SystemTime,
    outcome: Option<Result<Value, RpcError>>,
    /// What the call waits for the client to answer, by key (2026-07-28).
    input_requests: Map<String, Value>,
    /// Answers given so far to the questions still open.
    answers: Map<String, Value>,
    /// Takes the answers once every open question has one.
    answered: Option<oneshot::Sender<Map<String, Value>>>,
}

/// One task: its identity, state, and the token that stops its call.
pub struct Task {
    pub id: String,
    created_at: SystemTime,
    ttl: Duration,
    expires_at: Instant,
    expires_at_ms: u64,
    poll_interval: Duration,
    pub cancel: CancellationToken,
    state: Mutex<State>,
    finished: watch::Sender<bool>,
    /// The call that started it, kept so that it can run again (see [`TaskEntry::call`]).
    call: Option<Value>,
    /// Whom it belongs to (see [`TaskEntry::principal`]).
    principal: Option<String>,
}

impl Drop for Task {
    fn drop(&mut self) {
        let status = self.state.get_mut().unwrap().status;
        METRICS.task_moved(Some(status.as_str()), None);
    }
}

impl Task {
    /// A new working task, kept for `ttl`.
    fn new(ttl: Duration, poll_interval: Duration) -> Self {
        let now = SystemTime::now();
        METRICS.task_moved(None, Some(Status::Working.as_str()));
        Self {
            id: new_task_id(),
            created_at: now,
            ttl,
            expires_at: Instant::now() + ttl,
            expires_at_ms: (now + ttl)
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default()
                .as_millis() as u64,
            poll_interval,
            cancel: CancellationToken::new(),
            state: Mutex::new(State {
                revision: 1,
                status: Status::Working,
                message: None,
                updated_at: now,
                outcome: None,
                input_requests: Map::new(),
                answers: Map::new(),
                answered: None,
            }),
            finished: watch::Sender::new(false),
            call: None,
            principal: None,
        }
    }

    /// The task of `entry`, running again from the start here: working,
    /// with `message`, one revision on.
    fn resumed(entry: &TaskEntry, message: &str) -> Self {
        let millis = |key: &str| Duration::from_millis(entry.task[key].as_u64().unwrap_or_default());
        let created_at = entry.task["createdAt"]
            .as_str()
            .and_then(|at| humantime::parse_rfc3339(at).ok())
            .unwrap_or_else(SystemTime::now);
        let now = SystemTime::now();
        let expires_at = SystemTime::UNIX_EPOCH + Duration::from_millis(entry.expires_at_ms);
        let mut task = Self::new(millis("ttlMs"), millis("pollIntervalMs"));
        task.id = entry.id.clone();
        task.created_at = created_at;
        task.expires_at = Instant::now() + expires_at.duration_since(now).unwrap_or_default();
        task.expires_at_ms = entry.expires_at_ms;
        task.call = entry.call.clone();
        task.principal = entry.principal.clone();
        let state = task.state.get_mut().unwrap();
        state.revision = entry.revision + 1;
        state.message = Some(message.to_owned());
        task
    }

    /// Whether the task is `principal`'s (see [`TaskEntry::principal`]).
    pub fn belongs_to(&self, principal: Option<&str>) -> bool {
        self.principal.as_deref() == principal
    }

    /// The task as the state store records it, run by `owner`.
    pub fn entry(&self, owner: &str) -> TaskEntry {
        let state = self.state.lock().unwrap();
        TaskEntry {
            id: self.id.clone(),
            revision: state.revision,
            terminal: state.status.is_terminal(),
            owner: owner.to_owned(),
            expires_at_ms: self.expires_at_ms,
            task: self.detailed(&state),
            call: self.call.clone(),
            principal: self.principal.clone(),
        }
    }

    /// The Task object of the 2025-11-25 revision.
    pub fn to_json(&self) -> Value {
        self.fields(&self.state.lock().unwrap(), LEGACY_DURATIONS)
    }

    /// The task as the 2026-07-28 extension shows it on creation
    /// (`CreateTaskResult`, with `resultType` "task").
    pub fn to_created(&self) -> Value {
        let mut task = self.fields(&self.state.lock().unwrap(), EXTENSION_DURATIONS);
        task["resultType"] = json!("task");
        task
    }

    /// The task as the 2026-07-28 extension shows it in `tasks/get` and
    /// `notifications/tasks`: its questions while it waits on the client,
    /// its result once completed, its error once failed.
    pub fn to_detailed(&self) -> Value {
        self.detailed(&self.state.lock().unwrap())
    }

    fn detailed(&self, state: &State) -> Value {
        let mut task = self.fields(state, EXTENSION_DURATIONS);
        match (&state.status, &state.outcome) {
            (Status::InputRequired, _) => task["inputRequests"] = Value::Object(state.input_requests.clone()),
            (Status::Completed, Some(Ok(result))) => task["result"] = result.clone(),
            (Status::Failed, Some(Err(error))) => task["error"] = error.to_value(),
            _ => {}
        }
        task
    }

    /// The fields every Task object has, its two durations (in ms) under
    /// the names given.
    fn fields(&self, state: &State, (ttl, poll_interval): (&str, &str)) -> Value {
        let mut task = json!({
            "taskId": self.id,
            "status": state.status.as_str(),
            "createdAt": timestamp(self.created_at),
            "lastUpdatedAt": timestamp(state.updated_at),
            ttl: self.ttl.as_millis() as u64,
            poll_interval: self.poll_interval.as_millis() as u64,
        });
        if let Some(message) = &state.message {
            task["statusMessage"] = json!(message);
        }
        task
    }

    /// The call waits for the client to answer `requests` (by key): the task
    /// shows them as its `inputRequests` until [`Task::give_input`] has an
    /// answer for each; the answers then arrive on the returned receiver.
    /// Returns whether the status changed (to announce), and the receiver.
    pub fn wait_for_input(&self, requests: Map<String, Value>) -> (bool, oneshot::Receiver<Map<String, Value>>) {
        let (sender, receiver) = oneshot::channel();
        let mut state = self.state.lock().unwrap();
        if state.status.is_terminal() {
            return (false, receiver);
        }
        let message = format!(
            "waiting for the client to answer {} (send them with tasks/update)",
            requests.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
        );
        state.move_to(Status::InputRequired);
        state.message = Some(message);
        state.input_requests = requests;
        state.answers = Map::new();
        state.answered = Some(sender);
        (true, receiver)
    }

    /// Takes the client's answers to open questions (`tasks/update`);
    /// answers to anything else are ignored. Once every open question has
    /// its answer the task is working again and the waiting call gets them.
    /// Returns whether the task changed (to announce).
    pub fn give_input(&self, responses: Map<String, Value>) -> bool {
        let mut state = self.state.lock().unwrap();
        let mut changed = false;
        for (key, answer) in responses {
            if state.input_requests.remove(&key).is_some() {
                state.answers.insert(key, answer);
                changed = true;
            }
        }
        if !changed {
            return false;
        }
        if state.input_requests.is_empty() {
            state.move_to(Status::Working);
            state.message = None;
            let answers = std::mem::take(&mut state.answers);
            if let Some(answered) = state.answered.take() {
                let _ = answered.send(answers);
            }
        } else {
            state.touch();
        }
        true
    }

    pub fn expires_at(&self) -> Instant {
        self.expires_at
    }

    /// Orders tasks by creation, stably, for paging through tasks/list.
    pub fn list_key(&self) -> String {
        let nanos = self
            .created_at
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        format!("{nanos:024}-{}", self.id)
    }

    pub fn status(&self) -> Status {
        self.state.lock().unwrap().status
    }

    /// Moves to `status` (working or input_required) unless the task already
    /// ended; returns whether it moved. Only [`Task::finish`] ends a task.
    pub fn set_status(&self, status: Status, message: Option<String>) -> bool {
        let mut state = self.state.lock().unwrap();
        if status.is_terminal() || state.status.is_terminal() || (state.status == status && state.message == message) {
            return false;
        }
        state.move_to(status);
        state.message = message;
        true
    }

    /// Records the call's outcome and ends the task; returns whether it ended now.
    /// `outcome` is `None` for a cancelled task, which has no result.
    pub fn finish(&self, status: Status, message: Option<String>, outcome: Option<Result<Value, RpcError>>) -> bool {
        let mut state = self.state.lock().unwrap();
        if state.status.is_terminal() {
            return false;
        }
        state.move_to(status);
        state.message = message;
        state.outcome = outcome;
        state.input_requests = Map::new();
        state.answered = None;
        drop(state);
        self.finished.send_replace(true);
        true
    }

    /// Waits until the task has ended, then gives what the original request
    /// would have returned, tagged with the task.
    pub async fn outcome(&self) -> Result<Value, RpcError> {
        let mut finished = self.finished.subscribe();
        let _ = finished.wait_for(|done| *done).await;
        let state = self.state.lock().unwrap();
        match &state.outcome {
            Some(Ok(result)) => {
                let mut result = result.clone();
                result["_meta"][RELATED_TASK] = json!({ "taskId": self.id });
                Ok(result)
            }
            Some(Err(error)) => Err(error.clone()),
            None => Err(RpcError::invalid_params(format!(
                "Task {} was cancelled; it has no result",
                self.id
            ))),
        }
    }
}

fn timestamp(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

/// An unguessable task id: 128 random bits, hex.
fn new_task_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system provides randomness");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl TaskSettings {
    /// The ttl a task gets when its client asks for `requested_ms` (or none).
    fn ttl(&self, requested_ms: Option<u64>) -> Duration {
        requested_ms
            .map_or(self.default_ttl, Duration::from_millis)
            .min(self.max_ttl)
    }
}

/// The error for a task that cannot be created: `holder` already holds
/// `held` tasks, the max_tasks limit (`counted` says which count).
fn too_many_tasks(holder: &str, held: usize, counted: &str) -> RpcError {
    RpcError::new(
        SERVER_ERROR,
        format!(
            "Too many tasks: {holder} already holds {held} tasks (the max_tasks limit; {counted}); cancel \
             running ones, ask for shorter ttls, or raise the limit ({})",
            settings::server::max_tasks.hint()
        ),
    )
}

/// The error for a task id that names no task.
fn unknown_task(id: &str, holder: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "Unknown task {id}: no task with this id exists in {holder} (tasks are purged when their ttl runs out)"
    ))
}

/// The tasks of one session (2025-11-25).
pub struct TaskStore {
    settings: TaskSettings,
    tasks: Mutex<HashMap<String, Arc<Task>>>,
}

impl TaskStore {
    /// An empty store under `settings`.
    pub fn new(settings: TaskSettings) -> Self {
        Self {
            settings,
            tasks: Mutex::new(HashMap::new()),
        }
    }

    /// Creates a working task with the requested ttl (in ms), capped at the
    /// maximum. Finished tasks count against max_tasks until their ttl runs out.
    ///
    /// # Errors
    ///
    /// When the session already holds `max_tasks` tasks; the error says how
    /// to make room.
    pub fn create(&self, requested_ttl_ms: Option<u64>) -> Result<Arc<Task>, RpcError> {
        let mut tasks = self.tasks.lock().unwrap();
        purge_expired(&mut tasks);
        if tasks.len() >= self.settings.max_tasks {
            return Err(too_many_tasks(
                "this session",
                tasks.len(),
                "finished ones count until their ttl runs out",
            ));
        }
        let task = Arc::new(Task::new(
            self.settings.ttl(requested_ttl_ms),
            self.settings.poll_interval,
        ));
        tasks.insert(task.id.clone(), task.clone());
        Ok(task)
    }

    /// The task `id`.
    ///
    /// # Errors
    ///
    /// Invalid params when no task has that id (or its ttl ran out).
    pub fn get(&self, id: &str) -> Result<Arc<Task>, RpcError> {
        let mut tasks = self.tasks.lock().unwrap();
        purge_expired(&mut tasks);
        tasks.get(id).cloned().ok_or_else(|| unknown_task(id, "this session"))
    }

    /// Every live task, oldest first.
    pub(crate) fn list(&self) -> Vec<Arc<Task>> {
        let mut tasks = self.tasks.lock().unwrap();
        purge_expired(&mut tasks);
        let mut list: Vec<_> = tasks.values().cloned().collect();
        list.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
        list
    }

    /// Drops every task whose ttl has run out, stopping those still running.
    pub(crate) fn purge(&self) {
        purge_expired(&mut self.tasks.lock().unwrap());
    }

    /// Stops every running task (the session is ending): each ends as
    /// cancelled with `message` as its status message. Returns the tasks that
    /// ended now, to announce.
    pub(crate) fn cancel_all(&self, message: &str) -> Vec<Arc<Task>> {
        cancel_every(&self.tasks.lock().unwrap(), message)
    }
}

/// Ends every task of `tasks` as cancelled with `message` and stops its
/// call; returns those that ended now.
fn cancel_every(tasks: &HashMap<String, Arc<Task>>, message: &str) -> Vec<Arc<Task>> {
    let ended = tasks
        .values()
        .filter(|task| task.finish(Status::Cancelled, Some(message.to_owned()), None))
        .cloned()
        .collect();
    for task in tasks.values() {
        task.cancel.cancel();
    }
    ended
}

fn purge_expired(tasks: &mut HashMap<String, Arc<Task>>) {
    let now = Instant::now();
    tasks.retain(|_, task| {
        let keep = task.expires_at > now;
        if !keep {
            // A task still running when it expires is stopped, and ends as
            // cancelled before its call can report anything: its id is
            // already unknown to the client, so nothing is announced.
            task.finish(Status::Cancelled, Some("expired: its ttl ran out".into()), None);
            task.cancel.cancel();
        }
        keep
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_stores_do_not_share_tasks() {
        let mine = TaskStore::new(TaskSettings::default());
        let theirs = TaskStore::new(TaskSettings::default());
        let a = mine.create(None).unwrap();
        let b = mine.create(None).unwrap();
        assert_ne!(a.id, b.id);
        assert_eq!(a.id.len(), 32);
        assert!(mine.get(&a.id).is_ok());
        assert!(
            theirs.get(&a.id).is_err(),
            "a task is visible only in the store that created it"
        );
    }

    #[test]
    fn expired_tasks_are_purged_and_ttl_is_capped() {
        let store = TaskStore::new(TaskSettings {
            max_ttl: Duration::from_millis(5),
            ..TaskSettings::default()
        });
        let task = store.create(Some(60_000)).unwrap();
        assert_eq!(task.to_json()["ttl"], json!(5));
        std::thread::sleep(Duration::from_millis(10));
        let Err(error) = store.get(&task.id) else {
            panic!("an expired task is gone")
        };
        assert!(error.message.contains("Unknown task"), "{}", error.message);
        assert!(task.cancel.is_cancelled(), "purging stops the call");
        assert_eq!(
            task.status(),
            Status::Cancelled,
            "and ends the task before the call can"
        );
        assert!(store.list().is_empty());
    }

    mod properties {
        use futures_util::FutureExt as _;
        use proptest::prelude::*;

        use super::*;

        const STATUSES: [Status; 5] = [
            Status::Working,
            Status::InputRequired,
            Status::Completed,
            Status::Failed,
            Status::Cancelled,
        ];

        /// What can happen to a task: its call reports progress, or ends.
        #[derive(Debug, Clone)]
        enum Op {
            SetStatus(usize, Option<String>),
            Finish(usize, bool),
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                (0..STATUSES.len(), proptest::option::of("[a-z]{0,3}")).prop_map(|(s, m)| Op::SetStatus(s, m)),
                (0..STATUSES.len(), any::<bool>()).prop_map(|(s, ok)| Op::Finish(s, ok)),
            ]
        }

        /// The outcome a finish records: a result naming the task's own request, or an error.
        fn outcome_for(request: usize, ok: bool) -> Option<Result<Value, RpcError>> {
            Some(match ok {
                true => Ok(json!({ "content": [], "request": request })),
                false => Err(RpcError::internal(format!("request {request} failed"))),
            })
        }

        proptest! {
            /// Whatever happens, in any order across several tasks: a task moves only between
            /// working and input_required until it ends, it ends once, and an ended task keeps
            /// its status and gives the result of its own request (none while it runs).
            #[test]
            fn tasks_follow_the_state_machine(script in proptest::collection::vec((0..4usize, op()), 0..40)) {
                let store = TaskStore::new(TaskSettings::default());
                let tasks: Vec<_> = (0..4).map(|_| store.create(None).unwrap()).collect();
                let mut ended: Vec<Option<(Status, bool)>> = vec![None; tasks.len()];
                for (which, op) in script {
                    let task = &tasks[which];
                    let before = task.status();
                    match op {
                        Op::SetStatus(s, message) => {
                            let status = STATUSES[s];
                            let moved = task.set_status(status, message);
                            prop_assert!(!moved || (!before.is_terminal() && !status.is_terminal()));
                            prop_assert_eq!(task.status(), if moved { status } else { before });
                        }
                        Op::Finish(s, ok) => {
                            let status = STATUSES[s];
                            let ends = status.is_terminal() && ended[which].is_none();
                            let outcome = if status == Status::Cancelled { None } else { outcome_for(which, ok) };
                            if !status.is_terminal() {
                                continue; // finishing means ending: only terminal statuses are passed
                            }
                            prop_assert_eq!(task.finish(status, None, outcome), ends);
                            if ends {
                                ended[which] = Some((status, ok));
                            }
                        }
                    }
                    if let Some((status, _)) = ended[which] {
                        prop_assert_eq!(task.status(), status, "terminal is final");
                    }
                }
                for (which, task) in tasks.iter().enumerate() {
                    let outcome = task.outcome().now_or_never();
                    match ended[which] {
                        None => {
                            prop_assert!(!task.status().is_terminal());
                            prop_assert!(outcome.is_none(), "a running task has no result yet");
                        }
                        Some((Status::Cancelled, _)) => {
                            let error = outcome.unwrap().unwrap_err();
                            prop_assert!(error.message.contains("cancelled"));
                        }
                        Some((_, true)) => {
                            let result = outcome.unwrap().unwrap();
                            prop_assert_eq!(&result["request"], &json!(which), "the result of its own request");
                            prop_assert_eq!(&result["_meta"][RELATED_TASK]["taskId"], &json!(task.id));
                        }
                        Some((_, false)) => {
                            let error = outcome.unwrap().unwrap_err();
                            prop_assert_eq!(error.message, format!("request {which} failed"));
                        }
                    }
                    prop_assert_eq!(store.get(&task.id).unwrap().id.clone(), task.id.clone());
                }
            }
        }
    }

    #[test]
    fn a_finished_task_stays_finished() {
        let store = TaskStore::new(TaskSettings::default());
        let task = store.create(None).unwrap();
        assert!(task.finish(Status::Completed, None, Some(Ok(json!({ "content": [] })))));
        assert!(!task.set_status(Status::Working, None));
        assert!(!task.finish(Status::Cancelled, None, None));
        assert_eq!(task.status(), Status::Completed);
    }
}
