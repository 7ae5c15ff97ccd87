//! Keeps the served plugins in step with the plugins directory: the
//! [`Reloader`] owns the set of loaded plugins, loads the directory at start,
//! then reloads the plugins the watcher ([`watch`]) says changed and
//! publishes the catalog of the new set: once per burst of changes, however
//! many plugins it touched, so a client never sees half of a change.
//!
//! What is followed: the plugins directory as a path, not as an inode (it
//! may be deleted and recreated, or be a symlink that is swapped), and each
//! plugin by where its files lead once symlinks are followed: its `.wasm`,
//! its manifest and its granted directories. A swapped symlink they go
//! through (a release link, the `..data` link of a Kubernetes volume)
//! reloads the plugins it moved, manifests and grants re-read with them.
//!
//! A new version is compiled and validated before it replaces anything; one
//! that fails keeps the last good version serving and is reported.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Result;
use serde_json::json;
use tokio::sync::Mutex;

use crate::call::ChangedLists;
use crate::catalog::Catalog;
use crate::metrics::METRICS;
use crate::plugin::Plugin;
use crate::protocol::LogLevel;
use crate::runtime::{PluginRuntime, plugin_name};
use crate::session::Hub;

mod watch;

/// The logger of what the host says to clients about the plugins directory.
const LOGGER: &str = "wasm-mcp";

/// Quiet time that ends a burst of events, and that follows a round of
/// relisting.
const DEBOUNCE: Duration = Duration::from_millis(150);

/// The plugins directory and the plugins loaded from it.
pub struct Reloader {
    hub: Arc<Hub>,
    runtime: Arc<PluginRuntime>,
    dir: PathBuf,
    /// Holding it is the turn to change it: one reload at a time, so a slow
    /// load of an old version that finishes after a fast load of its
    /// replacement never puts the old version back.
    served: Mutex<Served>,
}

/// The loaded plugins, and where each plugin's files led at its last load.
#[derive(Default)]
struct Served {
    plugins: BTreeMap<String, Arc<Plugin>>,
    /// Every plugin loaded or tried (and still present): where its `.wasm`
    /// and manifest led, then the directories its served version is granted,
    /// symlinks followed.
    targets: BTreeMap<String, Vec<Option<PathBuf>>>,
}

impl Served {
    /// Where plugin `name` leads now (see [`Served::targets`]).
    fn targets_now(&self, name: &str, wasm: &Path) -> Vec<Option<PathBuf>> {
        let mut targets = resolve(own_files(wasm));
        targets.extend(resolve(self.granted(name)));
        targets
    }

    /// The host directories the served version of `name` is granted.
    fn granted(&self, name: &str) -> Vec<PathBuf> {
        self.plugins
            .get(name)
            .map(|p| p.manifest.directories.iter().map(|d| d.host.clone()).collect())
            .unwrap_or_default()
    }
}

