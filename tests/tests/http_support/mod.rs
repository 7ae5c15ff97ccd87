//! What the Streamable HTTP tests share: the real `wasm-mcp serve --http` on
//! an ephemeral loopback port, and a small blocking client that speaks the
//! transport by hand (headers, SSE events and ids) so the tests can see and
//! break every part of it. Every message read from the server is checked
//! against the MCP 2025-11-25 schema.

#![allow(dead_code)] // Each test file uses its own part of this.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::blocking::{Client, Response};
use serde_json::{Value, json};
use wasm_mcp_tests::jsonrpc::{Kind, kind};
use wasm_mcp_tests::{LATEST_PROTOCOL_VERSION, PluginDir, binary, schema, timeout};

/// `wasm-mcp serve --http 127.0.0.1:0` over a plugins directory.
pub struct HttpServer {
    child: Child,
    /// The MCP endpoint, e.g. `http://127.0.0.1:41234/mcp`.
    pub url: String,
    stderr: Arc<Mutex<String>>,
    _plugins: PluginDir,
}

impl HttpServer {
    /// Starts the server with extra `serve` flags and waits until it listens
    /// and its plugins are loaded.
    pub fn start(plugins: PluginDir, args: &[&str]) -> Self {
        Self::start_with_env(plugins, args, &[])
    }

