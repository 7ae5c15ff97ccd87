//! The names tools, prompts and resources are served under when plugins
//! collide, and the renames that follow.
//!
//! A name served by a plugin stays with it for as long as the plugin still
//! lists it: a plugin that arrives later never takes it, whatever its file
//! name sorts as, and gets `<plugin>_<name>` instead. Among plugins that
//! arrive together (the start, a directory replaced), the first in name
//! order gets the name. A manifest's `prefix` exposes all of a plugin's
//! names as `<prefix>_<name>`, which is no rename.

use std::collections::BTreeMap;
use std::fmt;

use crate::plugin::Plugin;
use crate::protocol::{name_char, name_problem};

/// An entry served under another name than its own, because another plugin
/// holds its own name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rename {
    /// `tool` or `prompt`.
    pub kind: &'static str,
    /// The plugin whose entry is renamed.
    pub plugin: String,
    /// The name the plugin gives it.
    pub name: String,
    /// The name clients call it by.
    pub served_as: String,
    /// The plugin that serves `name`.
    pub holder: String,
}

impl fmt::Display for Rename {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the {kind} {name} of plugin {plugin} is served as {served_as}: plugin {holder} already serves {name}; \
             rename one of the two, or set `prefix` in a manifest",
            kind = self.kind,
            name = self.name,
            plugin = self.plugin,
            served_as = self.served_as,
            holder = self.holder,
        )
    }
}

/// Who serves which name of one kind (tools, prompts, resource URIs,
/// resource templates) in the catalog being built.
pub struct Names {
    kind: &'static str,
    /// Names the previous catalog served under their own name, by plugins
    /// that still list them: their holders keep them.
    held: BTreeMap<String, String>,
    /// Names given out so far in this catalog, with the plugin each went to.
    given: BTreeMap<String, String>,
    renames: Vec<Rename>,
}

impl Names {
    /// The names of `kind`, where `previous` are the names the previous
    /// catalog served (name, plugin, the plugin's own name for it) and
    /// `still_lists` tells whether a plugin of the new set lists an own name.
    pub fn new<'a>(
        kind: &'static str,
        previous: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>,
        still_lists: impl Fn(&str, &str) -> bool,
    ) -> Self {
        let held = previous
            .into_iter()
            .filter(|(served, plugin, own)| served == own && still_lists(plugin, own))
            .map(|(served, plugin, _)| (served.to_owned(), plugin.to_owned()))
            .collect();
        Self {
            kind,
            held,
            given: BTreeMap::new(),
            renames: Vec::new(),
        }
    }

    /// The plugin other than `plugin` that holds or was given `name`, if any.
    fn holder(&self, name: &str, plugin: &str) -> Option<&str> {
        self.given
            .get(name)
            .or_else(|| self.held.get(name).filter(|holder| *holder != plugin))
            .map(String::as_str)
    }

    /// The name `plugin`'s `name` is served under: `<prefix>_<name>` when
    /// its manifest sets a prefix, else its own unless another plugin holds
    /// it, else `<plugin>_<name>` (a rename); `None` (logged) when that is
    /// held too.
    pub fn claim(&mut self, plugin: &Plugin, name: &str) -> Option<String> {
        let plugin_name = &*plugin.name;
        let (candidate, holder) = match (&plugin.manifest.prefix, self.holder(name, plugin_name)) {
            (Some(prefix), _) => (format!("{prefix}_{name}"), None),
            (None, None) => (name.to_owned(), None),
            (None, Some(holder)) => {
                let prefix: String = plugin_name
                    .chars()
                    .map(|c| if name_char(c) { c } else { '_' })
                    .collect();
                (format!("{prefix}_{name}"), Some(holder.to_owned()))
            }
        };
        if let Some(other) = self.holder(&candidate, plugin_name) {
            tracing::error!(
                plugin = plugin_name,
                name,
                holder = other,
                "the {kind} {name} of plugin {plugin_name} is not served: its name {candidate} is plugin {other}'s; \
                 rename one of the two, or set `prefix` in a manifest",
                kind = self.kind,
            );
            return None;
        }
        if let Some(problem) = name_problem(&candidate) {
            tracing::error!(
                plugin = plugin_name,
                name,
                "the {kind} {name} of plugin {plugin_name} is not served: as {candidate}, {problem}; \
                 shorten its name or the manifest's prefix",
                kind = self.kind,
            );
            return None;
        }
        if let Some(holder) = holder {
            self.renames.push(Rename {
                kind: self.kind,
                plugin: plugin_name.to_owned(),
                name: name.to_owned(),
                served_as: candidate.clone(),
                holder,
            });
        }
        self.given.insert(candidate.clone(), plugin_name.to_owned());
        Some(candidate)
    }

    /// Takes `key` (a resource URI or template) for `plugin` unless another
    /// plugin holds it; a key held by another is logged and not served.
    pub fn take(&mut self, plugin: &Plugin, key: &str) -> bool {
        if let Some(holder) = self.holder(key, &plugin.name) {
            tracing::warn!(
                plugin = %plugin.name, holder,
                "the {} {key} of plugin {} is not served twice: plugin {holder} serves it already",
                self.kind, plugin.name
            );
            return false;
        }
        self.given.insert(key.to_owned(), plugin.name.to_string());
        true
    }

    /// The renames made.
    pub fn into_renames(self) -> Vec<Rename> {
        self.renames
    }
}
