//! One loaded plugin version: its compiled component, what it exports and lists,
//! and how a call into it runs (its turn, a fresh instance under limits, the
//! outcome classified).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Result, bail};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wasmtime::component::{Component, Instance, Linker};
use wasmtime::{Store, Trap};

use super::bindings::{completion, prompts, resources, tools, types};
use super::host_api::CallState;
use super::instances::{Cancelled, Fresh, Instances, Watchdog};
use super::limits::{LimitHit, Limits};
use super::scope::CallScope;
use crate::manifest::Manifest;
use crate::protocol::LogLevel;
use crate::sandbox::Grants;

/// Why a call into a plugin produced no value.
#[derive(Debug, Clone)]
pub enum CallError {
    /// The plugin answered with an error of the contract (not found, invalid params, internal).
    Plugin(types::Error),
    /// A limit stopped the call.
    Limit(LimitHit),
    /// The guest trapped or panicked; the text says how.
    Crashed(String),
    /// The request was cancelled; the call was stopped.
    Cancelled,
    /// The plugin does not export what the call needs.
    Unsupported(&'static str),
    /// The plugin returned something unusable.
    Invalid(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Plugin(types::Error::NotFound(what)) => write!(f, "not found: {what}"),
            CallError::Plugin(types::Error::InvalidParams(why)) => {
                write!(f, "invalid params: {why}")
            }
            CallError::Plugin(types::Error::Internal(why)) => write!(f, "plugin error: {why}"),
            CallError::Limit(hit) => write!(f, "{hit}"),
            CallError::Crashed(why) => write!(f, "the plugin crashed: {why}"),
            CallError::Cancelled => write!(f, "cancelled"),
            CallError::Unsupported(what) => write!(f, "the plugin does not export {what}"),
            CallError::Invalid(why) => write!(f, "{why}"),
        }
    }
}

/// Characters of a crashed plugin's stderr quoted in its error.
const STDERR_TAIL_CHARS: usize = 500;

/// Which interfaces of the contract a component exports, found by looking at it.
struct Exports {
    tools: Option<tools::GuestIndices>,
    resources: Option<resources::GuestIndices>,
    prompts: Option<prompts::GuestIndices>,
    completion: Option<completion::GuestIndices>,
}

/// What a plugin listed when it was loaded.
#[derive(Default)]
pub struct Listing {
    pub tools: Vec<tools::Tool>,
    pub resources: Vec<resources::Resource>,
    pub templates: Vec<resources::ResourceTemplate>,
    pub prompts: Vec<prompts::Prompt>,
}

/// How a plugin is run, from the host's defaults and its manifest.
pub struct PluginSettings {
    pub manifest: Manifest,
    pub grants: Grants,
    /// Limits of every call, over the host's defaults.
    pub limits: Limits,
    /// Calls of this plugin running at once.
    pub max_concurrent_calls: u32,
    /// Calls of all plugins running at once, shared by every plugin.
    pub all_calls: Arc<Semaphore>,
    /// Instances made ahead of calls that the host keeps at once, shared by every plugin.
    pub spare_instances: Arc<Semaphore>,
}

/// One loaded, validated version of a plugin.
pub struct Plugin {
    pub name: Arc<str>,
    pub path: PathBuf,
    instances: Arc<Instances>,
    exports: Exports,
    pub manifest: Manifest,
    pub limits: Limits,
    /// Limits of the tools the manifest sets its own for.
    tool_limits: HashMap<String, Limits>,
    own_calls: Arc<Semaphore>,
    all_calls: Arc<Semaphore>,
    pub listing: Listing,
}

/// A fresh instance serving one call, and the call's turn.
struct Call {
    fresh: Fresh,
    limits: Limits,
    _permits: [OwnedSemaphorePermit; 2],
}

/// One call into a guest export: a fresh instance under `limits`, the export
/// `method` called with `args` (after the store), bounded by the deadline, and
/// the outcome classified.
macro_rules! call_guest {
    ($plugin:expr, $scope:expr, $limits:expr, $indices:expr, $what:expr, $method:ident($($arg:expr),*)) => {{
        let mut call = $plugin.start($scope, $limits).await?;
        let guest = call.load($indices)?;
        let watchdog = call.watchdog();
        let result = watchdog.run(guest.$method(&mut call.fresh.store $(, $arg)*)).await;
        $plugin.finish(call, $what, result)
    }};
}

