//! [`StdioServer`]: the real `wasm-mcp serve --plugins DIR` as a child
//! process, driven over its stdin and stdout as an MCP client would: the
//! checked client of the end-to-end tests.
//!
//! A reader thread parses every stdout line as JSON and checks it against the
//! MCP schema (a non-JSON line, or a message that does not validate, is a
//! test failure: stdout is protocol only). Stderr is captured. Waiting has a
//! generous limit ([`timeout`]); running into it fails the test with what was
//! seen, it is never a timing assertion. Dropping the server kills the child.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::jsonrpc::{self, Ids, Kind, Response, RpcError, SentRequest, id_key, kind};
use crate::plugin_dir::PluginDir;
use crate::process::{ServerProcess, Stderr, serve_command};
use crate::schema;
use crate::wait::{compile_timeout, timeout};

/// Answers one server → client request: the `params` in, a result or a
/// JSON-RPC error out.
pub type Handler = Box<dyn FnMut(&Value) -> Result<Value, RpcError>>;

/// State the stdout reader thread shares with the test thread.
#[derive(Default)]
struct Shared {
    /// Requests sent and not yet answered, by [`id_key`].
    pending: Mutex<HashMap<String, SentRequest>>,
    /// Everything wrong with what the server wrote on stdout.
    violations: Mutex<Vec<String>>,
}

impl Shared {
    /// Checks one message from stdout against the schema, by its kind.
    fn check(&self, msg: &Value) {
        let outcome = match kind(msg) {
            k @ (Kind::Result | Kind::Error) => {
                let id = msg.get("id").filter(|id| !id.is_null());
                let sent = id.and_then(|id| self.pending.lock().unwrap().remove(&id_key(id)));
                match (k, sent, id) {
                    (_, Some(sent), _) => schema::check_message(msg, Some(&sent)),
                    (Kind::Error, None, None) => schema::check_message(msg, None),
                    (_, None, _) => Err("is a response whose id matches no outstanding request \
                         (a second response to one request, or one never asked for)"
                        .to_string()),
                }
            }
            _ => schema::check_message(msg, None),
        };
        if let Err(e) = outcome {
            self.violations
                .lock()
                .unwrap()
                .push(format!("the server's message {e}\n  message: {msg}"));
        }
    }

    fn violation(&self, what: String) {
        self.violations.lock().unwrap().push(what);
    }
}

enum Event {
    Message(Value),
    /// A line that was no message was recorded as a violation.
    BadLine,
    Closed,
}

/// The `wasm-mcp` binary serving a plugins directory over stdio.
pub struct StdioServer {
    process: ServerProcess,
    stdin: Option<ChildStdin>,
    events: Receiver<Event>,
    shared: Arc<Shared>,
    stdout_reader: Option<JoinHandle<()>>,
    ids: Ids,
    /// Every notification received, in order of arrival.
    notifications: Vec<Value>,
    /// Indices of notifications already returned by `wait_for_notification`.
    claimed: HashSet<usize>,
    /// Every server → client request received, in order.
    client_requests: Vec<Value>,
    /// Server → client requests with no handler, waiting for the test.
    unanswered: VecDeque<Value>,
    /// Responses received and not yet claimed, by [`id_key`].
    responses: HashMap<String, Value>,
    /// Error responses whose id is null or absent (parse errors).
    null_id_errors: VecDeque<Value>,
    /// Every response received, in order.
    all_responses: Vec<Value>,
    handlers: HashMap<String, Handler>,
    stdout_closed: bool,
    requests_sent: usize,
    exit_status: Option<ExitStatus>,
    _plugins: Option<PluginDir>,
}

impl StdioServer {
    /// Serves `plugins` (which the server keeps alive) with no extra flags.
    pub fn start(plugins: PluginDir) -> Self {
        Self::start_with_args(plugins, &[])
    }

    /// Serves the test plugins named `names` and initializes the session
    /// with no client capabilities.
    pub fn start_initialized(names: &[&str]) -> Self {
        let mut server = Self::start(PluginDir::with(names));
        server.initialize(json!({}));
        server
    }

