//! Follows the plugins directory as a path, not as an inode, with inotify
//! (through `notify`, no polling): one watch on the directory, one on the
//! folder that holds it (non-recursive) for the directory's own entry. When
//! that entry changes (deleted, recreated, renamed, a symlink swapped), the
//! watch moves to whatever the path is now.
//!
//! Events are debounced: a burst (an editor's temp-file-and-rename, a build
//! writing in pieces, a whole directory replaced) reloads each affected
//! plugin once, and all of them as one change. A burst that changes entries
//! other than plugin files (directories, symlinks such as a volume's
//! `..data`) also reloads the plugins whose files now lead elsewhere.
//!
//! A change of the lockfile (`plugins.lock`) rereads it, and reloads the
//! plugins whose entries it added, changed or removed.
//!
//! When the directory is gone, the plugins loaded from it keep serving for
//! the grace period (`plugins_grace_secs`), which is said once on stderr and
//! to clients; when it runs out, none are served. When the directory comes
//! back, its plugins are loaded and the lists that changed announced.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use serde_json::json;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{DEBOUNCE, LOGGER, Reloader};
use crate::call::ChangedLists;
use crate::protocol::LogLevel;
use crate::registry::lockfile::LOCKFILE;
use crate::settings::server;

/// How often a file's size is sampled to tell whether a copy is still under way.
const SETTLE_STEP: Duration = Duration::from_millis(50);
const SETTLE_ATTEMPTS: u32 = 100;
/// How long a burst waits, with no event at all, for a plugin file that is
/// still open for writing (a copy that paused) before loading it anyway.
const OPEN_WRITE_PATIENCE: Duration = Duration::from_secs(10);

/// What one watcher event says about a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// Created or written: a writer may still hold it open.
    Written,
    /// A writer closed it (inotify's `IN_CLOSE_WRITE`): that copy is complete.
    Closed,
    /// Removed, renamed, or anything else that changes it.
    Other,
}

/// What the watches saw.
enum Seen {
    /// The directory's own path: the directory itself, or its entry in the
    /// folder that holds it.
    Path,
    /// An entry of the directory.
    Entry(PathBuf, Change),
}

/// Starts following the directory of `reloader`, for as long as the process runs.
pub(super) fn follow(reloader: Arc<Reloader>) -> Result<()> {
    let dir = std::path::absolute(&reloader.dir)
        .with_context(|| format!("cannot tell where {} is", reloader.dir.display()))?;
    let (events, seen) = mpsc::unbounded_channel();
    let watched = dir.clone();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
        // Opens and reads (ours too) are ignored; writes, closes after writing,
        // creations, removals and renames matter.
        Ok(event) => {
            if let Some(change) = change_of(&event.kind) {
                for path in event.paths {
                    if path == watched {
                        let _ = events.send(Seen::Path);
                    } else if path.parent() == Some(&watched) {
                        let _ = events.send(Seen::Entry(path, change));
                    }
                }
            }
        }
        Err(e) => tracing::warn!("plugins directory watch error: {e}"),
    })
    .context("cannot start watching the plugins directory")?;
    watcher
        .watch(&dir, RecursiveMode::NonRecursive)
        .with_context(|| format!("cannot watch {}", dir.display()))?;
    if let Some(parent) = dir.parent()
        && let Err(e) = watcher.watch(parent, RecursiveMode::NonRecursive)
    {
        tracing::warn!(
            folder = %parent.display(),
            "cannot watch the folder that holds the plugins directory ({e}): a directory deleted and recreated, \
             or a symlink swapped, goes unnoticed until a restart; let the host read that folder"
        );
    }
    tracing::info!(dir = %dir.display(), "watching the plugins directory and its path");
    let follower = Follower {
        reloader,
        watcher,
        dir,
        gone: None,
    };
    tokio::spawn(follower.run(seen));
    Ok(())
}

/// The watches and what they have seen of the directory.
struct Follower {
    reloader: Arc<Reloader>,
    watcher: RecommendedWatcher,
    /// The directory's path, absolute (symlinks not followed).
    dir: PathBuf,
    /// Since the directory went missing, while it is.
    gone: Option<Gone>,
}

