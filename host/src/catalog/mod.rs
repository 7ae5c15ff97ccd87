//! The catalog: every tool, resource, template and prompt of every loaded
//! plugin, under the names the client sees, rendered once, with pagination.
//!
//! Naming is deterministic: plugins are taken in name order and the first to
//! claim a tool or prompt name keeps it; a later plugin's colliding entry is
//! exposed as `<plugin>_<name>`, and the rename is logged. A manifest's
//! `prefix` exposes all of a plugin's names as `<prefix>_<name>` instead.
//! A resource URI claimed twice stays with the first plugin.

mod naming;
pub mod pagination;
mod uri_template;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::contract::bindings::tools::{self, TaskSupport};
use crate::contract::wire;
use crate::manifest::CacheScope;
use crate::plugin::Plugin;
use crate::protocol::modern::CacheHint;
pub use pagination::Listed;
use uri_template::UriTemplate;

/// A tool as the client sees it, and where calls to it go.
pub struct ToolEntry {
    pub plugin: Arc<Plugin>,
    /// The name the plugin knows it by.
    pub own_name: String,
    /// The `Tool` object for tools/list.
    pub listed: Value,
    pub input: jsonschema::Validator,
    pub output: Option<jsonschema::Validator>,
    pub task_support: TaskSupport,
}

pub struct PromptEntry {
    pub plugin: Arc<Plugin>,
    pub own_name: String,
    pub listed: Value,
    pub required_arguments: Vec<String>,
}

pub struct ResourceEntry {
    pub plugin: Arc<Plugin>,
    pub listed: Value,
    /// How long and by whom a read of it may be cached (the manifest's `[resources."URI"]`).
    pub cache: CacheHint,
}

pub struct TemplateEntry {
    pub plugin: Arc<Plugin>,
    pub listed: Value,
    matcher: UriTemplate,
    /// How long and by whom a read of a URI it matches may be cached.
    pub cache: CacheHint,
}

macro_rules! listed_by_field {
    ($($entry:ty),*) => {$(
        impl Listed for $entry {
            fn listed(&self) -> &Value {
                &self.listed
            }
        }
    )*};
}
listed_by_field!(ToolEntry, PromptEntry, ResourceEntry, TemplateEntry);

/// An immutable view of everything served; replaced whole when plugins change.
#[derive(Default)]
pub struct Catalog {
    pub tools: BTreeMap<String, ToolEntry>,
    pub prompts: BTreeMap<String, PromptEntry>,
    pub resources: BTreeMap<String, ResourceEntry>,
    /// Keyed by URI template.
    pub templates: BTreeMap<String, TemplateEntry>,
}

