//! `wasm-mcp check DIR`: every plugin of a plugins directory, as `serve`
//! would load it at start, then the names serving the directory gives them:
//! the tools and prompts renamed because another plugin has their name.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use wasm_mcp::catalog::Catalog;
use wasm_mcp::registry::Registry;
use wasm_mcp::registry::lockfile::Lockfile;
use wasm_mcp::reload::plugin_files;
use wasm_mcp::runtime::{PluginRuntime, plugin_name};

use super::{Inspection, Outcome, render_section};

/// Checks every plugin in `dir` with `runtime`, printing each report and the
/// renames on stdout; a rename counts as a warning.
pub async fn check(runtime: &PluginRuntime, registry: &Registry, dir: &Path) -> Result<Outcome> {
    let files = plugin_files(dir).with_context(|| format!("cannot read the plugins directory {}", dir.display()))?;
    let lock = Lockfile::read(dir)?;
    let mut outcome = Outcome::default();
    let mut loaded = Vec::new();
    for path in &files {
        let inspection = Inspection::run(runtime, path).await?;
        println!("{}", inspection.render());
        outcome.add(Outcome::of(&inspection));
        loaded.extend(inspection.plugin.ok());
    }
    let locked: Vec<_> = lock.plugins.clone().into_iter().collect();
    let mut pulled = registry.pull_all(locked).await;
    for (name, locked) in &lock.plugins {
        let label = PathBuf::from(format!("{name} ({})", locked.reference));
        if files.iter().any(|path| plugin_name(path) == *name) {
            outcome.failures.push((
                label,
                format!("{name}.wasm is in the directory too: neither is served until one of them is removed"),
            ));
            continue;
        }
        match pulled.remove(name).expect("every locked plugin was pulled") {
            Ok(pulled) => {
                let inspection = Inspection::run_pulled(runtime, dir, name, locked, pulled).await;
                println!("{}", inspection.render());
                outcome.add(Outcome::of(&inspection));
                loaded.extend(inspection.plugin.ok());
            }
            Err(e) => outcome.failures.push((label, format!("{e:#}"))),
        }
    }
    let catalog = Catalog::build(&loaded, &Catalog::default());
    let renames: Vec<String> = catalog.renames.iter().map(ToString::to_string).collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Directory {}: {} plugin(s), {} loading",
        dir.display(),
        files.len() + lock.plugins.len(),
        loaded.len()
    );
    if renames.is_empty() {
        let _ = writeln!(
            out,
            "  every tool and prompt is served under its own name (or its manifest's prefix)"
        );
    }
    render_section(&mut out, "Renamed at start", "!", &renames);
    print!("{out}");
    outcome.warnings += renames.len();
    Ok(outcome)
}