impl Plugin {
    /// Validates `component` (compiled from the file at `path`) against the
    /// contract, then asks it what it offers.
    pub async fn load(
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
        };
        if exports.tools.is_none() && exports.resources.is_none() && exports.prompts.is_none() {
            bail!(
                "{} exports none of wasm-mcp:plugin/tools, resources or prompts (version 0.1.0); build it against wit/plugin.wit",
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
            settings.grants,
            name.clone(),
            settings.limits.clone(),
            settings.spare_instances,
        );
        let mut plugin = Plugin {
            name,
            path: path.to_owned(),
            instances: Arc::new(instances),
            exports,
            manifest: settings.manifest,
            limits: settings.limits,
            tool_limits,
            own_calls: Arc::new(Semaphore::new(settings.max_concurrent_calls as usize)),
            all_calls: settings.all_calls,
            listing: Listing::default(),
        };
        plugin.listing = plugin
            .list()
            .await
            .map_err(|e| anyhow::anyhow!("{}: listing failed: {e}", path.display()))?;
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
            listing.tools = call_guest!(self, scope(), &self.limits, indices, "tools/list", call_list_tools())?;
        }
        if let Some(indices) = &self.exports.resources {
            listing.resources = call_guest!(
                self,
                scope(),
                &self.limits,
                indices,
                "resources/list",
                call_list_resources()
            )?;
            listing.templates = call_guest!(
                self,
                scope(),
                &self.limits,
                indices,
                "resources/templates/list",
                call_list_resource_templates()
            )?;
        }
        if let Some(indices) = &self.exports.prompts {
            listing.prompts = call_guest!(
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

    /// Whether `tool` may or must run as a task: the manifest's word, else the plugin's.
    pub fn task_support(&self, tool: &tools::Tool) -> tools::TaskSupport {
        use crate::manifest::TaskSupportSetting as Setting;
        match self.manifest.tools.get(&tool.name).and_then(|t| t.task_support) {
            Some(Setting::Forbidden) => tools::TaskSupport::Forbidden,
            Some(Setting::Optional) => tools::TaskSupport::Optional,
            Some(Setting::Required) => tools::TaskSupport::Required,
            None => tool.task_support,
        }
    }

    /// The limits calls to `tool` run under.
    pub fn tool_limits(&self, tool: &str) -> &Limits {
        self.tool_limits.get(tool).unwrap_or(&self.limits)
    }

    pub fn has_completion(&self) -> bool {
        self.exports.completion.is_some()
    }

    // The generated binding takes `&String`; asking for it avoids a copy per call.
    #[allow(clippy::ptr_arg)]
    pub async fn call_tool(
        &self,
        scope: Arc<CallScope>,
        name: &String,
        arguments: &String,
    ) -> Result<tools::CallToolResult, CallError> {
        let indices = self.exports.tools.as_ref().ok_or(CallError::Unsupported("tools"))?;
        call_guest!(
            self,
            scope,
            self.tool_limits(name),
            indices,
            "tools/call",
            call_call_tool(name, arguments)
        )?
        .map_err(CallError::Plugin)
    }

    pub async fn read_resource(
        &self,
        scope: Arc<CallScope>,
        uri: &str,
    ) -> Result<Vec<types::ResourceContents>, CallError> {
        let indices = self
            .exports
            .resources
            .as_ref()
            .ok_or(CallError::Unsupported("resources"))?;
        call_guest!(
            self,
            scope,
            &self.limits,
            indices,
            "resources/read",
            call_read_resource(uri)
        )?
        .map_err(CallError::Plugin)
    }

    pub async fn get_prompt(
        &self,
        scope: Arc<CallScope>,
        name: &str,
        arguments: &[(String, String)],
    ) -> Result<prompts::GetPromptResult, CallError> {
        let indices = self.exports.prompts.as_ref().ok_or(CallError::Unsupported("prompts"))?;
        call_guest!(
            self,
            scope,
            &self.limits,
            indices,
            "prompts/get",
            call_get_prompt(name, arguments)
        )?
        .map_err(CallError::Plugin)
    }

    pub async fn complete(
        &self,
        scope: Arc<CallScope>,
        request: &completion::CompletionRequest,
    ) -> Result<completion::Completions, CallError> {
        let indices = self
            .exports
            .completion
            .as_ref()
            .ok_or(CallError::Unsupported("completion"))?;
        call_guest!(
            self,
            scope,
            &self.limits,
            indices,
            "completion/complete",
            call_complete(request)
        )?
        .map_err(CallError::Plugin)
    }

    /// Waits for a turn (this plugin's and the host's concurrency limits),
    /// then takes a fresh instance with `limits` armed.
    async fn start(&self, scope: Arc<CallScope>, limits: &Limits) -> Result<Call, CallError> {
        let permits = self.wait_for_turn(&scope).await?;
        let fresh = self.instances.take(scope, limits).await?;
        Ok(Call {
            fresh,
            limits: limits.clone(),
            _permits: permits,
        })
    }

    /// Takes a place among this plugin's running calls and the host's; while
    /// none is free the call waits, and its scope says it is queued.
    async fn wait_for_turn(&self, scope: &CallScope) -> Result<[OwnedSemaphorePermit; 2], CallError> {
        let mut permits = Vec::with_capacity(2);
        for semaphore in [&self.own_calls, &self.all_calls] {
            let permit = match semaphore.clone().try_acquire_owned() {
                Ok(permit) => permit,
                Err(_) => {
                    scope.set_queued(true);
                    let permit = semaphore.clone().acquire_owned().await;
                    scope.set_queued(false);
                    permit.map_err(|_| CallError::Crashed("the host is shutting down".into()))?
                }
            };
            permits.push(permit);
        }
        Ok(permits.try_into().expect("two permits"))
    }

    /// Ends a call: forwards its captured output, logs what it used, and turns
    /// a trap into the error that says which limit or fault stopped it.
    /// The instance (and the call's turn) is let go of off the caller's path.
    fn finish<T>(&self, call: Call, what: &str, result: wasmtime::Result<T>) -> Result<T, CallError> {
        let store = &call.fresh.store;
        let fuel_used = call.limits.fuel.saturating_sub(store.get_fuel().unwrap_or(0));
        tracing::debug!(
            plugin = %self.name, call = what, fuel_used,
            wall_ms = call.fresh.started.elapsed().as_secs_f64() * 1000.0,
            peak_memory_bytes = store.data().memory.peak,
            "plugin call finished"
        );
        let stderr_tail = self.forward_output(&call);
        let result = result.map_err(|e| match classify(store, &call.limits, e) {
            CallError::Crashed(why) if !stderr_tail.is_empty() => {
                CallError::Crashed(format!("{why}; its stderr ended with: {stderr_tail}"))
            }
            other => other,
        });
        self.instances.recycle(call);
        result
    }

    /// Sends what the guest wrote to stdout and stderr to the client's log and
    /// to our stderr; returns the last line of its stderr.
    fn forward_output(&self, call: &Call) -> String {
        let scope = &call.fresh.store.data().scope;
        let outputs = [
            ("stdout", call.fresh.output.stdout.contents(), LogLevel::Info),
            ("stderr", call.fresh.output.stderr.contents(), LogLevel::Warning),
        ];
        for (stream, bytes, level) in &outputs {
            let text = String::from_utf8_lossy(bytes);
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                tracing::info!(plugin = %self.name, stream, "{line}");
                scope.log(
                    &self.name,
                    *level,
                    serde_json::Value::String(format!("[{stream}] {line}")),
                );
            }
        }
        // The last lines of stderr, without Rust's backtrace hint: for a panic,
        // where it happened and its message.
        let stderr = String::from_utf8_lossy(&outputs[1].1);
        let stderr_tail: Vec<&str> = stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("note: run with"))
            .collect();
        let keep = stderr_tail.len().saturating_sub(2);
        let tail = stderr_tail[keep..].join(" ");
        match tail.char_indices().nth(STDERR_TAIL_CHARS) {
            Some((cut, _)) => format!("{}…", &tail[..cut]),
            None => tail,
        }
    }
}