    pub fn start_with_env(plugins: PluginDir, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(binary())
            .args(["serve", "--no-watch", "--http", "127.0.0.1:0", "--plugins"])
            .arg(plugins.path())
            .args(args)
            .env("WASM_MCP_LOG", "info,wasm_mcp::transport::http=debug")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start wasm-mcp");
        let stderr = Arc::new(Mutex::new(String::new()));
        let pipe = child.stderr.take().expect("piped stderr");
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut all = sink.lock().unwrap();
                all.push_str(&line);
                all.push('\n');
            }
        });
        let mut server = HttpServer {
            child,
            url: String::new(),
            stderr,
            _plugins: plugins,
        };
        let log = server.wait_for_stderr("the server to load its plugins", |log| {
            log.contains("plugins directory loaded") && log.contains("listening on http://")
        });
        let at = log.find("listening on http://").unwrap() + "listening on ".len();
        server.url = log[at..].split_whitespace().next().unwrap().to_string();
        server
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits (up to the harness timeout) until stderr satisfies `done`.
    #[track_caller]
    pub fn wait_for_stderr(&mut self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + timeout();
        loop {
            let log = self.stderr();
            if done(&log) {
                return log;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the server exited ({status}) before {what}; stderr:\n{log}");
            }
            assert!(Instant::now() < deadline, "{what}: not seen in stderr:\n{log}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends `signal` (a name `kill -s` takes: `TERM`, `INT`) to the server.
    pub fn send_signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args(["-s", signal, &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -s {signal} {} failed", self.child.id());
    }

    /// Waits (up to the harness timeout) for the server to exit.
    #[track_caller]
    pub fn wait_for_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + timeout();
        loop {
            if let Some(status) = self.child.try_wait().expect("query the child's status") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not exit; stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A client with no session yet.
    pub fn client(&self) -> McpClient {
        McpClient::new(&self.url)
    }

    /// A client that has initialized a session (offering `capabilities`).
    pub fn session(&self, capabilities: Value) -> McpClient {
        let mut client = self.client();
        client.initialize(capabilities);
        client
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One SSE event.
#[derive(Debug, Clone, Default)]
pub struct Event {
    pub id: Option<String>,
    pub data: String,
    pub retry: Option<u64>,
}

impl Event {
    /// The JSON-RPC message it carries (`None` for a priming or retry event).
    pub fn message(&self) -> Option<Value> {
        (!self.data.is_empty()).then(|| serde_json::from_str(&self.data).expect("SSE data is JSON"))
    }
}

/// Reads an SSE body event by event.
pub struct Sse {
    reader: BufReader<Response>,
}

impl Sse {
    pub fn new(response: Response) -> Self {
        let content_type = response.headers()["content-type"].to_str().unwrap().to_string();
        assert!(
            content_type.starts_with("text/event-stream"),
            "not an SSE response: {content_type}"
        );
        Sse {
            reader: BufReader::new(response),
        }
    }

    /// The next event, or `None` when the server ends the stream. Comments
    /// (keep-alives) are skipped.
    pub fn next_event(&mut self) -> Option<Event> {
        let mut event = Event::default();
        let mut fields = 0;
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line).expect("read the SSE stream") == 0 {
                return None;
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if fields > 0 {
                    return Some(event);
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            fields += 1;
            match field {
                "id" => event.id = Some(value.to_string()),
                "data" => event.data.push_str(value),
                "retry" => event.retry = Some(value.parse().expect("retry is a number")),
                other => panic!("unexpected SSE field {other:?}"),
            }
        }
    }

    /// Every remaining event until the server ends the stream.
    pub fn rest(mut self) -> Vec<Event> {
        std::iter::from_fn(|| self.next_event()).collect()
    }
}

/// Checks one message from the server against the schema; `method` is the
/// request a response answers.
#[track_caller]
pub fn check_message(message: &Value, method: Option<&str>) {
    let outcome = match kind(message) {
        Kind::Result | Kind::Error => schema::check_response(message, method, false),
        Kind::Notification => schema::check_notification(message),
        Kind::Request => schema::check_server_request(message),
        Kind::Invalid(why) => Err(why),
    };
    if let Err(e) = outcome {
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
pub struct McpClient {
    http: Client,
    pub url: String,
    pub session: Option<String>,
    pub token: Option<String>,
    next_id: i64,
}

impl McpClient {
    pub fn new(url: &str) -> Self {
        McpClient {
            http: Client::builder().timeout(timeout()).build().unwrap(),
            url: url.to_string(),
            session: None,
            token: None,
            next_id: 1,
        }
    }

    pub fn with_headers(&self, builder: reqwest::blocking::RequestBuilder) -> reqwest::blocking::RequestBuilder {
        self.with_headers_except(builder, &[])
    }

    /// Adds the session, version and token headers, except those named.
    fn with_headers_except(
        &self,
        mut builder: reqwest::blocking::RequestBuilder,
        except: &[&str],
    ) -> reqwest::blocking::RequestBuilder {
        let mut headers = Vec::new();
        if let Some(session) = &self.session {
            headers.push(("mcp-session-id", session.clone()));
            headers.push(("mcp-protocol-version", LATEST_PROTOCOL_VERSION.to_string()));
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
        let names: Vec<&str> = headers.iter().map(|(name, _)| *name).collect();
        let mut builder = self.with_headers_except(self.http.post(&self.url), &names);
        let defaults = [
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        for (name, value) in defaults.iter().filter(|(name, _)| !names.contains(name)).chain(headers) {
            if !value.is_empty() {
                builder = builder.header(*name, *value);
            }
        }
        builder.body(body).send().expect("POST")
    }

    /// POSTs one message as it is.
    pub fn post(&self, message: &Value) -> Response {
        self.post_with(&[], message.to_string())
    }

    pub fn next_id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    /// POSTs a request and returns its SSE stream, checking the status.
    #[track_caller]
    pub fn start(&mut self, method: &str, params: Value) -> (i64, Sse) {
        let id = self.next_id();
        let response = self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
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
        let task = params.get("task").is_some();
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
                if let Err(e) = schema::check_response(&message, Some(method), task) {
                    panic!("the server's message {e}\n  message: {message}");
                }
                assert_eq!(message["id"], id, "a response on another request's stream");
                exchange.response = message;
                assert!(sse.next_event().is_none(), "the stream goes on after the response");
                return exchange;
            }
            check_message(&message, None);
            if message.get("id").is_some() {
                let result = answer(message["method"].as_str().unwrap(), &message["params"]);
                let reply = json!({"jsonrpc": "2.0", "id": message["id"], "result": result});
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
        let response = self.post(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
        assert_eq!(response.status(), StatusCode::ACCEPTED);
        assert_eq!(response.text().unwrap(), "");
    }

    /// initialize + notifications/initialized; returns the InitializeResult.
    #[track_caller]
    pub fn initialize(&mut self, capabilities: Value) -> Value {
        let response = self.post(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": LATEST_PROTOCOL_VERSION,
                "capabilities": capabilities,
                "clientInfo": {"name": "wasm-mcp-http-tests", "version": "0.1.0"},
            },
        }));
        assert_eq!(response.status(), StatusCode::OK);
        let session = response
            .headers()
            .get("mcp-session-id")
            .expect("an Mcp-Session-Id header");
        self.session = Some(session.to_str().unwrap().to_string());
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
