//! The 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`): a
//! modern tools/call that leaves its conversation (see [`super::mrtr`]) runs
//! on as a task of the server (see [`crate::tasks::ServerTasks`]: recorded
//! in the state store, so any replica can serve it), and the request is
//! answered with `CreateTaskResult` once the task is recorded. `tasks/get`
//! shows the task (its questions, result or error inlined), `tasks/update`
//! answers its questions, `tasks/cancel` stops it, and every change goes to
//! the listen streams that asked for the task (`notifications/tasks`), on
//! every replica. The tasks of a replica that stopped are taken over here
//! ([`keep_tasks`]): an idempotent tool's call runs again, served as a
//! request of a peer of its own.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use super::Peer;
use super::mrtr::{Asked, Detached};
use crate::principal::Principal;
use crate::protocol::{RpcError, modern};
use crate::server::Hub;
use crate::state::{Event, TaskEntry};
use crate::tasks::{Status, Task};
use crate::telemetry;

impl Peer {
    /// Runs `detached` on as a new task of the server; the request's answer
    /// is the task.
    pub(super) async fn run_as_task(self: &Arc<Self>, detached: Detached) -> Result<Value, RpcError> {
        let task = match detached.exchange.resumed_task() {
            Some(task) => Ok(task),
            None => {
                let rerunnable = detached.exchange.rerunnable();
                self.hub.tasks.create(rerunnable, self.principal_id().as_deref()).await
            }
        };
        let task = match task {
            Ok(task) => task,
            Err(error) => {
                detached.cancel.cancel();
                return Err(error);
            }
        };
        detached.close_request();
        let created = task.to_created();
        let span = telemetry::task(&task.id);
        self.hub
            .task_runs
            .spawn(telemetry::within(span, run(self.hub.clone(), task, detached)));
        Ok(created)
    }

    /// tasks/get: the task as it is now.
    pub(super) async fn get_extension_task(&self, id: &str) -> Result<Value, RpcError> {
        self.hub.tasks.get(id, self.principal_id().as_deref()).await
    }

    /// tasks/update: answers to the task's open questions (others are
    /// ignored), for the replica that runs it.
    pub(super) async fn update_task(&self, id: &str, responses: Map<String, Value>) -> Result<Value, RpcError> {
        let principal = self.principal_id();
        let principal = principal.as_deref();
        match self
            .hub
            .tasks
            .running_here(id)
            .filter(|task| task.belongs_to(principal))
        {
            Some(task) => self.hub.give_input(&task, responses).await,
            None => {
                let stored = self.hub.tasks.stored(id, principal).await?;
                if !stored.terminal {
                    let input = Event::TaskInput {
                        id: id.to_owned(),
                        responses,
                    };
                    self.hub.tasks.store().publish(&input).await;
                }
            }
        }
        Ok(json!({}))
    }

    /// tasks/cancel: stops the task if it still runs, whichever replica
    /// runs it; the same empty answer for one that already ended.
    pub(super) async fn cancel_extension_task(&self, id: &str) -> Result<Value, RpcError> {
        if let Some(task) = self
            .hub
            .tasks
            .cancel(id, self.principal_id().as_deref(), "cancelled by the client")
            .await?
        {
            self.hub.announce_task(&task).await;
            let cancelled = Event::TaskCancelled { id: id.to_owned() };
            self.hub.tasks.store().publish(&cancelled).await;
        }
        Ok(json!({}))
    }
}

/// Renews this replica's lease on its tasks every third of the lease, and
/// ends the tasks of replicas that stopped, for as long as the server runs.
/// Other replicas are judged only once this one has held its own lease for
/// a whole lease: after the store was unreachable every replica first
/// renews its own.
pub async fn keep_tasks(hub: Arc<Hub>, lease: Duration) {
    let store = hub.tasks.store().clone();
    let mut renewed_since: Option<tokio::time::Instant> = None;
    let mut ticks = tokio::time::interval(lease / 3);
    loop {
        ticks.tick().await;
        match store.renew().await {
            Ok(()) => {
                renewed_since.get_or_insert_with(tokio::time::Instant::now);
            }
            Err(_) => {
                renewed_since = None;
                continue;
            }
        }
        let settled = !store.is_shared() || renewed_since.is_some_and(|since| since.elapsed() >= lease);
        if !settled {
            continue;
        }
        match hub.tasks.orphans().await {
            Ok(orphans) => {
                for orphan in orphans {
                    take_over(&hub, orphan).await;
                }
            }
            Err(error) => tracing::debug!(%error, "the tasks of stopped replicas were not looked at"),
        }
    }
}

