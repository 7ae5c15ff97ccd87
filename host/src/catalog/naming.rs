//! The names tools and prompts are exposed under when plugins collide.

use std::collections::BTreeMap;

/// Characters MCP allows in a tool name.
fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// The name `plugin`'s `name` is exposed under in `taken`: its own when free,
/// else `<plugin>_<name>`; `None` (logged) when both are taken.
pub fn claim<T>(
    taken: &BTreeMap<String, T>,
    plugin: &str,
    name: &str,
    kind: &str,
) -> Option<String> {
    if !taken.contains_key(name) {
        return Some(name.to_owned());
    }
    let prefix: String = plugin
        .chars()
        .map(|c| if allowed(c) { c } else { '_' })
        .collect();
    let renamed = format!("{prefix}_{name}");
    if taken.contains_key(&renamed) {
        tracing::error!(
            plugin,
            name,
            "{kind} name collides and so does {renamed}; skipped"
        );
        return None;
    }
    tracing::warn!(plugin, name, exposed_as = %renamed, "{kind} name already taken by another plugin; renamed");
    Some(renamed)
}
