//! Follows the plugin digests revoked through the state store the replicas
//! share (`wasm-mcp revoke`): read before the first load, and again whenever
//! a replica or the `revoke` command says they changed; each change holds
//! every plugin to them at once ([`Reloader::revalidate`]), so a revoked
//! plugin stops being served on every replica within moments. A store that
//! does not answer at start is asked again until it does.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;

use super::Reloader;
use crate::state::Event;

/// How long to wait before asking a store that did not answer again.
const RETRY: Duration = Duration::from_secs(1);

/// Reads the revoked digests now (when the store is shared), then follows
/// their changes for as long as the process runs.
pub(super) async fn follow(reloader: Arc<Reloader>) {
    let store = reloader.hub.state_store().clone();
    if !store.is_shared() {
        return;
    }
    let mut events = store.events();
    let known = read(&reloader).await;
    tokio::spawn(async move {
        if !known {
            while !read(&reloader).await {
                tokio::time::sleep(RETRY).await;
            }
            reloader.revalidate().await;
        }
        loop {
            match events.recv().await {
                Ok(Event::RevocationsChanged) | Err(RecvError::Lagged(_)) => {
                    while !read(&reloader).await {
                        tokio::time::sleep(RETRY).await;
                    }
                    reloader.revalidate().await;
                }
                Ok(_) => {}
                Err(RecvError::Closed) => return,
            }
        }
    });
}

/// Reads the revoked digests into the registry front; whether the store answered.
async fn read(reloader: &Reloader) -> bool {
    match reloader.hub.state_store().revoked_digests().await {
        Ok(revoked) => {
            if reloader.registry.set_revoked(revoked.clone()) {
                tracing::info!(revoked = ?revoked, "the digests revoked through the state store changed; holding every plugin to them");
            }
            true
        }
        Err(error) => {
            tracing::error!("the revoked digests cannot be read ({error}); asking again until the store answers");
            false
        }
    }
}
