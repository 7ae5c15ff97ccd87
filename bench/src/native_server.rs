//! A native MCP server built for the comparison: the same two tools as the
//! plugins, no WebAssembly. It is made the way a careful hand-written tokio
//! server would be: lines read from stdin, requests answered at once when
//! trivial and on their own task otherwise, answers written by one writer
//! task that flushes when it has nothing more queued.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::mpsc;

use crate::workloads;

pub fn serve() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let (outbox, mut outgoing) = mpsc::unbounded_channel::<Vec<u8>>();
        let writer = tokio::spawn(async move {
            let mut stdout = BufWriter::new(tokio::io::stdout());
            while let Some(line) = outgoing.recv().await {
                stdout.write_all(&line).await?;
                while let Ok(line) = outgoing.try_recv() {
                    stdout.write_all(&line).await?;
                }
                stdout.flush().await?;
            }
            std::io::Result::Ok(())
        });
        let outbox = Arc::new(outbox);
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let (Some(id), Some(method)) = (message.get("id").cloned(), message["method"].as_str()) else {
                continue;
            };
            if method == "tools/call" {
                let outbox = outbox.clone();
                tokio::spawn(async move {
                    let _ = outbox.send(answer(&id, call_tool(&message["params"])));
                });
            } else {
                let _ = outbox.send(answer(&id, respond(method)));
            }
        }
        drop(outbox);
        let _ = writer.await;
    });
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
        ] })),
        other => Err(format!("no method {other}")),
    }
}

fn call_tool(params: &Value) -> Result<Value, String> {
    let arguments = &params["arguments"];
    let text = match params["name"].as_str() {
        Some("echo") => workloads::echo(arguments),
        Some("count_primes") => workloads::count_primes(arguments),
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
