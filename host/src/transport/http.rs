//! MCP over Streamable HTTP (revision 2025-11-25) at one endpoint, `/mcp`.
//!
//! POST carries one client message: a request is answered with an SSE stream
//! of what belongs to it, ending with its response (or with the response
//! alone as JSON for a client that takes only JSON); notifications and
//! responses get 202. GET opens the standalone stream, or resumes any stream
//! with `Last-Event-ID`. DELETE ends a session. Each `Mcp-Session-Id` is one
//! [`Session`](crate::session::Session); a 2026-07-28 request without one is
//! served alone (`http/stateless.rs`). All of them share the one `Hub`.
//! Like stdio, this transport only moves messages. `/healthz` and `/readyz`
//! say whether the process serves and is ready; `/metrics` (behind the
//! endpoint's access checks) what it counts; `/status` a live page of it all;
//! `/mcp/server-card` the Server Card, when the operator publishes one.

mod access;
mod connections;
mod error;
mod handlers;
mod health;
mod server_card;
mod sessions;
mod sse;
mod stateless;
mod streams;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use axum::Router;
use axum::http::{HeaderMap, header};
use axum::routing::{get, post};
use tokio_util::sync::CancellationToken;

use super::shutdown_signal;
use crate::auth::{Access, METADATA_PATH, ResourceServer};
use crate::server::Hub;
use crate::settings::{AuthValues, HttpValues};
use connections::Connections;
use sessions::Sessions;

/// How long past the shutdown grace the server waits for connections to
/// close (the answers of calls stopped at the grace are still being sent).
const SHUTDOWN_MARGIN: Duration = Duration::from_secs(2);

/// The path of the MCP endpoint.
pub const ENDPOINT: &str = "/mcp";

/// Settings of the HTTP transport: where it listens and whom it lets in
/// (from the command line), and its bounds (the `[http]` settings).
#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub addr: SocketAddr,
    /// Origins allowed besides the loopback ones (`*`: any).
    pub allowed_origins: Vec<String>,
    /// Accepted bearer tokens; empty means none (see `auth`).
    pub auth_tokens: Vec<String>,
    pub settings: HttpValues,
    /// OAuth access tokens instead, when `auth.issuer` is set.
    pub auth: AuthValues,
    /// The introspection client's secret, for `auth.introspection_client`.
    pub auth_client_secret: Option<String>,
}

/// What every handler shares.
struct App {
    sessions: Arc<Sessions>,
    access: Access,
    poll_after: Option<Duration>,
    retry: Duration,
    /// The request body limit, named in the 413 answer.
    max_message_bytes: usize,
    /// How long a request body may take to arrive.
    body_timeout: Duration,
    /// Cancelled when the server starts shutting down.
    stopping: CancellationToken,
    /// The name the Server Card gives the server, when one is published.
    server_card: Option<String>,
}

/// Serves `server` until SIGINT or SIGTERM; then no new connection is
/// accepted, new sessions and requests are refused, running calls get the
/// shutdown grace to finish and deliver their responses, every session ends,
/// and every connection is closed by the grace and a small margin.
pub async fn serve(hub: Arc<Hub>, config: HttpConfig) -> Result<()> {
    crate::metrics::METRICS.serving_over("tcp");
    if let Some(name) = &config.settings.server_card {
        server_card::check_name(name).map_err(|why| anyhow::anyhow!("--server-card: {why}"))?;
    }
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .with_context(|| format!("cannot listen on {}", config.addr))?;
    let local = listener.local_addr()?;
    if config.auth.issuer.is_some() && !config.auth_tokens.is_empty() {
        anyhow::bail!(
            "--auth-issuer and bearer tokens (--auth-token-file, WASM_MCP_AUTH_TOKEN) are two ways to authenticate; choose one"
        );
    }
    let oauth = ResourceServer::new(&config.auth, config.auth_client_secret.clone(), local, ENDPOINT)?.map(Arc::new);
    if let Some(oauth) = &oauth {
        tokio::spawn(oauth.clone().warm_up());
    }
    let access = Access::new(local.ip(), &config.allowed_origins, config.auth_tokens, oauth);
    if !local.ip().is_loopback() && !access.authenticates() {
        tracing::warn!(
            "listening on {local}, reachable from other machines, without authentication; set --auth-issuer, --auth-token-file or WASM_MCP_AUTH_TOKEN"
        );
    }
    let max_message_bytes = hub.config.max_message_bytes;
    let grace = hub.config.shutdown_grace();
    let sessions = Arc::new(Sessions::new(hub, config.settings.max_sessions));
    tokio::spawn(Sessions::expire_idle(
        Arc::downgrade(&sessions),
        config.settings.session_idle_timeout(),
    ));
    let stopping = CancellationToken::new();
    let app = Arc::new(App {
        sessions: sessions.clone(),
        access,
        poll_after: config.settings.sse_poll_after(),
        retry: config.settings.sse_retry(),
        max_message_bytes,
        body_timeout: config.settings.body_timeout(),
        stopping: stopping.clone(),
        server_card: config.settings.server_card.clone(),
    });
    // Every route here passes the access layer (host, origin, token) before
    // its handler runs, which finds whom the request acts for in `Admitted`.
    let guarded = Router::new()
        .route(
            ENDPOINT,
            post(handlers::post).get(handlers::get).delete(handlers::delete),
        )
        .route("/metrics", get(health::metrics))
        .route("/status.json", get(health::status))
        .route_layer(axum::middleware::from_fn_with_state(app.clone(), access::admit));
    // What anyone may read: health, the OAuth metadata a client needs
    // before it has a token, and the status page (which holds no data).
    let public = Router::new()
        .route(METADATA_PATH, get(access::metadata))
        .route(&format!("{METADATA_PATH}{ENDPOINT}"), get(access::metadata))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/status", get(health::status_page));
    // The Server Card, a draft, only when the operator publishes one.
    let public = match app.server_card {
        Some(_) => public.route(
            &format!("{ENDPOINT}{}", server_card::PATH),
            get(server_card::get).options(server_card::preflight),
        ),
        None => public,
    };
    let router = guarded.merge(public).with_state(app);
    tracing::info!("listening on http://{local}{ENDPOINT}");
    let mut connections = Connections::new(&config.settings);
    tokio::select! {
        () = connections.accept(listener, router, &stopping) => {}
        () = shutdown_signal() => {
            tracing::info!("signal received; shutting down");
            stopping.cancel();
        }
    }
    // The listener is closed. Each connection closes once it has no
    // response left to send; the streams close once running calls have had
    // the grace and their answers are routed. Whatever a client still holds
    // after that (a stream it does not read) is closed at the deadline.
    let drained = async {
        tokio::join!(
            sessions.close_all(grace),
            sessions.hub().close_tasks(grace, "the server is shutting down")
        );
        connections.closed().await;
    };
    if tokio::time::timeout(grace + SHUTDOWN_MARGIN, drained).await.is_err() {
        tracing::warn!(
            "connections still open {:?} after the signal (the shutdown grace and a margin) are closed",
            grace + SHUTDOWN_MARGIN
        );
    }
    Ok(())
}

/// What the `Accept` header allows, as (SSE, JSON). No header allows both.
fn accepts(headers: &HeaderMap) -> (bool, bool) {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|a| a.to_str().ok()) else {
        return (true, true);
    };
    let types: Vec<String> = accept
        .split(',')
        .map(|t| t.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
        .collect();
    let any = |options: &[&str]| types.iter().any(|t| options.contains(&t.as_str()));
    (
        any(&["text/event-stream", "text/*", "*/*"]),
        any(&["application/json", "application/*", "*/*"]),
    )
}
