//! The status page's data (`/status.json`): a snapshot of the process the
//! transports serve as it is handed to them.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::Hub;
use crate::metrics::METRICS;
use crate::plugin::Plugin;

impl Hub {
    /// The status page's data, a snapshot of the process now: each loaded
    /// plugin (its version hash, what it serves, its grants and limits),
    /// then what `Metrics::status` (`metrics.rs`) keeps.
    pub fn status(&self) -> Value {
        let catalog = self.catalog();
        let mut plugins: BTreeMap<String, Value> = BTreeMap::new();
        for (name, tool) in &catalog.tools {
            entry(&mut plugins, &tool.plugin)["tools"]
                .as_array_mut()
                .expect("a list")
                .push(json!(name));
        }
        for prompt in catalog.prompts.values() {
            bump(&mut entry(&mut plugins, &prompt.plugin)["prompts"]);
        }
        let resources = catalog.resources.values().map(|r| &r.plugin);
        for plugin in resources.chain(catalog.templates.values().map(|t| &t.plugin)) {
            bump(&mut entry(&mut plugins, plugin)["resources"]);
        }
        let mut status = METRICS.status();
        status["plugins"] = json!(plugins);
        status
    }
}

/// The entry of `plugin` in `plugins`, described on first sight.
fn entry<'a>(plugins: &'a mut BTreeMap<String, Value>, plugin: &Plugin) -> &'a mut Value {
    plugins
        .entry(plugin.name.to_string())
        .or_insert_with(|| describe_plugin(plugin))
}

fn bump(count: &mut Value) {
    *count = json!(count.as_u64().unwrap_or(0) + 1);
}

/// A plugin as the status page shows it; environment variables by name only.
fn describe_plugin(plugin: &Plugin) -> Value {
    let manifest = &plugin.manifest;
    let mut grants: Vec<String> = manifest
        .directories
        .iter()
        .map(|d| {
            format!(
                "{} → {}{}",
                d.host.display(),
                d.guest,
                if d.writable { " (writable)" } else { "" }
            )
        })
        .collect();
    grants.extend(manifest.env.keys().map(|name| format!("env {name}")));
    grants.extend(manifest.network.allow.iter().map(|rule| format!("network {rule}")));
    grants.extend(
        manifest
            .keyvalue
            .grants()
            .iter()
            .map(|bucket| format!("keyvalue {bucket}")),
    );
    json!({
        "sha256": plugin.sha256,
        "path": plugin.path.display().to_string(),
        "tools": [],
        "prompts": 0,
        "resources": 0,
        "grants": if grants.is_empty() { "none".to_owned() } else { grants.join("; ") },
        "limits": {
            "fuel": plugin.limits.fuel,
            "timeout_secs": plugin.limits.timeout_secs,
            "memory_mib": plugin.limits.memory_mib,
        },
    })
}
