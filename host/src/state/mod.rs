//! What the replicas of one server share, and what a server keeps across a
//! restart: the records of the 2026-07-28 extension's tasks, the lease that
//! says a replica is alive to run its tasks, and the events every replica
//! must hear (a list or a resource a plugin said changed, a task's new
//! status, answers and cancellations for the replica running a task), and
//! the plugin digests the operator revoked (`wasm-mcp revoke`), which every
//! replica stops serving at once; and the plugins' `wasi:keyvalue` state
//! (see [`keyvalue`]).
//!
//! One interface, two backends: an embedded database file (the default, for
//! one process; see [`embedded`]) and Redis (`--state redis://…`, for many
//! replicas; see [`shared`]). A record is written only if it is newer than
//! the stored one and that one has not ended, so an ended task stays ended
//! whichever replica wrote first.

mod embedded;
mod keyvalue;
mod shared;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::broadcast;

/// Where the state is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// An embedded database file: survives a restart, serves one process.
    File(PathBuf),
    /// A Redis server shared by every replica (`redis://HOST:PORT`).
    Redis(String),
    /// Nothing survives the process (one-off commands such as `wasm-mcp call`).
    Memory,
}

impl Location {
    /// `redis://…` or `rediss://…` is Redis; anything else a file.
    pub(crate) fn parse(text: &str) -> Self {
        if text.starts_with("redis://") || text.starts_with("rediss://") {
            Location::Redis(text.to_owned())
        } else {
            Location::File(PathBuf::from(text))
        }
    }
}

/// One task as stored: what `tasks/get` shows, with what the store needs to
/// order writes and find running tasks.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskEntry {
    pub id: String,
    /// Counts the task's changes: a write older than the stored one is refused.
    pub revision: u64,
    /// The task has ended; nothing more is written over it.
    pub terminal: bool,
    /// The replica running the task.
    pub owner: String,
    /// When the record is dropped (ms since the Unix epoch).
    pub expires_at_ms: u64,
    /// The task as `tasks/get` shows it.
    pub task: Value,
    /// The `tools/call` params that started it, kept for a tool declared
    /// idempotent: another replica may run it again from the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<Value>,
    /// The principal that created it (see [`crate::principal`]): only it
    /// may see, answer or cancel the task. None without authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
}

/// What one replica tells the others.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// A plugin said these lists of its may have changed.
    ListsChanged {
        plugin: String,
        tools: bool,
        prompts: bool,
        resources: bool,
    },
    /// A plugin said the resource changed.
    ResourceUpdated { uri: String },
    /// A task changed: it is now `task` (as `tasks/get` shows it).
    TaskChanged { task: Value },
    /// A client answered a task's questions (for the replica running it).
    TaskInput { id: String, responses: Map<String, Value> },
    /// A task was cancelled (the replica running it stops its call).
    TaskCancelled { id: String },
    /// The set of revoked plugin digests changed (read it again).
    RevocationsChanged,
}

/// The store did not answer; says which store and what happened.
#[derive(Debug, Clone)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

enum Backend {
    Embedded(embedded::Embedded),
    Shared(shared::Shared),
}

/// The state store of this process.
pub struct StateStore {
    backend: Backend,
    /// This replica's name in task records and leases: random per process.
    replica: String,
    /// The store as errors and logs name it.
    described: String,
    /// Whether the last request to the store was answered.
    reachable: AtomicBool,
    /// Events from the other replicas.
    events: broadcast::Sender<Event>,
}

/// Events from other replicas not yet taken by a slow listener: beyond it
/// the oldest are dropped (and the listener told how many).
const EVENT_BACKLOG: usize = 4096;

