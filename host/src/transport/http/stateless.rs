//! 2026-07-28 requests over HTTP: one POST, one request, no `Mcp-Session-Id`.
//!
//! The headers that mirror the body (`MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`) are checked against it first (-32020 and 400 when they
//! disagree or are missing); the `Mcp-Param-*` headers go along with a
//! `tools/call`, whose tool's input schema says which must mirror which
//! argument (see [`MirroredParams`]). The request is then served by a peer of its
//! own (see [`crate::request::Peer`]: no session) that lives as long as the
//! request; its answer is JSON when it is ready at once, else an SSE stream
//! of the request's notifications (progress, logs) ending with its response.
//! Closing that stream cancels the request; when the server shuts down, the
//! peer is told (a `subscriptions/listen` stream then ends with its
//! completion result). The
//! HTTP status follows the revision: 404 for an unknown method, 400 for
//! malformed params, unsupported versions, missing capabilities and header
//! mismatches.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::App;
use crate::auth::Credential;
use crate::protocol::envelope;
use crate::protocol::headers::{MirroredParams, decoded, mismatch};
use crate::protocol::jsonrpc::{INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
use crate::protocol::modern::{
    self, HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, PROTOCOL_VERSION, UNSUPPORTED_PROTOCOL_VERSION,
};
use crate::protocol::requests::Request;
use crate::protocol::{Envelope, Incoming, RequestId, RpcError};
use crate::request::{Answer, AnswerKind, Outgoing, Peer};

const PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");

/// How often a quiet stream gets a comment, so proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Whether a POST without `Mcp-Session-Id` carries a 2026-07-28 message: its
/// `MCP-Protocol-Version` header names that revision, or its body is one.
fn is_modern(headers: &HeaderMap, message: &Incoming) -> bool {
    let header_says = headers
        .get(PROTOCOL_VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() == modern::MODERN_VERSION);
    header_says
        || match message {
            Incoming::Request(envelope) => envelope.is_modern(),
            Incoming::Notification { params, .. } => envelope::meta_is_modern(params),
            Incoming::Response { .. } => false,
        }
}

/// The HTTP status a modern answer is sent with.
fn status_of(answer: AnswerKind) -> StatusCode {
    let AnswerKind::Error(code) = answer else {
        return StatusCode::OK;
    };
    match code {
        METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        INVALID_PARAMS
        | INVALID_REQUEST
        | PARSE_ERROR
        | HEADER_MISMATCH
        | MISSING_REQUIRED_CLIENT_CAPABILITY
        | UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// A JSON-RPC message as a JSON response with `status`.
fn json_response(status: StatusCode, message: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        message.to_string(),
    )
        .into_response()
}

/// A header's value, trimmed; `None` when absent or not text.
fn header_text<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim)
}

/// Checks the headers that mirror the request's body. A header that says
/// 2026-07-28 over a body whose `_meta` carries no version is a request of
/// that revision missing a required field: -32602 (as the conformance suite
/// checks with SEP-2575's `RequestMetaInvalid`), never the 2025-11-25 "not
/// initialized"; what else the body lacks is left to the request's own checks
/// (a `_meta` without client capabilities is -32602 too). A version in both
/// that differs is a mismatch (-32020).
fn check_headers(headers: &HeaderMap, envelope: &Envelope) -> Result<(), RpcError> {
    let method = envelope.method.name();
    let body_version = envelope.meta_version.as_deref();
    match (header_text(headers, &PROTOCOL_VERSION_HEADER), body_version) {
        (None, Some(_)) => return Err(mismatch("the MCP-Protocol-Version header is required".into())),
        (Some(header), Some(version)) if header != version => {
            return Err(mismatch(format!(
                "MCP-Protocol-Version header value {header:?} does not match the body's {version:?}"
            )));
        }
        (Some(header), None) if header == modern::MODERN_VERSION => {
            return Err(RpcError::invalid_params(format!(
                "the MCP-Protocol-Version header says {header:?} but the body carries no \"{PROTOCOL_VERSION}\" \
                 in \"params._meta\": a {header} request must name its revision there (with its client \
                 capabilities); send the same version in both"
            )));
        }
        _ => {}
    }
    match header_text(headers, &METHOD_HEADER) {
        None => return Err(mismatch("the Mcp-Method header is required".into())),
        Some(header) if header != method => {
            return Err(mismatch(format!(
                "Mcp-Method header value {header:?} does not match the body's method {method:?}"
            )));
        }
        Some(_) => {}
    }
    // What names the request's entry, for the methods of this revision.
    let named = envelope.target.as_deref().filter(|_| envelope.method.is_in_modern());
    if let Some(body) = named {
        let Some(header) = header_text(headers, &NAME_HEADER) else {
            return Err(mismatch(format!("the Mcp-Name header is required for {method}")));
        };
        let header = decoded(header).map_err(|why| mismatch(format!("Mcp-Name header {why}")))?;
        if header != body {
            return Err(mismatch(format!(
                "Mcp-Name header value {header:?} does not match the body's {body:?}"
            )));
        }
    }
    Ok(())
}

/// Serves one message POSTed without `Mcp-Session-Id`, if it is of the
/// 2026-07-28 revision: a request gets its answer, a notification 202. Any
/// other message is handed back, for a session.
pub async fn post(
    app: &App,
    headers: &HeaderMap,
    message: Incoming,
    credential: &Credential,
) -> Result<Response, Incoming> {
    if !is_modern(headers, &message) {
        return Err(message);
    }
    let Incoming::Request(envelope) = message else {
        // No notification of this revision needs this server's attention over
        // HTTP (a request is cancelled by closing its stream).
        return Ok(StatusCode::ACCEPTED.into_response());
    };
    Ok(serve(app, headers, *envelope, credential.clone()).await)
}

