//! A plugin that makes outgoing HTTP requests through
//! `wasi:http/outgoing-handler` (not sockets), to test that the host holds
//! them to the manifest's `[network]` grants.

use schemars::JsonSchema;
use serde::Deserialize;
use wasi::http::outgoing_handler;
use wasi::http::types::{Fields, Method, OutgoingRequest, Scheme};
use wasi::io::streams::StreamError;
use wasm_mcp_sdk::{Plugin, Tool};

#[derive(Deserialize, JsonSchema)]
struct GetArgs {
    /// Any URL, `http://HOST[:PORT]/PATH` or `https://...`.
    url: String,
}

#[derive(Deserialize, JsonSchema)]
struct GetEachArgs {
    /// URLs to GET one after the other, in one call.
    urls: Vec<String>,
}

/// GETs `url`; answers `STATUS\nBODY`.
fn get(args: GetArgs) -> Result<String, String> {
    fetch(&args.url)
}

/// GETs each URL in turn; answers each `STATUS\nBODY`, one per line.
fn get_each(args: GetEachArgs) -> Result<String, String> {
    let answers: Result<Vec<String>, String> = args.urls.iter().map(|url| fetch(url)).collect();
    Ok(answers?.join("\n"))
}

fn fetch(url: &str) -> Result<String, String> {
    let (scheme, rest) = if let Some(rest) = url.strip_prefix("http://") {
        (Scheme::Http, rest)
    } else if let Some(rest) = url.strip_prefix("https://") {
        (Scheme::Https, rest)
    } else {
        return Err(format!("not an http(s) URL: {url}"));
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let request = OutgoingRequest::new(Fields::new());
    request.set_method(&Method::Get).map_err(|()| "bad method")?;
    request.set_scheme(Some(&scheme)).map_err(|()| "bad scheme")?;
    request
        .set_authority(Some(authority))
        .map_err(|()| format!("bad authority {authority}"))?;
    request
        .set_path_with_query(Some(path))
        .map_err(|()| format!("bad path {path}"))?;
    let pending = outgoing_handler::handle(request, None).map_err(|e| format!("request failed: {e:?}"))?;
    pending.subscribe().block();
    let response = pending
        .get()
        .ok_or("no response")?
        .map_err(|()| "response taken twice")?
        .map_err(|e| format!("request failed: {e:?}"))?;
    let status = response.status();
    let body = response.consume().map_err(|()| "no body")?;
    let stream = body.stream().map_err(|()| "no body stream")?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 << 10) {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(format!("reading the body failed: {}", e.to_debug_string()));
            }
        }
    }
    Ok(format!("{status}\n{}", String::from_utf8_lossy(&bytes)))
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool(Tool::new("get", get).description("GETs a URL through wasi:http"))
        .tool(Tool::new("get_each", get_each).description("GETs URLs one after the other, in one call"))
}

wasm_mcp_sdk::export!(plugin);
