//! Plugins: the wasmtime engine, loading components from the plugins directory,
//! and running calls into them under limits with request-scoped host imports.

pub mod bindings;
pub mod engine;
pub mod host_api;
pub mod limits;
pub mod plugin;
pub mod scope;
pub mod wire;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use wasmtime::component::{HasSelf, Linker};

pub use engine::{EngineSettings, PluginEngine};
pub use host_api::CallState;
pub use limits::Limits;
pub use plugin::{CallError, Plugin};
pub use scope::{CallScope, ClientLink, ClientRequestError};

/// The engine, the linker with every host import, and the default limits.
pub struct PluginRuntime {
    _engine: PluginEngine,
    linker: Linker<CallState>,
    limits: Limits,
}

impl PluginRuntime {
    pub fn new(limits: Limits, max_instances: u32, cache_dir: Option<PathBuf>) -> Result<Self> {
        let engine = PluginEngine::new(&EngineSettings {
            max_instances,
            max_memory_bytes: limits.memory_bytes.max(1 << 20),
            cache_dir,
        })?;
        let mut linker = Linker::new(engine.engine());
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        bindings::Plugin::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |state| state)?;
        Ok(Self {
            _engine: engine,
            linker,
            limits,
        })
    }

    /// Loads one plugin file; its name is the file stem.
    pub async fn load(&self, path: &Path) -> Result<Arc<Plugin>> {
        Plugin::load(&self.linker, &plugin_name(path), path, self.limits.clone()).await
    }
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