impl Catalog {
    /// Builds the catalog of `plugins`, taken in name order. Entries whose
    /// metadata is unusable are skipped with an error on stderr.
    pub fn build<'a>(plugins: impl IntoIterator<Item = &'a Arc<Plugin>>) -> Catalog {
        let mut plugins: Vec<&Arc<Plugin>> = plugins.into_iter().collect();
        plugins.sort_by(|a, b| a.name.cmp(&b.name));
        let mut catalog = Catalog::default();
        for plugin in plugins {
            catalog.add_tools(plugin);
            catalog.add_prompts(plugin);
            catalog.add_resources(plugin);
        }
        catalog
    }

    fn add_tools(&mut self, plugin: &Arc<Plugin>) {
        for tool in &plugin.listing.tools {
            let Some(name) = naming::claim(&self.tools, plugin, &tool.name, "tool") else {
                continue;
            };
            match tool_entry(plugin, tool, &name) {
                Ok(entry) => {
                    self.tools.insert(name, entry);
                }
                Err(why) => {
                    tracing::error!(plugin = %plugin.name, tool = %tool.name, "tool skipped: {why}")
                }
            }
        }
    }

    fn add_prompts(&mut self, plugin: &Arc<Plugin>) {
        for prompt in &plugin.listing.prompts {
            let Some(name) = naming::claim(&self.prompts, plugin, &prompt.name, "prompt") else {
                continue;
            };
            match wire::prompt(prompt.clone(), &name) {
                Ok(listed) => {
                    let required_arguments = prompt
                        .arguments
                        .iter()
                        .filter(|a| a.required)
                        .map(|a| a.name.clone())
                        .collect();
                    self.prompts.insert(
                        name,
                        PromptEntry {
                            plugin: plugin.clone(),
                            own_name: prompt.name.clone(),
                            listed,
                            required_arguments,
                        },
                    );
                }
                Err(why) => {
                    tracing::error!(plugin = %plugin.name, prompt = %prompt.name, "prompt skipped: {why}")
                }
            }
        }
    }

    fn add_resources(&mut self, plugin: &Arc<Plugin>) {
        for resource in &plugin.listing.resources {
            if let Some(owner) = self.resources.get(&resource.uri) {
                tracing::warn!(
                    plugin = %plugin.name, uri = %resource.uri, owner = %owner.plugin.name,
                    "resource URI already served by another plugin; keeping the first"
                );
                continue;
            }
            match wire::resource(resource.clone()) {
                Ok(listed) => {
                    self.resources.insert(
                        resource.uri.clone(),
                        ResourceEntry {
                            plugin: plugin.clone(),
                            listed,
                            cache: cache_hint(plugin, &resource.uri),
                        },
                    );
                }
                Err(why) => {
                    tracing::error!(plugin = %plugin.name, uri = %resource.uri, "resource skipped: {why}")
                }
            }
        }
        for template in &plugin.listing.templates {
            if self.templates.contains_key(&template.uri_template) {
                tracing::warn!(plugin = %plugin.name, template = %template.uri_template, "resource template already served; keeping the first");
                continue;
            }
            let entry = UriTemplate::parse(&template.uri_template)
                .and_then(|matcher| Ok((matcher, wire::resource_template(template.clone())?)));
            match entry {
                Ok((matcher, listed)) => {
                    self.templates.insert(
                        template.uri_template.clone(),
                        TemplateEntry {
                            plugin: plugin.clone(),
                            listed,
                            matcher,
                            cache: cache_hint(plugin, &template.uri_template),
                        },
                    );
                }
                Err(why) => {
                    tracing::error!(plugin = %plugin.name, template = %template.uri_template, "resource template skipped: {why}")
                }
            }
        }
    }

    /// The plugin that serves `uri` and how long a read may be cached: the
    /// plugin listing it, else the first whose template matches.
    pub fn resource_owner(&self, uri: &str) -> Option<(&Arc<Plugin>, CacheHint)> {
        if let Some(entry) = self.resources.get(uri) {
            return Some((&entry.plugin, entry.cache));
        }
        self.templates
            .values()
            .find(|t| t.matcher.matches(uri))
            .map(|t| (&t.plugin, t.cache))
    }
}

/// The caching hint the plugin's manifest sets for the resource or template `key`
/// (its URI or URI template); by default none: `ttlMs` 0, `private`.
fn cache_hint(plugin: &Plugin, key: &str) -> CacheHint {
    let settings = plugin.manifest.resources.get(key).cloned().unwrap_or_default();
    CacheHint {
        ttl_ms: settings.ttl_ms,
        public: settings.cache_scope == CacheScope::Public,
    }
}

/// A tool's schemas as the plugin declared them, parsed and compiled.
pub struct ToolSchemas {
    pub input_schema: Value,
    pub input: jsonschema::Validator,
    pub output_schema: Option<Value>,
    pub output: Option<jsonschema::Validator>,
}

impl ToolSchemas {
    /// Parses and compiles `tool`'s input and output schemas; the error says which is unusable and why.
    pub fn compile(tool: &tools::Tool) -> Result<Self, String> {
        let input_schema = wire::parse_json(&tool.input_schema, "inputSchema")?;
        if input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err("its inputSchema must be a JSON Schema with \"type\": \"object\"".into());
        }
        let input = jsonschema::validator_for(&input_schema)
            .map_err(|e| format!("its inputSchema is not a valid JSON Schema: {e}"))?;
        let output_schema = tool
            .output_schema
            .as_deref()
            .map(|s| wire::parse_json(s, "outputSchema"))
            .transpose()?;
        let output = output_schema
            .as_ref()
            .map(|schema| {
                jsonschema::validator_for(schema)
                    .map_err(|e| format!("its outputSchema is not a valid JSON Schema: {e}"))
            })
            .transpose()?;
        Ok(Self {
            input_schema,
            input,
            output_schema,
            output,
        })
    }
}

fn tool_entry(plugin: &Arc<Plugin>, tool: &tools::Tool, name: &str) -> Result<ToolEntry, String> {
    let schemas = ToolSchemas::compile(tool)?;
    let task_support = plugin.task_support(tool);
    let listed = wire::tool(
        tool.clone(),
        name,
        task_support,
        &schemas.input_schema,
        schemas.output_schema.as_ref(),
    )?;
    Ok(ToolEntry {
        plugin: plugin.clone(),
        own_name: tool.name.clone(),
        listed,
        input: schemas.input,
        output: schemas.output,
        task_support,
    })
}
