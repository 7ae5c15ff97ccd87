//! The operator's secrets and the headers they become on plugins' outgoing
//! HTTP requests. A secret is named in the config file with where its value
//! is read from ([`sources`]: an environment variable, or a file reread when
//! it changes); a binding says which plugin's requests to which target
//! carry which secret, in which header form, or an access token the host
//! obtains itself ([`upstream_oauth`]). The plugin's manifest names none of
//! it and its WASI context holds none of it: the HTTP gate
//! (`crate::sandbox::http`) asks [`Secrets`] for a plugin's bindings and adds
//! the header after its egress checks. Values are never printed; each use
//! leaves one audit line (target `wasm_mcp::secrets::audit`).

mod bindings;
mod sources;
mod upstream_oauth;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use anyhow::Result;

use crate::config::Settings;
use crate::sandbox::{Credential, Credentials, Destination};
use bindings::Bound;
use sources::Secret;

/// Every binding, by the plugin it is for.
#[derive(Default)]
pub struct Secrets {
    by_plugin: HashMap<String, Arc<PluginBindings>>,
}

impl Secrets {
    /// The secrets and bindings of `settings`, every secret read now; the
    /// first secret or binding that does not hold together is an error
    /// naming it.
    pub fn start(settings: &Settings) -> Result<Secrets> {
        let mut secrets = BTreeMap::new();
        for (name, source) in &settings.secrets {
            secrets.insert(name.clone(), Arc::new(Secret::load(name, source)?));
        }
        let mut by_plugin: HashMap<String, Vec<Bound>> = HashMap::new();
        for (name, binding) in &settings.bindings {
            let bound = Bound::check(name, binding, &secrets)?;
            by_plugin.entry(bound.plugin().to_owned()).or_default().push(bound);
        }
        if !by_plugin.is_empty() {
            tracing::info!(
                secrets = secrets.len(),
                bindings = settings.bindings.len(),
                "the host adds the operator's credentials to plugins' requests to the targets bound to them"
            );
        }
        Ok(Secrets {
            by_plugin: by_plugin
                .into_iter()
                .map(|(plugin, bound)| (plugin, Arc::new(PluginBindings { bound })))
                .collect(),
        })
    }

    /// The credentials bound to `plugin`'s requests, if any.
    pub fn for_plugin(&self, plugin: &str) -> Option<Arc<dyn Credentials>> {
        self.by_plugin
            .get(plugin)
            .map(|bindings| bindings.clone() as Arc<dyn Credentials>)
    }
}

/// The bindings of one plugin, in the order of their names: a request
/// carries the first that matches it.
struct PluginBindings {
    bound: Vec<Bound>,
}

impl fmt::Debug for PluginBindings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.bound.iter().map(Bound::name)).finish()
    }
}

impl Credentials for PluginBindings {
    fn bound(&self, destination: &Destination<'_>) -> Option<&dyn Credential> {
        self.bound
            .iter()
            .find(|bound| bound.matches(destination))
            .map(|bound| bound as &dyn Credential)
    }
}
