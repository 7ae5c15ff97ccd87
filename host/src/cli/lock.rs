//! `wasm-mcp add REF`, `update [NAME]` and `remove NAME`: the lockfile of a
//! plugins directory, changed only with plugins that load. `add` and
//! `update` resolve tags to digests (the only time tags are read), pull by
//! digest into the store, and load each plugin as `serve` would before the
//! lockfile names it; a server following the directory picks the change up.
//!
//! `add` records the grants the plugin's manifest asks for as approved (the
//! operator saw them printed); an `update` whose manifest asks for more is
//! held in the entry as pending, the approved version serving on, until
//! `wasm-mcp approve NAME` accepts it. `approve` also records the grants of
//! a loose file, which a server with `--approve-files` holds it to.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::config::Settings;
use crate::manifest::Manifest;
use crate::registry::lockfile::{ApprovedFile, Locked, Lockfile, Pending, check_name};
use crate::registry::{Registry, reference};
use crate::runtime::PluginRuntime;
use crate::state::StateStore;
use crate::trust::Grants;

use super::check::render_grants;
use super::registry_args::RegistryArgs;

#[derive(Args)]
pub struct AddArgs {
    /// The plugin's reference: host[:port]/repository:tag (followed by `update`) or host[:port]/repository@sha256:DIGEST.
    reference: String,
    /// The plugin's name [default: the last part of the repository].
    #[arg(long)]
    name: Option<String>,
    #[command(flatten)]
    dir: PluginsDir,
    #[command(flatten)]
    registry: RegistryArgs,
}

#[derive(Args)]
pub struct UpdateArgs {
    /// The plugin to update [default: every plugin of the lockfile].
    name: Option<String>,
    /// Show what would change, and change nothing.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    dir: PluginsDir,
    #[command(flatten)]
    registry: RegistryArgs,
}

#[derive(Args)]
pub struct RemoveArgs {
    /// The plugin to remove from the lockfile.
    name: String,
    #[command(flatten)]
    dir: PluginsDir,
}

#[derive(Args)]
pub struct ApproveArgs {
    /// The plugin whose held update to accept, with the grants it asks for (or the loose file NAME.wasm whose grants to approve).
    name: String,
    #[command(flatten)]
    dir: PluginsDir,
    #[command(flatten)]
    registry: RegistryArgs,
}

#[derive(Args)]
struct PluginsDir {
    /// The plugins directory whose lockfile (plugins.lock) to change.
    #[arg(long, default_value = "plugins", env = "WASM_MCP_PLUGINS")]
    plugins: PathBuf,
}

impl PluginsDir {
    /// The directory's lockfile (empty when it has none).
    fn lockfile(&self) -> Result<Lockfile> {
        if !self.plugins.is_dir() {
            bail!(
                "the plugins directory {} does not exist; create it or pass --plugins DIR",
                self.plugins.display()
            );
        }
        Lockfile::read(&self.plugins)
    }
}

/// `add`: pins the plugin and says what it serves and is granted.
pub async fn add(args: AddArgs) -> Result<()> {
    let source = reference::parse(&args.reference)?;
    let name = args.name.clone().unwrap_or_else(|| reference::default_name(&source));
    check_name(&name)?;
    let dir = &args.dir.plugins;
    let mut lock = args.dir.lockfile()?;
    let file = dir.join(format!("{name}.wasm"));
    if file.exists() {
        bail!(
            "{} is already a plugin of {}: add this one under another name (--name NAME)",
            file.display(),
            dir.display()
        );
    }
    if let Some(locked) = lock.plugins.get(&name) {
        bail!(
            "{name} is already in the lockfile (from {}): `wasm-mcp update {name}` follows its tag, \
             `wasm-mcp remove {name}` frees the name, or add this one under another name (--name NAME)",
            locked.reference
        );
    }
    let (settings, registry, cache) = args.registry.open()?;
    let (digest, _) = registry.client().await?.resolve(&source, registry.store()?).await?;
    let mut locked = Locked {
        reference: args.reference.clone(),
        digest,
        ..Locked::default()
    };
    let report = Checked::load(&settings, &registry, cache, dir, &name, &locked).await?;
    locked.approved = Some(report.grants);
    lock.plugins.insert(name.clone(), locked.clone());
    lock.write(dir)?;
    print!("Added {name} from {}\n{}", locked.reference, report.summary);
    println!("  lockfile  {}", Lockfile::path(dir).display());
    Ok(())
}