/// Serves one 2026-07-28 request on a peer of its own.
async fn serve(app: &App, headers: &HeaderMap, mut envelope: Envelope, credential: Credential) -> Response {
    if let Err(error) = check_headers(headers, &envelope) {
        let (message, answer) = Answer::Error(error).into_response(&envelope.id);
        return json_response(status_of(answer), &message);
    }
    // The `Mcp-Param-*` headers follow the tool's input schema, which the
    // call checks them against once it knows the tool.
    if let Ok(Request::CallTool(call)) = &mut envelope.request {
        call.mirrored = Some(Box::new(MirroredParams::collect(
            headers.iter().map(|(name, value)| (name.as_str(), value.to_str().ok())),
        )));
    }
    let id = envelope.id.clone();
    let (outbox, mut outgoing) = mpsc::unbounded_channel::<Outgoing>();
    let peer = Peer::alone(app.sessions.hub().clone(), outbox, credential);
    peer.serve(envelope);
    let sse = super::accepts(headers).0;
    let mut request = RunningRequest {
        peer,
        id,
        answered: None,
    };
    let Some(first) = request.next(&mut outgoing).await else {
        return StatusCode::ACCEPTED.into_response();
    };
    if let Some(answer) = request.answered {
        return json_response(status_of(answer), &first);
    }
    if !sse {
        // A client that takes only JSON gets the response alone.
        while let Some(message) = request.next(&mut outgoing).await {
            if request.answered.is_some() {
                return json_response(StatusCode::OK, &message);
            }
        }
        return StatusCode::ACCEPTED.into_response();
    }
    stream(request, first, outgoing, app.stopping.clone())
}

/// A request running on a peer of its own; dropping it before the
/// request is answered (the client closed the stream) cancels it.
struct RunningRequest {
    peer: Arc<Peer>,
    id: RequestId,
    /// How the request ended, once its response is out.
    answered: Option<AnswerKind>,
}

impl RunningRequest {
    /// The next message of this request (notifications it causes, then its
    /// response); `None` once the peer has nothing more to say.
    async fn next(&mut self, outgoing: &mut mpsc::UnboundedReceiver<Outgoing>) -> Option<Value> {
        if self.answered.is_some() {
            return None;
        }
        loop {
            let out = outgoing.recv().await?;
            if out.related_request.as_ref() != Some(&self.id) {
                continue;
            }
            self.answered = out.answer;
            return Some(out.message);
        }
    }
}

impl Drop for RunningRequest {
    fn drop(&mut self) {
        if self.answered.is_none() {
            let peer = self.peer.clone();
            tokio::spawn(async move { peer.close(Duration::ZERO, "the client closed the stream").await });
        }
    }
}

/// An SSE response: `first`, then the request's messages until its
/// response; once `stopping` is cancelled (the server shuts down), the
/// request's peer is told, and the stream goes on to the response.
fn stream(
    request: RunningRequest,
    first: Value,
    outgoing: mpsc::UnboundedReceiver<Outgoing>,
    stopping: CancellationToken,
) -> Response {
    let state = (request, Some(first), outgoing, stopping);
    let events = futures_util::stream::unfold(state, |(mut request, first, mut outgoing, stopping)| async move {
        let message = match first {
            Some(first) => first,
            None => loop {
                if request.answered.is_some() {
                    return None;
                }
                tokio::select! {
                    message = request.next(&mut outgoing) => break message?,
                    () = stopping.cancelled(), if !request.peer.is_closing() => request.peer.refuse_new_requests(),
                    () = tokio::time::sleep(KEEP_ALIVE) => {
                        let keep_alive = Bytes::from_static(b": keep-alive\n\n");
                        return Some((Ok::<_, std::convert::Infallible>(keep_alive), (request, None, outgoing, stopping)));
                    }
                }
            },
        };
        let event = Bytes::from(format!("data: {message}\n\n"));
        Some((Ok(event), (request, None, outgoing, stopping)))
    });
    let mut response = (StatusCode::OK, Body::from_stream(events)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn envelope(method: &str, params: Value) -> Envelope {
        Envelope::read(RequestId::from_value(&json!(1)).unwrap(), method, params)
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (HeaderName::from_static(name), HeaderValue::from_str(value).unwrap()))
            .collect()
    }

    #[test]
    fn mirrored_headers_must_match_the_body() {
        let params = envelope(
            "tools/call",
            json!({ "name": "añadir", "_meta": { PROTOCOL_VERSION: "2026-07-28" } }),
        );
        let good = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", " tools/call "),
            ("mcp-name", "=?base64?YcOxYWRpcg==?="),
        ]);
        assert!(check_headers(&good, &params).is_ok());
        let wrong_case = headers(&[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "Tools/Call")]);
        assert_eq!(check_headers(&wrong_case, &params).unwrap_err().code, HEADER_MISMATCH);
        let no_name = headers(&[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call")]);
        assert!(
            check_headers(&no_name, &params)
                .unwrap_err()
                .message
                .contains("Mcp-Name")
        );
        let bad_base64 = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?!!?="),
        ]);
        assert!(check_headers(&bad_base64, &params).is_err());
        let no_body_version = envelope("tools/call", json!({ "name": "x" }));
        let header_only = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "x"),
        ]);
        // A 2026-07-28 request missing its `_meta` version is invalid params, not a mismatch.
        assert_eq!(
            check_headers(&header_only, &no_body_version).unwrap_err().code,
            INVALID_PARAMS
        );
        let other_version = headers(&[("mcp-protocol-version", "2025-11-25"), ("mcp-method", "tools/call")]);
        assert!(
            check_headers(&other_version, &params)
                .unwrap_err()
                .message
                .contains("MCP-Protocol-Version")
        );
    }
}