/// A task whose replica stopped: its call runs again here from the start
/// if its tool is (still) declared idempotent; otherwise it ends as failed.
/// Either way every listener hears of it.
async fn take_over(hub: &Arc<Hub>, orphan: TaskEntry) {
    let tool = orphan.call.as_ref().and_then(|call| call["name"].as_str());
    // At start, the plugins present are loaded before the tool is looked up.
    let catalog = hub.loaded_catalog().await;
    let runs_again = tool.is_some_and(|tool| catalog.tools.get(tool).is_some_and(|t| t.is_idempotent()));
    let taken = match (runs_again, orphan.call.clone()) {
        (true, Some(params)) => hub.tasks.adopt_orphan(&orphan).await.map(|adopted| {
            adopted.map(|task| {
                let now = task.to_detailed();
                // It acts for the principal that created it (whose key-value
                // state it sees), already authorized for the call.
                let principal = orphan.principal.clone().map(|id| Principal { id, scopes: None });
                Peer::alone(hub.clone(), mpsc::unbounded_channel().0, principal).run_again(task, params);
                now
            })
        }),
        _ => hub.tasks.fail_orphan(orphan).await,
    };
    match taken {
        Ok(Some(task)) => {
            tracing::warn!(task = %task["taskId"], "{}", task["statusMessage"]);
            hub.announce_task(&task).await;
        }
        Ok(None) => {}
        Err(error) => tracing::debug!(%error, "a task of a stopped replica was left for later"),
    }
}

/// Drives a call that runs as a task until it ends, is cancelled, or its
/// ttl runs out: its questions become the task's `inputRequests`, answered
/// through `tasks/update`.
async fn run(hub: Arc<Hub>, task: Arc<Task>, mut detached: Detached) {
    let mut waiting: Option<(Asked, oneshot::Receiver<Map<String, Value>>)> = None;
    if let Some(asked) = detached.asked.take() {
        waiting = Some(wait_for_input(&hub, &task, asked).await);
    }
    let outcome = loop {
        let answers = async {
            match &mut waiting {
                Some((_, answers)) => answers.await.ok(),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            outcome = &mut detached.call => break Some(outcome),
            Some(asked) = detached.asks.recv() => waiting = Some(wait_for_input(&hub, &task, asked).await),
            Some(answers) = answers => {
                if let Some((asked, _)) = waiting.take() {
                    detached.answer(asked, answers);
                }
            }
            _ = task.cancel.cancelled() => break None,
            () = tokio::time::sleep_until(task.expires_at().into()) => break None,
        }
    };
    detached.cancel.cancel();
    drop(detached);
    let how = match &outcome {
        Some(Ok(_)) => "returned",
        Some(Err(_)) => "failed",
        None => "was stopped",
    };
    tracing::debug!(task = %task.id, "the call of the task {how}; its instance is gone");
    let ended = match outcome {
        Some(Ok(reply)) => task.finish(Status::Completed, None, Some(Ok(reply.value))),
        Some(Err(error)) => task.finish(
            Status::Failed,
            Some(error.message.clone()),
            Some(Err(modern::error(error))),
        ),
        None => task.finish(Status::Cancelled, Some("cancelled".into()), None),
    };
    telemetry::task_ended(task.status().as_str());
    match ended {
        true => {
            if let Some(now) = hub.tasks.record_end(&task).await {
                hub.announce_task(&now).await;
            }
        }
        false => hub.tasks.forget(&task.id),
    }
}

/// The call asked the client something: the task waits for the answers.
async fn wait_for_input(hub: &Hub, task: &Task, asked: Asked) -> (Asked, oneshot::Receiver<Map<String, Value>>) {
    let (changed, answers) = task.wait_for_input(asked.requests.clone());
    if changed {
        hub.task_changed(task).await;
    }
    (asked, answers)
}
