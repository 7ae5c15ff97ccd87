//! The Streamable HTTP side of the harness: the real `wasm-mcp serve --http`
//! on an ephemeral loopback port ([`HttpServer`]), the SSE reader ([`Sse`]),
//! a blocking client that speaks the transport by hand so the tests can see
//! and break every part of it ([`McpClient`], which checks what it reads
//! against the MCP schema where the tests ask it to), and a lean async
//! session for the benchmarks ([`LeanHttpSession`]). The headers a
//! conforming client sends are here, for all of them.

mod client;
mod lean;
mod server;
mod sse;

use reqwest::header::HeaderMap;

use crate::LATEST_PROTOCOL_VERSION;

pub use client::{Exchange, McpClient, check_message, error_body, read_all, read_until};
pub use lean::{LeanHttpClient, LeanHttpSession};
pub use server::HttpServer;

/// A blocking HTTP client with reqwest's defaults, for the tests' own requests.
pub fn blocking_client() -> reqwest::blocking::Client {
    crate::tls_provider();
    reqwest::blocking::Client::new()
}
pub use sse::{Event, Sse};

/// The headers every POST of a conforming client carries.
pub const POST_HEADERS: [(&str, &str); 2] = [
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
];

/// The header that names the session, set by the server's answer to `initialize`.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// The headers of every request within the session `session`.
pub fn session_headers(session: &str) -> [(&'static str, &str); 2] {
    [
        (SESSION_HEADER, session),
        ("mcp-protocol-version", LATEST_PROTOCOL_VERSION),
    ]
}

/// The session id the server's answer to `initialize` sets.
#[track_caller]
pub fn session_id(headers: &HeaderMap) -> String {
    let session = headers.get(SESSION_HEADER).expect("an Mcp-Session-Id header");
    session.to_str().expect("the session id is text").to_string()
}
