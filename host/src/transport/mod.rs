//! Transports: they only move messages between a client and a session;
//! and the endpoints operators reach beside them (`operations`).

pub mod http;
pub mod operations;
pub mod stdio;

/// Resolves on the first SIGINT or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).expect("SIGTERM can be handled");
    tracing::debug!("waiting for SIGINT or SIGTERM");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
}
