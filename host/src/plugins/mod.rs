//! Plugins: the wasmtime engine, loading components from the plugins directory,
//! and running calls into them under limits with request-scoped host imports.

pub mod bindings;
pub mod cache;
pub mod engine;
pub mod host_api;
mod instances;
pub mod limits;
pub mod plugin;
pub mod scope;
pub mod wire;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use tokio::sync::Semaphore;
use wasmtime::component::{HasSelf, Linker};

use crate::manifest::Manifest;
use crate::sandbox::Grants;
use cache::CompileCache;

use engine::{EngineSettings, plugin_engine};
pub use host_api::CallState;
pub use limits::Limits;
pub use plugin::{CallError, Plugin, PluginSettings};
pub use scope::{CallScope, ClientLink, ClientRequestError};

/// The most linear memory a manifest may grant one call, in MiB.
pub const MAX_MEMORY_MIB: usize = 4096;

/// Instances made ahead of a call (at most one per plugin) that the host
/// keeps at once; plugins beyond that make theirs when called.
const SPARE_INSTANCES: u32 = 32;

/// The engine, the linker with every host import, and the host-wide settings.
pub struct PluginRuntime {
    linker: Linker<CallState>,
    pub cache: CompileCache,
    limits: Limits,
    max_calls_per_plugin: u32,
    all_calls: Arc<Semaphore>,
    spare_instances: Arc<Semaphore>,
}

impl PluginRuntime {
    /// `max_calls` bounds the calls running at once across every plugin,
    /// `max_calls_per_plugin` those of each plugin (a manifest may lower or raise it).
    pub fn new(limits: Limits, max_calls: u32, max_calls_per_plugin: u32, cache_dir: Option<PathBuf>) -> Result<Self> {
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
        bindings::Plugin::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |state| state)?;
        Ok(Self {
            linker,
            cache,
            limits,
            max_calls_per_plugin,
            all_calls: Arc::new(Semaphore::new(max_calls as usize)),
            spare_instances: Arc::new(Semaphore::new(SPARE_INSTANCES as usize)),
        })
    }

    /// Loads one plugin file with its manifest (`NAME.toml` beside it, if
    /// any); its name is the file stem.
    pub async fn load(&self, path: &Path) -> Result<Arc<Plugin>> {
        let (manifest, _) = Manifest::for_plugin(path)?;
        self.load_with_manifest(path, manifest).await
    }

    /// Loads one plugin file under `manifest`; its name is the file stem.
    pub async fn load_with_manifest(&self, path: &Path, manifest: Manifest) -> Result<Arc<Plugin>> {
        let bytes = tokio::fs::read(path)
            .await
            .with_context(|| format!("cannot read {}", path.display()))?;
        if !is_component(&bytes) {
            bail!(
                "{} is not a WebAssembly component (build it for wasm32-wasip2, or convert a core module with `wasm-tools component new`)",
                path.display()
            );
        }
        let component = self.cache.component(self.linker.engine(), path, bytes).await?;
        let settings = PluginSettings {
            grants: Grants::from_manifest(&plugin_name(path), &manifest)?,
            limits: manifest.plugin_limits(&self.limits)?,
            max_concurrent_calls: manifest
                .limits
                .max_concurrent_calls
                .unwrap_or(self.max_calls_per_plugin),
            all_calls: self.all_calls.clone(),
            spare_instances: self.spare_instances.clone(),
            manifest,
        };
        Plugin::load(&self.linker, &plugin_name(path), path, component, settings).await
    }
}

/// Components start with the wasm magic and layer 1 (core modules have layer 0).
fn is_component(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes[..4] == *b"\0asm" && bytes[6..8] == [1, 0]
}

/// The plugin's name: its file name without `.wasm`.
pub fn plugin_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The `.wasm` files directly inside `dir`, sorted by name.
pub fn wasm_files(dir: &Path) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            tracing::error!(dir = %dir.display(), "cannot read the plugins directory: {e}");
            return Vec::new();
        }
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "wasm") && path.is_file())
        .collect();
    files.sort();
    files
}