impl StateStore {
    /// Opens the store at `location`. An embedded file is opened on first use
    /// (see `state::embedded`); one that another process holds is not shared: the
    /// state is kept in memory, and a warning says so. Redis is connected to
    /// in the background, and again whenever the connection drops; until then,
    /// what needs the store fails with an error naming it.
    ///
    /// # Errors
    ///
    /// When the Redis URL is invalid or its client cannot be made.
    pub fn open(location: &Location, lease: Duration) -> anyhow::Result<Arc<Self>> {
        let replica = random_name();
        let (events, _) = broadcast::channel(EVENT_BACKLOG);
        let (backend, described) = match location {
            Location::File(path) => (
                Backend::Embedded(embedded::Embedded::at(path)),
                format!("the state file {}", path.display()),
            ),
            Location::Memory => (
                Backend::Embedded(embedded::Embedded::in_memory()),
                "the in-memory state store".into(),
            ),
            Location::Redis(url) => {
                let described = format!("the Redis state store at {}", shared::redacted(url));
                let shared = shared::Shared::connect(url, &described, &replica, lease, events.clone())?;
                (Backend::Shared(shared), described)
            }
        };
        Ok(Arc::new(Self {
            backend,
            replica,
            described,
            reachable: AtomicBool::new(true),
            events,
        }))
    }

    /// A store that keeps everything in memory.
    pub fn in_memory() -> Arc<Self> {
        Self::open(&Location::Memory, Duration::from_secs(10)).expect("an in-memory database opens")
    }

    /// This replica's name in task records.
    pub(crate) fn replica(&self) -> &str {
        &self.replica
    }

    /// The store as errors name it, e.g. "the Redis state store at redis://127.0.0.1:6379".
    pub(crate) fn described(&self) -> &str {
        &self.described
    }

