//! A JSON-RPC client over a child process's stdio, made for measuring: one
//! call at a time (latency), or a window of calls kept in flight
//! (throughput). The measured loops only read each answer's id and whether it
//! is an error; the warm-up call of every run checks the whole answer.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};

use crate::workloads::ToolCall;

/// What the measured loops read of a message from the server.
#[derive(Deserialize)]
struct Envelope {
    id: Option<u64>,
    method: Option<IgnoredAny>,
    error: Option<Value>,
}

pub struct Client {
    child: Child,
    stdin: ChildStdin,
    /// With the reader thread during a throughput run.
    stdout: Option<BufReader<ChildStdout>>,
    next_id: u64,
    line: String,
}

/// The calls of a throughput run: how long they took in all, and each one's latency.
pub struct Run {
    pub elapsed: Duration,
    pub latencies: Vec<Duration>,
}

impl Client {
    /// Starts `command` with piped stdin and stdout (its stderr is dropped).
    pub fn spawn(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = Some(BufReader::new(child.stdout.take().expect("piped stdout")));
        Self {
            child,
            stdin,
            stdout,
            next_id: 1,
            line: String::new(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a request and returns its result; panics on an error answer.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.take_id();
        let mut line = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string();
        line.push('\n');
        self.write(&line);
        loop {
            let message: Value = serde_json::from_str(self.read_line()).expect("the server writes JSON");
            if message.get("method").is_some() || message.get("id").and_then(Value::as_u64) != Some(id) {
                continue;
            }
            if let Some(error) = message.get("error") {
                panic!("{method} failed: {error}");
            }
            return message["result"].clone();
        }
    }

    /// initialize, then notifications/initialized.
    pub fn initialize(&mut self) -> Value {
        let result = self.request(
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": { "name": "wasm-mcp-bench", "version": "0.1.0" },
            }),
        );
        self.write("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        result
    }

    /// Calls the tool once and checks its whole answer.
    pub fn check(&mut self, call: &ToolCall) {
        let result = self.request("tools/call", json!({ "name": call.tool, "arguments": call.arguments }));
        let text = result["content"][0]["text"].as_str();
        assert_eq!(text, Some(call.expected.as_str()), "{} answers {result}", call.tool);
    }

    /// `count` calls one at a time; the latency of each.
    pub fn latencies(&mut self, call: &ToolCall, count: usize) -> Vec<Duration> {
        self.check(call);
        (0..count)
            .map(|_| {
                let id = self.take_id();
                let line = call.request_line(id);
                let started = Instant::now();
                self.write(&line);
                self.wait_for(id);
                started.elapsed()
            })
            .collect()
    }

    /// `count` calls with `in_flight` of them sent and not yet answered at
    /// every moment: a reader thread takes the answers while this one sends.
    pub fn throughput(&mut self, call: &ToolCall, in_flight: usize, count: usize) -> Run {
        self.check(call);
        let first_id = self.next_id;
        self.next_id += count as u64;
        let (answered, answers) = mpsc::channel::<(u64, Instant)>();
        let mut stdout = self.stdout.take().expect("stdout is here between runs");
        let reader = std::thread::spawn(move || {
            let mut line = String::new();
            for _ in 0..count {
                let id = loop {
                    line.clear();
                    stdout.read_line(&mut line).expect("read the server's stdout");
                    let envelope: Envelope = serde_json::from_str(&line).expect("the server writes JSON-RPC");
                    assert!(envelope.error.is_none(), "a call failed: {line}");
                    if let (Some(id), None) = (envelope.id, envelope.method) {
                        break id;
                    }
                };
                answered.send((id, Instant::now())).expect("the sender waits");
            }
            stdout
        });
        let mut sent_at = HashMap::with_capacity(count);
        let started = Instant::now();
        let mut sent = 0;
        let mut latencies = Vec::with_capacity(count);
        while latencies.len() < count {
            while sent < count && sent - latencies.len() < in_flight {
                let id = first_id + sent as u64;
                sent_at.insert(id, Instant::now());
                self.write(&call.request_line(id));
                sent += 1;
            }
            let (id, at) = answers.recv().expect("the reader reads every answer");
            latencies.push(at - sent_at[&id]);
        }
        let elapsed = started.elapsed();
        self.stdout = Some(reader.join().expect("the reader finishes"));
        Run { elapsed, latencies }
    }

    /// `count` calls of `call` one at a time while `background` calls are kept
    /// `busy` in flight beside them (each answered one is sent again); the
    /// latency of each call of `call`.
    pub fn latencies_beside(
        &mut self,
        call: &ToolCall,
        background: &ToolCall,
        busy: usize,
        count: usize,
    ) -> Vec<Duration> {
        self.check(call);
        let mut in_background = std::collections::HashSet::new();
        for _ in 0..busy {
            let id = self.take_id();
            in_background.insert(id);
            self.write(&background.request_line(id));
        }
        let mut latencies = Vec::with_capacity(count);
        for _ in 0..count {
            let id = self.take_id();
            let line = call.request_line(id);
            let started = Instant::now();
            self.write(&line);
            loop {
                let envelope = self.read_envelope();
                match envelope.id {
                    Some(answered) if envelope.method.is_none() && answered == id => break,
                    Some(answered) if envelope.method.is_none() && in_background.remove(&answered) => {
                        let next = self.take_id();
                        in_background.insert(next);
                        self.write(&background.request_line(next));
                    }
                    _ => {}
                }
            }
            latencies.push(started.elapsed());
        }
        while !in_background.is_empty() {
            let envelope = self.read_envelope();
            if let (Some(answered), None) = (envelope.id, envelope.method) {
                in_background.remove(&answered);
            }
        }
        latencies
    }

    fn take_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id - 1
    }

    pub fn write(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).expect("write to the server");
        self.stdin.flush().expect("flush to the server");
    }

    fn read_line(&mut self) -> &str {
        self.line.clear();
        let stdout = self.stdout.as_mut().expect("stdout is here between runs");
        let read = stdout.read_line(&mut self.line).expect("read the server's stdout");
        assert!(read > 0, "the server closed its stdout");
        &self.line
    }

    /// Reads the next message's id and kind; panics if it is an error answer.
    fn read_envelope(&mut self) -> Envelope {
        let envelope: Envelope = serde_json::from_str(self.read_line()).expect("the server writes JSON-RPC");
        assert!(envelope.error.is_none(), "a call failed: {}", self.line);
        envelope
    }

    /// Reads until the answer to `id`; panics if it is an error.
    fn wait_for(&mut self, id: u64) {
        loop {
            let envelope = self.read_envelope();
            if envelope.id == Some(id) && envelope.method.is_none() {
                return;
            }
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
