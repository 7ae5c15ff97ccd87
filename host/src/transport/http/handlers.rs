//! The MCP endpoint's three methods: POST carries one client message, GET
//! opens the standalone stream or resumes any stream, DELETE ends a session.

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::time::Instant;

use super::App;
use super::accepts;
use super::access::{Admitted, Message};
use super::error::HttpError;
use super::sessions::HttpSession;
use super::sse::{self, Connect};
use super::stateless;
use super::streams::{Connection, STANDALONE, StreamError, event_id, parse_event_id};
use crate::auth::Credential;
use crate::protocol::{Incoming, Method, RequestId, SUPPORTED_PROTOCOL_VERSIONS};

const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// How the answer to a request travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reply {
    Sse,
    Json,
}

/// Picks the reply format, `preferred` first when the client allows both.
fn reply(headers: &HeaderMap, preferred: Reply) -> Result<Reply, HttpError> {
    match (accepts(headers), preferred) {
        ((true, true), preferred) => Ok(preferred),
        ((true, false), _) => Ok(Reply::Sse),
        ((false, true), _) => Ok(Reply::Json),
        _ => Err(HttpError::new(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: Accept must list application/json and text/event-stream",
        )),
    }
}

/// A present `MCP-Protocol-Version` must be one we speak; an absent one means
/// 2025-03-26, which we do.
fn check_version(headers: &HeaderMap) -> Result<(), HttpError> {
    match headers.get(PROTOCOL_VERSION).map(|v| v.to_str().unwrap_or_default()) {
        Some(version) if !SUPPORTED_PROTOCOL_VERSIONS.contains(&version) => Err(HttpError::bad_request(format!(
            "Bad Request: unsupported MCP-Protocol-Version {version:?} (supported: {})",
            SUPPORTED_PROTOCOL_VERSIONS.join(", ")
        ))),
        _ => Ok(()),
    }
}

fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers.get(SESSION_ID).and_then(|v| v.to_str().ok())
}

fn stream_error(error: StreamError) -> HttpError {
    match error {
        StreamError::DuplicateRequest => {
            HttpError::bad_request("Bad Request: a request with this id is still being answered in this session")
        }
        StreamError::UnknownStream => HttpError::bad_request(
            "Bad Request: Last-Event-ID names no stream that can be resumed (unknown, finished or expired)",
        ),
        StreamError::Closed => HttpError::session_not_found(),
    }
}

fn json_reply(data: &str, session: Option<&str>) -> Response {
    let mut response = ([(header::CONTENT_TYPE, "application/json")], data.to_owned()).into_response();
    if let Some(id) = session.and_then(|id| HeaderValue::from_str(id).ok()) {
        response.headers_mut().insert(SESSION_ID, id);
    }
    response
}

impl App {
    /// The session a request names, for the principal it acts for (whose
    /// latest scopes the session takes).
    fn session(&self, headers: &HeaderMap, credential: Credential) -> Result<Arc<HttpSession>, HttpError> {
        let id = session_id(headers).ok_or_else(|| {
            HttpError::bad_request("Bad Request: the Mcp-Session-Id header is required after initialize")
        })?;
        let http_session = self.sessions.get(id, &credential)?;
        if credential.is_some() {
            http_session.session.act_for(credential);
        }
        Ok(http_session)
    }

    /// An SSE response reading `connection` on stream `number`, from event `after`.
    fn stream(&self, http_session: &HttpSession, number: u64, connection: Connection, after: u64) -> Response {
        let polls = http_session.polls();
        let close_at = match self.poll_after {
            Some(after) if polls && number != STANDALONE => Some(Instant::now() + after),
            _ => None,
        };
        let connect = Connect {
            connection,
            priming: polls.then(|| (event_id(number, after), self.retry)),
            close_at,
            retry: self.retry,
        };
        sse::response(connect, http_session.busy())
    }
}

/// POST: one client message, which the access layer read, parsed and
/// admitted ([`Message`]).
pub async fn post(
    State(app): State<Arc<App>>,
    Extension(Admitted(credential)): Extension<Admitted>,
    headers: HeaderMap,
    Message(message): Message,
) -> Result<Response, HttpError> {
    let message = match session_id(&headers) {
        None => match stateless::post(&app, &headers, message, &credential).await {
            Ok(response) => return Ok(response),
            Err(message) => message,
        },
        Some(_) => message,
    };
    check_version(&headers)?;
    match message {
        Incoming::Request(ref envelope) if envelope.method == Method::Initialize && session_id(&headers).is_none() => {
            let id = envelope.id.clone();
            initialize(&app, credential, &headers, message, &id).await
        }
        Incoming::Request(ref envelope) => {
            let id = envelope.id.clone();
            let http_session = app.session(&headers, credential)?;
            request(&app, &http_session, &headers, message, &id).await
        }
        Incoming::Notification { ref method, ref params } => {
            let http_session = app.session(&headers, credential)?;
            let cancelled = (method == "notifications/cancelled")
                .then(|| params.get("requestId").and_then(RequestId::from_value))
                .flatten();
            http_session.session.handle(message);
            if let Some(request) = cancelled {
                http_session.streams.cancelled(&request);
            }
            Ok(StatusCode::ACCEPTED.into_response())
        }
        Incoming::Response { .. } => {
            app.session(&headers, credential)?.session.handle(message);
            Ok(StatusCode::ACCEPTED.into_response())
        }
    }
}

