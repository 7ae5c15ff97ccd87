//! The hub: what every client of the process shares: the catalog of the
//! loaded plugins, the settings, the clients served now (for notifications
//! to all), the calls suspended between rounds and the key that seals their
//! state, and the tasks of the 2026-07-28 tasks extension (whose requests
//! belong to no session).
//! What a plugin announces here is told to the other replicas too (through
//! the state store), and what they announce is told to the clients here.
//!
//! The catalog is immutable and swapped whole: a call that started on one
//! version of a plugin finishes on it, and calls arriving after the swap see
//! the new one. Every swap tells the clients which lists really changed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{Notify, watch};
use tokio_util::task::TaskTracker;

use super::audience::Audience;
use super::sealed_state::Sealer;
use super::suspended::SuspendedCalls;
use crate::call::ChangedLists;
use crate::catalog::Catalog;
use crate::protocol::LogLevel;
use crate::settings::ServerValues;
use crate::state::{Event, StateStore};
use crate::tasks::{ServerTasks, TaskSettings};

/// How long list requests wait for the plugins present at start to load;
/// plugins that take longer appear later through list_changed.
const STARTUP_WAIT: Duration = Duration::from_secs(30);

/// The process's common ground: the catalog its clients are served, the
/// server settings, and every client served now.
pub struct Hub {
    /// The server's settings.
    pub config: ServerValues,
    catalog: RwLock<Arc<Catalog>>,
    started: watch::Sender<bool>,
    /// A list was served before the start finished (the wait ran out), so the
    /// end of the start must be announced.
    served_before_start: AtomicBool,
    /// A reload is under way (see [`Hub::list_cache_ttl_ms`]).
    changing: AtomicBool,
    audiences: Mutex<Vec<Weak<dyn Audience>>>,
    /// Seals the `requestState` of multi round-trip requests.
    pub(crate) sealer: Sealer,
    /// Multi round-trip calls waiting for their client's next round.
    pub(crate) suspended: Arc<SuspendedCalls>,
    /// Plugins that said their lists may have changed, waiting to be listed
    /// again: one entry per plugin, however often it said so.
    relists: Mutex<BTreeMap<String, ChangedLists>>,
    relist_wanted: Notify,
    /// Tasks of the 2026-07-28 tasks extension, and the calls running them.
    pub(crate) tasks: ServerTasks,
    pub(crate) task_runs: TaskTracker,
}

impl Hub {
    /// The hub of a server with settings `config`, keeping its state in `store`.
    ///
    /// # Errors
    ///
    /// Only when the request state key file cannot be used.
    pub fn new(config: ServerValues, store: Arc<StateStore>) -> anyhow::Result<Arc<Self>> {
        let sealer = Sealer::new(
            config.request_state_key.as_deref(),
            Duration::from_secs(config.request_state_ttl_secs),
        )?;
        let suspended = SuspendedCalls::new(config.max_suspended_calls, Duration::from_secs_f64(config.suspend_secs));
        let tasks = ServerTasks::new(TaskSettings::new(&config), store);
        Ok(Arc::new(Self {
            sealer,
            suspended,
            config,
            catalog: RwLock::new(Arc::new(Catalog::default())),
            started: watch::Sender::new(false),
            served_before_start: AtomicBool::new(false),
            changing: AtomicBool::new(false),
            audiences: Mutex::new(Vec::new()),
            relists: Mutex::new(BTreeMap::new()),
            relist_wanted: Notify::new(),
            tasks,
            task_runs: TaskTracker::new(),
        }))
    }

    /// How long a client of the 2026-07-28 revision may cache a list: the
    /// `list_cache_ttl_ms` setting, or 0 while the plugins are changing (the
    /// start, a reload under way), when the list is about to change.
    pub fn list_cache_ttl_ms(&self) -> u64 {
        if *self.started.borrow() && !self.changing.load(Ordering::Relaxed) {
            self.config.list_cache_ttl_ms
        } else {
            0
        }
    }

    /// Whether the plugins present at start are loaded.
    pub fn is_started(&self) -> bool {
        *self.started.borrow()
    }

    /// The state store the server shares with its replicas (or keeps alone).
    pub fn state_store(&self) -> &Arc<crate::state::StateStore> {
        self.tasks.store()
    }

    /// Whether the state store answered the last request made to it.
    pub fn state_store_answers(&self) -> bool {
        self.tasks.store().is_reachable()
    }

    /// The plugins are changing (`true`, a reload has begun) or settled.
    pub fn set_changing(&self, changing: bool) {
        self.changing.store(changing, Ordering::Relaxed);
    }

