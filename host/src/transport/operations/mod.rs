//! What operators reach beside the MCP endpoint: `/metrics`, the process's
//! metrics in the Prometheus text format (see [`crate::metrics`]), and
//! `/status`, a live page of the loaded plugins, each tool's calls, errors
//! and latencies, running and waiting calls, tasks, sessions, and the latest
//! limit hits, refused egress and load failures (its data at
//! `/status.json`). The HTTP transport serves them at its own address, the
//! data behind its access checks; `--metrics ADDR` and `--status ADDR`
//! serve them on an address of their own (a stdio server has no other).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use axum::Router;
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;

use crate::metrics::{CONTENT_TYPE, METRICS};
use crate::server::Hub;

/// The status page: static, with no data of its own (it fetches `status.json`).
pub const STATUS_PAGE: &str = include_str!("status.html");

/// The metrics, as Prometheus scrapes them.
pub fn metrics() -> Response {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], METRICS.render()).into_response()
}

/// Serves `/metrics` on `metrics` and the status page on `status` (one
/// server when they are the same address) until the process ends, without
/// a token: a warning says so when an address is reachable from other machines.
pub async fn serve(hub: &Arc<Hub>, metrics: Option<&str>, status: Option<&str>) -> Result<()> {
    let mut routers: Vec<(&str, Router)> = Vec::new();
    if let Some(addr) = metrics {
        routers.push((addr, Router::new().route("/metrics", get(async || self::metrics()))));
    }
    if let Some(addr) = status {
        let hub = hub.clone();
        let status_routes = Router::new()
            .route("/status", get(async || Html(STATUS_PAGE)))
            .route("/status.json", get(async move || axum::Json(hub.status())));
        match routers.iter_mut().find(|(at, _)| *at == addr) {
            Some((_, router)) => *router = std::mem::take(router).merge(status_routes),
            None => routers.push((addr, status_routes)),
        }
    }
    for (addr, router) in routers {
        let socket: SocketAddr = addr
            .parse()
            .with_context(|| format!("{addr:?} is not an address; give HOST:PORT, such as 127.0.0.1:9464"))?;
        let listener = tokio::net::TcpListener::bind(socket)
            .await
            .with_context(|| format!("cannot listen on {socket} for /metrics or /status"))?;
        let local = listener.local_addr()?;
        if !local.ip().is_loopback() {
            tracing::warn!("serving operator endpoints on {local}, reachable from other machines, without a token");
        }
        if metrics == Some(addr) {
            tracing::info!("metrics at http://{local}/metrics");
        }
        if status == Some(addr) {
            tracing::info!("status page at http://{local}/status");
        }
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                tracing::error!("the server of /metrics and /status on {local} stopped: {e}");
            }
        });
    }
    Ok(())
}