/// `update`: each tag read again; what changes is shown, checked, then written.
pub async fn update(args: UpdateArgs) -> Result<()> {
    let dir = &args.dir.plugins;
    let mut lock = args.dir.lockfile()?;
    let names: Vec<String> = match &args.name {
        Some(name) if !lock.plugins.contains_key(name) => bail!(
            "{name} is not in the lockfile {} (it has: {})",
            Lockfile::path(dir).display(),
            names_of(&lock)
        ),
        Some(name) => vec![name.clone()],
        None => lock.plugins.keys().cloned().collect(),
    };
    let (settings, registry, cache) = args.registry.open()?;
    let mut changes = Vec::new();
    for name in names {
        let locked = &lock.plugins[&name];
        let source = reference::parse(&locked.reference)?;
        if source.tag().is_none() {
            println!("{name}: {} is pinned by digest; unchanged", locked.reference);
            continue;
        }
        let (digest, _) = registry.client().await?.resolve(&source, registry.store()?).await?;
        if digest == locked.digest {
            println!("{name}: {} still names {digest}; unchanged", locked.reference);
            continue;
        }
        println!("{name}: {}\n  {} -> {digest}", locked.reference, locked.digest);
        let mut updated = Locked {
            digest,
            pending: None,
            ..locked.clone()
        };
        if !args.dry_run {
            let report = Checked::load(&settings, &registry, cache.clone(), dir, &name, &updated).await?;
            print!("{}", report.summary);
            let asks = locked
                .approved
                .as_ref()
                .map(|approved| report.grants.growth(approved))
                .unwrap_or_default();
            if !asks.is_empty() {
                println!("  held      it asks for more than was approved:");
                for line in &asks {
                    println!("    {line}");
                }
                println!(
                    "            {} keeps serving until `wasm-mcp approve {name}` accepts it",
                    locked.digest
                );
                updated = Locked {
                    pending: Some(Pending {
                        digest: updated.digest,
                        asks,
                    }),
                    ..locked.clone()
                };
            }
        }
        changes.push((name, updated));
    }
    if changes.is_empty() {
        println!("nothing to update");
    } else if args.dry_run {
        println!("{} plugin(s) would change; nothing written (--dry-run)", changes.len());
    } else {
        let held = changes.iter().filter(|(_, locked)| locked.pending.is_some()).count();
        let count = changes.len() - held;
        lock.plugins.extend(changes);
        lock.write(dir)?;
        let path = Lockfile::path(dir);
        if held == 0 {
            println!("{count} plugin(s) updated in {}", path.display());
        } else {
            println!(
                "{count} plugin(s) updated, {held} held for approval in {}",
                path.display()
            );
        }
    }
    Ok(())
}

/// `approve`: the held update of NAME is served, its grants approved.
pub async fn approve(args: ApproveArgs) -> Result<()> {
    let dir = &args.dir.plugins;
    let mut lock = args.dir.lockfile()?;
    let file = dir.join(format!("{}.wasm", args.name));
    let Some(locked) = lock.plugins.get(&args.name).cloned() else {
        if file.is_file() {
            return approve_file(dir, &file, &args.name, lock);
        }
        bail!(
            "{} is neither in the lockfile {} (it has: {}) nor a file of {}",
            args.name,
            Lockfile::path(dir).display(),
            names_of(&lock),
            dir.display()
        );
    };
    let (settings, registry, cache) = args.registry.open()?;
    let digest = locked.pending.as_ref().map_or(&locked.digest, |p| &p.digest).clone();
    let mut approved = Locked {
        digest,
        pending: None,
        ..locked.clone()
    };
    let report = Checked::load(&settings, &registry, cache, dir, &args.name, &approved).await?;
    approved.approved = Some(report.grants);
    print!(
        "Approved {} ({}@{})\n{}",
        args.name, approved.reference, approved.digest, report.summary
    );
    lock.plugins.insert(args.name.clone(), approved);
    lock.write(dir)?;
    println!("  lockfile  {}", Lockfile::path(dir).display());
    Ok(())
}

