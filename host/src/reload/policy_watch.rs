//! Follows the trust policy's file (inotify through `notify`, on the folder
//! that holds it, so an editor's rename or a ConfigMap's symlink swap is
//! seen): when its content changes, it is read again and every plugin is
//! held to it at once ([`Reloader::revalidate`]): a revocation withdraws a
//! plugin within the debounce. A policy that does not parse is reported and
//! the previous one stays.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use notify::{RecursiveMode, Watcher};
use serde_json::json;
use tokio::sync::mpsc;

use super::{DEBOUNCE, LOGGER, Reloader};
use crate::protocol::LogLevel;
use crate::trust::Policy;

/// Starts following the policy at `path` for as long as the process runs.
pub(super) fn follow(reloader: Arc<Reloader>, path: PathBuf) -> Result<()> {
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."))
        .to_owned();
    let (events, mut seen) = mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok() {
            let _ = events.send(());
        }
    })
    .context("cannot watch the trust policy")?;
    watcher
        .watch(&folder, RecursiveMode::NonRecursive)
        .with_context(|| format!("cannot watch {} for the trust policy", folder.display()))?;
    let mut last = std::fs::read(&path).ok();
    tokio::spawn(async move {
        let _watching = watcher;
        while seen.recv().await.is_some() {
            // The rest of the burst.
            tokio::time::sleep(DEBOUNCE).await;
            while seen.try_recv().is_ok() {}
            let now = std::fs::read(&path).ok();
            if now == last {
                continue;
            }
            last = now;
            match Policy::read(&path) {
                Ok(policy) => {
                    tracing::info!(path = %path.display(), "trust policy read again; holding every plugin to it");
                    reloader.registry.set_policy(policy);
                    reloader.revalidate().await;
                }
                Err(e) => {
                    tracing::error!(path = %path.display(), "the trust policy is not used (the previous one stays): {e:#}");
                    reloader.hub.log_to_all(
                        LogLevel::Error,
                        LOGGER,
                        json!({ "message": "the trust policy is not used; the previous one stays", "path": path.display().to_string(), "error": format!("{e:#}") }),
                    );
                }
            }
        }
    });
    Ok(())
}
