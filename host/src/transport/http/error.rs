//! Refusals at the HTTP level: a status code, and a JSON-RPC error response
//! with no id as the body (as the transport specification allows), so that
//! clients see why.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::protocol::RpcError;

/// JSON-RPC's "server error" code, used for every transport-level refusal
/// (all but a body that is not a JSON-RPC message).
const TRANSPORT_ERROR: i32 = -32000;

#[derive(Debug)]
pub struct HttpError {
    pub status: StatusCode,
    /// The JSON-RPC error code of the body.
    pub code: i32,
    pub message: String,
    /// A `WWW-Authenticate` challenge, for 401 and 403.
    pub challenge: Option<String>,
    /// Close the connection after the answer (what the client sent was not read in full).
    pub close: bool,
    /// Seconds after which trying again may help, for a 503 (`Retry-After`).
    pub retry_after: Option<u64>,
}

impl HttpError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            code: TRANSPORT_ERROR,
            message: message.into(),
            challenge: None,
            close: false,
            retry_after: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// A body that is not a JSON-RPC message, with the parser's error: code
    /// -32700 when it is not JSON, as over stdio.
    pub fn unparseable(error: RpcError) -> Self {
        Self {
            code: error.code,
            ..Self::bad_request(error.message)
        }
    }

    pub fn session_not_found() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "Session not found: it ended, expired or never existed; send initialize without Mcp-Session-Id to start a new one",
        )
    }
}

/// A JSON-RPC error response with no id, as a body.
fn error_body(code: i32, message: &str) -> String {
    json!({
        "jsonrpc": "2.0",
        "error": { "code": code, "message": message },
    })
    .to_string()
}

/// The body of a refusal at the transport level.
pub fn refusal_body(message: &str) -> String {
    error_body(TRANSPORT_ERROR, message)
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            error_body(self.code, &self.message),
        )
            .into_response();
        if let Some(challenge) = self.challenge.and_then(|c| HeaderValue::from_str(&c).ok()) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
        }
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.close {
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}
