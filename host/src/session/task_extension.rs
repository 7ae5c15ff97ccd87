//! The 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`): a
//! modern tools/call that leaves its conversation (see [`super::mrtr`]) runs
//! on as a task of the server's store, since its requests belong to no
//! session, and the request is answered at once with `CreateTaskResult`.
//! `tasks/get` shows the task (its questions, result or error inlined),
//! `tasks/update` answers its questions, `tasks/cancel` stops it, and every
//! change goes to the listen streams that asked for the task
//! (`notifications/tasks`).

use std::cell::OnceCell;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::oneshot;

use super::Session;
use super::hub::Hub;
use super::mrtr::{Asked, Detached};
use crate::protocol::{RpcError, modern};
use crate::tasks::{Status, Task};

impl Session {
    /// Runs `detached` on as a new task of the server; the request's answer
    /// is the task.
    pub(super) fn run_as_task(self: &Arc<Self>, detached: Detached) -> Result<Value, RpcError> {
        let task = match self.hub.tasks.create(None) {
            Ok(task) => task,
            Err(error) => {
                detached.cancel.cancel();
                return Err(error);
            }
        };
        detached.close_request();
        let created = task.to_created();
        self.hub.task_runs.spawn(run(self.hub.clone(), task, detached));
        Ok(created)
    }

    /// tasks/get: the task as it is now.
    pub(super) fn get_extension_task(&self, id: &str) -> Result<Value, RpcError> {
        Ok(self.hub.tasks.get(id)?.to_detailed())
    }

    /// tasks/update: answers to the task's open questions (others are ignored).
    pub(super) fn update_task(&self, id: &str, responses: Map<String, Value>) -> Result<Value, RpcError> {
        let task = self.hub.tasks.get(id)?;
        if task.give_input(responses) {
            self.hub.announce_task(&task);
        }
        Ok(json!({}))
    }

    /// tasks/cancel: stops the task if it still runs; the same empty answer
    /// for one that already ended.
    pub(super) fn cancel_extension_task(&self, id: &str) -> Result<Value, RpcError> {
        let task = self.hub.tasks.get(id)?;
        if task.finish(Status::Cancelled, Some("cancelled by the client".into()), None) {
            task.cancel.cancel();
            self.hub.announce_task(&task);
        }
        Ok(json!({}))
    }
}

impl Hub {
    /// Tells every listen stream that asked for `task` how it is now (shown
    /// once, and only if some stream asked).
    pub(super) fn announce_task(&self, task: &Task) {
        let detailed = OnceCell::new();
        for session in self.live_sessions() {
            session.tell_listeners("notifications/tasks", Some(&task.id), || {
                detailed.get_or_init(|| task.to_detailed()).clone()
            });
        }
    }

    /// Gives the tasks still running `grace` to end; then stops them: each
    /// ends as cancelled, with `why` in its status message.
    pub async fn close_tasks(&self, grace: Duration, why: &str) {
        self.task_runs.close();
        if tokio::time::timeout(grace, self.task_runs.wait()).await.is_err() {
            for task in self.tasks.cancel_all(&format!("cancelled: {why}")) {
                self.announce_task(&task);
            }
            self.task_runs.wait().await;
        }
    }
}

/// Drives a call that runs as a task until it ends, is cancelled, or its
/// ttl runs out: its questions become the task's `inputRequests`, answered
/// through `tasks/update`.
async fn run(hub: Arc<Hub>, task: Arc<Task>, mut detached: Detached) {
    let wait_for_input = |asked: Asked| {
        let (changed, answers) = task.wait_for_input(asked.requests.clone());
        if changed {
            hub.announce_task(&task);
        }
        (asked, answers)
    };
    let mut waiting: Option<(Asked, oneshot::Receiver<Map<String, Value>>)> = detached.asked.take().map(wait_for_input);
    let outcome = loop {
        let answers = async {
            match &mut waiting {
                Some((_, answers)) => answers.await.ok(),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            outcome = &mut detached.call => break Some(outcome),
            Some(asked) = detached.asks.recv() => waiting = Some(wait_for_input(asked)),
            Some(answers) = answers => {
                if let Some((asked, _)) = waiting.take() {
                    detached.answer(asked, answers);
                }
            }
            _ = task.cancel.cancelled() => break None,
            () = tokio::time::sleep_until(task.expires_at().into()) => {
                hub.tasks.purge();
                break None;
            }
        }
    };
    detached.cancel.cancel();
    drop(detached);
    let ended = match outcome {
        Some(Ok(result)) => task.finish(Status::Completed, None, Some(Ok(result))),
        Some(Err(error)) => task.finish(
            Status::Failed,
            Some(error.message.clone()),
            Some(Err(modern::error(error))),
        ),
        None => task.finish(Status::Cancelled, Some("cancelled".into()), None),
    };
    if ended {
        hub.announce_task(&task);
    }
}
