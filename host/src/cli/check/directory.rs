//! `wasm-mcp check DIR`: every plugin of a plugins directory, as `serve`
//! would load it at start, then the names serving the directory gives them:
//! the tools and prompts renamed because another plugin has their name.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::catalog::Catalog;
use crate::registry::Registry;
use crate::registry::lockfile::Lockfile;
use crate::reload::plugin_files;
use crate::runtime::{PluginRuntime, plugin_name};

use super::{Inspection, render_section};

/// The plugins of a directory: its files and its lockfile's entries.
pub struct Directory {
    /// Each plugin's inspection, the files' first.
    pub inspections: Vec<Inspection>,
    /// The locked plugins that could not be inspected, and why (not pulled,
    /// or a file of the same name beside the entry).
    pub failures: Vec<(PathBuf, String)>,
    /// How many plugins the directory names.
    count: usize,
}

/// Inspects every plugin in `dir` with `runtime`, pulling the locked ones
/// the store lacks.
pub async fn inspect(runtime: &PluginRuntime, registry: &Registry, dir: &Path) -> Result<Directory> {
    let files = plugin_files(dir).with_context(|| format!("cannot read the plugins directory {}", dir.display()))?;
    let lock = Lockfile::read(dir)?;
    let mut found = Directory {
        inspections: Vec::new(),
        failures: Vec::new(),
        count: files.len() + lock.plugins.len(),
    };
    for path in &files {
        found.inspections.push(Inspection::run(runtime, path).await?);
    }
    let locked: Vec<_> = lock.plugins.clone().into_iter().collect();
    let mut pulled = registry.pull_all(locked).await;
    for (name, locked) in &lock.plugins {
        let label = PathBuf::from(format!("{name} ({})", locked.reference));
        if files.iter().any(|path| plugin_name(path) == *name) {
            found.failures.push((
                label,
                format!("{name}.wasm is in the directory too: neither is served until one of them is removed"),
            ));
            continue;
        }
        match pulled.remove(name).expect("every locked plugin was pulled") {
            Ok(pulled) => {
                let inspection = Inspection::run_pulled(runtime, dir, name, locked, pulled).await;
                found.inspections.push(inspection);
            }
            Err(e) => found.failures.push((label, format!("{e:#}"))),
        }
    }
    Ok(found)
}

impl Directory {
    /// How many plugins load, the tools and prompts renamed at start, and
    /// how many renames there are (each a warning).
    pub fn summary(&self, dir: &Path) -> (String, usize) {
        let loaded: Vec<_> = self
            .inspections
            .iter()
            .filter_map(|inspection| inspection.plugin.clone().ok())
            .collect();
        let catalog = Catalog::build(&loaded, &Catalog::default());
        let renames: Vec<String> = catalog.renames.iter().map(ToString::to_string).collect();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Directory {}: {} plugin(s), {} loading",
            dir.display(),
            self.count,
            loaded.len()
        );
        if renames.is_empty() {
            let _ = writeln!(
                out,
                "  every tool and prompt is served under its own name (or its manifest's prefix)"
            );
        }
        render_section(&mut out, "Renamed at start", "!", &renames);
        (out, renames.len())
    }
}
