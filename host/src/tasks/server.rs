//! The server's tasks: those of the 2026-07-28 tasks extension, whose
//! requests belong to no session. Each is recorded in the state store when
//! it is created (before the client hears of it) and at every change, and
//! read from there, so any replica can show, answer or cancel it and it
//! outlives the process. The replica running a task holds it in memory
//! too, with the call it runs. A task whose replica stopped (its lease ran
//! out, or the process that ran it is gone) is ended as failed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::{Status, Task, TaskSettings, cancel_every, timestamp, too_many_tasks, unknown_task};
use crate::protocol::RpcError;
use crate::protocol::jsonrpc::INTERNAL_ERROR;
use crate::state::{StateStore, StoreError, TaskEntry};

/// The tasks of the extension, in the state store and, while they run here, in memory.
pub struct ServerTasks {
    settings: TaskSettings,
    store: Arc<StateStore>,
    /// The tasks this replica runs.
    running: Mutex<HashMap<String, Arc<Task>>>,
}

impl ServerTasks {
    pub fn new(settings: TaskSettings, store: Arc<StateStore>) -> Self {
        Self {
            settings,
            store,
            running: Mutex::new(HashMap::new()),
        }
    }

    pub fn store(&self) -> &Arc<StateStore> {
        &self.store
    }

    /// A new task of `principal` run here, recorded in the store before it
    /// is returned; `call` (the `tools/call` params) is kept when the call
    /// may run again.
    pub async fn create(&self, call: Option<Value>, principal: Option<&str>) -> Result<Arc<Task>, RpcError> {
        let held = self.running.lock().unwrap().len();
        if held >= self.settings.max_tasks {
            return Err(too_many_tasks("this server", held, "it counts the tasks running here"));
        }
        let mut task = Task::new(self.settings.ttl(None), self.settings.poll_interval);
        task.call = call;
        task.principal = principal.map(str::to_owned);
        let task = Arc::new(task);
        self.store
            .put_task(&task.entry(self.store.replica()))
            .await
            .map_err(store_error)?;
        self.running.lock().unwrap().insert(task.id.clone(), task.clone());
        Ok(task)
    }

    /// The task `id` if it runs here.
    pub fn running_here(&self, id: &str) -> Option<Arc<Task>> {
        self.running.lock().unwrap().get(id).cloned()
    }

    /// Records the latest change of a task run here; gives the task as
    /// `tasks/get` now shows it, to announce. None when nothing is to be
    /// announced: the store did not answer (a later change records this
    /// one too), or the stored task ended elsewhere (cancelled through
    /// another replica, or taken for lost): then the call here is stopped.
    pub async fn record(&self, task: &Task) -> Option<Value> {
        let entry = task.entry(self.store.replica());
        match self.store.put_task(&entry).await {
            Ok(true) => Some(entry.task),
            Ok(false) => {
                if let Ok(stored) = self.store.task(&task.id).await
                    && stored.is_none_or(|stored| stored.terminal)
                {
                    self.stop_here(&task.id, "ended elsewhere");
                }
                None
            }
            Err(error) => {
                tracing::warn!(task = %task.id, %error, "a task's change was not recorded");
                None
            }
        }
    }

    /// Records the end of a task run here, trying again while the store
    /// does not answer (a finished task's result is never dropped), until
    /// its ttl runs out; then forgets it here. Gives it as `tasks/get` shows
    /// it, to announce.
    pub async fn record_end(&self, task: &Task) -> Option<Value> {
        let recorded = loop {
            let entry = task.entry(self.store.replica());
            match self.store.put_task(&entry).await {
                Ok(true) => break Some(entry.task),
                Ok(false) => break None,
                Err(_) if tokio::time::Instant::now() >= task.expires_at().into() => break None,
                Err(_) => tokio::time::sleep(RETRY).await,
            }
        };
        self.running.lock().unwrap().remove(&task.id);
        recorded
    }

    /// Forgets a task here without recording anything (it ended elsewhere,
    /// or its end was recorded by whoever ended it).
    pub fn forget(&self, id: &str) {
        self.running.lock().unwrap().remove(id);
    }

    /// The task `id` of `principal` as `tasks/get` shows it.
    pub async fn get(&self, id: &str, principal: Option<&str>) -> Result<Value, RpcError> {
        Ok(self.stored(id, principal).await?.task)
    }

