//! One loaded version of a plugin: its compiled component checked against the
//! contract, what it exports and lists, the limits and grants its manifest
//! gives it, the skills it ships, and how a call into it runs (its turn, a
//! fresh instance under its limits, the outcome).

mod instances;
mod listing;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Result, bail};
use tokio::sync::Semaphore;
use wasmtime::component::{Component, Linker};

use crate::call::{Buckets, Call, CallError, CallScope, CallState, MemoryBudget, Turn};
use crate::contract::bindings::{completion, prompts, resources, skills, tools, types};
use crate::limits::Limits;
use crate::manifest::Manifest;
use crate::sandbox::Grants;
use crate::skills::{MAX_MADE_SKILLS, SKILL_MD, Skill, SkillSet};
use crate::telemetry;
use instances::Instances;
pub use listing::Listing;

/// Which interfaces of the contract a component exports, found by looking at it.
struct Exports {
    tools: Option<tools::GuestIndices>,
    resources: Option<resources::GuestIndices>,
    prompts: Option<prompts::GuestIndices>,
    completion: Option<completion::GuestIndices>,
    skills: Option<skills::GuestIndices>,
}

/// How a plugin is run, from the host's defaults and its manifest.
pub struct PluginSettings {
    pub manifest: Manifest,
    pub grants: Grants,
    /// The `wasi:keyvalue` buckets the manifest grants, in the host's store.
    pub buckets: Arc<Buckets>,
    /// Limits of every call, over the host's defaults; their
    /// `max_concurrent_calls` bounds this plugin's calls at once.
    pub limits: Limits,
    /// Calls of all plugins running at once, shared by every plugin.
    pub host_calls: Arc<Semaphore>,
    /// Instances made ahead of calls that the host keeps at once, shared by every plugin.
    pub spare_slots: Arc<Semaphore>,
    /// The linear memory of every call at once, shared by every plugin.
    pub memory: Arc<MemoryBudget>,
    /// The SHA-256 of the component file, in hex: which version this is.
    pub sha256: String,
    /// The skills shipped beside the component, read for this version.
    pub skills: SkillSet,
}

/// One loaded, validated version of a plugin.
pub struct Plugin {
    pub(crate) name: Arc<str>,
    pub(crate) path: PathBuf,
    /// The SHA-256 of the component file, in hex: which version this is.
    pub(crate) sha256: String,
    instances: Arc<Instances>,
    exports: Exports,
    pub(crate) manifest: Manifest,
    pub(crate) limits: Limits,
    /// Limits of the tools the manifest sets its own for.
    tool_limits: HashMap<String, Limits>,
    /// This plugin's calls running at once.
    plugin_calls: Arc<Semaphore>,
    /// Every plugin's calls running at once.
    host_calls: Arc<Semaphore>,
    pub(crate) listing: Listing,
    /// The skills it ships.
    pub(crate) skills: SkillSet,
}

/// One call into a guest export: its turn, a fresh instance under `limits`,
/// the export `method` called with `args` (after the store) under the guard,
/// and the outcome.
macro_rules! call_export {
    ($plugin:expr, $scope:expr, $limits:expr, $indices:expr, $what:expr, $method:ident($($arg:expr),*)) => {{
        let span = telemetry::plugin_call(&$plugin.name, &$plugin.sha256, $what);
        telemetry::within(span, async {
            let mut call = $plugin.start($scope, $limits).await?;
            let result = call
                .run($indices, async |guest, store| guest.$method(store $(, $arg)*).await)
                .await;
            $plugin.end(call, $what, result)
        })
        .await
    }};
}

