//! Fetches `http://` and `https://` URLs, two ways:
//!
//! - `http://`: a minimal HTTP/1.1 client over `std::net::TcpStream`, which
//!   works on wasm32-wasip2 through wasi:sockets;
//! - `https://`: a request through `wasi:http/outgoing-handler`; the host
//!   makes the TLS connection and verifies the server's certificate, so the
//!   plugin links no TLS library.
//!
//! The plugin may only reach what its manifest (`http-get.toml`) grants under
//! `[network] allow`: the host refuses every other connection and every DNS
//! lookup of a name no rule grants, and checks the address a granted name
//! resolves to (loopback, link-local and cloud-metadata addresses are refused
//! unless a rule names them). A URL in the tool's arguments cannot widen that.
//! An `https://` URL needs a rule written `https://HOST` (TLS only) or
//! `HOST:443` in the manifest.

use std::io::{Read, Write};
use std::net::TcpStream;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wasi::http::outgoing_handler;
use wasi::http::types::{Fields, Method, OutgoingRequest, Scheme};
use wasi::io::streams::StreamError;
use wasm_mcp_sdk::{Plugin, Structured, Tool};

/// What to fetch.
#[derive(Deserialize, JsonSchema)]
struct GetArgs {
    /// An `http://` or `https://` `host[:port]/path` URL on a host the manifest grants.
    url: String,
    /// The most body bytes to return (default 65536).
    #[serde(default)]
    max_bytes: Option<usize>,
}

/// The response.
#[derive(Serialize, JsonSchema)]
struct Response {
    /// The HTTP status code.
    status: u16,
    /// The `Content-Type` header, if any.
    content_type: Option<String>,
    /// The body as text (invalid UTF-8 replaced), cut at `max_bytes`.
    body: String,
    /// Whether the body was cut.
    truncated: bool,
}

/// The parts of an `http://` or `https://` URL.
struct Url {
    /// `https://`: sent through wasi:http, encrypted by the host.
    tls: bool,
    /// `host:port` as given to `TcpStream::connect`.
    authority: String,
    /// The `Host` header.
    host_header: String,
    path: String,
}

fn parse_url(url: &str) -> Result<Url, String> {
    let (tls, rest) = match url.split_once("://") {
        Some(("http", rest)) => (false, rest),
        Some(("https", rest)) => (true, rest),
        _ => return Err(format!("{url:?} is not an http:// or https:// URL")),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() || authority.contains('@') {
        return Err(format!("{url:?} has no usable host"));
    }
    let has_port = match authority.rfind(']') {
        Some(bracket) => authority[bracket..].contains(':'),
        None => authority.contains(':'),
    };
    let connect_to = if has_port {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    Ok(Url {
        tls,
        authority: connect_to,
        host_header: authority.to_string(),
        path: path.split('#').next().unwrap_or("/").to_string(),
    })
}

fn http_get(args: GetArgs) -> Result<Structured<Response>, String> {
    let url = parse_url(&args.url)?;
    let max = args.max_bytes.unwrap_or(64 << 10).clamp(1, 8 << 20);
    if url.tls {
        return https_get(&url, max);
    }
    let mut stream =
        TcpStream::connect(&url.authority).map_err(|e| format!("cannot connect to {}: {e}", url.authority))?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: wasm-mcp-http-get/0.1\r\nAccept: */*\r\nConnection: close\r\n\r\n",
        url.path, url.host_header
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("cannot send the request: {e}"))?;
    let mut raw = Vec::new();
    stream
        .take((max + (64 << 10)) as u64)
        .read_to_end(&mut raw)
        .map_err(|e| format!("cannot read the response: {e}"))?;
    parse_response(&raw, max)
}

fn parse_response(raw: &[u8], max: usize) -> Result<Structured<Response>, String> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("the response has no complete header")?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| format!("not an HTTP status line: {status_line:?}"))?;
    let mut content_type = None;
    let mut chunked = false;
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-type" => content_type = Some(value.to_string()),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                _ => {}
            }
        }
    }
    let body = &raw[split + 4..];
    let body = if chunked { dechunk(body) } else { body.to_vec() };
    let truncated = body.len() > max;
    Ok(Structured(Response {
        status,
        content_type,
        body: String::from_utf8_lossy(&body[..body.len().min(max)]).into_owned(),
        truncated,
    }))
}

/// GETs an `https://` URL through wasi:http: the host connects (to a host
/// the manifest grants), does TLS and verifies the certificate; a refusal or
/// a certificate the host does not trust comes back as a wasi:http error code.
fn https_get(url: &Url, max: usize) -> Result<Structured<Response>, String> {
    let request = OutgoingRequest::new(Fields::new());
    request.set_method(&Method::Get).map_err(|()| "cannot set the method")?;
    request
        .set_scheme(Some(&Scheme::Https))
        .map_err(|()| "cannot set the scheme")?;
    request
        .set_authority(Some(&url.host_header))
        .map_err(|()| format!("{:?} is not a valid host", url.host_header))?;
    request
        .set_path_with_query(Some(&url.path))
        .map_err(|()| format!("{:?} is not a valid path", url.path))?;
    let pending = outgoing_handler::handle(request, None).map_err(|e| format!("the request failed: {e:?}"))?;
    pending.subscribe().block();
    let response = pending
        .get()
        .ok_or("no response")?
        .map_err(|()| "the response was already taken")?
        .map_err(|e| format!("the request failed: {e:?}"))?;
    let content_type = response
        .headers()
        .get("content-type")
        .first()
        .map(|v| String::from_utf8_lossy(v).into_owned());
    let body = response.consume().map_err(|()| "the response has no body")?;
    let stream = body.stream().map_err(|()| "the response body cannot be read")?;
    let mut bytes = Vec::new();
    while bytes.len() <= max {
        match stream.blocking_read(64 << 10) {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(format!("reading the body failed: {}", e.to_debug_string()));
            }
        }
    }
    let truncated = bytes.len() > max;
    Ok(Structured(Response {
        status: response.status(),
        content_type,
        body: String::from_utf8_lossy(&bytes[..bytes.len().min(max)]).into_owned(),
        truncated,
    }))
}

/// Decodes a `Transfer-Encoding: chunked` body (as much of it as arrived).
fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(end) = data.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&data[..end]);
        let Ok(size) = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16) else {
            break;
        };
        data = &data[end + 2..];
        if size == 0 {
            break;
        }
        let take = size.min(data.len());
        body.extend_from_slice(&data[..take]);
        data = data.get(take + 2..).unwrap_or_default();
    }
    body
}

fn plugin() -> Plugin {
    Plugin::new().tool(
        Tool::new("http_get", http_get)
            .title("HTTP GET")
            .description(
                "Fetches an http:// or https:// URL on a host this plugin's manifest grants, and returns its status and body",
            )
            .read_only_hint(true)
            .open_world_hint(true),
    )
}

wasm_mcp_sdk::export!(plugin);
