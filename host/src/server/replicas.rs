//! What the replicas of one server tell each other through the shared state
//! store, served here: lists a plugin changed, resources updated, the tasks
//! of the 2026-07-28 tasks extension (a change of one, the answers to its
//! questions, its cancellation); and the end of this process's tasks when
//! the server stops.

use std::time::Duration;

use serde_json::{Map, Value};

use super::Hub;
use crate::state::Event;
use crate::tasks::Task;

impl Hub {
    /// Tells every listen stream that asked for the task, on every replica,
    /// how it is now (`task`, as `tasks/get` shows it).
    pub(crate) async fn announce_task(&self, task: &Value) {
        self.announce_task_here(task);
        let changed = Event::TaskChanged { task: task.clone() };
        self.tasks.store().publish(&changed).await;
    }

    /// Tells this replica's listen streams that asked for the task.
    fn announce_task_here(&self, task: &Value) {
        let id = task["taskId"].as_str();
        for audience in self.audiences() {
            audience.tell_listeners("notifications/tasks", id, &|| task.clone());
        }
    }

    /// Records a change of a task run here, and announces it.
    pub(crate) async fn task_changed(&self, task: &Task) {
        if let Some(now) = self.tasks.record(task).await {
            self.announce_task(&now).await;
        }
    }

    /// The client's answers to a task run here.
    pub(crate) async fn give_input(&self, task: &Task, responses: Map<String, Value>) {
        if task.give_input(responses) {
            self.task_changed(task).await;
        }
    }

    /// Serves what the other replicas tell this one, for as long as the
    /// server runs.
    pub async fn follow_replicas(self: std::sync::Arc<Self>) {
        let mut events = self.tasks.store().events();
        loop {
            let event = match events.recv().await {
                Ok(event) => event,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(
                        missed,
                        "events from other replicas came faster than they were served; some were dropped"
                    );
                    continue;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            match event {
                Event::ListsChanged {
                    plugin,
                    tools,
                    prompts,
                    resources,
                } => {
                    let lists = crate::call::ChangedLists {
                        tools,
                        prompts,
                        resources,
                    };
                    self.relist_here(&plugin, lists);
                }
                Event::ResourceUpdated { uri } => self.resource_updated_here(&uri),
                Event::TaskChanged { task } => self.announce_task_here(&task),
                Event::TaskInput { id, responses } => {
                    if let Some(task) = self.tasks.running_here(&id) {
                        self.give_input(&task, responses).await;
                    }
                }
                Event::TaskCancelled { id } => self.tasks.stop_here(&id, "cancelled by the client"),
                // Followed by the reloader (see `reload::revocations`).
                Event::RevocationsChanged => {}
            }
        }
    }

    /// Gives the tasks still running `grace` to end; then stops them: each
    /// ends as cancelled, with `why` in its status message.
    pub async fn close_tasks(&self, grace: Duration, why: &str) {
        self.task_runs.close();
        if tokio::time::timeout(grace, self.task_runs.wait()).await.is_err() {
            for task in self.tasks.stop_all(&format!("cancelled: {why}")) {
                if let Some(now) = self.tasks.record_end(&task).await {
                    self.announce_task(&now).await;
                }
            }
            self.task_runs.wait().await;
        }
    }
}
