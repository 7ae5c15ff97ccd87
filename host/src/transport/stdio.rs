//! MCP over stdio: one JSON-RPC message per line in on stdin, out on stdout.
//! stdout carries protocol messages only. The server stops when stdin closes.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::session::{Outgoing, Server, Session};

/// How long requests still running when stdin closes may take to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

pub async fn serve(server: Arc<Server>) -> Result<()> {
    let (outbox, mut outgoing) = mpsc::unbounded_channel::<Outgoing>();
    let session = Session::new(server, outbox);

    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        let mut line = Vec::with_capacity(4096);
        while let Some(out) = outgoing.recv().await {
            line.clear();
            serde_json::to_writer(&mut line, &out.message).expect("a JSON value serializes");
            line.push(b'\n');
            if stdout.write_all(&line).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });

    // Lines are read as bytes: one that is not UTF-8 is answered with a parse
    // error, like any other malformed message, and the session goes on.
    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        if stdin.read_until(b'\n', &mut line).await? == 0 {
            break;
        }
        if !line.trim_ascii().is_empty() {
            session.handle(&line);
        }
    }
    tracing::info!("stdin closed; shutting down");
    session.close(SHUTDOWN_GRACE).await;
    drop(session);
    // The writer ends once every sender (the session and its calls) is gone.
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, writer).await;
    Ok(())
}