impl Plugin {
    /// Validates `component` (compiled from the file at `path`) against the
    /// contract, then asks it what it offers.
    pub(crate) async fn load(
        linker: &Linker<CallState>,
        name: &str,
        path: &Path,
        component: Component,
        settings: PluginSettings,
    ) -> Result<Arc<Plugin>> {
        let pre = linker
            .instantiate_pre(&component)
            .map_err(|e| anyhow::anyhow!("{} needs imports this host does not provide: {e}", path.display()))?;
        let exports = Exports {
            tools: tools::GuestIndices::new(&pre).ok(),
            resources: resources::GuestIndices::new(&pre).ok(),
            prompts: prompts::GuestIndices::new(&pre).ok(),
            completion: completion::GuestIndices::new(&pre).ok(),
            skills: skills::GuestIndices::new(&pre).ok(),
        };
        if exports.tools.is_none()
            && exports.resources.is_none()
            && exports.prompts.is_none()
            && exports.skills.is_none()
        {
            bail!(
                "{} exports none of wasm-mcp:plugin/tools, resources, prompts or skills (version 0.1.0); build it against wit/plugin.wit",
                path.display()
            );
        }
        let tool_limits = settings
            .manifest
            .tools
            .keys()
            .map(|tool| Ok((tool.clone(), settings.manifest.tool_limits(tool, &settings.limits)?)))
            .collect::<Result<HashMap<_, _>>>()?;
        let name: Arc<str> = name.into();
        let instances = Instances::new(
            pre,
            (settings.grants, settings.buckets),
            name.clone(),
            settings.limits.clone(),
            settings.spare_slots,
            settings.memory,
        );
        let mut plugin = Plugin {
            name,
            path: path.to_owned(),
            instances: Arc::new(instances),
            exports,
            manifest: settings.manifest,
            sha256: settings.sha256,
            plugin_calls: Arc::new(Semaphore::new(settings.limits.max_concurrent_calls as usize)),
            limits: settings.limits,
            tool_limits,
            host_calls: settings.host_calls,
            listing: Listing::default(),
            skills: settings.skills,
        };
        plugin.listing = plugin
            .list()
            .await
            .map_err(|e| anyhow::anyhow!("{}: listing failed: {e}", path.display()))?;
        plugin.listing.refuse_bad_names(&plugin.name);
        let made = plugin
            .made_skills()
            .await
            .map_err(|e| anyhow::anyhow!("{}: listing its skills failed: {e}", path.display()))?;
        plugin.skills.add_made(made, &plugin.name);
        for why in &plugin.skills.refused {
            tracing::error!(plugin = &*plugin.name, "{why}");
        }
        plugin.listing.refused.extend(plugin.skills.refused.iter().cloned());
        for tool in plugin.manifest.tools.keys() {
            if !plugin.listing.tools.iter().any(|t| &t.name == tool) {
                tracing::warn!(
                    plugin = &*plugin.name,
                    tool,
                    "the manifest has settings for a tool the plugin does not list"
                );
            }
        }
        Ok(Arc::new(plugin))
    }

    /// Calls every list function the plugin exports, with no client attached.
    async fn list(&self) -> Result<Listing, CallError> {
        let scope = || Arc::new(CallScope::detached());
        let mut listing = Listing::default();
        if let Some(indices) = &self.exports.tools {
            listing.tools = call_export!(self, scope(), &self.limits, indices, "tools/list", call_list_tools())?;
        }
        if let Some(indices) = &self.exports.resources {
            listing.resources = call_export!(
                self,
                scope(),
                &self.limits,
                indices,
                "resources/list",
                call_list_resources()
            )?;
            listing.templates = call_export!(
                self,
                scope(),
                &self.limits,
                indices,
                "resources/templates/list",
                call_list_resource_templates()
            )?;
        }
        if let Some(indices) = &self.exports.prompts {
            listing.prompts = call_export!(
                self,
                scope(),
                &self.limits,
                indices,
                "prompts/list",
                call_list_prompts()
            )?;
        }
        Ok(listing)
    }

    /// The skills the plugin makes (its `skills` export), each checked
    /// against the `SKILL.md` it makes now.
    async fn made_skills(&self) -> Result<Vec<Result<Skill, String>>, CallError> {
        let Some(indices) = &self.exports.skills else {
            return Ok(Vec::new());
        };
        let scope = || Arc::new(CallScope::detached());
        let mut paths = call_export!(self, scope(), &self.limits, indices, "skills/list", call_list_skills())?;
        let mut made = Vec::with_capacity(paths.len().min(MAX_MADE_SKILLS + 1));
        if paths.len() > MAX_MADE_SKILLS {
            made.push(Err(format!(
                "it lists {} skills; the first {MAX_MADE_SKILLS} are served, a plugin may make no more",
                paths.len()
            )));
            paths.truncate(MAX_MADE_SKILLS);
        }
        for path in paths {
            let skill_md = match self.read_skill_file(scope(), &path, SKILL_MD).await {
                Ok(contents) => Skill::made(&path, &contents_bytes(&contents.body)),
                Err(e) => Err(format!("reading its {SKILL_MD} failed: {e}")),
            };
            made.push(skill_md.map_err(|why| format!("skill://{path}: {why}")));
        }
        Ok(made)
    }

    /// The files skill `path` (one the plugin makes) has now, by path under its folder.
    pub(crate) async fn list_skill_files(&self, scope: Arc<CallScope>, path: &str) -> Result<Vec<String>, CallError> {
        let indices = self.exports.skills.as_ref().ok_or(CallError::Unsupported("skills"))?;
        call_export!(
            self,
            scope,
            &self.limits,
            indices,
            "resources/directory/read",
            call_list_skill_files(path)
        )?
        .map_err(CallError::Refused)
    }

