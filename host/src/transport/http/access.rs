//! The authorization layer of the router: every route but the public ones
//! (health, the OAuth metadata, the status page) passes [`admit`] before its
//! handler runs, which asks [`crate::auth`] whether the request may come in
//! and hands the handler whom it acts for; and the OAuth Protected Resource
//! Metadata those public routes serve.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::App;
use super::error::HttpError;
use crate::auth::{Credential, Refusal};

/// Whom a request that passed the access layer acts for; its handler takes
/// it from the request's extensions.
#[derive(Debug, Clone)]
pub struct Admitted(pub Credential);

/// The access layer of every guarded route: checks the request's headers
/// ([`crate::auth::Access::check`]) before its handler runs, and hands the
/// handler whom it acts for ([`Admitted`]).
pub async fn admit(State(app): State<Arc<App>>, mut request: Request, next: Next) -> Result<Response, HttpError> {
    let credential = app.access.check(request.headers()).await?;
    request.extensions_mut().insert(Admitted(credential));
    Ok(next.run(request).await)
}

/// GET of the Protected Resource Metadata: no token needed, readable from
/// any origin (browser-based clients discover the server with it).
pub async fn metadata(State(app): State<Arc<App>>) -> Response {
    let Some(oauth) = app.access.resource_server() else {
        return (StatusCode::NOT_FOUND, "this server does not take OAuth access tokens\n").into_response();
    };
    let document = oauth.metadata(&app.sessions.hub().catalog());
    ([(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")], Json(document)).into_response()
}

impl From<Refusal> for HttpError {
    fn from(refusal: Refusal) -> Self {
        HttpError {
            challenge: refusal.challenge,
            retry_after: refusal.retry_after,
            ..HttpError::new(refusal.status, refusal.message)
        }
    }
}
