//! [`ModernStdio`]: a client of the 2026-07-28 revision over a child
//! process's stdio. Every request carries the revision's `_meta` (no
//! `initialize`); messages are read on a thread and kept, so a test can wait
//! for a response, a notification or any message by predicate. With the
//! tasks extension ([`with_tasks`]) it calls tools and polls their tasks.

use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::PluginDir;
use crate::process::{ServerProcess, Stderr, serve_command};
use crate::schema::{checked_result, validate_tasks};
use crate::wait::{compile_timeout, poll, timeout};

/// The revision this client speaks.
pub const MODERN_VERSION: &str = "2026-07-28";

/// The `_meta` a 2026-07-28 request carries: this client, `capabilities`,
/// and the log level when there is one.
pub fn meta(capabilities: Value, log_level: Option<&str>) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": { "name": "wasm-mcp-tests", "version": "1" },
    });
    if let Some(level) = log_level {
        meta["io.modelcontextprotocol/logLevel"] = json!(level);
    }
    meta
}

/// `params` with `_meta` set to `meta`.
pub fn with_meta(mut params: Value, meta: &Value) -> Value {
    params["_meta"] = meta.clone();
    params
}

/// The tasks extension, as a client names it under `extensions`.
pub const TASKS: &str = "io.modelcontextprotocol/tasks";

/// The `_meta` of a client that negotiated the tasks extension (and elicitation).
pub fn with_tasks() -> Value {
    meta(json!({ "elicitation": {}, "extensions": { TASKS: {} } }), None)
}

/// Whether a task (as `tasks/get` shows it) has ended.
pub fn is_terminal(task: &Value) -> bool {
    ["completed", "failed", "cancelled"].contains(&task["status"].as_str().unwrap_or_default())
}

/// The id of the task a `CreateTaskResult` (or a task) names.
pub fn task_id(created: &Value) -> String {
    created["taskId"].as_str().expect("a task id").to_owned()
}

pub struct ModernStdio {
    process: ServerProcess,
    stdin: Option<ChildStdin>,
    incoming: mpsc::Receiver<Value>,
    /// Every message read so far, in order.
    pub seen: Vec<Value>,
    /// Messages read while waiting for another, not yet waited for.
    unclaimed: Vec<Value>,
    next_id: i64,
}

impl ModernStdio {
    /// Starts `wasm-mcp serve --no-watch ARGS` over `plugins`.
    pub fn serve(plugins: &PluginDir, args: &[&str]) -> Self {
        let mut command = serve_command(plugins.path());
        command.args(["--no-watch"]).args(args);
        Self::spawn(command)
    }

    /// Starts `command` (a `wasm-mcp serve`) with piped stdio.
    pub fn spawn(mut command: Command) -> Self {
        command.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut process = ServerProcess::spawn(command, Stderr::Captured);
        let stdin = process.take_stdin();
        let stdout = process.take_stdout();
        let (sender, incoming) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let message: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout carries only JSON-RPC lines ({e}): {line:?}"));
                if sender.send(message).is_err() {
                    return;
                }
            }
        });
        Self {
            process,
            stdin: Some(stdin),
            incoming,
            seen: Vec::new(),
            unclaimed: Vec::new(),
            next_id: 0,
        }
    }

    pub fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").expect("write to the server");
        stdin.flush().expect("flush");
    }

    /// Sends request `method` and returns its id.
    pub fn start(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        id
    }

    /// Sends request `method` and waits for its response (the whole message).
    #[track_caller]
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.start(method, params);
        self.response(&id)
    }

    /// Calls `tool` with `arguments` and `meta`; returns the whole response.
    #[track_caller]
    pub fn call_tool(&mut self, meta: &Value, tool: &str, arguments: Value) -> Value {
        self.request(
            "tools/call",
            with_meta(json!({ "name": tool, "arguments": arguments }), meta),
        )
    }

    /// `tasks/get` of `task`: its result, checked against the tasks extension's schema.
    #[track_caller]
    pub fn get_task(&mut self, meta: &Value, task: &str) -> Value {
        let response = self.request("tasks/get", with_meta(json!({ "taskId": task }), meta));
        checked_result(validate_tasks, "GetTaskResult", &response)
    }

    /// Polls `task` until `done` says so (within the test timeout).
    #[track_caller]
    pub fn poll_task_until(&mut self, meta: &Value, task: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + timeout();
        loop {
            let now = self.get_task(meta, task);
            if done(&now) {
                return now;
            }
            assert!(Instant::now() < deadline, "task {task} never got there; last: {now:#}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the start-up load of the plugins directory is over: a
    /// large (Python, JavaScript) component may still be compiling.
    pub fn wait_until_loaded(&mut self) {
        let loaded = poll(compile_timeout(), || {
            self.stderr().contains("plugins directory loaded").then_some(())
        });
        assert!(
            loaded.is_some(),
            "the plugins directory never loaded; stderr:\n{}",
            self.stderr()
        );
    }

    /// Waits for the response to `id`.
    #[track_caller]
    pub fn response(&mut self, id: &Value) -> Value {
        self.wait_for(&format!("the response to {id}"), |message| {
            message["id"] == *id && message.get("method").is_none()
        })
    }

    /// Waits for the first message, from now on or already seen but not yet
    /// waited for, that `matches`.
    #[track_caller]
    pub fn wait_for(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        if let Some(at) = self.unclaimed.iter().position(&matches) {
            return self.unclaimed.remove(at);
        }
        let deadline = Instant::now() + timeout();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.incoming.recv_timeout(left) {
                Ok(message) => {
                    self.seen.push(message.clone());
                    if matches(&message) {
                        return message;
                    }
                    self.unclaimed.push(message);
                }
                Err(_) => panic!(
                    "waited {:?} for {what}; seen: {:#?}\nstderr:\n{}",
                    timeout(),
                    self.seen,
                    self.process.stderr()
                ),
            }
        }
    }

    /// Reads what arrives during `period` (into `seen`, for later waits).
    pub fn read_for(&mut self, period: Duration) {
        let until = Instant::now() + period;
        while let Ok(message) = self
            .incoming
            .recv_timeout(until.saturating_duration_since(Instant::now()))
        {
            self.seen.push(message.clone());
            self.unclaimed.push(message);
        }
    }

    /// Messages seen so far with `method`.
    pub fn seen_of(&self, method: &str) -> Vec<&Value> {
        self.seen.iter().filter(|message| message["method"] == method).collect()
    }

    /// Closes stdin, reads what is left, and waits for the exit.
    pub fn close(&mut self) {
        self.stdin = None;
        while let Ok(message) = self.incoming.recv_timeout(timeout()) {
            self.seen.push(message);
        }
        let status = self.process.wait_for_exit("stdin closed");
        assert!(status.success(), "exit: {status:?}\nstderr:\n{}", self.process.stderr());
    }

    pub fn stderr(&self) -> String {
        self.process.stderr()
    }

    /// Stops the server with SIGKILL: nothing of it runs on.
    pub fn kill(&mut self) {
        self.process.kill();
    }
}
