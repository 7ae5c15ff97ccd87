//! Health for load balancers and orchestrators: `/healthz` answers 200 for
//! as long as the process serves; `/readyz` answers 200 once the plugins
//! present at start are loaded and while the state store answers and the
//! server is not shutting down, else 503 saying which. Neither needs a
//! token, and neither says more than that. `/metrics` and `/status.json`
//! pass the access layer like the MCP endpoint (host, origin, token); the page at
//! `/status` holds no data and passes the token it is given in its address's
//! fragment to `/status.json`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{Html, Response};

use super::App;
use crate::transport::operations;

pub async fn healthz() -> (StatusCode, &'static str) {
    (StatusCode::OK, "ok\n")
}

pub async fn readyz(State(app): State<Arc<App>>) -> (StatusCode, String) {
    let hub = app.sessions.hub();
    let not_ready = if app.stopping.is_cancelled() {
        Some("the server is shutting down")
    } else if !hub.is_started() {
        Some("the plugins present at start are still loading")
    } else if !hub.state_store_answers() {
        Some("the state store does not answer (the server's log names it and says why)")
    } else {
        None
    };
    match not_ready {
        None => (StatusCode::OK, "ready\n".into()),
        Some(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {why}\n")),
    }
}

/// Behind the access layer.
pub async fn metrics() -> Response {
    operations::metrics()
}

pub async fn status_page() -> Html<&'static str> {
    Html(operations::STATUS_PAGE)
}

/// Behind the access layer.
pub async fn status(State(app): State<Arc<App>>) -> axum::Json<serde_json::Value> {
    axum::Json(app.sessions.hub().status())
}
