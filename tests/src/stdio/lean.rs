//! [`LeanStdioClient`]: the benchmarks' client over a child process's stdio,
//! one call at a time (latency) or a window of calls kept in flight
//! (throughput). Nothing is checked against the schema and no thread stands
//! between the client and the server: the measured loops write prepared
//! request lines and read only each answer's id and whether it is an error.
//! The warm-up call of every run checks the whole answer.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};

use crate::jsonrpc::{self, Ids};
use crate::process::{ServerProcess, Stderr};

/// One tool call a benchmark makes, and the text its answer must carry.
#[derive(Clone)]
pub struct ToolCall {
    pub tool: &'static str,
    pub arguments: Value,
    pub expected: String,
}

impl ToolCall {
    /// The tools/call request line with `id`, newline included.
    pub fn request_line(&self, id: i64) -> String {
        let params = json!({ "name": self.tool, "arguments": self.arguments });
        let mut line = jsonrpc::request(id, "tools/call", params).to_string();
        line.push('\n');
        line
    }
}

/// What the measured loops read of a message from the server.
#[derive(Deserialize)]
struct Envelope {
    id: Option<i64>,
    method: Option<IgnoredAny>,
    error: Option<Value>,
}

/// A server over stdio, its stderr discarded.
pub struct LeanStdioClient {
    process: ServerProcess,
    stdin: ChildStdin,
    /// With the reader thread during a throughput run.
    stdout: Option<BufReader<ChildStdout>>,
    ids: Ids,
    line: String,
}

/// The calls of a throughput run: how long they took in all, and each one's latency.
pub struct Run {
    pub elapsed: Duration,
    pub latencies: Vec<Duration>,
}

impl LeanStdioClient {
    /// Starts `command` with piped stdin and stdout.
    pub fn spawn(mut command: Command) -> Self {
        command.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut process = ServerProcess::spawn(command, Stderr::Discarded);
        let stdin = process.take_stdin();
        let stdout = Some(BufReader::new(process.take_stdout()));
        Self {
            process,
            stdin,
            stdout,
            ids: Ids::default(),
            line: String::new(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Sends a request and returns its result; panics on an error answer.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.ids.next_id();
        let mut line = jsonrpc::request(id, method, params).to_string();
        line.push('\n');
        self.write(&line);
        loop {
            let message: Value = serde_json::from_str(self.read_line()).expect("the server writes JSON");
            if message.get("method").is_some() || message.get("id").and_then(Value::as_i64) != Some(id) {
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
        let result = self.request("initialize", jsonrpc::initialize_params("wasm-mcp-bench", json!({})));
        let mut line = jsonrpc::notification("notifications/initialized", Value::Null).to_string();
        line.push('\n');
        self.write(&line);
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
                let id = self.ids.next_id();
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
        let first_id = self.ids.take(count as i64);
        let (answered, answers) = mpsc::channel::<(i64, Instant)>();
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
                let id = first_id + sent as i64;
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
        let mut in_background = HashSet::new();
        for _ in 0..busy {
            let id = self.ids.next_id();
            in_background.insert(id);
            self.write(&background.request_line(id));
        }
        let mut latencies = Vec::with_capacity(count);
        for _ in 0..count {
            let id = self.ids.next_id();
            let line = call.request_line(id);
            let started = Instant::now();
            self.write(&line);
            loop {
                let envelope = self.read_envelope();
                match envelope.id {
                    Some(answered) if envelope.method.is_none() && answered == id => break,
                    Some(answered) if envelope.method.is_none() && in_background.remove(&answered) => {
                        let next = self.ids.next_id();
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

    /// Writes one line (newline included) and flushes it.
    fn write(&mut self, line: &str) {
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
    fn wait_for(&mut self, id: i64) {
        loop {
            let envelope = self.read_envelope();
            if envelope.id == Some(id) && envelope.method.is_none() {
                return;
            }
        }
    }
}