    /// File `file` of skill `path` (one the plugin makes), as the plugin makes it now.
    pub(crate) async fn read_skill_file(
        &self,
        scope: Arc<CallScope>,
        path: &str,
        file: &str,
    ) -> Result<types::ResourceContents, CallError> {
        let indices = self.exports.skills.as_ref().ok_or(CallError::Unsupported("skills"))?;
        call_export!(
            self,
            scope,
            &self.limits,
            indices,
            "resources/read",
            call_read_skill_file(path, file)
        )?
        .map_err(CallError::Refused)
    }

    /// Whether `tool` may or must run as a task: the manifest's word, else the plugin's.
    pub(crate) fn task_support(&self, tool: &tools::Tool) -> tools::TaskSupport {
        use crate::manifest::TaskSupportSetting as Setting;
        match self.manifest.tools.get(&tool.name).and_then(|t| t.task_support) {
            Some(Setting::Forbidden) => tools::TaskSupport::Forbidden,
            Some(Setting::Optional) => tools::TaskSupport::Optional,
            Some(Setting::Required) => tools::TaskSupport::Required,
            None => tool.task_support,
        }
    }

    /// The limits calls to `tool` run under.
    pub(crate) fn tool_limits(&self, tool: &str) -> &Limits {
        self.tool_limits.get(tool).unwrap_or(&self.limits)
    }

    pub(crate) fn has_completion(&self) -> bool {
        self.exports.completion.is_some()
    }

    /// Calls the plugin's tool `name` (its own name, not the one the catalog
    /// exposes) with `arguments` (JSON text) under `scope`, within the tool's
    /// limits and the host's and the plugin's call slots.
    ///
    /// # Errors
    ///
    /// A `CallError` when the call produced no result: the plugin refused it
    /// (a contract error), a limit stopped it, the guest trapped, the request
    /// was cancelled, the host is shutting down, or the plugin exports no tools.
    // The generated binding takes `&String`; asking for it avoids a copy per call.
    #[allow(clippy::ptr_arg)]
    pub async fn call_tool(
        &self,
        scope: Arc<CallScope>,
        name: &String,
        arguments: &String,
    ) -> Result<tools::CallToolResult, CallError> {
        let indices = self.exports.tools.as_ref().ok_or(CallError::Unsupported("tools"))?;
        call_export!(
            self,
            scope,
            self.tool_limits(name),
            indices,
            "tools/call",
            call_call_tool(name, arguments)
        )?
        .map_err(CallError::Refused)
    }

    pub(crate) async fn read_resource(
        &self,
        scope: Arc<CallScope>,
        uri: &str,
    ) -> Result<Vec<types::ResourceContents>, CallError> {
        let indices = self
            .exports
            .resources
            .as_ref()
            .ok_or(CallError::Unsupported("resources"))?;
        call_export!(
            self,
            scope,
            &self.limits,
            indices,
            "resources/read",
            call_read_resource(uri)
        )?
        .map_err(CallError::Refused)
    }

    pub(crate) async fn get_prompt(
        &self,
        scope: Arc<CallScope>,
        name: &str,
        arguments: &[(String, String)],
    ) -> Result<prompts::GetPromptResult, CallError> {
        let indices = self.exports.prompts.as_ref().ok_or(CallError::Unsupported("prompts"))?;
        call_export!(
            self,
            scope,
            &self.limits,
            indices,
            "prompts/get",
            call_get_prompt(name, arguments)
        )?
        .map_err(CallError::Refused)
    }

    pub(crate) async fn complete(
        &self,
        scope: Arc<CallScope>,
        request: &completion::CompletionRequest,
    ) -> Result<completion::Completions, CallError> {
        let indices = self
            .exports
            .completion
            .as_ref()
            .ok_or(CallError::Unsupported("completion"))?;
        call_export!(
            self,
            scope,
            &self.limits,
            indices,
            "completion/complete",
            call_complete(request)
        )?
        .map_err(CallError::Refused)
    }

    /// Waits for a turn (this plugin's and the host's concurrency limits),
    /// then takes a fresh instance with `limits` armed.
    async fn start(&self, scope: Arc<CallScope>, limits: &Limits) -> Result<Call, CallError> {
        let turn = Turn::take(&scope, &self.plugin_calls, &self.host_calls).await?;
        let mut call = self.instances.take(scope, limits).await?;
        call.hold(turn);
        Ok(call)
    }

    /// Ends a call with its outcome; the instance (and the call's turn) is
    /// let go of off the caller's path.
    fn end<T>(&self, call: Call, what: &'static str, result: wasmtime::Result<T>) -> Result<T, CallError> {
        let outcome = call.finish(what, result);
        self.instances.retire(call);
        outcome
    }
}

/// The bytes of a file's contents: its text, or its blob decoded.
pub fn contents_bytes(body: &types::ContentsBody) -> Vec<u8> {
    match body {
        types::ContentsBody::Text(text) => text.as_bytes().to_vec(),
        types::ContentsBody::Blob(blob) => blob.clone(),
    }
}