impl Reloader {
    /// A reloader of the plugins in `dir`, loaded by `runtime`, served through `hub`.
    pub fn new(hub: Arc<Hub>, runtime: Arc<PluginRuntime>, dir: PathBuf) -> Arc<Self> {
        Arc::new(Self {
            hub,
            runtime,
            dir,
            served: Mutex::new(Served::default()),
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
        let plugins = self.served.lock().await.plugins.len();
        tracing::info!(
            dir = %self.dir.display(),
            plugins,
            compiled = counts.compiled.load(Ordering::Relaxed),
            from_cache = counts.from_cache.load(Ordering::Relaxed),
            "plugins directory loaded"
        );
        self.hub.startup_done();
    }

    /// Follows the directory for as long as the process runs (see [`watch`]).
    pub fn watch(self: &Arc<Self>) -> Result<()> {
        watch::follow(self.clone())
    }

    /// The path of plugin `name`'s component.
    fn wasm_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.wasm"))
    }

    /// Every plugin loaded or tried from the directory that was still there
    /// at its last reload.
    async fn known(&self) -> BTreeSet<String> {
        self.served.lock().await.targets.keys().cloned().collect()
    }

    /// The plugins to reload after the layout of the directory changed. With
    /// `everything` (the directory is new: recreated, or its path leads
    /// elsewhere) every plugin known or present; otherwise those whose files
    /// or granted directories lead elsewhere than at their last load (a
    /// symlink they go through was swapped).
    async fn moved(&self, everything: bool) -> BTreeSet<String> {
        if everything {
            let mut names = self.known().await;
            names.extend(wasm_files(&self.dir).iter().map(|path| plugin_name(path)));
            return names;
        }
        let served = self.served.lock().await;
        served
            .targets
            .iter()
            .filter(|(name, then)| served.targets_now(name, &self.wasm_path(name)) != **then)
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Lists a plugin again whenever it says its lists may have changed
    /// (`host::lists-changed`), for as long as the process runs. What plugins
    /// say while one round is under way, or within [`DEBOUNCE`] after it, is
    /// handled in the next round, once per plugin.
    pub fn relist_on_request(self: &Arc<Self>) {
        let reloader = self.clone();
        tokio::spawn(async move {
            loop {
                let mut relists = reloader.hub.next_relists().await;
                // A relist is about lists, never about presence: a plugin whose
                // file is gone (the directory is being replaced, or within its
                // grace) is left to the watcher.
                relists.retain(|name, _| reloader.wasm_path(name).is_file());
                tracing::debug!(?relists, "listing plugins again, as they asked");
                if !relists.is_empty() {
                    reloader.reload(relists).await;
                }
                tokio::time::sleep(DEBOUNCE).await;
            }
        });
    }

    /// Brings the named plugins in line with the directory: loads, replaces
    /// or removes each, then publishes the catalog of the new set once, so
    /// clients never see part of a change; it announces the lists that
    /// differ and those the reloaded plugins said changed (`relisted`).
    async fn reload(&self, changes: BTreeMap<String, ChangedLists>) {
        let mut served = self.served.lock().await;
        let mut changed = false;
        let mut replaced = BTreeSet::new();
        let mut relisted = ChangedLists::default();
        for (name, lists) in changes {
            let path = self.wasm_path(&name);
            if !path.is_file() {
                served.targets.remove(&name);
                if served.plugins.remove(&name).is_some() {
                    tracing::info!(plugin = name, "plugin removed");
                    changed = true;
                }
                continue;
            }
            // Taken before the load: a swap during it is seen as a move afterwards.
            let mut targets = resolve(own_files(&path));
            match self.runtime.load(&path).await {
                Ok(plugin) => {
                    tracing::info!(
                        plugin = name, path = %path.display(),
                        tools = plugin.listing.tools.len(), resources = plugin.listing.resources.len(),
                        templates = plugin.listing.templates.len(), prompts = plugin.listing.prompts.len(),
                        "plugin loaded"
                    );
                    METRICS.plugin_load(&name, None);
                    if served.plugins.insert(name.clone(), plugin).is_some() {
                        replaced.insert(name.clone());
                    }
                    changed = true;
                    relisted = relisted.union(lists);
                }
                Err(e) => {
                    let outcome = if served.plugins.contains_key(&name) {
                        "the last good version keeps serving"
                    } else {
                        "the plugin is not served"
                    };
                    tracing::error!(plugin = name, path = %path.display(), "plugin failed to load ({outcome}): {e:#}");
                    METRICS.plugin_load(&name, Some(&format!("{e:#}")));
                    self.hub.log_to_all(
                        LogLevel::Error,
                        &name,
                        json!({ "message": format!("plugin failed to load; {outcome}"), "path": path.display().to_string(), "error": format!("{e:#}") }),
                    );
                }
            }
            targets.extend(resolve(served.granted(&name)));
            served.targets.insert(name, targets);
        }
        METRICS.reloaded(served.plugins.len());
        if changed {
            let previous = self.hub.catalog();
            let catalog = Catalog::build(served.plugins.values(), &previous);
            self.announce_renames(&previous, &catalog);
            self.hub.publish(catalog, &replaced, relisted);
        }
    }

    /// Says, on stderr and to every client, each rename `catalog` makes that
    /// `previous` did not: once per change, not once per reload.
    fn announce_renames(&self, previous: &Catalog, catalog: &Catalog) {
        for rename in catalog.renames.iter().filter(|r| !previous.renames.contains(r)) {
            tracing::warn!(
                plugin = rename.plugin,
                name = rename.name,
                served_as = rename.served_as,
                holder = rename.holder,
                "{rename}"
            );
            self.hub.log_to_all(
                LogLevel::Warning,
                LOGGER,
                json!({
                    "message": rename.to_string(),
                    "kind": rename.kind,
                    "plugin": rename.plugin,
                    "name": rename.name,
                    "servedAs": rename.served_as,
                    "servedBy": rename.holder,
                }),
            );
        }
    }
}

/// The `.wasm` files directly inside `dir`, sorted by plugin name; none
/// (logged) when the directory cannot be read.
fn wasm_files(dir: &Path) -> Vec<PathBuf> {
    plugin_files(dir).unwrap_or_else(|e| {
        tracing::error!(dir = %dir.display(), "cannot read the plugins directory: {e}");
        Vec::new()
    })
}

/// The `.wasm` files directly inside `dir` (the plugins served from it),
/// sorted by plugin name: the order of the start.
pub fn plugin_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "wasm") && path.is_file())
        .collect();
    files.sort_by_cached_key(|path| plugin_name(path));
    Ok(files)
}

/// A plugin's own files: its `.wasm` and its manifest.
fn own_files(wasm: &Path) -> [PathBuf; 2] {
    [wasm.to_path_buf(), wasm.with_extension("toml")]
}

/// Where `paths` lead once symlinks are followed (`None`: nowhere).
fn resolve(paths: impl IntoIterator<Item = PathBuf>) -> Vec<Option<PathBuf>> {
    paths.into_iter().map(|path| std::fs::canonicalize(path).ok()).collect()
}
