//! The authorization layer of the router: every route but the public ones
//! (health, the OAuth metadata, the status page) passes [`admit`] before its
//! handler runs, which asks [`crate::auth`] whether the request may come in
//! and hands the handler whom it acts for; and the OAuth Protected Resource
//! Metadata those public routes serve.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
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
/// handler whom it acts for ([`Admitted`]). What an authenticated caller
/// is sent is that caller's: where a response says how it may be cached
/// (`Cache-Control`), it says `private` too.
pub async fn admit(State(app): State<Arc<App>>, mut request: Request, next: Next) -> Result<Response, HttpError> {
    let credential = app.access.check(request.headers()).await?;
    let authenticated = credential.is_some();
    request.extensions_mut().insert(Admitted(credential));
    let mut response = next.run(request).await;
    if authenticated {
        private(response.headers_mut());
    }
    Ok(response)
}

/// Adds `private` to the `Cache-Control` of a response that has one.
fn private(headers: &mut HeaderMap) {
    let Some(directives) = headers.get(header::CACHE_CONTROL).and_then(|v| v.to_str().ok()) else {
        return;
    };
    if directives.split(',').any(|d| d.trim().eq_ignore_ascii_case("private")) {
        return;
    }
    let kept: Vec<&str> = directives
        .split(',')
        .map(str::trim)
        .filter(|d| !d.eq_ignore_ascii_case("public"))
        .collect();
    let value = format!("{}, private", kept.join(", "));
    if let Ok(value) = HeaderValue::from_str(value.trim_start_matches(", ")) {
        headers.insert(header::CACHE_CONTROL, value);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cache_control(value: &str) -> String {
        let mut headers = HeaderMap::new();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_str(value).unwrap());
        private(&mut headers);
        headers[header::CACHE_CONTROL].to_str().unwrap().to_owned()
    }

    #[test]
    fn an_authenticated_callers_response_is_cached_privately_if_at_all() {
        assert_eq!(cache_control("no-cache"), "no-cache, private");
        assert_eq!(cache_control("public, max-age=10"), "max-age=10, private");
        assert_eq!(cache_control("Private"), "Private");
        let mut none = HeaderMap::new();
        private(&mut none);
        assert!(none.is_empty(), "no caching said, none added");
    }
}