    /// Serves `plugins` with extra `serve` flags (e.g. `["--page-size", "1"]`).
    pub fn start_with_args(plugins: PluginDir, args: &[&str]) -> Self {
        let mut server = Self::spawn(plugins.path(), args);
        server._plugins = Some(plugins);
        server
    }

    /// This server, keeping `plugins` (which it serves) alive as long as it runs.
    pub fn keeping(mut self, plugins: PluginDir) -> Self {
        self._plugins = Some(plugins);
        self
    }

    /// Runs `wasm-mcp serve --plugins DIR ARGS...`.
    pub fn spawn(plugins_dir: &Path, args: &[&str]) -> Self {
        let mut command = serve_command(plugins_dir);
        command.args(args);
        Self::spawn_command(command)
    }

    /// Drives any command as the server (the harness's own tests use this to
    /// check that bad output is caught).
    pub fn spawn_command(mut command: Command) -> Self {
        command.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut process = ServerProcess::spawn(command, Stderr::Captured);
        let shared = Arc::new(Shared::default());
        let (tx, events) = channel();
        let stdout = process.take_stdout();
        let stdout_reader = {
            let shared = shared.clone();
            std::thread::spawn(move || read_stdout(stdout, shared, tx))
        };
        let mut handlers: HashMap<String, Handler> = HashMap::new();
        // ping works in both directions.
        handlers.insert("ping".into(), Box::new(|_| Ok(json!({}))));
        StdioServer {
            stdin: Some(process.take_stdin()),
            process,
            events,
            shared,
            stdout_reader: Some(stdout_reader),
            ids: Ids::default(),
            notifications: Vec::new(),
            claimed: HashSet::new(),
            client_requests: Vec::new(),
            unanswered: VecDeque::new(),
            responses: HashMap::new(),
            null_id_errors: VecDeque::new(),
            all_responses: Vec::new(),
            handlers,
            stdout_closed: false,
            requests_sent: 0,
            exit_status: None,
            _plugins: None,
        }
    }

    /// The plugins directory this server was started over (with
    /// [`start`](Self::start)), to change while it serves.
    pub fn plugin_dir(&self) -> &PluginDir {
        self._plugins.as_ref().expect("the server was started over a PluginDir")
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// CPU time the server has used so far, in clock ticks.
    pub fn cpu_ticks(&self) -> u64 {
        crate::proc_stat::cpu_ticks(self.pid())
    }

    // ---- sending ------------------------------------------------------------

    /// Sends one message (serialized on one line).
    pub fn send(&mut self, msg: &Value) {
        let line = serde_json::to_string(msg).expect("serialize a message");
        self.send_raw(&line);
    }

    /// Sends one raw line (a newline is added). If it parses as a request its
    /// id is remembered so the response can be checked by method.
    pub fn send_raw(&mut self, line: &str) {
        if let Ok(msg) = serde_json::from_str::<Value>(line)
            && let Some((key, sent)) = SentRequest::expecting_response(&msg)
        {
            self.shared.pending.lock().unwrap().insert(key, sent);
        }
        self.send_bytes(line.as_bytes());
    }

    /// Sends one line of raw bytes, UTF-8 or not (a newline is added); no
    /// answer is expected by id.
    pub fn send_bytes(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is still open");
        let written = stdin
            .write_all(line)
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush());
        if let Err(e) = written {
            panic!("writing to the server's stdin failed ({e}); stderr:\n{}", self.stderr());
        }
    }

