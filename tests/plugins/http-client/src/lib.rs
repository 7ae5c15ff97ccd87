//! A plugin that makes outgoing HTTP requests through
//! `wasi:http/outgoing-handler` (not sockets), to test that the host holds
//! them to the manifest's `[network]` grants; and that, like a hostile
//! plugin, tries to see the credentials the host adds to its requests: it
//! shows its environment, the headers of the requests it built and those of
//! the responses it got.

use schemars::JsonSchema;
use serde::Deserialize;
use wasi::http::outgoing_handler;
use wasi::http::types::{Fields, Method, OutgoingRequest, Scheme};
use wasi::io::streams::StreamError;
use wasm_mcp_sdk::{NoArgs, Plugin, Tool};

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

#[derive(Deserialize, JsonSchema)]
struct RequestArgs {
    /// `http://...` or `https://...`.
    url: String,
    /// The method [default: GET].
    #[serde(default)]
    method: Option<String>,
    /// Headers to send, each `[NAME, VALUE]`.
    #[serde(default)]
    headers: Vec<(String, String)>,
    /// Follow redirects (3xx with Location), up to five, as a new request each.
    #[serde(default)]
    follow_redirects: bool,
}

/// What one request showed the plugin.
struct Seen {
    status: u16,
    /// The headers of the request as the plugin built it.
    sent: Vec<(String, String)>,
    /// The response's headers as the host handed them back.
    received: Vec<(String, String)>,
    body: String,
}

/// Sends a request as asked; answers every hop: the request's headers as
/// built, then the status, the response's headers and its body.
fn request(args: RequestArgs) -> Result<String, String> {
    let method = match args.method.as_deref().unwrap_or("GET").to_ascii_uppercase().as_str() {
        "GET" => Method::Get,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "HEAD" => Method::Head,
        other => Method::Other(other.to_owned()),
    };
    let mut url = args.url.clone();
    let mut report = Vec::new();
    for _hop in 0..6 {
        let seen = send(&url, &method, &args.headers)?;
        let lines = |pairs: &[(String, String)]| {
            pairs
                .iter()
                .map(|(name, value)| format!("  {name}: {value}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        report.push(format!(
            "{} {url}\nsent:\n{}\nstatus {}\nreceived:\n{}\nbody: {}",
            args.method.as_deref().unwrap_or("GET"),
            lines(&seen.sent),
            seen.status,
            lines(&seen.received),
            seen.body
        ));
        let location = seen
            .received
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("location"));
        match location {
            Some((_, next)) if args.follow_redirects && (300..400).contains(&seen.status) => url = next.clone(),
            _ => return Ok(report.join("\n---\n")),
        }
    }
    Err("more than five redirects".into())
}

/// The plugin's environment, one `NAME=VALUE` a line.
fn env(_: NoArgs) -> Result<String, String> {
    Ok(std::env::vars().map(|(k, v)| format!("{k}={v}\n")).collect())
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
    let seen = send(url, &Method::Get, &[])?;
    Ok(format!("{}\n{}", seen.status, seen.body))
}

fn send(url: &str, method: &Method, headers: &[(String, String)]) -> Result<Seen, String> {
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
    let fields = Fields::new();
    for (name, value) in headers {
        fields
            .append(name, value.as_bytes())
            .map_err(|e| format!("header {name}: {e:?}"))?;
    }
    let request = OutgoingRequest::new(fields);
    request.set_method(method).map_err(|()| "bad method")?;
    request.set_scheme(Some(&scheme)).map_err(|()| "bad scheme")?;
    request
        .set_authority(Some(authority))
        .map_err(|()| format!("bad authority {authority}"))?;
    request
        .set_path_with_query(Some(path))
        .map_err(|()| format!("bad path {path}"))?;
    let sent = entries(&request.headers());
    let pending = outgoing_handler::handle(request, None).map_err(|e| format!("request failed: {e:?}"))?;
    pending.subscribe().block();
    let response = pending
        .get()
        .ok_or("no response")?
        .map_err(|()| "response taken twice")?
        .map_err(|e| format!("request failed: {e:?}"))?;
    let status = response.status();
    let received = entries(&response.headers());
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
    Ok(Seen {
        status,
        sent,
        received,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    })
}

/// Every header in `fields`, as text.
fn entries(fields: &Fields) -> Vec<(String, String)> {
    fields
        .entries()
        .into_iter()
        .map(|(name, value)| (name, String::from_utf8_lossy(&value).into_owned()))
        .collect()
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool(Tool::new("get", get).description("GETs a URL through wasi:http"))
        .tool(Tool::new("get_each", get_each).description("GETs URLs one after the other, in one call"))
        .tool(
            Tool::new("request", request)
                .description("Sends a request with headers, following redirects if asked; shows what it sent and got"),
        )
        .tool(Tool::new("env", env).description("Shows the plugin's environment"))
}

wasm_mcp_sdk::export!(plugin);
