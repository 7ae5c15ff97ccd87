//! [`McpClient`]: a blocking Streamable HTTP client for one session, driven
//! by hand (headers, SSE events and ids) so the tests can see and break every
//! part of the transport. What its request helpers read is checked against
//! the MCP schema; its raw methods (`post`, `get`, `delete`) check nothing.

use std::io::Read;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::{Client, RequestBuilder, Response};
use serde_json::{Value, json};

use super::{Event, POST_HEADERS, Sse, session_headers, session_id};
use crate::jsonrpc::{self, Ids, SentRequest};
use crate::{schema, timeout};

/// Checks one message from the server against the schema; `method` is the
/// request a response answers.
#[track_caller]
pub fn check_message(message: &Value, method: Option<&str>) {
    let answers = method.map(|method| SentRequest {
        method: method.to_string(),
        task: false,
    });
    check(message, answers.as_ref());
}

#[track_caller]
fn check(message: &Value, answers: Option<&SentRequest>) {
    if let Err(e) = schema::check_message(message, answers) {
        panic!("the server's message {e}\n  message: {message}");
    }
}

/// What a request's stream carried: the messages before the response, the
/// response, and every event as it came.
#[derive(Debug)]
pub struct Exchange {
    pub messages: Vec<Value>,
    pub response: Value,
    pub events: Vec<Event>,
}

impl Exchange {
    #[track_caller]
    pub fn result(&self) -> &Value {
        assert!(
            self.response.get("error").is_none(),
            "an error response: {}",
            self.response
        );
        &self.response["result"]
    }

    pub fn notifications(&self, method: &str) -> Vec<&Value> {
        self.messages.iter().filter(|m| m["method"] == method).collect()
    }
}

/// A hand-driven Streamable HTTP client for one session.
#[derive(Clone)]
pub struct McpClient {
    http: Client,
    pub url: String,
    pub session: Option<String>,
    pub token: Option<String>,
    ids: Ids,
}

impl McpClient {
    /// A client of `url` whose requests may take up to the harness timeout.
    pub fn new(url: &str) -> Self {
        Self::with_timeout(url, timeout())
    }

    /// A client of `url` whose requests may take up to `limit`.
    pub fn with_timeout(url: &str, limit: Duration) -> Self {
        crate::tls_provider();
        McpClient {
            http: Client::builder().timeout(limit).build().expect("an HTTP client"),
            url: url.to_string(),
            session: None,
            token: None,
            ids: Ids::default(),
        }
    }

    pub fn with_headers(&self, builder: RequestBuilder) -> RequestBuilder {
        self.with_headers_except(builder, &[])
    }

    /// Adds the session, version and token headers, except those named.
    fn with_headers_except(&self, mut builder: RequestBuilder, except: &[&str]) -> RequestBuilder {
        let mut headers = Vec::new();
        if let Some(session) = &self.session {
            headers.extend(session_headers(session).map(|(name, value)| (name, value.to_string())));
        }
        if let Some(token) = &self.token {
            headers.push(("authorization", format!("Bearer {token}")));
        }
        for (name, value) in headers {
            if !except.contains(&name) {
                builder = builder.header(name, value);
            }
        }
        builder
    }

    /// POSTs `body` with the headers a conforming client sends, except that
    /// `headers` replace (or, with an empty value, remove) those of the same name.
    pub fn post_with(&self, headers: &[(&str, &str)], body: String) -> Response {
        self.try_post_with(headers, body).expect("POST")
    }

    /// POSTs one message as it is.
    pub fn post(&self, message: &Value) -> Response {
        self.post_with(&[], message.to_string())
    }

    /// [`post`](Self::post), with a failure to send as an error.
    pub fn try_post(&self, message: &Value) -> reqwest::Result<Response> {
        self.try_post_with(&[], message.to_string())
    }

    fn try_post_with(&self, headers: &[(&str, &str)], body: String) -> reqwest::Result<Response> {
        let names: Vec<&str> = headers.iter().map(|(name, _)| *name).collect();
        let mut builder = self.with_headers_except(self.http.post(&self.url), &names);
        for (name, value) in POST_HEADERS
            .iter()
            .filter(|(name, _)| !names.contains(name))
            .chain(headers)
        {
            if !value.is_empty() {
                builder = builder.header(*name, *value);
            }
        }
        builder.body(body).send()
    }

    /// A fresh request id.
    pub fn next_id(&mut self) -> i64 {
        self.ids.next_id()
    }

    /// POSTs a request and returns its SSE stream, checking the status.
    #[track_caller]
    pub fn start(&mut self, method: &str, params: Value) -> (i64, Sse) {
        let id = self.next_id();
        let response = self.post(&jsonrpc::request(id, method, params));
        assert_eq!(
            response.status(),
            StatusCode::OK,
            "POST {method}: {:?}",
            response.text()
        );
        (id, Sse::new(response))
    }

