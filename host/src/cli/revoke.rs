//! `wasm-mcp revoke DIGEST --state redis://…`: a plugin digest that no
//! replica sharing the state store serves any more, at once (each withdraws
//! it with `list_changed`); `--lift` lets them serve it again. For servers
//! that share no store, the trust policy's `[revoked]` list does the same.

use std::time::Duration;

use anyhow::{Result, bail};
use clap::Args;

use crate::registry::reference;
use crate::state::{Location, StateStore};

#[derive(Args)]
pub struct RevokeArgs {
    /// The artifact digest to revoke (sha256:HEX), or a pinned reference host[:port]/repository@sha256:HEX.
    digest: String,
    /// Lift the revocation: the digest may be served again.
    #[arg(long)]
    lift: bool,
    /// The state store the replicas share.
    #[arg(long, value_name = "redis://HOST:PORT", env = "WASM_MCP_STATE")]
    state: String,
}

/// `revoke`: records the revocation (or lifts it) and tells every replica.
pub async fn run(args: RevokeArgs) -> Result<()> {
    let digest = args.digest.rsplit('@').next().unwrap_or(&args.digest);
    reference::check_digest(digest)?;
    let location = Location::parse(&args.state);
    if !matches!(location, Location::Redis(_)) {
        bail!(
            "--state {}: a revocation goes through the state store the replicas share (redis://HOST:PORT); \
             for servers that share none, list the digest under [revoked] in their trust policy",
            args.state
        );
    }
    let store = StateStore::open(&location, Duration::from_secs(10))?;
    store
        .revoke(digest, args.lift)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if args.lift {
        println!(
            "{digest} may be served again by every replica sharing {}",
            store.described()
        );
    } else {
        println!(
            "{digest} is revoked: every replica sharing {} stops serving it",
            store.described()
        );
    }
    Ok(())
}
