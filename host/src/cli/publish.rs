//! `wasm-mcp push PLUGIN.wasm REF` and `wasm-mcp pull REF -o FILE`: a plugin
//! published to a registry as a wasm artifact (its manifest `PLUGIN.toml`,
//! when beside it, as a second layer), and one fetched back as files.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::manifest::Manifest;
use crate::registry::artifact::{ComponentInfo, Publication};
use crate::registry::lockfile::Locked;
use crate::registry::reference;

use super::check::component::Component;
use super::registry_args::RegistryArgs;

#[derive(Args)]
pub struct PushArgs {
    /// The plugin component; its manifest `PLUGIN.toml` beside it, if any, is published with it.
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
    /// Where to write the component; its manifest, if it was published with one, goes beside it as FILE.toml.
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
    let publication = Publication::new(&file_name, wasm, manifest, info)?;
    let (_, registry, _) = args.registry.open()?;
    let digest = registry.client().await?.push(&target, &publication).await?;
    println!("{}@{digest}", args.reference);
    eprintln!(
        "pushed {} {}; add it to a server's plugins with `wasm-mcp add {}`",
        args.plugin.display(),
        if with_manifest {
            format!("with its manifest {}", manifest_path.display())
        } else {
            "(no manifest beside it: it will be served with no grants)".to_owned()
        },
        args.reference
    );
    Ok(())
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
    println!("{}@{digest}", args.reference.split('@').next().unwrap_or_default());
    eprintln!("wrote {}", written.join(" and "));
    Ok(())
}
