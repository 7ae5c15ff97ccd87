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
//!
//! The lockfile (`plugins.lock`, see [`crate::registry`]) is followed with
//! the directory: its plugins are pulled by digest (from the store when it
//! holds them, several at once) and served beside the folder's files; an
//! edit of it adds, replaces and removes plugins as a file drop does. A name
//! both a file and a lock entry give serves neither, said once per change.

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
use crate::registry::lockfile::{LOCKFILE, Locked, Lockfile};
use crate::registry::{Pulled, Registry};
use crate::runtime::{PluginRuntime, plugin_name};
use crate::server::Hub;
use crate::trust::Grants;
use crate::trust::grants::redacted;

mod policy_watch;
mod revocations;
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
    /// Where the lockfile's plugins come from.
    registry: Registry,
    /// The lockfile as last read (an unreadable one leaves the previous).
    lock: std::sync::Mutex<Lockfile>,
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
    /// A reloader of the plugins in `dir` (its files and its lockfile's
    /// entries, pulled through `registry`), loaded by `runtime`, served through `hub`.
    pub fn new(hub: Arc<Hub>, runtime: Arc<PluginRuntime>, dir: PathBuf, registry: Registry) -> Arc<Self> {
        Arc::new(Self {
            hub,
            runtime,
            dir,
            registry,
            lock: std::sync::Mutex::new(Lockfile::default()),
            served: Mutex::new(Served::default()),
        })
    }

    /// Loads every plugin in the directory (in name order), each entering the
    /// catalog as soon as it is ready, then those of its lockfile (pulled
    /// together, entering the catalog together), then marks the start as done.
    pub async fn load_all(self: Arc<Self>) {
        let mut locked = self.reread_lock();
        let files = wasm_files(&self.dir);
        for path in &files {
            self.reload(BTreeMap::from([(plugin_name(path), ChangedLists::default())]))
                .await;
        }
        locked.retain(|name| !files.contains(&self.wasm_path(name)));
        if !locked.is_empty() {
            self.reload(locked.into_iter().map(|name| (name, ChangedLists::default())).collect())
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

    /// Follows the directory, and the trust policy's file if there is one,
    /// for as long as the process runs (see [`watch`], [`policy_watch`]).
    pub fn watch(self: &Arc<Self>) -> Result<()> {
        if let Some(path) = self.registry.policy_path() {
            policy_watch::follow(self.clone(), path.to_owned())?;
        }
        watch::follow(self.clone())
    }

    /// The path of plugin `name`'s component.
    fn wasm_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.wasm"))
    }

    /// Where plugin `name` comes from now.
    fn source(&self, name: &str) -> Source {
        let path = self.wasm_path(name);
        let locked = self.lock.lock().expect("not poisoned").plugins.get(name).cloned();
        match (path.is_file(), locked) {
            (true, None) => Source::File(path),
            (true, Some(locked)) => Source::Twice(path, locked),
            (false, Some(locked)) => Source::Locked(locked),
            (false, None) => Source::Gone,
        }
    }

    /// Reads the lockfile again (none when the directory is gone): the
    /// plugins whose entries it added, changed or removed. An unreadable
    /// lockfile is reported and changes nothing.
    fn reread_lock(&self) -> BTreeSet<String> {
        let path = Lockfile::path(&self.dir);
        let lock = if self.dir.is_dir() {
            match Lockfile::read(&self.dir) {
                Ok(lock) => lock,
                Err(e) => {
                    tracing::error!(path = %path.display(), "the lockfile is not used (its plugins keep serving as they were): {e:#}");
                    self.hub.log_to_all(
                        LogLevel::Error,
                        LOGGER,
                        json!({ "message": "the lockfile is not used; its plugins keep serving as they were", "path": path.display().to_string(), "error": format!("{e:#}") }),
                    );
                    return BTreeSet::new();
                }
            }
        } else {
            Lockfile::default()
        };
        let mut current = self.lock.lock().expect("not poisoned");
        let names: BTreeSet<String> = (current.plugins.keys().chain(lock.plugins.keys()))
            .chain(current.files.keys().chain(lock.files.keys()))
            .cloned()
            .collect();
        let changed: BTreeSet<String> = names
            .into_iter()
            .filter(|name| {
                current.plugins.get(name) != lock.plugins.get(name) || current.files.get(name) != lock.files.get(name)
            })
            .collect();
        if !changed.is_empty() {
            tracing::info!(path = %path.display(), plugins = lock.plugins.len(), changed = ?changed, "lockfile read");
        }
        METRICS.held_updates(
            lock.plugins
                .iter()
                .filter_map(|(name, locked)| {
                    let pending = locked.pending.as_ref()?;
                    let asks = pending.asks.iter().map(|ask| redacted(ask)).collect();
                    Some((name.clone(), (pending.digest.clone(), asks)))
                })
                .collect(),
        );
        *current = lock;
        changed
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

    /// Reads the digests revoked through the shared state store before the
    /// first load, and follows their changes (see [`revocations`]).
    pub async fn follow_revocations(self: &Arc<Self>) {
        revocations::follow(self.clone()).await;
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
                relists.retain(|name, _| !matches!(reloader.source(name), Source::Gone));
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
        let sources: BTreeMap<String, Source> = changes.keys().map(|name| (name.clone(), self.source(name))).collect();
        let locked = sources
            .iter()
            .filter_map(|(name, source)| match source {
                Source::Locked(locked) => Some((name.clone(), locked.clone())),
                _ => None,
            })
            .collect();
        let mut pulled = self.registry.pull_all(locked).await;
        for ((name, lists), (_, source)) in changes.into_iter().zip(sources) {
            let path = self.wasm_path(&name);
            let (loaded, origin) = match source {
                Source::Gone => {
                    served.targets.remove(&name);
                    if served.plugins.remove(&name).is_some() {
                        tracing::info!(plugin = name, "plugin removed");
                        changed = true;
                    }
                    continue;
                }
                Source::Twice(path, locked) => {
                    // Neither shadows the other: both are withdrawn until one goes.
                    changed |= served.plugins.remove(&name).is_some();
                    let why = anyhow::anyhow!(
                        "{} and the entry {name} of {LOCKFILE} ({}) both name plugin {name}: neither is served \
                         until one of them is removed (or the entry renamed)",
                        path.display(),
                        locked.reference
                    );
                    (Err(why), Origin::File(path))
                }
                Source::File(path) => {
                    let loaded = match self.registry.loose_files_refused() {
                        Some(setting) => Err(loose_file_refused(&path, &setting)),
                        None if self.registry.approves_files() => self.load_approved_file(&name, &path).await,
                        None => self.runtime.load(&path).await,
                    };
                    (loaded, Origin::File(path))
                }
                Source::Locked(locked) => {
                    let loaded = match pulled.remove(&name).expect("every locked plugin was pulled") {
                        Ok(pulled) => self.load_pulled(&name, pulled, &locked).await,
                        Err(e) => Err(e),
                    };
                    (loaded, Origin::Locked(locked))
                }
            };
            // Taken before the load: a swap during it is seen as a move afterwards.
            let mut targets = resolve(own_files(&path));
            match loaded {
                Ok(plugin) => {
                    tracing::info!(
                        plugin = name, from = %origin,
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
                    tracing::error!(plugin = name, from = %origin, "plugin failed to load ({outcome}): {e:#}");
                    METRICS.plugin_load(&name, Some(&format!("{e:#}")));
                    let mut data =
                        json!({ "message": format!("plugin failed to load; {outcome}"), "error": format!("{e:#}") });
                    data[origin.key()] = json!(origin.to_string());
                    self.hub.log_to_all(LogLevel::Error, &name, data);
                }
            }
            targets.extend(resolve(served.granted(&name)));
            served.targets.insert(name, targets);
        }
        METRICS.reloaded(served.plugins.len());
        if changed {
            self.publish(&served, &replaced, relisted);
        }
    }

    /// Publishes the catalog of the plugins `served`, announcing what changed.
    fn publish(&self, served: &Served, replaced: &BTreeSet<String>, relisted: ChangedLists) {
        let previous = self.hub.catalog();
        let catalog = Catalog::build(served.plugins.values(), &previous);
        self.announce_renames(&previous, &catalog);
        self.hub.publish(catalog, replaced, relisted);
    }

    /// Holds every plugin to the trust policy again (it changed): a served
    /// plugin it now refuses (a revoked digest or key, a rule gone) stops
    /// being served, with `list_changed`; one it now lets in is loaded.
    async fn revalidate(&self) {
        let mut withdrawn = false;
        let mut to_load = BTreeMap::new();
        {
            let mut served = self.served.lock().await;
            let mut names: BTreeSet<String> = served.targets.keys().cloned().collect();
            names.extend(self.lock.lock().expect("not poisoned").plugins.keys().cloned());
            for name in names {
                let refusal = match self.source(&name) {
                    Source::Locked(locked) => match crate::registry::reference::parse(&locked.reference) {
                        Ok(reference) => self.registry.verify(&reference, &locked.digest).await.err(),
                        Err(e) => Some(e),
                    },
                    Source::File(path) => self
                        .registry
                        .loose_files_refused()
                        .map(|setting| loose_file_refused(&path, &setting)),
                    _ => None,
                };
                match refusal {
                    Some(e) if served.plugins.remove(&name).is_some() => {
                        tracing::error!(plugin = name, "plugin withdrawn, refused now: {e:#}");
                        METRICS.plugin_load(&name, Some(&format!("{e:#}")));
                        self.hub.log_to_all(
                            LogLevel::Error,
                            &name,
                            json!({ "message": "plugin withdrawn, refused now", "error": format!("{e:#}") }),
                        );
                        withdrawn = true;
                    }
                    None if !served.plugins.contains_key(&name) => {
                        to_load.insert(name, ChangedLists::default());
                    }
                    _ => {}
                }
            }
            if withdrawn {
                METRICS.reloaded(served.plugins.len());
                self.publish(&served, &BTreeSet::new(), ChangedLists::default());
            }
        }
        if !to_load.is_empty() {
            self.reload(to_load).await;
        }
    }

    /// Loads the loose file `path` of plugin `name` if its manifest asks for
    /// no more than the grants approved for it (`--approve-files`).
    async fn load_approved_file(&self, name: &str, path: &Path) -> Result<Arc<Plugin>> {
        let (manifest, _) = crate::manifest::Manifest::for_plugin(path)?;
        let approved = self.lock.lock().expect("not poisoned").files.get(name).cloned();
        let Some(file) = approved else {
            anyhow::bail!(
                "{} has no grants approved in {LOCKFILE}, and loose files are held to theirs (--approve-files): \
                 `wasm-mcp approve {name}` approves what its manifest asks for",
                path.display()
            );
        };
        within_approval(&path.display().to_string(), name, &manifest, &file.approved)?;
        self.runtime.load_with_manifest(path, manifest).await
    }

    /// Loads the pulled plugin `name` under the manifest it was published with.
    async fn load_pulled(&self, name: &str, pulled: Pulled, locked: &Locked) -> Result<Arc<Plugin>> {
        let manifest = pulled.parsed_manifest(name, &self.dir, &locked.reference)?;
        if let Some(approved) = &locked.approved {
            within_approval(
                &format!("{}@{}", locked.reference, locked.digest),
                name,
                &manifest,
                approved,
            )?;
        }
        if let Some(verdict) = &pulled.verdict {
            tracing::info!(plugin = name, digest = locked.digest, "trusted: {verdict}");
        }
        self.runtime
            .load_component(name, &pulled.wasm_path, pulled.wasm, manifest, pulled.skills)
            .await
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

/// Where a plugin comes from.
enum Source {
    /// `NAME.wasm` in the directory.
    File(PathBuf),
    /// An entry of the lockfile.
    Locked(Locked),
    /// Both: neither is served.
    Twice(PathBuf, Locked),
    /// Neither: not served.
    Gone,
}

/// What a loaded (or failed) plugin came from, for messages.
enum Origin {
    File(PathBuf),
    Locked(Locked),
}

impl Origin {
    /// The key it goes under in a message to clients.
    fn key(&self) -> &'static str {
        match self {
            Origin::File(_) => "path",
            Origin::Locked(_) => "reference",
        }
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::File(path) => write!(f, "{}", path.display()),
            Origin::Locked(locked) => write!(f, "{}@{}", locked.reference, locked.digest),
        }
    }
}

/// Refuses `manifest`, of plugin `name` from `what`, when it asks for more
/// than the grants `approved` for it.
fn within_approval(what: &str, name: &str, manifest: &crate::manifest::Manifest, approved: &Grants) -> Result<()> {
    let asks = Grants::of(manifest).growth(approved);
    if !asks.is_empty() {
        anyhow::bail!(
            "{what} asks for more than {LOCKFILE} approved for {name}: {}; `wasm-mcp approve {name}` accepts it",
            asks.iter().map(|ask| redacted(ask)).collect::<Vec<_>>().join(", ")
        );
    }
    Ok(())
}

/// The refusal of the loose file `path` while `setting` asks for signed plugins only.
fn loose_file_refused(path: &Path, setting: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{} is a loose file, and the server serves signed plugins only ({setting}): publish it (`wasm-mcp push`), \
         sign it (`wasm-mcp sign`) and add it by reference (`wasm-mcp add`)",
        path.display()
    )
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
