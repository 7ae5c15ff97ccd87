//! MCP over stdio: one JSON-RPC message per line in on stdin, out on stdout.
//! stdout carries protocol messages only. Lines are read with a cap: a longer
//! one is discarded up to its newline and answered with an error. The server
//! shuts down when stdin closes or on SIGINT/SIGTERM, giving running calls
//! the shutdown grace to finish.

use std::sync::Arc;

use anyhow::Result;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::shutdown_signal;
use crate::session::{Outgoing, Server, Session};

pub async fn serve(server: Arc<Server>) -> Result<()> {
    let grace = server.config.shutdown_grace;
    let max_message_bytes = server.config.max_message_bytes;
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

    // After a signal the reader goes on, so that running calls still get the
    // client's answers (sampling, elicitation) while they finish.
    let mut reader = tokio::spawn(read_stdin(session.clone(), max_message_bytes));
    let still_reading = tokio::select! {
        read = &mut reader => {
            read??;
            tracing::info!("stdin closed; shutting down");
            None
        }
        _ = shutdown_signal() => {
            tracing::info!("signal received; shutting down");
            Some(reader)
        }
    };
    session.close(grace, "the server is shutting down").await;
    if let Some(reader) = still_reading {
        reader.abort();
        let _ = reader.await;
    }
    drop(session);
    // The writer ends once every sender (the session and its calls) is gone.
    let _ = tokio::time::timeout(grace, writer).await;
    Ok(())
}

/// Hands every line of stdin to the session until stdin closes.
async fn read_stdin(session: Arc<Session>, max_message_bytes: usize) -> Result<()> {
    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    loop {
        match read_line(&mut stdin, &mut line, max_message_bytes).await? {
            Line::End => return Ok(()),
            Line::TooLong => session.refuse_oversized_message(),
            Line::Complete => match std::str::from_utf8(&line) {
                Ok(text) if text.trim().is_empty() => {}
                Ok(text) => session.handle(text),
                Err(_) => session.handle_unreadable("the line is not valid UTF-8"),
            },
        }
    }
}

/// What [`read_line`] found.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// A line (without its newline) is in the buffer.
    Complete,
    /// The line was longer than the cap; it was skipped up to its newline.
    TooLong,
    /// The input ended.
    End,
}

/// Reads one line into `buf`, keeping at most `max` bytes of it: a longer
/// line is consumed up to its newline without being kept. A last line
/// without a newline counts as a line.
async fn read_line(reader: &mut (impl AsyncBufRead + Unpin), buf: &mut Vec<u8>, max: usize) -> Result<Line> {
    buf.clear();
    let mut too_long = false;
    let mut read_any = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (too_long, read_any) {
                (true, _) => Line::TooLong,
                (false, true) => Line::Complete,
                (false, false) => Line::End,
            });
        }
        read_any = true;
        let newline = available.iter().position(|&b| b == b'\n');
        let chunk = &available[..newline.unwrap_or(available.len())];
        if !too_long {
            if buf.len() + chunk.len() > max {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        let used = chunk.len() + usize::from(newline.is_some());
        reader.consume(used);
        if newline.is_some() {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(if too_long { Line::TooLong } else { Line::Complete });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<(Line, String)> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let line = read_line(&mut reader, &mut buf, max).await.unwrap();
            if line == Line::End {
                return out;
            }
            out.push((line, String::from_utf8(buf.clone()).unwrap()));
        }
    }

    #[tokio::test]
    async fn long_lines_are_skipped_to_their_newline_and_reading_goes_on() {
        let read = lines(b"short\nthis one is far too long\r\nok\r\n\nlast", 8).await;
        assert_eq!(
            read,
            vec![
                (Line::Complete, "short".into()),
                (Line::TooLong, String::new()),
                (Line::Complete, "ok".into()),
                (Line::Complete, String::new()),
                (Line::Complete, "last".into()),
            ]
        );
        assert_eq!(lines(b"exactly8\n123456789", 8).await.len(), 2);
        assert_eq!(lines(b"123456789", 8).await, vec![(Line::TooLong, String::new())]);
    }
}