/// Turns a trap into the error that says which limit or fault stopped the call.
pub(super) fn classify(store: &Store<CallState>, limits: &Limits, error: wasmtime::Error) -> CallError {
    if let Some(hit) = error.downcast_ref::<LimitHit>() {
        return CallError::Limit(hit.clone());
    }
    if error.downcast_ref::<Cancelled>().is_some() || store.data().scope.is_cancelled() {
        return CallError::Cancelled;
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => CallError::Limit(LimitHit::Fuel(limits.fuel)),
        Some(Trap::StackOverflow) => CallError::Crashed("stack overflow".into()),
        Some(Trap::UnreachableCodeReached) => CallError::Crashed("it panicked or aborted (wasm `unreachable`)".into()),
        Some(Trap::MemoryOutOfBounds) => CallError::Crashed(
            "wasm trap: out of bounds memory access (in a Rust or C plugin this is most often a stack overflow)".into(),
        ),
        Some(trap) => CallError::Crashed(trap.to_string()),
        None => CallError::Crashed(format!("{error:#}")),
    }
}

impl Call {
    fn watchdog(&self) -> Watchdog {
        Watchdog::new(&self.fresh.store, self.fresh.started, self.limits.deadline)
    }

    fn load<I: LoadGuest>(&mut self, indices: &I) -> Result<I::Guest, CallError> {
        indices
            .load_guest(&mut self.fresh.store, &self.fresh.instance)
            .map_err(|e| CallError::Crashed(e.to_string()))
    }
}

/// The generated `GuestIndices` types, seen alike.
trait LoadGuest {
    type Guest;
    fn load_guest(&self, store: &mut Store<CallState>, instance: &Instance) -> wasmtime::Result<Self::Guest>;
}

macro_rules! load_guest {
    ($($module:ident),*) => {$(
        impl LoadGuest for $module::GuestIndices {
            type Guest = $module::Guest;
            fn load_guest(&self, store: &mut Store<CallState>, instance: &Instance) -> wasmtime::Result<Self::Guest> {
                self.load(store, instance)
            }
        }
    )*};
}
load_guest!(tools, resources, prompts, completion);
