//! The embedded state store: task records and plugins' key-value state in a
//! redb database file, which one process holds at a time and which survives
//! its restarts (or, for one-off commands and a file another process holds,
//! in memory). Every database call runs on the blocking pool, never on the
//! runtime's threads.
//!
//! A plugin's key is stored under its namespace, a NUL byte and the key, its
//! value after the time it expires (8 bytes, big-endian ms since the epoch; 0:
//! never); what each namespace holds (keys, bytes of keys and values) is kept
//! beside, so a quota is checked without a scan. Expired keys are skipped on
//! reads and removed when a write would go over the quota.
//!
//! The file is opened on first use, on the blocking pool (the server's task
//! keeper uses it right after start): creating it, taking its lock and its
//! first durable commit cost a few fsyncs that a client's `initialize`
//! never waits for.

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::backends::InMemoryBackend;
use redb::{Database, DatabaseError, ReadableDatabase, ReadableTable, Table, TableDefinition, WriteTransaction};
use tokio::sync::OnceCell;

use super::{TaskEntry, now_ms, supersedes};
use crate::call::buckets::{KeyPage, Quota, StoreFault, Swapped};

/// Task records by id, each a JSON [`TaskEntry`].
const TASKS: TableDefinition<&str, &[u8]> = TableDefinition::new("tasks");
/// Plugins' keys: namespace, NUL, key → expiry (8 bytes) and value.
const KEYVALUE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("keyvalue");
/// What each namespace holds: (keys, bytes of keys and values).
const KEYVALUE_USAGE: TableDefinition<&str, (u64, u64)> = TableDefinition::new("keyvalue_usage");

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

    /// Runs `work` on the database on the blocking pool, for a plugin's
    /// state: a fault of its own, or the database's.
    async fn with_kv<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Database) -> Result<Result<T, StoreFault>, redb::Error> + Send + 'static,
    ) -> Result<T, StoreFault> {
        self.with_db(work).await.map_err(StoreFault::Unavailable)?
    }

    pub async fn kv_get_many(&self, namespace: &str, keys: Vec<String>) -> Result<Vec<Option<Vec<u8>>>, StoreFault> {
        let namespace = namespace.to_owned();
        self.with_kv(move |db| {
            let table = db.begin_read()?.open_table(KEYVALUE)?;
            let now = now_ms();
            let mut values = Vec::with_capacity(keys.len());
            for key in &keys {
                let stored = table.get(entry_key(&namespace, key).as_slice())?;
                values.push(stored.and_then(|stored| live_value(stored.value(), now).map(<[u8]>::to_vec)));
            }
            Ok(Ok(values))
        })
        .await
    }

    pub async fn kv_set_many(
        &self,
        namespace: &str,
        quota: Quota,
        entries: Vec<(String, Vec<u8>)>,
    ) -> Result<(), StoreFault> {
        let namespace = namespace.to_owned();
        self.with_kv(move |db| {
            let write = db.begin_write()?;
            let now = now_ms();
            for (key, value) in &entries {
                if let Err(fault) = put_entry(&write, &namespace, key, value, quota, now)? {
                    return Ok(Err(fault));
                }
            }
            write.commit()?;
            Ok(Ok(()))
        })
        .await
    }

    pub async fn kv_delete_many(&self, namespace: &str, keys: Vec<String>) -> Result<(), StoreFault> {
        let namespace = namespace.to_owned();
        self.with_kv(move |db| {
            let write = db.begin_write()?;
            {
                let mut table = write.open_table(KEYVALUE)?;
                let mut usage = write.open_table(KEYVALUE_USAGE)?;
                let (mut count, mut bytes) = usage.get(namespace.as_str())?.map_or((0, 0), |u| u.value());
                for key in &keys {
                    if let Some(old) = table.remove(entry_key(&namespace, key).as_slice())? {
                        count = count.saturating_sub(1);
                        bytes = bytes.saturating_sub(stored_bytes(key, old.value()));
                    }
                }
                usage.insert(namespace.as_str(), (count, bytes))?;
            }
            write.commit()?;
            Ok(Ok(()))
        })
        .await
    }

    pub async fn kv_list_keys(
        &self,
        namespace: &str,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<KeyPage, StoreFault> {
        let namespace = namespace.to_owned();
        self.with_kv(move |db| {
            let table = db.begin_read()?.open_table(KEYVALUE)?;
            let now = now_ms();
            let prefix = entry_key(&namespace, "");
            let after = entry_key(&namespace, cursor.as_deref().unwrap_or(""));
            let end = [namespace.as_bytes(), &[1]].concat();
            let lower = match cursor {
                Some(_) => Bound::Excluded(after.as_slice()),
                None => Bound::Included(after.as_slice()),
            };
            let mut keys = Vec::new();
            for stored in table.range((lower, Bound::Excluded(end.as_slice())))? {
                let (key, value) = stored?;
                if live_value(value.value(), now).is_none() {
                    continue;
                }
                keys.push(String::from_utf8_lossy(&key.value()[prefix.len()..]).into_owned());
                if keys.len() == limit {
                    let next = keys.last().cloned();
                    return Ok(Ok((keys, next)));
                }
            }
            Ok(Ok((keys, None)))
        })
        .await
    }

    pub async fn kv_increment(
        &self,
        namespace: &str,
        quota: Quota,
        key: String,
        delta: i64,
    ) -> Result<i64, StoreFault> {
        let namespace = namespace.to_owned();
        self.with_kv(move |db| {
            let write = db.begin_write()?;
            let now = now_ms();
            let current = current_value(&write, &namespace, &key, now)?;
            let counted = match current.as_deref().map(counter) {
                None => Some(delta),
                Some(Some(count)) => count.checked_add(delta),
                Some(None) => None,
            };
            let Some(count) = counted else {
                return Ok(Err(StoreFault::NotACounter));
            };
            if let Err(fault) = put_entry(&write, &namespace, &key, count.to_string().as_bytes(), quota, now)? {
                return Ok(Err(fault));
            }
            write.commit()?;
            Ok(Ok(count))
        })
        .await
    }

    pub async fn kv_swap(
        &self,
        namespace: &str,
        quota: Quota,
        key: String,
        expected: Option<Vec<u8>>,
        value: Vec<u8>,
    ) -> Result<Swapped, StoreFault> {
        let namespace = namespace.to_owned();
        self.with_kv(move |db| {
            let write = db.begin_write()?;
            let now = now_ms();
            let current = current_value(&write, &namespace, &key, now)?;
            if current != expected {
                return Ok(Ok(Swapped::Changed(current)));
            }
            if let Err(fault) = put_entry(&write, &namespace, &key, &value, quota, now)? {
                return Ok(Err(fault));
            }
            write.commit()?;
            Ok(Ok(Swapped::Written))
        })
        .await
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
    let in_memory = || with_tables(Database::builder().create_with_backend(InMemoryBackend::new()));
    let Some(path) = path else { return in_memory() };
    private_file(path).map_err(|error| format!("cannot create the state file {}: {error}", path.display()))?;
    match Database::create(path) {
        Ok(db) => with_tables(Ok(db)),
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

/// The database with its tables made, so reads need not allow for their absence.
fn with_tables(db: Result<Database, DatabaseError>) -> Result<Arc<Database>, String> {
    let made = || -> Result<Database, redb::Error> {
        let db = db?;
        let write = db.begin_write()?;
        write.open_table(TASKS)?;
        write.open_table(KEYVALUE)?;
        write.open_table(KEYVALUE_USAGE)?;
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

/// Where `key` of `namespace` is stored.
fn entry_key(namespace: &str, key: &str) -> Vec<u8> {
    [namespace.as_bytes(), &[0], key.as_bytes()].concat()
}

/// The value of a stored entry, unless it has expired by `now`.
fn live_value(stored: &[u8], now: u64) -> Option<&[u8]> {
    let (expires, value) = stored.split_at_checked(8)?;
    let expires = u64::from_be_bytes(expires.try_into().ok()?);
    (expires == 0 || expires > now).then_some(value)
}

/// What an entry counts against its namespace's `max_bytes`: its key and value.
fn stored_bytes(key: &str, stored: &[u8]) -> u64 {
    (key.len() + stored.len().saturating_sub(8)) as u64
}

/// A counter's value, kept as its decimal text.
fn counter(value: &[u8]) -> Option<i64> {
    std::str::from_utf8(value).ok()?.parse().ok()
}

/// The live value of `key` in `namespace`, read in the write transaction.
fn current_value(
    write: &WriteTransaction,
    namespace: &str,
    key: &str,
    now: u64,
) -> Result<Option<Vec<u8>>, redb::Error> {
    let table = write.open_table(KEYVALUE)?;
    let stored = table.get(entry_key(namespace, key).as_slice())?;
    Ok(stored.and_then(|stored| live_value(stored.value(), now).map(<[u8]>::to_vec)))
}

/// Whether a namespace going from `was` to `now` passes `max`: only growth is refused.
fn grows_past(now: u64, was: u64, max: u64) -> bool {
    now > max && now > was
}

/// Writes `key` = `value` in `namespace` within its quota, counting what it
/// holds; over the quota, its expired keys are removed first, and if it is
/// still over, nothing is written (the caller drops the transaction).
fn put_entry(
    write: &WriteTransaction,
    namespace: &str,
    key: &str,
    value: &[u8],
    quota: Quota,
    now: u64,
) -> Result<Result<(), StoreFault>, redb::Error> {
    let mut table = write.open_table(KEYVALUE)?;
    let mut usage = write.open_table(KEYVALUE_USAGE)?;
    let entry = entry_key(namespace, key);
    let mut purged = false;
    loop {
        let (count, bytes) = usage.get(namespace)?.map_or((0, 0), |u| u.value());
        let old = table.get(entry.as_slice())?.map(|old| stored_bytes(key, old.value()));
        let new_count = count + u64::from(old.is_none());
        let new_bytes = bytes - old.unwrap_or(0).min(bytes) + (key.len() + value.len()) as u64;
        let fault = if grows_past(new_count, count, quota.max_keys) {
            Some(StoreFault::OverKeys)
        } else if grows_past(new_bytes, bytes, quota.max_bytes) {
            Some(StoreFault::OverBytes)
        } else {
            None
        };
        match fault {
            Some(fault) if purged => return Ok(Err(fault)),
            Some(_) => {
                purge_expired(&mut table, &mut usage, namespace, now)?;
                purged = true;
            }
            None => {
                let expires = quota.expire_after.map_or(0, |after| now + after.as_millis() as u64);
                let stored = [&expires.to_be_bytes()[..], value].concat();
                table.insert(entry.as_slice(), stored.as_slice())?;
                usage.insert(namespace, (new_count, new_bytes))?;
                return Ok(Ok(()));
            }
        }
    }
}

/// Removes the expired keys of `namespace`, and what they held from its usage.
fn purge_expired(
    table: &mut Table<&[u8], &[u8]>,
    usage: &mut Table<&str, (u64, u64)>,
    namespace: &str,
    now: u64,
) -> Result<(), redb::Error> {
    let start = entry_key(namespace, "");
    let end = [namespace.as_bytes(), &[1]].concat();
    let (mut count, mut bytes) = usage.get(namespace)?.map_or((0, 0), |u| u.value());
    let prefix = start.len();
    table.retain_in(start.as_slice()..end.as_slice(), |key, stored| {
        let live = live_value(stored, now).is_some();
        if !live {
            count = count.saturating_sub(1);
            bytes = bytes.saturating_sub((key.len() - prefix + stored.len().saturating_sub(8)) as u64);
        }
        live
    })?;
    usage.insert(namespace, (count, bytes))?;
    Ok(())
}
