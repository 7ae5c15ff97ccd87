//! `wasm-mcp push PLUGIN.wasm REF` and `wasm-mcp pull REF -o FILE`: a plugin
//! published to a registry as a wasm artifact (its manifest `PLUGIN.toml`
//! and its skills folder `PLUGIN.skills/`, when beside it, as layers of
//! their own), and one fetched back as files.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::manifest::Manifest;
use crate::registry::artifact::{ComponentInfo, Publication};
use crate::registry::lockfile::Locked;
use crate::registry::reference;
use crate::skills::{self, SkillSet, archive};

use super::check::component::Component;
use super::registry_args::RegistryArgs;

#[derive(Args)]
pub struct PushArgs {
    /// The plugin component; its manifest `PLUGIN.toml` and skills folder `PLUGIN.skills/` beside it, if any, are published with it.
    plugin: PathBuf,
    /// Where to publish it: host[:port]/repository:tag.
    reference: String,
    #[command(flatten)]
    registry: RegistryArgs,
}

#[derive(Args)]
pub struct PullArgs {
    /// What to fetch: host[:port]/repository:tag or host[:port]/repository@sha256:DIGEST.
    reference: String,
    /// Where to write the component; its manifest and skills, if it was published with them, go beside it as FILE.toml and FILE.skills/.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    #[command(flatten)]
    registry: RegistryArgs,
}

/// `push`: prints the reference pinned to the digest of what was pushed.
pub async fn push(args: PushArgs) -> Result<()> {
    let target = reference::parse(&args.reference)?;
    if target.tag().is_none() {
        bail!(
            "push to a tag ({}:TAG): a digest names what is pushed, it is known only once it is",
            args.reference.split('@').next().unwrap_or_default()
        );
    }
    let wasm = std::fs::read(&args.plugin).with_context(|| format!("cannot read {}", args.plugin.display()))?;
    let component = Component::read(&wasm)
        .map_err(|e| anyhow::anyhow!("{} is not a plugin component: {e}", args.plugin.display()))?;
    let manifest_path = args.plugin.with_extension("toml");
    let manifest = match std::fs::read_to_string(&manifest_path) {
        Ok(text) => {
            Manifest::parse(&text, &manifest_path)?;
            Some(text)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", manifest_path.display())),
    };
    let file_name = args
        .plugin
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let info = ComponentInfo {
        exports: component.exports.clone(),
        imports: component.imports.clone(),
        target: None,
    };
    let with_manifest = manifest.is_some();
    let skills_folder = skills::folder_of(&args.plugin);
    let skills = packed_skills(&skills_folder)?;
    let with_skills = skills.as_ref().map(|(count, _)| *count);
    let publication = Publication::new(&file_name, wasm, manifest, skills.map(|(_, packed)| packed), info)?;
    let (_, registry, _) = args.registry.open()?;
    let digest = registry.client().await?.push(&target, &publication).await?;
    println!("{}@{digest}", args.reference);
    let mut with = Vec::new();
    if with_manifest {
        with.push(format!("its manifest {}", manifest_path.display()));
    }
    if let Some(count) = with_skills {
        with.push(format!("its {count} skill(s) from {}", skills_folder.display()));
    }
    eprintln!(
        "pushed {}{}{}; add it to a server's plugins with `wasm-mcp add {}`",
        args.plugin.display(),
        if with.is_empty() {
            String::new()
        } else {
            format!(" with {}", with.join(" and "))
        },
        if with_manifest {
            ""
        } else {
            " (no manifest beside it: it will be served with no grants)"
        },
        args.reference
    );
    Ok(())
}

/// The skills folder `folder` packed, with how many skills it holds; none
/// when there is no folder or nothing in it. A folder a server would not
/// serve whole (a skill that breaks a rule, a link, over the limits) is
/// refused, saying why, rather than published.
fn packed_skills(folder: &Path) -> Result<Option<(usize, Vec<u8>)>> {
    let set = SkillSet::read(folder)?;
    if !set.refused.is_empty() {
        bail!(
            "{} is not published as it is: {}; correct it, or move it away to publish the plugin without skills",
            folder.display(),
            set.refused.join("; ")
        );
    }
    if set.files.is_empty() {
        return Ok(None);
    }
    let packed = archive::pack(&set.files).with_context(|| format!("cannot pack {}", folder.display()))?;
    Ok(Some((set.skills.len(), packed)))
}

/// `pull`: writes the component (and its manifest) and prints the digest.
pub async fn pull(args: PullArgs) -> Result<()> {
    let source = reference::parse(&args.reference)?;
    let (_, registry, _) = args.registry.open()?;
    let store = registry.store()?;
    let (digest, _) = registry.client().await?.resolve(&source, store).await?;
    let locked = Locked {
        reference: args.reference.clone(),
        digest: digest.clone(),
        ..Locked::default()
    };
    let pulled = registry.pull(&locked).await?;
    std::fs::write(&args.output, &pulled.wasm).with_context(|| format!("cannot write {}", args.output.display()))?;
    let mut written = vec![args.output.display().to_string()];
    if let Some(manifest) = &pulled.manifest {
        let path = args.output.with_extension("toml");
        std::fs::write(&path, manifest).with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path.display().to_string());
    }
    if !pulled.skills.files.is_empty() {
        let folder = skills::folder_of(&args.output);
        write_skills(&pulled.skills, &folder)?;
        written.push(format!("{}/", folder.display()));
    }
    println!("{}@{digest}", args.reference.split('@').next().unwrap_or_default());
    eprintln!("wrote {}", written.join(" and "));
    Ok(())
}

/// Writes the files of `skills` as the folder `folder`, replacing what was
/// there: written beside it first, then moved into place.
fn write_skills(skills: &SkillSet, folder: &Path) -> Result<()> {
    let name = folder.file_name().unwrap_or_default().to_string_lossy();
    let fresh = folder.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = write_files(skills, &fresh).and_then(|()| {
        if let Err(e) = std::fs::remove_dir_all(folder)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            return Err(e).with_context(|| format!("cannot replace {}", folder.display()));
        }
        std::fs::rename(&fresh, folder).with_context(|| format!("cannot move {} into place", fresh.display()))
    });
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&fresh);
    }
    written
}

/// Writes the files of `skills` under `dir`.
fn write_files(skills: &SkillSet, dir: &Path) -> Result<()> {
    for (path, file) in &skills.files {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&target, &file.bytes).with_context(|| format!("cannot write {}", target.display()))?;
    }
    Ok(())
}
