//! A native MCP server built for the comparison: the same two tools as the
//! plugins, no WebAssembly. It is made the way the host does its stdio (and a
//! careful hand-written server would): a thread reading stdin with plain
//! blocking reads, requests answered at once when trivial and on a tokio task
//! otherwise, and a thread writing stdout, one flush for what is queued.

use std::io::{BufRead, Write};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::workloads;

pub fn serve() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let (outbox, mut outgoing) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer = std::thread::spawn(move || {
        let mut stdout = std::io::stdout().lock();
        while let Some(mut batch) = outgoing.blocking_recv() {
            while let Ok(line) = outgoing.try_recv() {
                batch.extend_from_slice(&line);
            }
            if stdout.write_all(&batch).and_then(|()| stdout.flush()).is_err() {
                return;
            }
        }
    });
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (message.get("id").cloned(), message["method"].as_str()) else {
            continue;
        };
        if method == "tools/call" {
            let outbox = outbox.clone();
            runtime.spawn(async move {
                let _ = outbox.send(answer(&id, call_tool(&message["params"])));
            });
        } else {
            let _ = outbox.send(answer(&id, respond(method)));
        }
    }
    drop(outbox);
    drop(runtime);
    let _ = writer.join();
}

fn respond(method: &str) -> Result<Value, String> {
    match method {
        "initialize" => Ok(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": { "tools": {} },
            "serverInfo": { "name": "native-bench-server", "version": "0.1.0" },
        })),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({ "tools": [
            { "name": "echo", "inputSchema": { "type": "object" } },
            { "name": "count_primes", "inputSchema": { "type": "object" } },
            { "name": "count_primes_by_division", "inputSchema": { "type": "object" } },
        ] })),
        other => Err(format!("no method {other}")),
    }
}

fn call_tool(params: &Value) -> Result<Value, String> {
    let arguments = &params["arguments"];
    let text = match params["name"].as_str() {
        Some("echo") => workloads::echo(arguments),
        Some("count_primes") => workloads::count_primes(arguments),
        Some("count_primes_by_division") => workloads::count_primes_by_division(arguments),
        _ => return Err("no such tool".into()),
    };
    match text {
        Some(text) => Ok(json!({ "content": [{ "type": "text", "text": text }] })),
        None => Err("invalid arguments".into()),
    }
}

fn answer(id: &Value, outcome: Result<Value, String>) -> Vec<u8> {
    let message = match outcome {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Err(message) => json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32602, "message": message } }),
    };
    let mut line = serde_json::to_vec(&message).expect("JSON serializes");
    line.push(b'\n');
    line
}
