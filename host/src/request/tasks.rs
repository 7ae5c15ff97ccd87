//! The tasks of a 2025-11-25 session: starting a task-augmented tools/call
//! in the background, tasks/get, tasks/result, tasks/list and tasks/cancel
//! on the session's task store, and notifications/tasks/status on every
//! change.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::outbound::Key;
use super::results::{ToolCall, ToolOutcome};
use super::{Lifecycle, Peer, Reply};
use crate::call::{BoxFuture, CallScope, ChangedLists, ClientLink, ClientRequestError};
use crate::catalog::pagination;
use crate::contract::bindings::tools::TaskSupport;
use crate::limits::NotificationBounds;
use crate::protocol::requests::ListKind;
use crate::protocol::{LogLevel, RpcError};
use crate::tasks::{RELATED_TASK, Status, Task};
use crate::telemetry;

/// The status message of a task waiting for a free slot.
const QUEUED: &str = "queued: waiting for a free slot to run";

impl Peer {
    /// Starts `call` as a task of `session` and answers at once with CreateTaskResult.
    pub(super) fn start_task(
        self: &Arc<Self>,
        session: &Arc<dyn Lifecycle>,
        call: ToolCall,
        ttl_ms: Option<u64>,
        progress_token: Option<Value>,
    ) -> Result<Value, RpcError> {
        if call.tool().task_support == TaskSupport::Forbidden {
            return Err(RpcError::method_not_found(&format!(
                "tools/call of {} as a task: this tool does not support tasks (call it without \"task\")",
                call.name
            )));
        }
        let task = session.tasks().create(ttl_ms)?;
        let link = Arc::new(TaskLink {
            peer: self.clone(),
            session: session.clone(),
            task: task.clone(),
        });
        let scope = Arc::new(
            CallScope::new(
                link,
                progress_token,
                task.cancel.clone(),
                NotificationBounds::of(&self.hub.config),
            )
            .acting_for(self.caller()),
        );
        let (peer, session) = (self.clone(), session.clone());
        let running = task.clone();
        let span = telemetry::task(&task.id);
        self.running.spawn(telemetry::within(span, async move {
            let outcome = tokio::select! {
                outcome = call.run(scope) => Some(outcome),
                _ = running.cancel.cancelled() => None,
                // A task still running when its ttl runs out is stopped, even
                // if the client never touches the store again.
                _ = tokio::time::sleep_until(running.expires_at().into()) => {
                    session.tasks().purge();
                    None
                }
            };
            let ended = match outcome {
                Some(Ok(ToolOutcome::Failed { result, message })) => {
                    running.finish(Status::Failed, message, Some(Ok(result)))
                }
                Some(Ok(ToolOutcome::Crashed { result, error })) => {
                    running.finish(Status::Failed, Some(error.message), Some(Ok(result)))
                }
                Some(Ok(ToolOutcome::Completed(result))) => running.finish(Status::Completed, None, Some(Ok(result))),
                Some(Err(error)) => running.finish(Status::Failed, Some(error.message.clone()), Some(Err(error))),
                None => running.finish(Status::Cancelled, Some("cancelled".into()), None),
            };
            telemetry::task_ended(running.status().as_str());
            if ended {
                peer.announce_task(&running);
            }
        }));
        Ok(json!({ "task": task.to_json() }))
    }

    pub(super) fn get_task(&self, session: &Arc<dyn Lifecycle>, id: &str) -> Result<Value, RpcError> {
        Ok(session.tasks().get(id)?.to_json())
    }

    /// tasks/result: waits until the task ends.
    /// tasks/result: the task's result once it ends (a failed task's is
    /// its tool's result that says the tool failed).
    pub(super) async fn task_result(&self, session: &Arc<dyn Lifecycle>, id: &str) -> Result<Reply, RpcError> {
        let task = session.tasks().get(id)?;
        let value = task.outcome().await?;
        Ok(Reply {
            value,
            tool_error: task.status() == Status::Failed,
            per_caller: false,
        })
    }

    pub(super) fn list_tasks(&self, session: &Arc<dyn Lifecycle>, cursor: Option<&str>) -> Result<Value, RpcError> {
        let tasks: BTreeMap<String, Value> = session
            .tasks()
            .list()
            .into_iter()
            .map(|task| (task.list_key(), task.to_json()))
            .collect();
        pagination::page(ListKind::Tasks, &tasks, cursor, self.hub.config.page_size, None)
    }

    pub(super) fn cancel_task(&self, session: &Arc<dyn Lifecycle>, id: &str) -> Result<Value, RpcError> {
        let task = session.tasks().get(id)?;
        if !task.finish(Status::Cancelled, Some("cancelled by the client".into()), None) {
            return Err(RpcError::invalid_params(format!(
                "Task {} has already ended ({}); only working or input_required tasks can be cancelled",
                task.id,
                task.to_json()["status"].as_str().unwrap_or_default()
            )));
        }
        task.cancel.cancel();
        self.announce_task(&task);
        Ok(task.to_json())
    }

    pub(super) fn announce_task(&self, task: &Task) {
        self.notify("notifications/tasks/status", task.to_json(), None);
    }
}

/// A session as seen by the plugin call a task runs: no request is open any
/// more, so messages go out unrelated to one, requests to the client say
/// which task they serve, and the task shows input_required while it waits.
struct TaskLink {
    peer: Arc<Peer>,
    session: Arc<dyn Lifecycle>,
    task: Arc<Task>,
}

impl TaskLink {
    fn set_status(&self, status: Status, message: Option<&str>) {
        if self.task.set_status(status, message.map(str::to_owned)) {
            self.peer.announce_task(&self.task);
        }
    }
}

impl ClientLink for TaskLink {
    fn notify(&self, method: &str, params: Value) {
        self.peer.notify(method, params, None);
    }

    fn log(&self, level: LogLevel, logger: &str, data: Value, bytes: usize) -> BoxFuture<'_, ()> {
        let wants = self.session.wants_log(level);
        self.peer.plugin_log(wants, level, logger, data, bytes, None)
    }

    /// The latest progress of the task replaces one the client has not been sent yet.
    fn progress(&self, params: Value) {
        let key = Key::About {
            method: "notifications/progress".to_owned(),
            subject: Some(self.task.id.clone()),
            stream: None,
        };
        self.peer.notify_latest(key, "notifications/progress", params, None);
    }

    fn request(&self, method: &'static str, mut params: Value) -> BoxFuture<'_, Result<Value, ClientRequestError>> {
        params["_meta"][RELATED_TASK] = json!({ "taskId": self.task.id });
        Box::pin(async move {
            self.set_status(
                Status::InputRequired,
                Some(&format!("waiting for the client to answer {method}")),
            );
            let answer = self.session.ask(method, params, None).await;
            self.set_status(Status::Working, None);
            answer
        })
    }

    fn resource_updated(&self, uri: &str) {
        self.peer.hub.resource_updated(uri);
    }

    fn lists_changed(&self, plugin: &str, lists: ChangedLists) {
        self.peer.hub.relist(plugin, lists);
    }

    fn queued(&self, waiting: bool) {
        self.set_status(Status::Working, waiting.then_some(QUEUED));
    }
}