struct Gone {
    /// When the grace period ends.
    deadline: Instant,
    /// The grace period is over: no plugin is served.
    withdrawn: bool,
}

impl Follower {
    async fn run(mut self, mut seen: mpsc::UnboundedReceiver<Seen>) {
        loop {
            let deadline = self
                .gone
                .as_ref()
                .filter(|gone| !gone.withdrawn)
                .map(|gone| gone.deadline);
            let first = match deadline {
                Some(deadline) => match tokio::time::timeout_at(deadline, seen.recv()).await {
                    Ok(first) => first,
                    Err(_) => {
                        self.withdraw().await;
                        continue;
                    }
                },
                None => seen.recv().await,
            };
            let Some(first) = first else { return };
            // Lists served from now until the burst is loaded may change at once.
            self.reloader.hub.set_changing(true);
            let burst = self.gather(first, &mut seen).await;
            self.apply(burst).await;
            self.reloader.hub.set_changing(false);
        }
    }

    /// Takes events until the burst that starts with `first` ends: after a
    /// quiet spell, a long one while a copy has paused.
    async fn gather(&mut self, first: Seen, seen: &mut mpsc::UnboundedReceiver<Seen>) -> Burst {
        let mut burst = Burst::default();
        self.note(&mut burst, first);
        loop {
            let quiet = if burst.open_for_writing.is_empty() {
                DEBOUNCE
            } else {
                OPEN_WRITE_PATIENCE
            };
            match tokio::time::timeout(quiet, seen.recv()).await {
                Ok(Some(event)) => self.note(&mut burst, event),
                Ok(None) | Err(_) => return burst,
            }
        }
    }

    fn note(&mut self, burst: &mut Burst, seen: Seen) {
        if let Seen::Path = seen {
            // At once, so that what is written into a directory that came back
            // is part of this burst.
            self.rearm();
        }
        burst.note(seen);
    }

    /// Moves the directory's watch to whatever its path is now.
    fn rearm(&mut self) {
        // The old watch may have gone with its directory already.
        let _ = self.watcher.unwatch(&self.dir);
        if self.dir.is_dir()
            && let Err(e) = self.watcher.watch(&self.dir, RecursiveMode::NonRecursive)
        {
            tracing::error!(
                dir = %self.dir.display(),
                "cannot watch the plugins directory that came back ({e}): changes inside it go unnoticed \
                 until it is replaced again or the host restarts"
            );
        }
    }

    /// Brings the served plugins in line with the directory after `burst`.
    async fn apply(&mut self, burst: Burst) {
        if !self.dir.is_dir() {
            self.went_missing();
            return;
        }
        let came_back = self.gone.take().is_some();
        if came_back {
            self.say(
                LogLevel::Info,
                format!(
                    "the plugins directory {} is back; its plugins are loaded",
                    self.dir.display()
                ),
            );
        }
        let mut names = burst.names;
        if came_back || burst.replaced || burst.relinked {
            names.extend(self.reloader.moved(came_back || burst.replaced).await);
        }
        if came_back || burst.replaced || burst.relinked || burst.lockfile {
            names.extend(self.reloader.reread_lock());
        }
        for name in &names {
            wait_until_settled(&self.reloader.wasm_path(name)).await;
        }
        self.reload(names).await;
    }

    /// The directory is gone: its plugins keep serving for the grace period.
    fn went_missing(&mut self) {
        if self.gone.is_some() {
            return;
        }
        let grace = self.reloader.hub.config.plugins_grace_secs;
        self.gone = Some(Gone {
            deadline: Instant::now() + Duration::from_secs_f64(grace),
            withdrawn: false,
        });
        self.say(
            LogLevel::Warning,
            format!(
                "the plugins directory {} is gone; the plugins loaded from it keep serving for {grace} s \
                 (set by {}) while the host waits for it to come back; restore it, or the plugins are withdrawn",
                self.dir.display(),
                server::plugins_grace_secs.hint()
            ),
        );
    }

