//! Keeps the served plugins in step with the plugins directory: the
//! [`Reloader`] owns the set of loaded plugins, loads the directory at start,
//! then a watcher (inotify through `notify`, no polling) reloads a plugin
//! whenever its `.wasm` or its manifest changes, appears or goes away, and
//! publishes the catalog of the new set: once per burst, however many
//! plugins it changed.
//!
//! Events are debounced: a burst (an editor's temp-file-and-rename, a build
//! writing in pieces) reloads each affected plugin once. A new version is
//! compiled and validated before it replaces anything; one that fails keeps
//! the last good version serving and is reported.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result};
use notify::{RecursiveMode, Watcher};
use serde_json::json;
use tokio::sync::{Mutex, mpsc};

use crate::call::ChangedLists;
use crate::catalog::Catalog;
use crate::plugin::Plugin;
use crate::protocol::LogLevel;
use crate::runtime::{PluginRuntime, plugin_name};
use crate::session::Hub;

/// Quiet time that ends a burst of events.
const DEBOUNCE: Duration = Duration::from_millis(150);
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

/// The plugins directory and the plugins loaded from it.
pub struct Reloader {
    hub: Arc<Hub>,
    runtime: Arc<PluginRuntime>,
    dir: PathBuf,
    /// The loaded plugins by name. Holding it is the turn to change it: one
    /// reload at a time, so a slow load of an old version that finishes after
    /// a fast load of its replacement never puts the old version back.
    plugins: Mutex<BTreeMap<String, Arc<Plugin>>>,
}

impl Reloader {
    /// A reloader of the plugins in `dir`, loaded by `runtime`, served through `hub`.
    pub fn new(hub: Arc<Hub>, runtime: Arc<PluginRuntime>, dir: PathBuf) -> Arc<Self> {
        Arc::new(Self {
            hub,
            runtime,
            dir,
            plugins: Mutex::new(BTreeMap::new()),
        })
    }

    /// Loads every plugin in the directory (in name order), each entering the
    /// catalog as soon as it is ready, then marks the start as done.
    pub async fn load_all(self: Arc<Self>) {
        for path in wasm_files(&self.dir) {
            self.reload(BTreeMap::from([(plugin_name(&path), ChangedLists::default())]))
                .await;
        }
        let counts = &self.runtime.cache.counts;
        let plugins = self.plugins.lock().await.len();
        tracing::info!(
            dir = %self.dir.display(),
            plugins,
            compiled = counts.compiled.load(Ordering::Relaxed),
            from_cache = counts.from_cache.load(Ordering::Relaxed),
            "plugins directory loaded"
        );
        self.hub.startup_done();
    }

