//! MCP over stdio: one JSON-RPC message per line in on stdin, out on stdout.
//! stdout carries protocol messages only. The server stops when stdin closes.
//!
//! stdin and stdout each have a thread of their own doing plain blocking I/O:
//! tokio's stdin and stdout would hand every read and write to its blocking
//! pool, a thread hop (and a wake-up) per message in each direction.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use tokio::sync::{mpsc, oneshot};

use crate::session::{Outgoing, Server, Session};

/// How long requests still running when stdin closes may take to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Queued messages are gathered into one write up to this many bytes.
const WRITE_BATCH_BYTES: usize = 64 << 10;

pub async fn serve(server: Arc<Server>) -> Result<()> {
    let (outbox, outgoing) = mpsc::unbounded_channel::<Outgoing>();
    let session = Session::new(server, outbox);
    let writer = std::thread::Builder::new()
        .name("stdout".into())
        .spawn(move || write_messages(outgoing))?;

    // The reader hands each line to the session on its own thread; requests
    // that reach plugins are spawned onto the runtime from there.
    let (closed, stdin_closed) = oneshot::channel();
    let reading = session.clone();
    let runtime = tokio::runtime::Handle::current();
    std::thread::Builder::new().name("stdin".into()).spawn(move || {
        let _runtime = runtime.enter();
        let _ = closed.send(read_messages(&reading));
    })?;
    let read = stdin_closed.await.unwrap_or(Ok(()));
    tracing::info!("stdin closed; shutting down");
    session.close(SHUTDOWN_GRACE).await;
    drop(session);
    // The writer ends once every sender (the session and its calls) is gone.
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, tokio::task::spawn_blocking(move || writer.join())).await;
    read
}

/// Hands every non-empty line of stdin to the session, until stdin closes.
fn read_messages(session: &Arc<Session>) -> Result<()> {
    let mut stdin = std::io::stdin().lock();
    let mut line = String::new();
    loop {
        line.clear();
        if stdin.read_line(&mut line)? == 0 {
            return Ok(());
        }
        if !line.trim().is_empty() {
            session.handle(line.trim_end_matches(['\n', '\r']));
        }
    }
}

/// Writes every message to stdout, one per line; what is queued together
/// goes out in one write and one flush.
fn write_messages(mut outgoing: mpsc::UnboundedReceiver<Outgoing>) {
    let mut stdout = std::io::stdout().lock();
    let mut batch = Vec::with_capacity(4096);
    while let Some(out) = outgoing.blocking_recv() {
        batch.clear();
        let mut next = Some(out);
        while let Some(out) = next {
            serde_json::to_writer(&mut batch, &out.message).expect("a JSON value serializes");
            batch.push(b'\n');
            next = if batch.len() < WRITE_BATCH_BYTES {
                outgoing.try_recv().ok()
            } else {
                None
            };
        }
        if stdout.write_all(&batch).is_err() || stdout.flush().is_err() {
            break;
        }
    }
}
