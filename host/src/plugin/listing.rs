//! What a plugin lists, and the entries refused from it at load: a tool or
//! prompt whose name breaks MCP's rule, or repeats one the plugin already
//! listed, is left out (the rest of the plugin serves), with a message naming
//! the plugin and the entry.

use std::collections::HashSet;

use crate::contract::bindings::{prompts, resources, tools};
use crate::protocol::name_problem;

/// What a plugin listed when it was loaded, less the entries refused.
#[derive(Default)]
pub struct Listing {
    pub tools: Vec<tools::Tool>,
    pub resources: Vec<resources::Resource>,
    pub templates: Vec<resources::ResourceTemplate>,
    pub prompts: Vec<prompts::Prompt>,
    /// Why each refused entry was left out, naming the plugin and the entry.
    pub refused: Vec<String>,
}

impl Listing {
    /// Leaves out of `plugin`'s tools and prompts those with an invalid
    /// name and those that repeat an earlier name, each logged and kept in
    /// [`Listing::refused`].
    pub fn refuse_bad_names(&mut self, plugin: &str) {
        let mut refused = Vec::new();
        retain_valid(&mut self.tools, |t| &t.name, "tool", plugin, &mut refused);
        retain_valid(&mut self.prompts, |p| &p.name, "prompt", plugin, &mut refused);
        for why in &refused {
            tracing::error!(plugin, "{why}");
        }
        self.refused.extend(refused);
    }
}

/// Keeps the entries of `entries` whose name is valid and not seen before in
/// it; says why of every other one in `refused`.
fn retain_valid<T>(
    entries: &mut Vec<T>,
    name: impl Fn(&T) -> &String,
    kind: &str,
    plugin: &str,
    refused: &mut Vec<String>,
) {
    let mut seen = HashSet::new();
    entries.retain(|entry| {
        let name = name(entry);
        let problem = match name_problem(name) {
            Some(problem) => Some(format!(
                "{problem}; a {kind} name is 1 to 128 of A-Z a-z 0-9 _ - . (MCP 2025-11-25)"
            )),
            None if !seen.insert(name.clone()) => Some(format!(
                "plugin {plugin} already lists a {kind} named {name}; only the first is served"
            )),
            None => None,
        };
        match problem {
            Some(problem) => {
                refused.push(format!("the {kind} {name:?} of plugin {plugin} is refused: {problem}"));
                false
            }
            None => true,
        }
    });
}