    /// Watches the directory for as long as the process runs.
    pub fn watch(self: &Arc<Self>) -> Result<()> {
        let dir = self.dir.clone();
        let (events, mut changed) = mpsc::unbounded_channel::<(PathBuf, Change)>();
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
            // Opens and reads (ours too) are ignored; writes, closes after writing,
            // creations, removals and renames matter.
            Ok(event) => {
                if let Some(change) = change_of(&event.kind) {
                    for path in event.paths {
                        let _ = events.send((path, change));
                    }
                }
            }
            Err(e) => tracing::warn!("plugins directory watch error: {e}"),
        })
        .context("cannot start watching the plugins directory")?;
        watcher
            .watch(&dir, RecursiveMode::NonRecursive)
            .with_context(|| format!("cannot watch {}", dir.display()))?;
        tracing::info!(dir = %dir.display(), "watching the plugins directory");
        let reloader = self.clone();
        tokio::spawn(async move {
            let _watcher = watcher;
            while let Some(first) = changed.recv().await {
                // Lists served from now until the burst is loaded may change at once.
                reloader.hub.set_changing(true);
                let mut burst = Burst::default();
                burst.note(first);
                loop {
                    // The burst ends after a quiet spell, a long one while a copy has paused.
                    let quiet = if burst.open_for_writing.is_empty() {
                        DEBOUNCE
                    } else {
                        OPEN_WRITE_PATIENCE
                    };
                    match tokio::time::timeout(quiet, changed.recv()).await {
                        Ok(Some(event)) => burst.note(event),
                        Ok(None) | Err(_) => break,
                    }
                }
                for name in &burst.names {
                    wait_until_settled(&dir.join(format!("{name}.wasm"))).await;
                }
                let changes = burst.names.into_iter().map(|name| (name, ChangedLists::default()));
                reloader.reload(changes.collect()).await;
                reloader.hub.set_changing(false);
            }
        });
        Ok(())
    }

    /// Lists a plugin again whenever it says its lists may have changed
    /// (`host::lists-changed`), for as long as the process runs. What plugins
    /// say while one round is under way, or within [`DEBOUNCE`] after it, is
    /// handled in the next round, once per plugin.
    pub fn relist_on_request(self: &Arc<Self>) {
        let reloader = self.clone();
        tokio::spawn(async move {
            loop {
                let relists = reloader.hub.next_relists().await;
                tracing::debug!(?relists, "listing plugins again, as they asked");
                reloader.reload(relists).await;
                tokio::time::sleep(DEBOUNCE).await;
            }
        });
    }

    /// Brings the named plugins in line with the directory: loads, replaces
    /// or removes each, then publishes the catalog of the new set once, so
    /// clients never see part of a change; it announces the lists that
    /// differ and those the reloaded plugins said changed (`relisted`).
    async fn reload(&self, changes: BTreeMap<String, ChangedLists>) {
        let mut plugins = self.plugins.lock().await;
        let mut changed = false;
        let mut replaced = BTreeSet::new();
        let mut relisted = ChangedLists::default();
        for (name, lists) in changes {
            let path = self.dir.join(format!("{name}.wasm"));
            if !path.is_file() {
                if plugins.remove(&name).is_some() {
                    tracing::info!(plugin = name, "plugin removed");
                    changed = true;
                }
                continue;
            }
            match self.runtime.load(&path).await {
                Ok(plugin) => {
                    tracing::info!(
                        plugin = name, path = %path.display(),
                        tools = plugin.listing.tools.len(), resources = plugin.listing.resources.len(),
                        templates = plugin.listing.templates.len(), prompts = plugin.listing.prompts.len(),
                        "plugin loaded"
                    );
                    if plugins.insert(name.clone(), plugin).is_some() {
                        replaced.insert(name);
                    }
                    changed = true;
                    relisted = relisted.union(lists);
                }
                Err(e) => {
                    let outcome = if plugins.contains_key(&name) {
                        "the last good version keeps serving"
                    } else {
                        "the plugin is not served"
                    };
                    tracing::error!(plugin = name, path = %path.display(), "plugin failed to load ({outcome}): {e:#}");
                    self.hub.log_to_all(
                        LogLevel::Error,
                        &name,
                        json!({ "message": format!("plugin failed to load; {outcome}"), "path": path.display().to_string(), "error": format!("{e:#}") }),
                    );
                }
            }
        }
        if changed {
            self.hub.publish(Catalog::build(plugins.values()), &replaced, relisted);
        }
    }
}

/// The `.wasm` files directly inside `dir`, sorted by name.
fn wasm_files(dir: &Path) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            tracing::error!(dir = %dir.display(), "cannot read the plugins directory: {e}");
            return Vec::new();
        }
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "wasm") && path.is_file())
        .collect();
    files.sort();
    files
}

/// The plugins one burst of events touches.
#[derive(Default)]
struct Burst {
    names: BTreeSet<String>,
    /// Plugin files created or written and not closed since: copies under way.
    open_for_writing: HashSet<PathBuf>,
}

impl Burst {
    fn note(&mut self, (path, change): (PathBuf, Change)) {
        let Some(name) = affected_plugin(&path) else { return };
        match change {
            Change::Written => self.open_for_writing.insert(path),
            Change::Closed | Change::Other => self.open_for_writing.remove(&path),
        };
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

/// The plugin a changed path belongs to: `NAME.wasm` and `NAME.toml` name it;
/// anything else (temp files, hidden files) is ignored.
fn affected_plugin(path: &Path) -> Option<String> {
    let file = path.file_name()?.to_str()?;
    if file.starts_with('.') {
        return None;
    }
    let (stem, extension) = file.rsplit_once('.')?;
    matches!(extension, "wasm" | "toml").then(|| stem.to_owned())
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