    /// The catalog served now (which may still be filling at start).
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.read().unwrap().clone()
    }

    /// Marks the plugins present at start as loaded. Changes during the start
    /// are not announced one by one: lists wait for the start to finish.
    pub fn startup_done(&self) {
        self.started.send_replace(true);
        if self.served_before_start.load(Ordering::Relaxed) {
            let empty = Catalog::default();
            self.announce_changes(&empty, &self.catalog(), &BTreeSet::new(), ChangedLists::default());
        }
    }

    /// The catalog, once the plugins present at start are loaded (or the
    /// startup wait is over).
    pub async fn loaded_catalog(&self) -> Arc<Catalog> {
        if *self.started.borrow() {
            return self.catalog();
        }
        let mut started = self.started.subscribe();
        let waited = tokio::time::timeout(STARTUP_WAIT, started.wait_for(|done| *done)).await;
        if waited.is_err() {
            self.served_before_start.store(true, Ordering::Relaxed);
        }
        self.catalog()
    }

    /// Serves `catalog` from now on, and tells every client what changed:
    /// the lists that differ, and the `relisted` ones a plugin said changed;
    /// `replaced_plugins` names the plugins whose new versions it holds
    /// (their subscribed resources are announced as updated).
    pub fn publish(&self, catalog: Catalog, replaced_plugins: &BTreeSet<String>, relisted: ChangedLists) {
        let catalog = Arc::new(catalog);
        let previous = std::mem::replace(&mut *self.catalog.write().unwrap(), catalog.clone());
        if *self.started.borrow() {
            self.announce_changes(&previous, &catalog, replaced_plugins, relisted);
        }
    }

    fn announce_changes(
        &self,
        old: &Catalog,
        new: &Catalog,
        replaced_plugins: &BTreeSet<String>,
        relisted: ChangedLists,
    ) {
        let changed = [
            (
                "notifications/tools/list_changed",
                relisted.tools || listings_differ(&old.tools, &new.tools, |e| &e.listed),
            ),
            (
                "notifications/prompts/list_changed",
                relisted.prompts || listings_differ(&old.prompts, &new.prompts, |e| &e.listed),
            ),
            (
                "notifications/resources/list_changed",
                relisted.resources
                    || listings_differ(&old.resources, &new.resources, |e| &e.listed)
                    || listings_differ(&old.templates, &new.templates, |e| &e.listed)
                    // A skill's files are resources: a changed entry changes them.
                    || listings_differ(&old.skills, &new.skills, |e| &e.listed),
            ),
        ];
        for audience in self.audiences() {
            for (method, _) in changed.iter().filter(|(_, differs)| *differs) {
                audience.announce(method, None);
            }
            if !replaced_plugins.is_empty() {
                for uri in audience.watched_resources() {
                    let served_by = |c: &Catalog| {
                        c.resource_owner(&uri)
                            .is_some_and(|(p, _)| replaced_plugins.contains(&*p.name))
                    };
                    if served_by(old) || served_by(new) {
                        audience.announce("notifications/resources/updated", Some(&uri));
                    }
                }
            }
        }
    }

    /// Tells every session (that wants messages of `level`) what the host
    /// has to say about `logger`: a plugin that failed to load, the plugins
    /// directory.
    pub fn log_to_all(&self, level: LogLevel, logger: &str, data: Value) {
        for audience in self.audiences() {
            audience.log(level, logger, data.clone());
        }
    }

    /// Tells `audience` what changes from now on, for as long as it lives.
    pub fn register(&self, audience: Weak<dyn Audience>) {
        let mut audiences = self.audiences.lock().unwrap();
        audiences.retain(|a| a.strong_count() > 0);
        audiences.push(audience);
    }

    /// The clients served now.
    pub(super) fn audiences(&self) -> Vec<Arc<dyn Audience>> {
        self.audiences
            .lock()
            .unwrap()
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// Plugin `plugin` said its `lists` may have changed: it is listed again
    /// by whoever waits in [`Hub::next_relists`], here and on every replica.
    pub fn relist(&self, plugin: &str, lists: ChangedLists) {
        self.relist_here(plugin, lists);
        self.tell_replicas(Event::ListsChanged {
            plugin: plugin.to_owned(),
            tools: lists.tools,
            prompts: lists.prompts,
            resources: lists.resources,
        });
    }

    pub(super) fn relist_here(&self, plugin: &str, lists: ChangedLists) {
        let mut relists = self.relists.lock().unwrap();
        let wanted = relists.entry(plugin.to_owned()).or_default();
        *wanted = wanted.union(lists);
        drop(relists);
        self.relist_wanted.notify_one();
    }

    /// Waits until a plugin says its lists may have changed, then takes what
    /// every plugin said since the last time.
    pub async fn next_relists(&self) -> BTreeMap<String, ChangedLists> {
        loop {
            self.relist_wanted.notified().await;
            let wanted = std::mem::take(&mut *self.relists.lock().unwrap());
            if !wanted.is_empty() {
                return wanted;
            }
        }
    }

    /// A plugin announced a change: tell every client subscribed to `uri`,
    /// here and on every replica.
    pub fn resource_updated(&self, uri: &str) {
        self.resource_updated_here(uri);
        self.tell_replicas(Event::ResourceUpdated { uri: uri.to_owned() });
    }

    pub(super) fn resource_updated_here(&self, uri: &str) {
        for audience in self.audiences() {
            audience.announce("notifications/resources/updated", Some(uri));
        }
    }
}

impl Hub {
    /// Publishes `event` to the other replicas, if there are any, without
    /// waiting for the store.
    fn tell_replicas(&self, event: Event) {
        let store = self.tasks.store();
        if store.is_shared() {
            let store = store.clone();
            tokio::spawn(async move { store.publish(&event).await });
        }
    }
}

fn listings_differ<E>(old: &BTreeMap<String, E>, new: &BTreeMap<String, E>, listed: impl Fn(&E) -> &Value) -> bool {
    old.len() != new.len()
        || old
            .iter()
            .zip(new)
            .any(|((ka, a), (kb, b))| ka != kb || listed(a) != listed(b))
}
