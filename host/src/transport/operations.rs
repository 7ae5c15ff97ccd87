//! What operators reach beside the MCP endpoint: `/metrics`, the process's
//! metrics in the Prometheus text format (see [`crate::metrics`]). The HTTP
//! transport serves it at its own address behind its access checks;
//! `--metrics ADDR` serves it on an address of its own (a stdio server has
//! no other).

use std::net::SocketAddr;

use anyhow::{Context, Result};
use axum::Router;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::metrics::{CONTENT_TYPE, METRICS};

/// The metrics, as Prometheus scrapes them.
pub fn metrics() -> Response {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], METRICS.render()).into_response()
}

/// Serves `/metrics` on `addr` until the process ends.
pub async fn serve(addr: &str) -> Result<()> {
    let addr: SocketAddr = addr
        .parse()
        .with_context(|| format!("--metrics {addr:?} is not an address; give HOST:PORT, such as 127.0.0.1:9464"))?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} for /metrics"))?;
    let local = listener.local_addr()?;
    if !local.ip().is_loopback() {
        tracing::warn!("serving /metrics on {local}, reachable from other machines, without a token");
    }
    tracing::info!("metrics at http://{local}/metrics");
    let router = Router::new().route("/metrics", get(async || metrics()));
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            tracing::error!("the /metrics server stopped: {e}");
        }
    });
    Ok(())
}