    /// The stored task `id` of `principal`, unless it is unknown, expired,
    /// or another principal's (which is told apart from unknown to no one).
    pub async fn stored(&self, id: &str, principal: Option<&str>) -> Result<TaskEntry, RpcError> {
        self.store
            .task(id)
            .await
            .map_err(store_error)?
            .filter(|stored| stored.principal.as_deref() == principal)
            .ok_or_else(|| unknown_task(id, "this server"))
    }

    /// Cancels the task `id` of `principal` in the store (whichever replica
    /// runs it) and stops it if it runs here; gives it as it is now if it
    /// ended now, to announce (None: it had already ended).
    pub async fn cancel(&self, id: &str, principal: Option<&str>, message: &str) -> Result<Option<Value>, RpcError> {
        loop {
            let stored = self.stored(id, principal).await?;
            if stored.terminal {
                return Ok(None);
            }
            let cancelled = ended(stored, Status::Cancelled, message, None);
            if self.store.put_task(&cancelled).await.map_err(store_error)? {
                self.stop_here(id, message);
                return Ok(Some(cancelled.task));
            }
            // Changed meanwhile: look again.
        }
    }

    /// Stops the call of task `id` if it runs here (it ended elsewhere).
    pub fn stop_here(&self, id: &str, message: &str) {
        if let Some(task) = self.running.lock().unwrap().remove(id) {
            task.finish(Status::Cancelled, Some(message.to_owned()), None);
            task.cancel.cancel();
        }
    }

    /// The running tasks whose replica stopped.
    pub async fn orphans(&self) -> Result<Vec<TaskEntry>, StoreError> {
        let mut orphans = Vec::new();
        for stored in self.store.running_tasks().await? {
            if !self.store.is_alive(&stored.owner).await? {
                orphans.push(stored);
            }
        }
        Ok(orphans)
    }

    /// Ends an orphan as failed, saying why; gives it as it is now, to
    /// announce (None: another replica got to it first).
    pub async fn fail_orphan(&self, orphan: TaskEntry) -> Result<Option<Value>, StoreError> {
        let message = match self.store.is_shared() {
            true => "failed: the replica running it stopped before it finished; call the tool again",
            false => "failed: the server running it stopped before it finished; call the tool again",
        };
        let error = RpcError::new(INTERNAL_ERROR, message.to_owned());
        let failed = ended(orphan, Status::Failed, message, Some(error));
        Ok(self.store.put_task(&failed).await?.then_some(failed.task))
    }

    /// Takes an orphan over, to run its call again from the start here:
    /// recorded as working here before it is returned (None: another
    /// replica got to it first).
    pub async fn adopt_orphan(&self, orphan: &TaskEntry) -> Result<Option<Arc<Task>>, StoreError> {
        let whose = match self.store.is_shared() {
            true => "the replica",
            false => "the server",
        };
        let message = format!(
            "running again from the start: {whose} running it stopped before it finished, and the tool is \
             declared idempotent"
        );
        let task = Arc::new(Task::resumed(orphan, &message));
        if !self.store.put_task(&task.entry(self.store.replica())).await? {
            return Ok(None);
        }
        self.running.lock().unwrap().insert(task.id.clone(), task.clone());
        Ok(Some(task))
    }

    /// Stops every task running here (the server is shutting down): each
    /// ends as cancelled with `message`. Returns them, to record.
    pub fn stop_all(&self, message: &str) -> Vec<Arc<Task>> {
        cancel_every(&self.running.lock().unwrap(), message)
    }
}

/// How often the end of a task is recorded again while the store does not answer.
const RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// A stored task, ended by someone other than its call: as `status`, with
/// `message`, and `error` for a failed one.
fn ended(mut entry: TaskEntry, status: Status, message: &str, error: Option<RpcError>) -> TaskEntry {
    entry.revision += 1;
    entry.terminal = true;
    let task = &mut entry.task;
    task["status"] = json!(status.as_str());
    task["statusMessage"] = json!(message);
    task["lastUpdatedAt"] = json!(timestamp(std::time::SystemTime::now()));
    if let Some(fields) = task.as_object_mut() {
        fields.remove("inputRequests");
        fields.remove("result");
    }
    if let Some(error) = error {
        task["error"] = error.to_value();
    }
    entry
}

/// A store that did not answer, as the client is told.
fn store_error(error: StoreError) -> RpcError {
    RpcError::internal(error.to_string())
}
