//! The catalog: every tool, resource, template and prompt of every loaded
//! plugin, under the names the client sees, rendered once, with pagination.
//!
//! Names are stable (see [`naming`]): a plugin that serves a name keeps it
//! while it lists it, a plugin arriving later that lists it too is served
//! as `<plugin>_<name>` (a [`Rename`]), and among plugins arriving together
//! the first in name order wins. A resource URI or template listed twice is
//! served by its holder only, and so is a skill (see [`skills`]).

pub mod naming;
pub mod pagination;
pub mod skills;
mod uri_template;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::contract::bindings::tools::{self, TaskSupport};
use crate::contract::wire;
use crate::manifest::{CacheScope, EntryKind};
use crate::plugin::Plugin;
use crate::protocol::modern::CacheHint;
use naming::Names;
pub use naming::Rename;
pub use pagination::Listed;
use skills::{SKILL_CACHE, SkillEntry, SkillFileEntry};
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
    /// The OAuth scopes a caller needs to see and call it.
    pub scopes: Vec<String>,
}

impl ToolEntry {
    /// Whether the tool is declared idempotent (`idempotentHint`): calling
    /// it again with the same arguments does nothing more.
    pub fn is_idempotent(&self) -> bool {
        self.listed.pointer("/annotations/idempotentHint") == Some(&Value::Bool(true))
    }
}

pub struct PromptEntry {
    pub plugin: Arc<Plugin>,
    pub own_name: String,
    pub listed: Value,
    pub required_arguments: Vec<String>,
    pub scopes: Vec<String>,
}

pub struct ResourceEntry {
    pub plugin: Arc<Plugin>,
    pub listed: Value,
    /// How long and by whom a read of it may be cached (the manifest's `[resources."URI"]`).
    pub cache: CacheHint,
    pub scopes: Vec<String>,
}

pub struct TemplateEntry {
    pub plugin: Arc<Plugin>,
    pub listed: Value,
    matcher: UriTemplate,
    /// How long and by whom a read of a URI it matches may be cached.
    pub cache: CacheHint,
    pub scopes: Vec<String>,
}

macro_rules! listed_by_field {
    ($($entry:ty),*) => {$(
        impl Listed for $entry {
            fn listed(&self) -> &Value {
                &self.listed
            }

            fn scopes(&self) -> &[String] {
                &self.scopes
            }
        }
    )*};
}
listed_by_field!(ToolEntry, PromptEntry, ResourceEntry, TemplateEntry);

/// An immutable view of everything served; replaced whole when plugins change.
#[derive(Default)]
pub struct Catalog {
    pub(crate) tools: BTreeMap<String, ToolEntry>,
    pub(crate) prompts: BTreeMap<String, PromptEntry>,
    pub(crate) resources: BTreeMap<String, ResourceEntry>,
    /// Keyed by URI template.
    pub(crate) templates: BTreeMap<String, TemplateEntry>,
    /// The skills, by the URI of their `SKILL.md`.
    pub(crate) skills: BTreeMap<String, SkillEntry>,
    /// The files of the skills served, by URI.
    pub(crate) skill_files: BTreeMap<String, SkillFileEntry>,
    /// The tools and prompts served under another name than their own.
    pub(crate) renames: Vec<Rename>,
}

/// The names of one kind being given out, one [`Names`] per kind.
struct Naming {
    tools: Names,
    prompts: Names,
    resources: Names,
    templates: Names,
}

