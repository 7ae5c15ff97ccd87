//! The process's plugin runtime: the one wasmtime engine, the linker with
//! every host import, the compiled-code cache, and the slots every plugin's
//! calls share (calls running at once, instances made ahead, the memory of
//! every call at once). It loads plugin files into [`Plugin`] versions.

pub mod cache;
mod engine;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use tokio::sync::Semaphore;
use wasmtime::component::{HasSelf, Linker};

use crate::call::{Buckets, CallState, MemoryBudget, PluginStore};
use crate::config::Settings;
use crate::contract::bindings;
use crate::limits::Limits;
use crate::manifest::Manifest;
use crate::plugin::{Plugin, PluginSettings};
use crate::sandbox::Grants;
use crate::secrets::Secrets;
use crate::settings::MAX_MEMORY_MIB;
use crate::skills::{self, SkillSet};
use cache::CompileCache;
use engine::{EngineSettings, plugin_engine};

/// Instances made ahead of a call (at most one per plugin) that the host
/// keeps at once; plugins beyond that make theirs when called.
const SPARE_INSTANCES: u32 = 32;

/// The engine, the linker with every host import, and the host-wide settings.
pub struct PluginRuntime {
    linker: Linker<CallState>,
    pub(crate) cache: CompileCache,
    /// Every plugin's limits unless its manifest sets its own.
    limits: Limits,
    /// Calls running at once across every plugin.
    host_calls: Arc<Semaphore>,
    spare_slots: Arc<Semaphore>,
    memory: Arc<MemoryBudget>,
    /// The operator's credentials, bound to plugins' outgoing requests.
    secrets: Secrets,
    /// Where plugins keep their `wasi:keyvalue` state.
    plugin_state: Arc<dyn PluginStore>,
}

impl PluginRuntime {
    /// A runtime with `settings`' limits, concurrency and secrets (every
    /// one read now), caching compiled plugins in `cache_dir` (none: compile
    /// on every load), whose plugins keep their `wasi:keyvalue` state in
    /// `plugin_state`.
    ///
    /// # Errors
    ///
    /// When a secret cannot be read, or the engine or its linker cannot be
    /// made (an unsupported platform).
    pub fn new(settings: &Settings, cache_dir: Option<PathBuf>, plugin_state: Arc<dyn PluginStore>) -> Result<Self> {
        let secrets = Secrets::start(settings)?;
        let max_calls = settings.server.max_concurrent_calls;
        let engine = plugin_engine(&EngineSettings {
            // Listing a plugin while it loads takes instances too.
            max_instances: max_calls + 8 + SPARE_INSTANCES,
            max_memory_bytes: MAX_MEMORY_MIB << 20,
        })?;
        let cache = CompileCache::new(&engine, cache_dir);
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        // Name lookups only for the names a plugin's manifest grants.
        crate::sandbox::dns::add_to_linker(&mut linker)?;
        // Outgoing HTTP, held to the same network grants (see `sandbox::http`).
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
        // The contract's host imports, and `wasi:keyvalue` (see `call::keyvalue`).
        bindings::World::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |state| state)?;
        Ok(Self {
            linker,
            cache,
            limits: settings.limits.clone(),
            host_calls: Arc::new(Semaphore::new(max_calls as usize)),
            spare_slots: Arc::new(Semaphore::new(SPARE_INSTANCES as usize)),
            memory: MemoryBudget::new(
                settings
                    .server
                    .max_total_memory_mib
                    .unwrap_or_else(half_the_machines_memory_mib),
            ),
            secrets,
            plugin_state,
        })
    }

    /// Loads one plugin file with its manifest (`NAME.toml` beside it, if
    /// any); its name is the file stem.
    ///
    /// # Errors
    ///
    /// As [`Self::load_with_manifest`], and when the manifest cannot be read or is invalid.
    pub async fn load(&self, path: &Path) -> Result<Arc<Plugin>> {
        let (manifest, _) = Manifest::for_plugin(path)?;
        self.load_with_manifest(path, manifest).await
    }

    /// Loads one plugin file under `manifest`, with the skills of its skills
    /// folder (`NAME.skills/` beside it); its name is the file stem.
    ///
    /// # Errors
    ///
    /// When the file cannot be read, is not a WebAssembly component, does not
    /// compile or does not fit the contract, when its skills folder is invalid,
    /// or when the manifest's grants or limits are.
    pub async fn load_with_manifest(&self, path: &Path, manifest: Manifest) -> Result<Arc<Plugin>> {
        let bytes = tokio::fs::read(path)
            .await
            .with_context(|| format!("cannot read {}", path.display()))?;
        let skills_folder = skills::folder_of(path);
        let skills = tokio::task::spawn_blocking(move || SkillSet::read(&skills_folder)).await??;
        self.load_component(&plugin_name(path), path, bytes, manifest, skills)
            .await
    }

    /// Loads the component `bytes` (read from `path`) as plugin `name`, under
    /// `manifest`, shipping `skills`.
    pub(crate) async fn load_component(
        &self,
        name: &str,
        path: &Path,
        bytes: Vec<u8>,
        manifest: Manifest,
        skills: SkillSet,
    ) -> Result<Arc<Plugin>> {
        if !is_component(&bytes) {
            bail!(
                "{} is not a WebAssembly component (build it for wasm32-wasip2, or convert a core module with `wasm-tools component new`)",
                path.display()
            );
        }
        let (component, sha256) = self.cache.component(self.linker.engine(), path, bytes).await?;
        let settings = PluginSettings {
            skills,
            grants: Grants::from_manifest(name, &manifest)?.with_credentials(self.secrets.for_plugin(name)),
            buckets: Buckets::new(name, manifest.keyvalue.grants(), self.plugin_state.clone()),
            limits: manifest.plugin_limits(&self.limits)?,
            host_calls: self.host_calls.clone(),
            spare_slots: self.spare_slots.clone(),
            memory: self.memory.clone(),
            manifest,
            sha256,
        };
        Plugin::load(&self.linker, name, path, component, settings).await
    }
}

/// The default memory budget of all calls at once: half the machine's
/// memory (`MemTotal` in `/proc/meminfo`), or 4 GiB where that cannot be read.
fn half_the_machines_memory_mib() -> usize {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            let kib: usize = info
                .lines()
                .find_map(|line| line.strip_prefix("MemTotal:"))?
                .split_whitespace()
                .next()?
                .parse()
                .ok()?;
            Some((kib >> 11).max(1))
        })
        .unwrap_or(4096)
}

/// Components start with the wasm magic and layer 1 (core modules have layer 0).
fn is_component(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes[..4] == *b"\0asm" && bytes[6..8] == [1, 0]
}

/// A plugin's name: its file name without `.wasm`.
pub fn plugin_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}
