//! The embedded state store: task records in a redb database file, which
//! one process holds at a time and which survives its restarts (or, for
//! one-off commands and a file another process holds, in memory). Every
//! database call runs on the blocking pool, never on the runtime's threads.

use std::path::Path;
use std::sync::Arc;

use redb::backends::InMemoryBackend;
use redb::{Database, DatabaseError, ReadableDatabase, ReadableTable, TableDefinition};

use super::{TaskEntry, now_ms, supersedes};

/// Task records by id, each a JSON [`TaskEntry`].
const TASKS: TableDefinition<&str, &[u8]> = TableDefinition::new("tasks");

pub struct Embedded {
    db: Arc<Database>,
}

impl Embedded {
    /// Opens (or creates) the database at `path`; `None` when another
    /// process holds it. The file (and a directory made for it) is private
    /// to the user: it holds the tasks' results.
    pub fn open(path: &Path) -> anyhow::Result<Option<Self>> {
        private_file(path)
            .map_err(|error| anyhow::anyhow!("cannot create the state file {}: {error}", path.display()))?;
        match Database::create(path) {
            Ok(db) => Ok(Some(Self::new(db)?)),
            Err(DatabaseError::DatabaseAlreadyOpen) => Ok(None),
            Err(error) => Err(anyhow::anyhow!(
                "cannot open the state file {}: {error}; remove it to start afresh (its tasks are lost), or pass \
                 --state FILE for another file",
                path.display()
            )),
        }
    }

    pub fn in_memory() -> anyhow::Result<Self> {
        Self::new(Database::builder().create_with_backend(InMemoryBackend::new())?)
    }

    fn new(db: Database) -> anyhow::Result<Self> {
        // The table exists from the start, so reads need not allow for its absence.
        let write = db.begin_write()?;
        write.open_table(TASKS)?;
        write.commit()?;
        Ok(Self { db: Arc::new(db) })
    }

    /// Runs `work` on the database on the blocking pool.
    async fn with_db<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Database) -> Result<T, redb::Error> + Send + 'static,
    ) -> Result<T, String> {
        let db = self.db.clone();
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
