//! The embedded state store: task records in a redb database file, which
//! one process holds at a time and which survives its restarts (or, for
//! one-off commands and a file another process holds, in memory). Every
//! database call runs on the blocking pool, never on the runtime's threads.
//!
//! The file is opened on first use, on the blocking pool (the server's task
//! keeper uses it right after start): creating it, taking its lock and its
//! first durable commit cost a few fsyncs that a client's `initialize`
//! never waits for.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::backends::InMemoryBackend;
use redb::{Database, DatabaseError, ReadableDatabase, ReadableTable, TableDefinition};
use tokio::sync::OnceCell;

use super::{TaskEntry, now_ms, supersedes};

/// Task records by id, each a JSON [`TaskEntry`].
const TASKS: TableDefinition<&str, &[u8]> = TableDefinition::new("tasks");

pub struct Embedded {
    /// The database file; none: in memory.
    path: Option<PathBuf>,
    /// The database once opened, or why it could not be.
    db: OnceCell<Result<Arc<Database>, String>>,
}

impl Embedded {
    /// The database at `path`, opened (or created) on first use. The file
    /// (and a directory made for it) is private to the user: it holds the
    /// tasks' results. A file another process holds is not shared: the
    /// tasks are kept in memory, and a warning says so.
    pub fn at(path: &Path) -> Self {
        Self {
            path: Some(path.to_owned()),
            db: OnceCell::new(),
        }
    }

    pub fn in_memory() -> Self {
        Self {
            path: None,
            db: OnceCell::new(),
        }
    }

    /// The database, opened now on the blocking pool if it is not yet.
    async fn database(&self) -> Result<Arc<Database>, String> {
        self.db
            .get_or_init(|| async {
                let path = self.path.clone();
                match tokio::task::spawn_blocking(move || open(path.as_deref())).await {
                    Ok(opened) => opened.inspect_err(|error| tracing::error!("{error}")),
                    Err(error) => Err(format!("opening the state database did not finish: {error}")),
                }
            })
            .await
            .clone()
    }

    /// Runs `work` on the database on the blocking pool.
    async fn with_db<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Database) -> Result<T, redb::Error> + Send + 'static,
    ) -> Result<T, String> {
        let db = self.database().await?;
        match tokio::task::spawn_blocking(move || work(&db)).await {
            Ok(outcome) => outcome.map_err(|error| error.to_string()),
            Err(error) => Err(format!("the database call did not finish: {error}")),
        }
    }

    pub async fn put(&self, entry: TaskEntry) -> Result<bool, String> {
        let bytes = serde_json::to_vec(&entry).expect("a task entry serializes");
        self.with_db(move |db| {
            let write = db.begin_write()?;
            let written = {
                let mut table = write.open_table(TASKS)?;
                let stored = table.get(entry.id.as_str())?.and_then(|stored| decode(stored.value()));
                let written = supersedes(&entry, stored.as_ref());
                if written {
                    table.insert(entry.id.as_str(), bytes.as_slice())?;
                }
                written
            };
            write.commit()?;
            Ok(written)
        })
        .await
    }

    pub async fn get(&self, id: &str) -> Result<Option<TaskEntry>, String> {
        let id = id.to_owned();
        self.with_db(move |db| {
            let table = db.begin_read()?.open_table(TASKS)?;
            let now = now_ms();
            Ok(table
                .get(id.as_str())?
                .and_then(|stored| decode(stored.value()))
                .filter(|entry| entry.expires_at_ms > now))
        })
        .await
    }

    pub async fn running(&self) -> Result<Vec<TaskEntry>, String> {
        self.with_db(|db| {
            let table = db.begin_read()?.open_table(TASKS)?;
            let now = now_ms();
            let mut running = Vec::new();
            for stored in table.iter()? {
                let (_, value) = stored?;
                if let Some(entry) = decode(value.value()).filter(|e| !e.terminal && e.expires_at_ms > now) {
                    running.push(entry);
                }
            }
            Ok(running)
        })
        .await
    }

    /// Drops the records whose ttl ran out (and any that cannot be read).
    pub async fn purge_expired(&self) -> Result<(), String> {
        self.with_db(|db| {
            let now = now_ms();
            let live = |value: &[u8]| decode(value).is_some_and(|entry| entry.expires_at_ms > now);
            let mut any_expired = false;
            for stored in db.begin_read()?.open_table(TASKS)?.iter()? {
                let (_, value) = stored?;
                if !live(value.value()) {
                    any_expired = true;
                    break;
                }
            }
            if !any_expired {
                return Ok(());
            }
            let write = db.begin_write()?;
            write.open_table(TASKS)?.retain(|_, value| live(value))?;
            write.commit()?;
            Ok(())
        })
        .await
    }
}

/// Opens (or creates) the database at `path`, in memory when there is none
/// or another process holds it.
fn open(path: Option<&Path>) -> Result<Arc<Database>, String> {
    let in_memory = || with_tasks_table(Database::builder().create_with_backend(InMemoryBackend::new()));
    let Some(path) = path else { return in_memory() };
    private_file(path).map_err(|error| format!("cannot create the state file {}: {error}", path.display()))?;
    match Database::create(path) {
        Ok(db) => with_tasks_table(Ok(db)),
        Err(DatabaseError::DatabaseAlreadyOpen) => {
            tracing::warn!(
                "the state file {} is in use by another wasm-mcp process: this server keeps its tasks in memory, \
                 and they end with it (give each server its own --state FILE, or share a Redis with --state \
                 redis://HOST:PORT)",
                path.display()
            );
            in_memory()
        }
        Err(error) => Err(format!(
            "cannot open the state file {}: {error}; remove it to start afresh (its tasks are lost), or pass \
             --state FILE for another file",
            path.display()
        )),
    }
}

/// The database with its table made, so reads need not allow for its absence.
fn with_tasks_table(db: Result<Database, DatabaseError>) -> Result<Arc<Database>, String> {
    let made = || -> Result<Database, redb::Error> {
        let db = db?;
        let write = db.begin_write()?;
        write.open_table(TASKS)?;
        write.commit()?;
        Ok(db)
    };
    made()
        .map(Arc::new)
        .map_err(|error| format!("cannot set up the state database: {error}"))
}

/// Makes `path` (and its directory, if missing) readable and writable by
/// this user only.
fn private_file(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty() && !dir.exists()) {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

fn decode(bytes: &[u8]) -> Option<TaskEntry> {
    serde_json::from_slice(bytes).ok()
}