    /// A request, read to its response; server → client requests on the
    /// stream are answered by `answer` (their method and params in, the
    /// result out).
    #[track_caller]
    pub fn request_with(
        &mut self,
        method: &str,
        params: Value,
        mut answer: impl FnMut(&str, &Value) -> Value,
    ) -> Exchange {
        let sent = SentRequest {
            method: method.to_string(),
            task: params.get("task").is_some(),
        };
        let (id, mut sse) = self.start(method, params);
        let mut exchange = Exchange {
            messages: Vec::new(),
            response: Value::Null,
            events: Vec::new(),
        };
        while let Some(event) = sse.next_event() {
            exchange.events.push(event.clone());
            let Some(message) = event.message() else {
                continue;
            };
            if message.get("method").is_none() {
                check(&message, Some(&sent));
                assert_eq!(message["id"], id, "a response on another request's stream");
                exchange.response = message;
                assert!(sse.next_event().is_none(), "the stream goes on after the response");
                return exchange;
            }
            check(&message, None);
            if message.get("id").is_some() {
                let result = answer(message["method"].as_str().unwrap(), &message["params"]);
                let reply = jsonrpc::result_response(&message["id"], result);
                assert_eq!(self.post(&reply).status(), StatusCode::ACCEPTED);
            }
            exchange.messages.push(message);
        }
        panic!(
            "the stream of {method} ended without a response; events: {:?}",
            exchange.events
        );
    }

    #[track_caller]
    pub fn request(&mut self, method: &str, params: Value) -> Exchange {
        self.request_with(method, params, |method, _| panic!("unexpected server request {method}"))
    }

    #[track_caller]
    pub fn call_tool(&mut self, name: &str, arguments: Value) -> Exchange {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// POSTs a notification; the server must answer 202 with no body.
    #[track_caller]
    pub fn notify(&self, method: &str, params: Value) {
        let response = self.post(&jsonrpc::notification(method, params));
        assert_eq!(response.status(), StatusCode::ACCEPTED);
        assert_eq!(response.text().unwrap(), "");
    }

    /// initialize + notifications/initialized; returns the InitializeResult.
    #[track_caller]
    pub fn initialize(&mut self, capabilities: Value) -> Value {
        let params = jsonrpc::initialize_params("wasm-mcp-http-tests", capabilities);
        let id = self.next_id();
        let response = self.post(&jsonrpc::request(id, "initialize", params));
        assert_eq!(response.status(), StatusCode::OK);
        self.session = Some(session_id(response.headers()));
        let answer: Value = serde_json::from_str(&response.text().unwrap()).unwrap();
        check_message(&answer, Some("initialize"));
        self.notify("notifications/initialized", json!({}));
        answer["result"].clone()
    }

    /// GET: the standalone stream, or with `last_event_id` a resumed one.
    pub fn get(&self, last_event_id: Option<&str>) -> Response {
        let mut builder = self
            .with_headers(self.http.get(&self.url))
            .header("accept", "text/event-stream");
        if let Some(id) = last_event_id {
            builder = builder.header("last-event-id", id);
        }
        builder.send().expect("GET")
    }

    #[track_caller]
    pub fn get_stream(&self, last_event_id: Option<&str>) -> Sse {
        let response = self.get(last_event_id);
        assert_eq!(response.status(), StatusCode::OK, "GET: {:?}", response.text());
        Sse::new(response)
    }

    pub fn delete(&self) -> Response {
        self.with_headers(self.http.delete(&self.url)).send().expect("DELETE")
    }
}

/// Reads events until one carries a message satisfying `pred`; fails if the
/// stream ends first. Returns the messages read before it and the match.
#[track_caller]
pub fn read_until(sse: &mut Sse, what: &str, pred: impl Fn(&Value) -> bool) -> (Vec<Value>, Value) {
    let mut before = Vec::new();
    while let Some(event) = sse.next_event() {
        if let Some(message) = event.message() {
            check_message(&message, None);
            if pred(&message) {
                return (before, message);
            }
            before.push(message);
        }
    }
    panic!("the stream ended before {what}; it carried {before:?}");
}

/// The body of an HTTP error, which is a JSON-RPC error with no id.
#[track_caller]
pub fn error_body(response: Response) -> String {
    let body: Value = serde_json::from_str(&response.text().unwrap()).expect("the error body is JSON");
    assert!(body.get("id").is_none(), "{body}");
    check_message(&body, None);
    body["error"]["message"].as_str().unwrap().to_string()
}

/// Reads a whole response body (to check that a stream ended).
pub fn read_all(mut response: Response) -> String {
    let mut body = String::new();
    response.read_to_string(&mut body).expect("read the body");
    body
}