    /// Sends a notification (`params` omitted when null).
    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&jsonrpc::notification(method, params));
    }

    /// A fresh integer request id.
    pub fn next_id(&mut self) -> Value {
        json!(self.ids.next_id())
    }

    /// Sends a request with a fresh id without waiting; returns the id.
    pub fn start_request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id();
        self.start_request_with_id(id.clone(), method, params);
        id
    }

    /// Sends a request with the given id without waiting.
    pub fn start_request_with_id(&mut self, id: Value, method: &str, params: Value) {
        self.requests_sent += 1;
        self.send(&jsonrpc::request(id, method, params));
    }

    /// Sends a request (`params` omitted when null) and waits for its
    /// response, handling notifications and server → client requests that
    /// arrive meanwhile.
    pub fn request(&mut self, method: &str, params: Value) -> Response {
        let id = self.start_request(method, params);
        self.wait_response(&id, method)
    }

    /// Like [`request`](Self::request) with a chosen id.
    pub fn request_with_id(&mut self, id: Value, method: &str, params: Value) -> Response {
        self.start_request_with_id(id.clone(), method, params);
        self.wait_response(&id, method)
    }

    /// `tools/call` of `name` with `arguments`.
    pub fn call_tool(&mut self, name: &str, arguments: Value) -> Response {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// `initialize` offering `capabilities` and the latest version, then
    /// `notifications/initialized`. Returns the InitializeResult.
    pub fn initialize(&mut self, capabilities: Value) -> Value {
        let response = self.request("initialize", jsonrpc::initialize_params("wasm-mcp-tests", capabilities));
        let result = response.result().clone();
        self.notify("notifications/initialized", Value::Null);
        result
    }

    /// Every item of a paginated list (`tools/list` → `"tools"`), following
    /// `nextCursor` to the end. Fails on a repeated cursor.
    pub fn list_all(&mut self, method: &str, field: &str) -> Vec<Value> {
        let mut items = Vec::new();
        let mut cursor: Option<Value> = None;
        let mut seen_cursors = HashSet::new();
        loop {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let response = self.request(method, params);
            let result = response.result();
            let page = result[field]
                .as_array()
                .unwrap_or_else(|| panic!("`{method}` result has no `{field}` array: {result}"));
            items.extend(page.iter().cloned());
            match result.get("nextCursor") {
                Some(next) if !next.is_null() => {
                    assert!(
                        seen_cursors.insert(next.to_string()),
                        "`{method}` returned the cursor {next} twice: pagination loops"
                    );
                    cursor = Some(next.clone());
                }
                _ => return items,
            }
        }
    }

    // ---- receiving ----------------------------------------------------------

    /// Waits for the response to the request `id` (sent as `method`).
    pub fn wait_response(&mut self, id: &Value, method: &str) -> Response {
        let key = id_key(id);
        let deadline = Instant::now() + timeout();
        loop {
            if let Some(raw) = self.responses.remove(&key) {
                return Response {
                    method: method.to_string(),
                    id: raw["id"].clone(),
                    raw,
                };
            }
            if !self.pump(deadline) {
                self.fail_waiting(&format!("the response to `{method}` (id {id})"), timeout());
            }
        }
    }

    /// Waits for an error response with a null or absent id (what a parse
    /// error gets).
    pub fn wait_null_id_error(&mut self) -> Value {
        let deadline = Instant::now() + timeout();
        loop {
            if let Some(raw) = self.null_id_errors.pop_front() {
                return raw;
            }
            if !self.pump(deadline) {
                self.fail_waiting("an error response with a null id", timeout());
            }
        }
    }

    /// Waits for a notification matching `pred` that no earlier call returned
    /// (looking first at those already received). `what` describes it for
    /// the failure message.
    pub fn wait_for_notification(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        self.wait_for_notification_within(timeout(), what, pred)
    }

    /// [`wait_for_notification`](Self::wait_for_notification) with its own
    /// limit, e.g. [`compile_timeout`] for one that follows compiling a plugin.
    pub fn wait_for_notification_within(
        &mut self,
        limit: Duration,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + limit;
        let mut checked = 0;
        loop {
            while checked < self.notifications.len() {
                let i = checked;
                checked += 1;
                if !self.claimed.contains(&i) && pred(&self.notifications[i]) {
                    self.claimed.insert(i);
                    return self.notifications[i].clone();
                }
            }
            if !self.pump(deadline) {
                self.fail_waiting(&format!("a notification: {what}"), limit);
            }
        }
    }

    /// Waits for a server → client request of `method` that has no handler
    /// (answer it with [`respond`](Self::respond)).
    pub fn wait_for_client_request(&mut self, method: &str) -> Value {
        let deadline = Instant::now() + timeout();
        loop {
            if let Some(pos) = self.unanswered.iter().position(|r| r["method"] == method) {
                return self.unanswered.remove(pos).expect("position is in range");
            }
            if !self.pump(deadline) {
                self.fail_waiting(&format!("a `{method}` request from the server"), timeout());
            }
        }
    }

    /// Answers a server → client request with a result.
    pub fn respond(&mut self, id: &Value, result: Value) {
        self.send(&jsonrpc::result_response(id, result));
    }

    /// Answers a server → client request with a JSON-RPC error.
    pub fn respond_error(&mut self, id: &Value, code: i64, message: &str) {
        self.send(&jsonrpc::error_response(id, code, message));
    }

    /// Answers every future server → client request of `method` with `handler`.
    pub fn on_request(&mut self, method: &str, handler: impl FnMut(&Value) -> Result<Value, RpcError> + 'static) {
        self.handlers.insert(method.to_string(), Box::new(handler));
    }

    /// Handles whatever arrived until `deadline` has passed, without waiting
    /// for anything in particular. Use to let in-flight messages arrive.
    pub fn drain_until(&mut self, deadline: Instant) {
        while self.pump(deadline) {}
    }

    /// Every notification received so far, in order.
    pub fn notifications(&self) -> &[Value] {
        &self.notifications
    }

    /// Received notifications of `method`, in order.
    pub fn notifications_of(&self, method: &str) -> Vec<Value> {
        of_method(&self.notifications, method)
    }

    /// Every server → client request received so far, in order.
    pub fn client_requests(&self) -> &[Value] {
        &self.client_requests
    }

    /// Server → client requests of `method` received so far, in order.
    pub fn client_requests_of(&self, method: &str) -> Vec<Value> {
        of_method(&self.client_requests, method)
    }

    /// Every response received so far, in order.
    pub fn all_responses(&self) -> &[Value] {
        &self.all_responses
    }

    /// How many requests were sent through [`request`](Self::request) and
    /// [`start_request`](Self::start_request) (raw lines not counted).
    pub fn requests_sent(&self) -> usize {
        self.requests_sent
    }

    /// Whether any response with this id has arrived.
    pub fn has_response_for(&self, id: &Value) -> bool {
        self.all_responses.iter().any(|r| r.get("id") == Some(id))
    }

    /// Everything the server wrote on stderr so far.
    pub fn stderr(&self) -> String {
        self.process.stderr()
    }

    /// Waits until stderr satisfies `pred`; `what` describes it.
    pub fn wait_for_stderr(&mut self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        self.wait_for_stderr_within(timeout(), what, pred)
    }

    /// Waits until the start-up load of the plugins directory is over. Compiling
    /// large components (Python, JavaScript) on a cold cache can outlast the
    /// host's start-up wait for lists, so tests over them wait for this first.
    pub fn wait_until_loaded(&mut self) {
        self.wait_for_stderr_within(compile_timeout(), "the plugins directory loaded", |stderr| {
            stderr.contains("plugins directory loaded")
        });
    }

    fn wait_for_stderr_within(&mut self, limit: Duration, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let stderr = self.stderr();
            if pred(&stderr) {
                return stderr;
            }
            if Instant::now() >= deadline {
                panic!("stderr never showed {what} within {limit:?}; stderr:\n{stderr}");
            }
            // Let stdout be handled meanwhile, in small steps.
            let step = (Instant::now() + Duration::from_millis(50)).min(deadline);
            self.drain_until(step);
            if self.stdout_closed {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    // ---- ending -------------------------------------------------------------

    /// Closes the server's stdin (end of the session).
    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// Closes stdin, waits for the process to exit and for stdout to end,
    /// and returns the exit status. Fails if it does not exit in time.
    pub fn close_and_wait(&mut self) -> ExitStatus {
        self.close_stdin();
        self.wait_for_exit("stdin closed")
    }

    /// Sends `signal` (a name `kill -s` takes: `TERM`, `INT`) to the server.
    pub fn send_signal(&self, signal: &str) {
        self.process.send_signal(signal);
    }

    /// Waits for the process to exit (after `cause`, for the failure
    /// message) and for stdout to end, handling messages meanwhile; checks
    /// everything it wrote and returns the exit status.
    pub fn wait_for_exit(&mut self, cause: &str) -> ExitStatus {
        let deadline = Instant::now() + timeout();
        let status = loop {
            match self.process.try_wait() {
                Some(status) => break status,
                None if Instant::now() >= deadline => panic!(
                    "the server did not exit within {:?} after {cause}; stderr:\n{}",
                    timeout(),
                    self.stderr()
                ),
                None => {
                    let step = (Instant::now() + Duration::from_millis(50)).min(deadline);
                    self.drain_until(step);
                    if self.stdout_closed {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            }
        };
        self.exit_status = Some(status);
        // Read stdout to its end so every message is checked.
        let deadline = Instant::now() + timeout();
        while !self.stdout_closed {
            if !self.pump(deadline) && !self.stdout_closed {
                panic!("stdout did not close after the server exited");
            }
        }
        if let Some(reader) = self.stdout_reader.take() {
            let _ = reader.join();
        }
        self.assert_no_violations();
        status
    }

    /// Closes stdin and asserts the server exits with status 0 and that
    /// everything it wrote on stdout was valid.
    pub fn shutdown(mut self) {
        let status = self.close_and_wait();
        assert!(
            status.success(),
            "the server should exit 0 when stdin closes, got {status}; stderr:\n{}",
            self.stderr()
        );
    }

    /// Fails now if anything the server wrote on stdout so far was wrong.
    pub fn assert_no_violations(&self) {
        let violations = self.shared.violations.lock().unwrap().clone();
        if !violations.is_empty() {
            panic!(
                "the server wrote invalid protocol output on stdout:\n{}\n--- stderr:\n{}",
                violations.join("\n"),
                self.stderr()
            );
        }
    }

    // ---- internals ----------------------------------------------------------

    /// Handles one event, waiting at most until `deadline`. Returns false when
    /// nothing arrived in time or stdout has closed.
    fn pump(&mut self, deadline: Instant) -> bool {
        if self.stdout_closed {
            return false;
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.events.recv_timeout(wait) {
            Ok(Event::Message(msg)) => {
                self.assert_no_violations();
                self.dispatch(msg);
                true
            }
            Ok(Event::BadLine) => {
                self.assert_no_violations();
                true
            }
            Ok(Event::Closed) | Err(RecvTimeoutError::Disconnected) => {
                self.stdout_closed = true;
                self.assert_no_violations();
                false
            }
            Err(RecvTimeoutError::Timeout) => false,
        }
    }

    fn dispatch(&mut self, msg: Value) {
        match kind(&msg) {
            Kind::Notification => self.notifications.push(msg),
            Kind::Request => {
                self.client_requests.push(msg.clone());
                let method = msg["method"].as_str().unwrap_or_default().to_string();
                match self.handlers.get_mut(&method) {
                    Some(handler) => {
                        let answer = handler(msg.get("params").unwrap_or(&Value::Null));
                        match answer {
                            Ok(result) => {
                                if let Err(e) = schema::validate_def(schema::client_result_def(&method), &result) {
                                    panic!("test bug: the canned answer to `{method}` {e}");
                                }
                                self.respond(&msg["id"], result);
                            }
                            Err(e) => self.respond_error(&msg["id"], e.code, &e.message),
                        }
                    }
                    None => self.unanswered.push_back(msg),
                }
            }
            Kind::Result | Kind::Error => {
                self.all_responses.push(msg.clone());
                match msg.get("id").filter(|id| !id.is_null()) {
                    Some(id) => {
                        self.responses.insert(id_key(id), msg);
                    }
                    None => self.null_id_errors.push_back(msg),
                }
            }
            // Already recorded as a violation by the reader thread.
            Kind::Invalid(_) => {}
        }
    }

    fn fail_waiting(&mut self, what: &str, limit: Duration) -> ! {
        if self.stdout_closed {
            let status = self.process.try_wait();
            panic!(
                "waiting for {what}: the server closed stdout (exit status: {}); stderr:\n{}",
                status.map_or("still running".to_string(), |s| s.to_string()),
                self.stderr()
            );
        }
        panic!(
            "waiting for {what}: nothing within {limit:?}.\nnotifications so far: {:?}\nstderr:\n{}",
            self.notifications,
            self.stderr()
        );
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        self.stdin.take();
        self.process.kill();
        if let Some(reader) = self.stdout_reader.take() {
            let _ = reader.join();
        }
        if !std::thread::panicking() {
            self.assert_no_violations();
        }
    }
}

fn read_stdout(stdout: ChildStdout, shared: Arc<Shared>, tx: Sender<Event>) {
    let mut reader = BufReader::new(stdout);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                shared.violation(format!("reading stdout failed: {e}"));
                break;
            }
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
        } else {
            shared.violation(format!(
                "stdout ended in the middle of a line (no trailing newline): {:?}",
                String::from_utf8_lossy(&buf)
            ));
        }
        let line = match std::str::from_utf8(&buf) {
            Ok(line) => line,
            Err(e) => {
                shared.violation(format!(
                    "stdout carried a line that is not UTF-8 ({e}): {:?}",
                    String::from_utf8_lossy(&buf)
                ));
                let _ = tx.send(Event::BadLine);
                continue;
            }
        };
        match serde_json::from_str::<Value>(line) {
            Ok(msg) => {
                shared.check(&msg);
                // The receiver may be gone while the server is dropped; keep
                // reading (and checking) to the end regardless.
                let _ = tx.send(Event::Message(msg));
            }
            Err(e) => {
                shared.violation(format!(
                    "stdout carried a line that is not JSON ({e}); stdout is for protocol \
                     messages only: {line:?}"
                ));
                let _ = tx.send(Event::BadLine);
            }
        }
    }
    let _ = tx.send(Event::Closed);
}

/// The messages of `method` among `messages`, in order.
fn of_method(messages: &[Value], method: &str) -> Vec<Value> {
    messages.iter().filter(|m| m["method"] == method).cloned().collect()
}

#[cfg(test)]
mod tests {
    //! The harness catches what a broken server writes: these drive a shell
    //! script that answers the first request with a canned line.
    use super::*;

    /// A "server" that reads one line and prints `reply` (then waits for EOF).
    fn replying(reply: &str) -> StdioServer {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!("read line; printf '%s\\n' '{reply}'; cat >/dev/null"));
        StdioServer::spawn_command(command)
    }

    /// The panic message of `f`, which must panic.
    fn panic_message(f: impl FnOnce()) -> String {
        let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
            .expect_err("the harness should have failed the test");
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    }

    #[test]
    fn a_valid_exchange_passes() {
        let mut server = replying(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        assert_eq!(server.request("ping", Value::Null).result(), &json!({}));
        let status = server.close_and_wait();
        assert!(status.success());
    }

    #[test]
    fn a_non_json_line_on_stdout_fails() {
        let message = panic_message(|| {
            let mut server = replying("hello from a println");
            server.request("ping", Value::Null);
        });
        assert!(message.contains("not JSON"), "{message}");
    }

    #[test]
    fn a_result_that_breaks_the_schema_fails() {
        let message = panic_message(|| {
            let mut server =
                replying(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}"#);
            server.initialize(json!({}));
        });
        assert!(
            message.contains("InitializeResult") && message.contains("serverInfo"),
            "{message}"
        );
    }

    #[test]
    fn a_response_nobody_asked_for_fails() {
        let message = panic_message(|| {
            let mut server = replying(r#"{"jsonrpc":"2.0","id":99,"result":{}}"#);
            server.start_request("ping", Value::Null);
            server.close_and_wait();
        });
        assert!(message.contains("matches no outstanding request"), "{message}");
    }

    #[test]
    fn an_unknown_notification_fails() {
        let message = panic_message(|| {
            let mut server = replying(r#"{"jsonrpc":"2.0","method":"notifications/made_up"}"#);
            server.start_request("ping", Value::Null);
            server.close_and_wait();
        });
        assert!(message.contains("notifications/made_up"), "{message}");
    }
}