/// `approve` of the loose file `file`: the grants its manifest asks for now
/// are recorded as approved for plugin `name`.
fn approve_file(dir: &Path, file: &Path, name: &str, mut lock: Lockfile) -> Result<()> {
    let (manifest, _) = Manifest::for_plugin(file)?;
    let mut summary = String::new();
    render_grants(&mut summary, &manifest, None);
    println!("Approved {name} ({}){summary}", file.display());
    lock.files.insert(
        name.to_owned(),
        ApprovedFile {
            approved: Grants::of(&manifest),
        },
    );
    lock.write(dir)?;
    println!("  lockfile  {}", Lockfile::path(dir).display());
    Ok(())
}

/// `remove`: the entry goes from the lockfile (the store keeps its content).
pub fn remove(args: RemoveArgs) -> Result<()> {
    let dir = &args.dir.plugins;
    let mut lock = args.dir.lockfile()?;
    let Some(locked) = lock.plugins.remove(&args.name) else {
        bail!(
            "{} is not in the lockfile {} (it has: {})",
            args.name,
            Lockfile::path(dir).display(),
            names_of(&lock)
        );
    };
    lock.write(dir)?;
    println!(
        "removed {} ({}@{}) from {}",
        args.name,
        locked.reference,
        locked.digest,
        Lockfile::path(dir).display()
    );
    Ok(())
}

fn names_of(lock: &Lockfile) -> String {
    if lock.plugins.is_empty() {
        return "none".to_owned();
    }
    lock.plugins.keys().cloned().collect::<Vec<_>>().join(", ")
}

/// A locked plugin pulled and loaded as `serve` would, and what it serves.
struct Checked {
    summary: String,
    /// What its manifest grants.
    grants: Grants,
}

impl Checked {
    /// Pulls `locked` into the store and loads it as plugin `name` of `dir`
    /// (compiled into the cache `serve` reads); the error says why it does not load.
    async fn load(
        settings: &Settings,
        registry: &Registry,
        cache: Option<PathBuf>,
        dir: &Path,
        name: &str,
        locked: &Locked,
    ) -> Result<Checked> {
        let pulled = registry.pull(locked).await?;
        let manifest = pulled.parsed_manifest(name, dir, &locked.reference)?;
        let has_manifest = pulled.manifest.is_some();
        // Loading lists the plugin: nothing it writes is kept.
        let runtime = PluginRuntime::new(settings, cache, StateStore::in_memory())?;
        let plugin = runtime
            .load_component(name, &pulled.wasm_path, pulled.wasm, manifest, pulled.skills)
            .await
            .with_context(|| {
                format!(
                    "{}@{} does not load; the lockfile is unchanged",
                    locked.reference, locked.digest
                )
            })?;
        let mut summary = String::new();
        let _ = writeln!(summary, "  digest    {}", locked.digest);
        let _ = writeln!(summary, "  registry  {}", reference::registry_of(&locked.reference));
        let tools: Vec<&str> = plugin.listing.tools.iter().map(|t| t.name.as_str()).collect();
        let _ = writeln!(
            summary,
            "  serves    {} tool(s){}, {} resource(s), {} template(s), {} prompt(s)",
            tools.len(),
            if tools.is_empty() {
                String::new()
            } else {
                format!(" ({})", tools.join(", "))
            },
            plugin.listing.resources.len(),
            plugin.listing.templates.len(),
            plugin.listing.prompts.len()
        );
        let skills: Vec<String> = plugin
            .skills
            .skills
            .iter()
            .map(|skill| match skill.files {
                Some(_) => skill.path.clone(),
                None => format!("{} (made when read)", skill.path),
            })
            .collect();
        if !skills.is_empty() {
            let _ = writeln!(summary, "  skills    {}", skills.join(", "));
        }
        if has_manifest {
            let _ = writeln!(summary, "  manifest  published with it; it asks for:");
            let mut grants = String::new();
            render_grants(&mut grants, &plugin.manifest, Some(&plugin.limits));
            for line in grants.lines().skip_while(|l| l.trim().is_empty() || *l == "Grants") {
                let _ = writeln!(summary, "  {line}");
            }
        } else {
            let _ = writeln!(summary, "  manifest  none published: it is granted nothing");
        }
        Ok(Checked {
            summary,
            grants: Grants::of(&plugin.manifest),
        })
    }
}
