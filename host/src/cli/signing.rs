//! `wasm-mcp keygen`, `wasm-mcp sign REF --key KEY` and `wasm-mcp verify
//! REF`: a publisher's key pair, a signature of what a tag names pushed
//! beside it (cosign's form and place), and who signed what, checked with
//! given keys, a Sigstore trusted root (keyless bundles) or the trust policy.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::registry::reference;
use crate::trust::Signature;
use crate::trust::bundle::TrustedRoot;
use crate::trust::signature::{PrivateKey, PublicKey, payload, read_payload, signature_tag};

use super::registry_args::RegistryArgs;

#[derive(Args)]
pub struct KeygenArgs {
    /// Where to write the pair: PREFIX.key (private, this user only) and PREFIX.pub (to give to operators).
    #[arg(long, value_name = "PREFIX", default_value = "wasm-mcp")]
    out: PathBuf,
}

#[derive(Args)]
pub struct SignArgs {
    /// What to sign: host[:port]/repository:tag (its digest now) or host[:port]/repository@sha256:DIGEST.
    reference: String,
    /// The private key (PEM, as `wasm-mcp keygen` writes).
    #[arg(long, value_name = "KEY")]
    key: PathBuf,
    #[command(flatten)]
    registry: RegistryArgs,
}

#[derive(Args)]
pub struct VerifyArgs {
    /// What to check: host[:port]/repository:tag or host[:port]/repository@sha256:DIGEST.
    reference: String,
    /// Public keys (PEM) to check the signatures with; without one (or --trusted-root), the trust policy (--trust-policy) decides.
    #[arg(long, value_name = "PUB")]
    key: Vec<PathBuf>,
    /// Sigstore trusted root (JSON) to check keyless bundles against, printing who signed each.
    #[arg(long, value_name = "FILE")]
    trusted_root: Option<PathBuf>,
    #[command(flatten)]
    registry: RegistryArgs,
}

/// `keygen`: writes a new key pair; never over an existing file.
pub fn keygen(args: &KeygenArgs) -> Result<()> {
    let key = PrivateKey::generate();
    let private = args.out.with_extension("key");
    let public = args.out.with_extension("pub");
    write_new(&private, key.to_pem().as_bytes(), 0o600)?;
    write_new(&public, key.public_pem().as_bytes(), 0o644)?;
    println!("{}", public.display());
    eprintln!(
        "wrote the private key {} (keep it secret) and the public key {} (operators name it in their trust policy)",
        private.display(),
        public.display()
    );
    Ok(())
}

fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .with_context(|| {
            format!(
                "cannot create {} (an existing key is never overwritten)",
                path.display()
            )
        })?;
    file.write_all(bytes)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// `sign`: signs the digest REF names and pushes the signature beside it.
pub async fn sign(args: SignArgs) -> Result<()> {
    let key = PrivateKey::read(&args.key)?;
    let target = reference::parse(&args.reference)?;
    let (_, registry, _) = args.registry.open()?;
    let client = registry.client().await?;
    let (digest, _) = client.resolve(&target, registry.store()?).await?;
    let repository = format!("{}/{}", target.registry(), target.repository());
    let payload = payload(&repository, &digest);
    let signature = key.sign(&payload);
    client
        .push_signature(&target, &digest, Signature { payload, signature })
        .await?;
    println!("{repository}@{digest}");
    eprintln!(
        "signed {repository}@{digest} with {} (as {repository}:{})",
        args.key.display(),
        signature_tag(&digest)
    );
    Ok(())
}

/// `verify`: prints who signed what; fails when nothing verifies.
pub async fn verify(args: VerifyArgs) -> Result<()> {
    let target = reference::parse(&args.reference)?;
    let (_, registry, _) = args.registry.open()?;
    let client = registry.client().await?;
    let (digest, _) = client.resolve(&target, registry.store()?).await?;
    let repository = format!("{}/{}", target.registry(), target.repository());
    println!("{repository}@{digest}");
    if args.key.is_empty() && args.trusted_root.is_none() {
        let Some(policy) = registry.policy() else {
            bail!(
                "name the keys to check with (--key PUB), a Sigstore trusted root (--trusted-root FILE), or a trust policy (--trust-policy FILE)"
            );
        };
        let verdict = registry.verify(&target, &digest).await?;
        println!(
            "  trusted   {} by the policy {}",
            verdict.map(|v| v.to_string()).unwrap_or_default(),
            policy.path.display()
        );
        return Ok(());
    }
    let keys: Vec<PublicKey> = args.key.iter().map(|k| PublicKey::read(k)).collect::<Result<_>>()?;
    let root = args.trusted_root.as_deref().map(TrustedRoot::read).transpose()?;
    let found = client.signatures_and_bundles(&target, &digest).await?;
    if found.is_empty() {
        bail!(
            "{repository}@{digest} is unsigned: the registry has no {} and no Sigstore bundle refers to it",
            signature_tag(&digest)
        );
    }
    let mut trusted = false;
    for (n, found) in found.keyed.iter().enumerate().filter(|_| !keys.is_empty()) {
        let signer = keys
            .iter()
            .find(|key| key.verifies(&found.payload, &found.signature).unwrap_or(false));
        let claim = read_payload(&found.payload);
        let line = match (signer, claim) {
            (Some(key), Ok(claim)) if claim.digest == digest => {
                trusted = true;
                format!("signed by {} for {} ({})", key.name, claim.digest, claim.repository)
            }
            (Some(key), Ok(claim)) => format!("signed by {}, but for another artifact, {}", key.name, claim.digest),
            (Some(key), Err(e)) => format!("signed by {}, but {e:#}", key.name),
            (None, _) => {
                "not by any of the keys given (another key, an altered payload or a malformed signature)".into()
            }
        };
        println!("  signature {}  {line}", n + 1);
    }
    if let Some(root) = &root {
        for (n, bundle) in found.bundles.iter().enumerate() {
            let line = match root.signer(bundle.as_bytes(), &digest) {
                Ok(identity) => {
                    trusted = true;
                    format!("signed by {identity} for {digest}")
                }
                Err(e) => format!("does not verify against {}: {e:#}", root.name),
            };
            println!("  bundle {}     {line}", n + 1);
        }
    }
    if !trusted {
        bail!("no signature of {repository}@{digest} verifies with the keys or trusted root given");
    }
    Ok(())
}
