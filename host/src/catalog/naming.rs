//! The names tools and prompts are exposed under when plugins collide.

use std::collections::BTreeMap;

use crate::plugin::Plugin;

/// Characters MCP allows in a tool name.
fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// The name `plugin`'s `name` is exposed under in `taken`: `<prefix>_<name>`
/// when its manifest sets a prefix, else its own when free, else
/// `<plugin>_<name>`; `None` (logged) when that is taken too.
pub fn claim<T>(taken: &BTreeMap<String, T>, plugin: &Plugin, name: &str, kind: &str) -> Option<String> {
    let plugin_name = &*plugin.name;
    let candidate = match &plugin.manifest.prefix {
        Some(prefix) => format!("{prefix}_{name}"),
        None if !taken.contains_key(name) => return Some(name.to_owned()),
        None => {
            let prefix: String = plugin_name.chars().map(|c| if allowed(c) { c } else { '_' }).collect();
            let renamed = format!("{prefix}_{name}");
            tracing::warn!(plugin = plugin_name, name, exposed_as = %renamed, "{kind} name already taken by another plugin; renamed");
            renamed
        }
    };
    if taken.contains_key(&candidate) {
        tracing::error!(
            plugin = plugin_name,
            name,
            "{kind} name {candidate} is taken too; skipped"
        );
        return None;
    }
    Some(candidate)
}
