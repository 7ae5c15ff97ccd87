//! Keeps the catalog in step with the plugins directory: the first load at
//! start, then a watcher (inotify through `notify`, no polling) that reloads a
//! plugin whenever its `.wasm` or its manifest changes, appears or goes away.
//!
//! Events are debounced: a burst (an editor's temp-file-and-rename, a build
//! writing in pieces) reloads each affected plugin once. A new version is
//! compiled and validated before it replaces anything; one that fails keeps
//! the last good version serving and is reported.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result};
use notify::{RecursiveMode, Watcher};
use serde_json::json;
use tokio::sync::mpsc;

use crate::plugins::{PluginRuntime, plugin_name, wasm_files};
use crate::session::Server;

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

/// Loads every plugin in `dir` (in name order), each entering the catalog as
/// soon as it is ready, then marks the start as done.
pub async fn load_all(server: Arc<Server>, runtime: Arc<PluginRuntime>, dir: PathBuf) {
    for path in wasm_files(&dir) {
        reload(&server, &runtime, &dir, &plugin_name(&path)).await;
    }
    let counts = &runtime.cache.counts;
    tracing::info!(
        dir = %dir.display(),
        plugins = server.catalog().plugins.len(),
        compiled = counts.compiled.load(Ordering::Relaxed),
        from_cache = counts.from_cache.load(Ordering::Relaxed),
        "plugins directory loaded"
    );
    server.startup_done();
}

/// Watches `dir` for as long as the process runs.
pub fn watch(server: Arc<Server>, runtime: Arc<PluginRuntime>, dir: PathBuf) -> Result<()> {
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
    tokio::spawn(async move {
        let _watcher = watcher;
        while let Some(first) = changed.recv().await {
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
            let names = burst.names;
            for name in names {
                wait_until_settled(&dir.join(format!("{name}.wasm"))).await;
                reload(&server, &runtime, &dir, &name).await;
            }
        }
    });
    Ok(())
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

/// Brings plugin `name` in line with the directory: load it, replace it, or remove it.
async fn reload(server: &Server, runtime: &PluginRuntime, dir: &Path, name: &str) {
    // One reload at a time, so the start and the watcher never race: a slow
    // load of an old version finishing after a fast load of its replacement
    // would put the old version back.
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _turn = ONE_AT_A_TIME.lock().await;
    let path = dir.join(format!("{name}.wasm"));
    if !path.is_file() {
        if server.catalog().plugins.iter().any(|p| &*p.name == name) {
            tracing::info!(plugin = name, "plugin removed");
        }
        server.set_plugin(name, None);
        return;
    }
    match runtime.load(&path).await {
        Ok(plugin) => {
            tracing::info!(
                plugin = name, path = %path.display(),
                tools = plugin.listing.tools.len(), resources = plugin.listing.resources.len(),
                templates = plugin.listing.templates.len(), prompts = plugin.listing.prompts.len(),
                "plugin loaded"
            );
            server.set_plugin(name, Some(plugin));
        }
        Err(e) => {
            let kept = server.catalog().plugins.iter().any(|p| &*p.name == name);
            let outcome = if kept {
                "the last good version keeps serving"
            } else {
                "the plugin is not served"
            };
            tracing::error!(plugin = name, path = %path.display(), "plugin failed to load ({outcome}): {e:#}");
            server.report_plugin_error(
                name,
                json!({ "message": format!("plugin failed to load; {outcome}"), "path": path.display().to_string(), "error": format!("{e:#}") }),
            );
        }
    }
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