impl Catalog {
    /// Builds the catalog of `plugins`, which replaces `previous` (the empty
    /// catalog at start): the names `previous` served stay with the plugins
    /// that served them; the other plugins are taken in name order. Entries
    /// whose metadata is unusable are skipped with an error on stderr.
    pub fn build<'a>(plugins: impl IntoIterator<Item = &'a Arc<Plugin>>, previous: &Catalog) -> Catalog {
        let mut plugins: Vec<&Arc<Plugin>> = plugins.into_iter().collect();
        plugins.sort_by(|a, b| a.name.cmp(&b.name));
        let mut naming = Naming::after(previous, &plugins);
        let mut catalog = Catalog::default();
        for plugin in plugins {
            catalog.add_tools(plugin, &mut naming.tools);
            catalog.add_prompts(plugin, &mut naming.prompts);
            catalog.add_resources(plugin, &mut naming);
            catalog.add_skills(plugin, &mut naming);
        }
        catalog.renames = naming.tools.into_renames();
        catalog.renames.extend(naming.prompts.into_renames());
        catalog
    }

    fn add_tools(&mut self, plugin: &Arc<Plugin>, names: &mut Names) {
        for tool in &plugin.listing.tools {
            if hidden(plugin, EntryKind::Tool, &tool.name) {
                continue;
            }
            let Some(name) = names.claim(plugin, &tool.name) else {
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

    fn add_prompts(&mut self, plugin: &Arc<Plugin>, names: &mut Names) {
        for prompt in &plugin.listing.prompts {
            if hidden(plugin, EntryKind::Prompt, &prompt.name) {
                continue;
            }
            let Some(name) = names.claim(plugin, &prompt.name) else {
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
                            scopes: plugin.manifest.required_scopes(EntryKind::Prompt, &prompt.name),
                        },
                    );
                }
                Err(why) => {
                    tracing::error!(plugin = %plugin.name, prompt = %prompt.name, "prompt skipped: {why}")
                }
            }
        }
    }

    fn add_resources(&mut self, plugin: &Arc<Plugin>, naming: &mut Naming) {
        for resource in &plugin.listing.resources {
            if hidden(plugin, EntryKind::Resource, &resource.uri) || !naming.resources.take(plugin, &resource.uri) {
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
                            scopes: plugin.manifest.required_scopes(EntryKind::Resource, &resource.uri),
                        },
                    );
                }
                Err(why) => {
                    tracing::error!(plugin = %plugin.name, uri = %resource.uri, "resource skipped: {why}")
                }
            }
        }
        for template in &plugin.listing.templates {
            if hidden(plugin, EntryKind::Resource, &template.uri_template)
                || !naming.templates.take(plugin, &template.uri_template)
            {
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
                            scopes: plugin
                                .manifest
                                .required_scopes(EntryKind::Resource, &template.uri_template),
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
    /// A URI the operator hides (`[deny] resources`) is served by no
    /// template either.
    pub(crate) fn resource_owner(&self, uri: &str) -> Option<(&Arc<Plugin>, CacheHint)> {
        if let Some(entry) = self.resources.get(uri) {
            return Some((&entry.plugin, entry.cache));
        }
        if let Some(entry) = self.skill_files.get(uri) {
            return Some((&entry.plugin, SKILL_CACHE));
        }
        self.serving_template(uri).map(|t| (&t.plugin, t.cache))
    }

    /// The first template that matches `uri`, unless its plugin's manifest
    /// hides the URI (`[deny] resources`).
    fn serving_template(&self, uri: &str) -> Option<&TemplateEntry> {
        self.templates
            .values()
            .find(|t| t.matcher.matches(uri))
            .filter(|t| t.plugin.manifest.hides(EntryKind::Resource, uri).is_none())
    }

    /// The OAuth scopes a caller needs to call the tool `name`, get the
    /// prompt `name` or read the resource `name` (a URI listed, or one a
    /// template serves: the template's scopes and the URI's own); `None`
    /// when nothing by that name is served.
    pub(crate) fn required_scopes(&self, kind: EntryKind, name: &str) -> Option<Vec<String>> {
        match kind {
            EntryKind::Tool => self.tools.get(name).map(|tool| tool.scopes.clone()),
            EntryKind::Prompt => self.prompts.get(name).map(|prompt| prompt.scopes.clone()),
            EntryKind::Skill => self.skills.get(name).map(|skill| skill.scopes.clone()),
            EntryKind::Resource => {
                if let Some(entry) = self.resources.get(name) {
                    return Some(entry.scopes.clone());
                }
                if let Some(entry) = self.skill_files.get(name) {
                    return Some(entry.scopes.clone());
                }
                if let Some((skill, _)) = self.made_skill(name) {
                    return Some(skill.scopes.clone());
                }
                let template = self.serving_template(name)?;
                let mut scopes = template.plugin.manifest.required_scopes(EntryKind::Resource, name);
                scopes.extend(template.scopes.iter().cloned());
                scopes.sort();
                scopes.dedup();
                Some(scopes)
            }
        }
    }

    /// Every scope some entry needs, each once.
    pub(crate) fn scopes(&self) -> std::collections::BTreeSet<&str> {
        let tools = self.tools.values().flat_map(|e| &e.scopes);
        let prompts = self.prompts.values().flat_map(|e| &e.scopes);
        let resources = self.resources.values().flat_map(|e| &e.scopes);
        let templates = self.templates.values().flat_map(|e| &e.scopes);
        let skills = self.skills.values().flat_map(|e| &e.scopes);
        tools
            .chain(prompts)
            .chain(resources)
            .chain(templates)
            .chain(skills)
            .map(String::as_str)
            .collect()
    }
}

impl Naming {
    /// The naming of a catalog of `plugins` that replaces `previous`: what
    /// `previous` served under its own name stays with the plugin that
    /// served it, as long as that plugin lists it (and, for a tool or a
    /// prompt, sets no `prefix`).
    fn after(previous: &Catalog, plugins: &[&Arc<Plugin>]) -> Naming {
        let present: BTreeMap<&str, &Plugin> = plugins.iter().map(|p| (&*p.name, &***p)).collect();
        let lists = |plugin: &str, has: &dyn Fn(&Plugin) -> bool| present.get(plugin).is_some_and(|p| has(p));
        let unprefixed = |p: &Plugin| p.manifest.prefix.is_none();
        Naming {
            tools: Names::new(
                "tool",
                previous
                    .tools
                    .iter()
                    .map(|(n, e)| (n.as_str(), &*e.plugin.name, e.own_name.as_str())),
                |plugin, own| {
                    lists(plugin, &|p| {
                        unprefixed(p) && p.listing.tools.iter().any(|t| t.name == own)
                    })
                },
            ),
            prompts: Names::new(
                "prompt",
                previous
                    .prompts
                    .iter()
                    .map(|(n, e)| (n.as_str(), &*e.plugin.name, e.own_name.as_str())),
                |plugin, own| {
                    lists(plugin, &|p| {
                        unprefixed(p) && p.listing.prompts.iter().any(|t| t.name == own)
                    })
                },
            ),
            resources: Names::new(
                "resource URI",
                previous
                    .resources
                    .iter()
                    .map(|(uri, e)| (uri.as_str(), &*e.plugin.name, uri.as_str())),
                |plugin, uri| {
                    lists(plugin, &|p| {
                        p.listing.resources.iter().any(|r| r.uri == uri)
                            || p.skills.skills.iter().any(|s| s.uri() == uri)
                    })
                },
            ),
            templates: Names::new(
                "resource template",
                previous
                    .templates
                    .iter()
                    .map(|(t, e)| (t.as_str(), &*e.plugin.name, t.as_str())),
                |plugin, template| {
                    lists(plugin, &|p| {
                        p.listing.templates.iter().any(|t| t.uri_template == template)
                    })
                },
            ),
        }
    }
}

/// The caching hint the plugin's manifest sets for the resource or template `key`
/// (its URI or URI template); by default none: `ttlMs` 0, `private`.
/// Whether the operator does not serve the plugin's entry `name`; said on stderr at debug level.
fn hidden(plugin: &Plugin, kind: EntryKind, name: &str) -> bool {
    let why = plugin.manifest.hides(kind, name);
    if let Some(why) = &why {
        tracing::debug!(plugin = %plugin.name, name, "not served: the manifest's {why}");
    }
    why.is_some()
}

fn cache_hint(plugin: &Plugin, key: &str) -> CacheHint {
    let settings = plugin.manifest.resources.get(key).cloned().unwrap_or_default();
    CacheHint {
        ttl_ms: settings.ttl_ms,
        public: settings.cache_scope == CacheScope::Public,
    }
}

/// A tool's schemas as the plugin declared them, parsed and compiled.
pub struct ToolSchemas {
    /// The input schema, as listed.
    pub input_schema: Value,
    /// The input schema, compiled: what a call's arguments are checked against.
    pub input: jsonschema::Validator,
    /// The output schema, as listed, if the tool declares one.
    pub output_schema: Option<Value>,
    /// The output schema, compiled: what a result's structured content is checked against.
    pub output: Option<jsonschema::Validator>,
}

impl ToolSchemas {
    /// Parses and compiles `tool`'s input and output schemas.
    ///
    /// # Errors
    ///
    /// When a schema is not JSON, the input schema is not of `"type":
    /// "object"`, or a schema does not compile; the error says which and why.
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
        scopes: plugin.manifest.required_scopes(EntryKind::Tool, &tool.name),
    })
}