    /// Whether other processes share it (and may run tasks of their own).
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self.backend, Backend::Shared(_))
    }

    /// Whether the store answered the last request made to it.
    pub(crate) fn is_reachable(&self) -> bool {
        self.reachable.load(Ordering::Relaxed)
    }

    /// Writes `entry` unless the stored one is as new or has ended; returns
    /// whether it was written.
    pub(crate) async fn put_task(&self, entry: &TaskEntry) -> Result<bool, StoreError> {
        let written = match &self.backend {
            Backend::Embedded(embedded) => embedded.put(entry.clone()).await,
            Backend::Shared(shared) => shared.put(entry).await,
        };
        self.answered(written)
    }

    /// The task `id`, if the store has it (and its ttl has not run out).
    pub(crate) async fn task(&self, id: &str) -> Result<Option<TaskEntry>, StoreError> {
        let found = match &self.backend {
            Backend::Embedded(embedded) => embedded.get(id).await,
            Backend::Shared(shared) => shared.get(id).await,
        };
        self.answered(found)
    }

    /// Every task not yet ended, whichever replica runs it.
    pub(crate) async fn running_tasks(&self) -> Result<Vec<TaskEntry>, StoreError> {
        let running = match &self.backend {
            Backend::Embedded(embedded) => embedded.running().await,
            Backend::Shared(shared) => shared.running().await,
        };
        self.answered(running)
    }

    /// Renews this replica's lease, and drops records whose ttl ran out.
    pub(crate) async fn renew(&self) -> Result<(), StoreError> {
        let renewed = match &self.backend {
            Backend::Embedded(embedded) => embedded.purge_expired().await,
            Backend::Shared(shared) => shared.renew().await,
        };
        self.answered(renewed)
    }

    /// Whether the replica named `owner` still holds its lease. With the
    /// embedded store only this process is alive: a record of any other was
    /// left by a process that stopped.
    pub(crate) async fn is_alive(&self, owner: &str) -> Result<bool, StoreError> {
        let alive = match &self.backend {
            Backend::Embedded(_) => Ok(owner == self.replica),
            Backend::Shared(shared) => shared.is_alive(owner).await,
        };
        self.answered(alive)
    }

    /// Tells the other replicas (nothing to do for the embedded store).
    pub(crate) async fn publish(&self, event: &Event) {
        if let Backend::Shared(shared) = &self.backend {
            let published = shared.publish(event).await;
            if let Err(error) = self.answered(published) {
                tracing::warn!(%error, ?event, "an event did not reach the other replicas");
            }
        }
    }

    /// The plugin digests revoked through the store (none for the
    /// embedded store: it is this process's own).
    pub(crate) async fn revoked_digests(&self) -> Result<std::collections::BTreeSet<String>, StoreError> {
        match &self.backend {
            Backend::Embedded(_) => Ok(Default::default()),
            Backend::Shared(shared) => self.answered(shared.revoked_digests().await),
        }
    }

    /// Revokes the plugin digest `digest` (or lifts its revocation) for
    /// every replica sharing the store, and tells them.
    pub(crate) async fn revoke(&self, digest: &str, lift: bool) -> Result<(), StoreError> {
        let Backend::Shared(shared) = &self.backend else {
            return Err(StoreError(format!(
                "{} is this process's own: a revocation through the state store needs the one replicas share \
                 (--state redis://HOST:PORT); for one server, list the digest under [revoked] in the trust policy",
                self.described
            )));
        };
        self.answered(shared.revoke(digest, lift).await)?;
        self.publish(&Event::RevocationsChanged).await;
        Ok(())
    }

    /// What the other replicas tell this one.
    pub(crate) fn events(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Notes whether the store answered; a change is logged (the readiness
    /// signal): from "does not answer" to "answers again" and back.
    fn answered<T>(&self, outcome: Result<T, String>) -> Result<T, StoreError> {
        let ok = outcome.is_ok();
        if self.reachable.swap(ok, Ordering::Relaxed) != ok {
            match &outcome {
                Ok(_) => tracing::info!("{} answers again: ready", self.described),
                Err(error) => tracing::error!(
                    "{} does not answer ({error}): not ready; tasks cannot be created, read or changed until it \
                     does, calls that do not run as tasks are served, and the server reconnects by itself",
                    self.described
                ),
            }
        }
        outcome.map_err(|error| {
            StoreError(format!(
                "{} does not answer ({error}); tasks cannot be created, read or changed until it does (the \
                 server reconnects by itself); tool calls that do not run as tasks are served meanwhile",
                self.described
            ))
        })
    }
}

/// 64 random bits, hex.
fn random_name() -> String {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the operating system provides randomness");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}

/// Whether `stored` may be replaced by `newer`: it is older, and has not ended.
fn supersedes(newer: &TaskEntry, stored: Option<&TaskEntry>) -> bool {
    stored.is_none_or(|stored| !stored.terminal && stored.revision < newer.revision)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entry(revision: u64, terminal: bool) -> TaskEntry {
        TaskEntry {
            id: "t".into(),
            revision,
            terminal,
            owner: "r".into(),
            expires_at_ms: now_ms() + 60_000,
            task: json!({ "taskId": "t", "revision": revision }),
            call: None,
            principal: None,
        }
    }

    #[tokio::test]
    async fn only_newer_records_of_a_running_task_are_written() {
        let store = StateStore::in_memory();
        assert!(store.put_task(&entry(1, false)).await.unwrap());
        assert!(!store.put_task(&entry(1, false)).await.unwrap(), "as new: refused");
        assert!(store.put_task(&entry(3, false)).await.unwrap());
        assert!(!store.put_task(&entry(2, true)).await.unwrap(), "older: refused");
        assert!(store.put_task(&entry(4, true)).await.unwrap());
        assert!(!store.put_task(&entry(9, false)).await.unwrap(), "ended: final");
        let stored = store.task("t").await.unwrap().unwrap();
        assert_eq!((stored.revision, stored.terminal), (4, true));
        assert!(store.running_tasks().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn expired_records_are_gone() {
        let store = StateStore::in_memory();
        let mut old = entry(1, false);
        old.expires_at_ms = now_ms() - 1;
        assert!(store.put_task(&old).await.unwrap());
        assert!(store.task("t").await.unwrap().is_none());
        store.renew().await.unwrap();
        assert!(store.running_tasks().await.unwrap().is_empty());
    }

    #[test]
    fn a_location_is_redis_or_a_file() {
        assert_eq!(
            Location::parse("redis://127.0.0.1:6379"),
            Location::Redis("redis://127.0.0.1:6379".into())
        );
        assert_eq!(
            Location::parse("/var/lib/x.redb"),
            Location::File("/var/lib/x.redb".into())
        );
    }
}
