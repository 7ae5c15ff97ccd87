//! [`ConcurrentStdioClient`]: one stdio server that many threads use at once
//! (the soak test's workers): they share its stdin, and a reader thread
//! hands each response to the thread waiting for it, by id. It answers the
//! server's pings, allows one late response to a request cancelled after it
//! stopped waiting, and reports everything else that is wrong as a problem.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::jsonrpc;
use crate::process::{ServerProcess, Stderr};

/// Told of every problem, as a sentence.
pub type ProblemSink = Arc<dyn Fn(String) + Send + Sync>;

/// A stdio server shared by many threads; requests carry string ids.
pub struct ConcurrentStdioClient {
    /// `None` once closed, which shuts the server down.
    stdin: Mutex<Option<ChildStdin>>,
    waiting: Mutex<HashMap<String, Sender<Value>>>,
    /// Cancelled requests that may still get (at most) one late response.
    cancelled: Mutex<HashSet<String>>,
    late_responses: AtomicU64,
    response_limit: Duration,
    problem: ProblemSink,
}

impl ConcurrentStdioClient {
    /// Starts `command` (a `wasm-mcp serve` over stdio) with stderr where
    /// `stderr` says; a response may take up to `response_limit`.
    pub fn start(
        mut command: Command,
        stderr: Stderr,
        response_limit: Duration,
        problem: ProblemSink,
    ) -> (ServerProcess, Arc<Self>) {
        command.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut process = ServerProcess::spawn(command, stderr);
        let client = Arc::new(Self {
            stdin: Mutex::new(Some(process.take_stdin())),
            waiting: Mutex::default(),
            cancelled: Mutex::default(),
            late_responses: AtomicU64::new(0),
            response_limit,
            problem,
        });
        let stdout = BufReader::new(process.take_stdout());
        let reader = client.clone();
        std::thread::spawn(move || reader.read(stdout));
        (process, client)
    }

    /// Sends one message (nothing once closed).
    pub fn send(&self, message: &Value) {
        let mut stdin = self.stdin.lock().unwrap();
        let Some(stdin) = stdin.as_mut() else { return };
        let line = format!("{message}\n");
        if let Err(e) = stdin.write_all(line.as_bytes()).and_then(|()| stdin.flush()) {
            (self.problem)(format!("stdio: writing to the server failed: {e}"));
        }
    }

    /// Closes stdin: the server shuts down.
    pub fn close(&self) {
        self.stdin.lock().unwrap().take();
    }

    /// How many responses came to requests after they were cancelled.
    pub fn late_responses(&self) -> u64 {
        self.late_responses.load(Ordering::Relaxed)
    }

    /// Sends request `id` and waits for its response. With `cancel_after`,
    /// cancels it after that long unless answered, and then gives `None`
    /// unless the response has arrived meanwhile. A response that never
    /// comes is a problem (and `None`).
    pub fn request(&self, id: &str, method: &str, params: Value, cancel_after: Option<Duration>) -> Option<Value> {
        let (answer, answered) = channel();
        self.waiting.lock().unwrap().insert(id.to_owned(), answer);
        self.send(&jsonrpc::request(id, method, params));
        let Some(after) = cancel_after else {
            return match answered.recv_timeout(self.response_limit) {
                Ok(message) => Some(message),
                Err(_) => {
                    self.waiting.lock().unwrap().remove(id);
                    (self.problem)(format!("stdio: no response to {method} {id}"));
                    None
                }
            };
        };
        if let Ok(message) = answered.recv_timeout(after) {
            return Some(message);
        }
        // Whatever arrives from now on is the one late response allowed.
        {
            let mut waiting = self.waiting.lock().unwrap();
            if waiting.remove(id).is_some() {
                self.cancelled.lock().unwrap().insert(id.to_owned());
            }
        }
        self.send(&jsonrpc::cancelled(id));
        answered.try_recv().ok()
    }

    /// Routes every response to the thread waiting for it, answers pings.
    fn read(&self, stdout: impl BufRead) {
        for line in stdout.lines() {
            let Ok(line) = line else { break };
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                (self.problem)(format!("stdio: a line that is not JSON: {line:.200}"));
                continue;
            };
            if message.get("method").is_some() {
                if message["method"] == "ping" && message.get("id").is_some() {
                    self.send(&jsonrpc::result_response(&message["id"], serde_json::json!({})));
                }
                continue;
            }
            let id = message["id"].as_str().unwrap_or_default().to_owned();
            if let Some(waiter) = self.waiting.lock().unwrap().remove(&id) {
                let _ = waiter.send(message);
            } else if self.cancelled.lock().unwrap().remove(&id) {
                self.late_responses.fetch_add(1, Ordering::Relaxed);
            } else {
                (self.problem)(format!(
                    "stdio: a response nobody waits for (a second one, or another's): {line:.300}"
                ));
            }
        }
    }
}
