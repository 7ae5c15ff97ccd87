//! The admission layer of the router: every route but the public ones
//! (health, the OAuth metadata, the status page) passes [`admit`] before its
//! handler runs. A POST's message is read here (within its size and time)
//! and parsed, once; then [`crate::auth`] is asked, once, whether the
//! request may come in and what its message may use, and the handler is
//! handed whom it acts for ([`Admitted`]) and the message ([`Message`]).
//! Also the OAuth Protected Resource Metadata those public routes serve.

use std::error::Error as _;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::LengthLimitError;

use super::App;
use super::error::HttpError;
use crate::auth::{Credential, Refusal};
use crate::protocol::Incoming;
use crate::settings;

/// Whom a request that passed the access layer acts for; its handler takes
/// it from the request's extensions.
#[derive(Debug, Clone)]
pub struct Admitted(pub Credential);

/// The message a POST carried, read, parsed and admitted by the access
/// layer; its handler takes it (once) from the request's extensions.
pub struct Message(pub Incoming);

/// Where the access layer leaves a POST's message for its handler.
#[derive(Clone)]
struct Unclaimed(Arc<Mutex<Option<Incoming>>>);

impl<S: Send + Sync> FromRequestParts<S> for Message {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, HttpError> {
        parts
            .extensions
            .remove::<Unclaimed>()
            .and_then(|Unclaimed(message)| message.lock().unwrap().take())
            .map(Message)
            .ok_or_else(|| HttpError::new(StatusCode::INTERNAL_SERVER_ERROR, "the request's message was not read"))
    }
}

/// The access layer of every guarded route: reads and parses a POST's
/// message, then has [`crate::auth::Access::admit`] check the request (its
/// headers, and what the message uses) before its handler runs; hands the
/// handler whom it acts for ([`Admitted`]) and the message ([`Message`]).
/// A message that cannot be read or parsed is refused for it only once
/// its sender is admitted. What an authenticated caller is sent is that
/// caller's: where a response says how it may be cached
/// (`Cache-Control`), it says `private` too.
pub async fn admit(State(app): State<Arc<App>>, request: Request, next: Next) -> Result<Response, HttpError> {
    let (mut parts, body) = request.into_parts();
    let message = match parts.method {
        Method::POST => Some(app.read_message(&parts.headers, body).await),
        _ => None,
    };
    let parsed = message.as_ref().and_then(|message| message.as_ref().ok());
    // The scopes are the manifests': wait for the plugins present at start.
    let credential = app
        .access
        .admit(&parts.headers, parsed, || app.sessions.hub().loaded_catalog())
        .await?;
    if let Some(message) = message {
        parts.extensions.insert(Unclaimed(Arc::new(Mutex::new(Some(message?)))));
    }
    let authenticated = credential.is_some();
    parts.extensions.insert(Admitted(credential));
    let mut response = next.run(Request::from_parts(parts, Body::empty())).await;
    if authenticated {
        private(response.headers_mut());
    }
    Ok(response)
}

impl App {
    /// Reads and parses the one JSON-RPC message of a POST.
    async fn read_message(&self, headers: &HeaderMap, body: Body) -> Result<Incoming, HttpError> {
        let body = self.read_body(body).await?;
        let json = headers
            .get(header::CONTENT_TYPE)
            .and_then(|t| t.to_str().ok())
            .is_some_and(|t| {
                t.split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .eq_ignore_ascii_case("application/json")
            });
        if !json {
            return Err(HttpError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Unsupported Media Type: send one JSON-RPC message with Content-Type: application/json",
            ));
        }
        Incoming::parse_bytes(&body).map_err(|bad| HttpError::unparseable(bad.error))
    }

    /// Reads a request body: at most the message size limit, within the
    /// body timeout, and not past the start of a shutdown.
    async fn read_body(&self, body: Body) -> Result<Bytes, HttpError> {
        let read = tokio::time::timeout(self.body_timeout, axum::body::to_bytes(body, self.max_message_bytes));
        let read = tokio::select! {
            read = read => read,
            () = self.stopping.cancelled() => {
                return Err(HttpError {
                    close: true,
                    ..HttpError::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "The server is shutting down and reads no more of the request",
                    )
                });
            }
        };
        match read {
            Ok(Ok(bytes)) => Ok(bytes),
            Ok(Err(e)) if e.source().is_some_and(|e| e.is::<LengthLimitError>()) => Err(HttpError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                crate::request::message_too_large(self.max_message_bytes).message,
            )),
            Ok(Err(e)) => Err(HttpError::bad_request(format!("Cannot read the request body: {e}"))),
            Err(_) => Err(HttpError {
                close: true,
                ..HttpError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    format!(
                        "Request Timeout: the request body did not arrive in full within {:?}; send it faster, \
                         or raise the limit ({})",
                        self.body_timeout,
                        settings::http::body_timeout_secs.hint()
                    ),
                )
            }),
        }
    }
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
