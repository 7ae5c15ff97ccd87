//! The Server Card (SEP-2127, a draft, served only with `--server-card
//! NAME`): a document at `<endpoint>/server-card` that tells a client before
//! it connects who the server is (the name the operator gives it, the
//! server's own title, version, description and icon), where it is (this
//! endpoint, as the request reached it) and the protocol versions it
//! serves, as `application/mcp-server-card+json`, readable from any origin
//! (CORS), cacheable for an hour and validated by its `ETag`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{App, ENDPOINT};
use crate::protocol::modern::supported_versions;
use crate::request::server_info;

/// The card's media type.
pub const MEDIA_TYPE: &str = "application/mcp-server-card+json";
/// The path of the card, under the MCP endpoint.
pub const PATH: &str = "/server-card";
/// The schema every card names.
const SCHEMA: &str = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json";
/// How long a client may keep the card: what it says changes only with the binary or its settings.
const CACHE_CONTROL: &str = "public, max-age=3600";

/// Whether `name` is a Server Card name: `namespace/name` in reverse-DNS
/// form, 3 to 200 characters; the error says what one looks like.
pub fn check_name(name: &str) -> Result<(), String> {
    let namespace_char = |c: char| c.is_ascii_alphanumeric() || c == '.' || c == '-';
    let name_char = |c: char| namespace_char(c) || c == '_';
    let valid = (3..=200).contains(&name.len())
        && name.split_once('/').is_some_and(|(namespace, rest)| {
            !namespace.is_empty()
                && !rest.is_empty()
                && namespace.chars().all(namespace_char)
                && rest.chars().all(name_char)
        });
    match valid {
        true => Ok(()),
        false => Err(format!(
            "{name:?} is not a Server Card name: a reverse-DNS namespace, a slash and a name, e.g. io.example/tools"
        )),
    }
}

/// The card of the server named `name`, reached at `authority` over plain HTTP.
fn card(name: &str, authority: &str) -> Value {
    let info = server_info();
    json!({
        "$schema": SCHEMA,
        "name": name,
        "version": info["version"],
        "description": info["description"],
        "title": info["title"],
        "icons": info["icons"],
        "remotes": [{
            "type": "streamable-http",
            "url": format!("http://{authority}{ENDPOINT}"),
            "supportedProtocolVersions": supported_versions(),
        }],
    })
}

/// The headers every answer about the card carries: any origin may read it.
fn cors(headers: &mut HeaderMap) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET"));
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("Content-Type, If-None-Match"),
    );
    headers.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static("ETag"));
}

/// `GET <endpoint>/server-card`: the card, or 304 when the client's
/// `If-None-Match` names its `ETag`.
pub async fn get(State(app): State<Arc<App>>, request: HeaderMap) -> Response {
    let Some(name) = &app.server_card else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let authority = request
        .get(header::HOST)
        .and_then(|host| host.to_str().ok())
        .filter(|host| host.parse::<axum::http::uri::Authority>().is_ok());
    let Some(authority) = authority else {
        return (StatusCode::BAD_REQUEST, "the request has no valid Host header\n").into_response();
    };
    let body = card(name, authority).to_string();
    let digest = Sha256::digest(body.as_bytes());
    let etag = format!(
        "\"{}\"",
        digest[..16].iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    let matches = request
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|tag| tag.trim() == etag || tag.trim() == "*"));
    let mut response = match matches {
        true => StatusCode::NOT_MODIFIED.into_response(),
        false => ([(header::CONTENT_TYPE, MEDIA_TYPE)], body).into_response(),
    };
    let headers = response.headers_mut();
    cors(headers);
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL));
    if let Ok(etag) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, etag);
    }
    response
}

/// The CORS preflight of the card.
pub async fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    cors(response.headers_mut());
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_reverse_dns_with_one_slash() {
        assert!(check_name("io.example/tools").is_ok());
        for bad in ["tools", "io.example/", "/tools", "io example/tools", "a/b/c"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