    /// The grace period is over with the directory still missing: no plugin is served.
    async fn withdraw(&mut self) {
        if let Some(gone) = &mut self.gone {
            gone.withdrawn = true;
        }
        self.say(
            LogLevel::Error,
            format!(
                "the plugins directory {} is still missing after the grace period: no plugin is served \
                 until it comes back; restore it, or restart the host with --plugins DIR",
                self.dir.display()
            ),
        );
        // The lockfile went with the directory: its plugins go too.
        self.reloader.reread_lock();
        let known = self.reloader.known().await;
        self.reload(known).await;
    }

    async fn reload(&self, names: BTreeSet<String>) {
        let changes: BTreeMap<_, _> = names.into_iter().map(|name| (name, ChangedLists::default())).collect();
        self.reloader.reload(changes).await;
    }

    /// Says `message` about the directory on stderr and to every client.
    fn say(&self, level: LogLevel, message: String) {
        let dir = self.dir.display().to_string();
        match level {
            LogLevel::Error => tracing::error!(dir, "{message}"),
            LogLevel::Warning => tracing::warn!(dir, "{message}"),
            _ => tracing::info!(dir, "{message}"),
        }
        self.reloader
            .hub
            .log_to_all(level, LOGGER, json!({ "message": message, "path": dir }));
    }
}

/// What one burst of events touches.
#[derive(Default)]
struct Burst {
    /// Plugins whose own files changed.
    names: BTreeSet<String>,
    /// Plugin files created or written and not closed since: copies under way.
    open_for_writing: HashSet<PathBuf>,
    /// The directory's path changed: it went, came back, or leads elsewhere.
    replaced: bool,
    /// An entry other than a plugin's file changed (a directory, a symlink,
    /// a temporary file): plugins whose files go through it may have moved.
    relinked: bool,
    /// The lockfile changed.
    lockfile: bool,
}

impl Burst {
    fn note(&mut self, seen: Seen) {
        let (path, change) = match seen {
            Seen::Path => {
                self.replaced = true;
                return;
            }
            Seen::Entry(path, change) => (path, change),
        };
        if path.file_name().is_some_and(|name| name == LOCKFILE) {
            self.lockfile = true;
            return;
        }
        let Some(name) = affected_plugin(&path) else {
            self.relinked = true;
            return;
        };
        // A symlink is made whole: no writer holds it open.
        let is_symlink = || std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        if change == Change::Written && !is_symlink() {
            self.open_for_writing.insert(path);
        } else {
            self.open_for_writing.remove(&path);
        }
        self.names.insert(name);
    }
}

fn change_of(kind: &notify::EventKind) -> Option<Change> {
    use notify::EventKind::{Access, Any, Create, Modify, Remove};
    use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind};
    match kind {
        Modify(ModifyKind::Metadata(_)) => None,
        // Only inotify reports closes; elsewhere a write is a change like any other.
        Create(CreateKind::File) | Modify(ModifyKind::Data(_) | ModifyKind::Any)
            if cfg!(any(target_os = "linux", target_os = "android")) =>
        {
            Some(Change::Written)
        }
        Access(AccessKind::Close(AccessMode::Write)) => Some(Change::Closed),
        Any | Create(_) | Modify(_) | Remove(_) => Some(Change::Other),
        _ => None,
    }
}

/// The plugin a changed path belongs to: `NAME.wasm`, `NAME.toml` and its
/// skills folder `NAME.skills` (created, removed or replaced whole) name it;
/// anything else (temp files, hidden files, a volume's `..data`) is not a
/// plugin's own file.
fn affected_plugin(path: &Path) -> Option<String> {
    let file = path.file_name()?.to_str()?;
    if file.starts_with('.') {
        return None;
    }
    let (stem, extension) = file.rsplit_once('.')?;
    matches!(extension, "wasm" | "toml" | "skills").then(|| stem.to_owned())
}

/// Waits while the file is still growing (a copy under way).
async fn wait_until_settled(path: &Path) {
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).ok();
    let mut last = size(path);
    for _ in 0..SETTLE_ATTEMPTS {
        tokio::time::sleep(SETTLE_STEP).await;
        let now = size(path);
        if now == last {
            return;
        }
        last = now;
    }
}