/// Starts a session. Its id is issued only if initialize succeeds.
async fn initialize(
    app: &App,
    credential: Credential,
    headers: &HeaderMap,
    message: Incoming,
    id: &RequestId,
) -> Result<Response, HttpError> {
    let reply = reply(headers, Reply::Json)?;
    let http_session = app.sessions.create(credential)?;
    let answer = http_session.streams.open_json(id).map_err(stream_error)?;
    http_session.session.handle(message);
    let data = answer
        .await
        .map_err(|_| HttpError::new(StatusCode::INTERNAL_SERVER_ERROR, "initialize was not answered"))?;
    let issued = if http_session.session.is_initialized() {
        app.sessions.admit(http_session.clone())?;
        Some(http_session.id.as_str())
    } else {
        http_session.end("initialize failed");
        None
    };
    Ok(match reply {
        Reply::Json => json_reply(&data, issued),
        Reply::Sse => {
            let mut response = sse::single(&data);
            if let Some(id) = issued.and_then(|id| HeaderValue::from_str(id).ok()) {
                response.headers_mut().insert(SESSION_ID, id);
            }
            response
        }
    })
}

/// Hands a request to its session and answers with its stream (or, for a
/// client that takes only JSON, with its response alone).
async fn request(
    app: &App,
    http_session: &HttpSession,
    headers: &HeaderMap,
    message: Incoming,
    id: &RequestId,
) -> Result<Response, HttpError> {
    match reply(headers, Reply::Sse)? {
        Reply::Sse => {
            let (number, connection) = http_session.streams.open_request(id).map_err(stream_error)?;
            http_session.session.handle(message);
            Ok(app.stream(http_session, number, connection, 0))
        }
        Reply::Json => {
            let answer = http_session.streams.open_json(id).map_err(stream_error)?;
            let _busy = http_session.busy();
            http_session.session.handle(message);
            Ok(match answer.await {
                Ok(data) => json_reply(&data, None),
                // Cancelled by the client, or the session ended: no response.
                Err(_) => StatusCode::ACCEPTED.into_response(),
            })
        }
    }
}

pub async fn get(
    State(app): State<Arc<App>>,
    Extension(Admitted(credential)): Extension<Admitted>,
    headers: HeaderMap,
) -> Result<Response, HttpError> {
    check_version(&headers)?;
    if !accepts(&headers).0 {
        return Err(HttpError::new(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: a GET opens a text/event-stream",
        ));
    }
    let http_session = app.session(&headers, credential)?;
    let (number, after) = match headers.get(LAST_EVENT_ID) {
        Some(last) => {
            let (number, seq) = last.to_str().ok().and_then(parse_event_id).ok_or_else(|| {
                HttpError::bad_request("Bad Request: Last-Event-ID is not an event id of this server")
            })?;
            (number, Some(seq))
        }
        None => (STANDALONE, None),
    };
    let (connection, after) = http_session.streams.connect(number, after).map_err(stream_error)?;
    Ok(app.stream(&http_session, number, connection, after))
}

pub async fn delete(
    State(app): State<Arc<App>>,
    Extension(Admitted(credential)): Extension<Admitted>,
    headers: HeaderMap,
) -> Result<StatusCode, HttpError> {
    check_version(&headers)?;
    let id = session_id(&headers)
        .ok_or_else(|| HttpError::bad_request("Bad Request: the Mcp-Session-Id header is required"))?;
    app.sessions.remove(id, &credential)?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_accept(accept: &str) -> HeaderMap {
        [(header::ACCEPT, HeaderValue::from_str(accept).unwrap())]
            .into_iter()
            .collect()
    }

    #[test]
    fn the_reply_follows_accept() {
        let both = with_accept("application/json, text/event-stream");
        assert_eq!(reply(&both, Reply::Sse).unwrap(), Reply::Sse);
        assert_eq!(reply(&both, Reply::Json).unwrap(), Reply::Json);
        assert_eq!(
            reply(&with_accept("application/json"), Reply::Sse).unwrap(),
            Reply::Json
        );
        assert_eq!(
            reply(&with_accept("text/event-stream;q=1"), Reply::Json).unwrap(),
            Reply::Sse
        );
        assert_eq!(reply(&HeaderMap::new(), Reply::Sse).unwrap(), Reply::Sse);
        let refused = reply(&with_accept("text/html"), Reply::Sse).unwrap_err();
        assert_eq!(refused.status, StatusCode::NOT_ACCEPTABLE);
    }

    #[test]
    fn unsupported_protocol_versions_are_refused() {
        let with = |v: &str| -> HeaderMap {
            [(PROTOCOL_VERSION, HeaderValue::from_str(v).unwrap())]
                .into_iter()
                .collect()
        };
        assert!(check_version(&with("2025-11-25")).is_ok());
        assert!(check_version(&with("2024-11-05")).is_ok());
        assert!(check_version(&HeaderMap::new()).is_ok());
        assert_eq!(
            check_version(&with("1999-01-01")).unwrap_err().status,
            StatusCode::BAD_REQUEST
        );
    }
}
