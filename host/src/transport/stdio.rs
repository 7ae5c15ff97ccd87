//! MCP over stdio: one JSON-RPC message per line in on stdin, out on stdout.
//! stdout carries protocol messages only. Lines are read with a cap: a longer
//! one is discarded up to its newline and answered with an error. The server
//! shuts down when stdin closes or on SIGINT/SIGTERM, giving running calls
//! the shutdown grace to finish.
//!
//! stdin and stdout each have a thread of their own doing plain blocking I/O:
//! tokio's stdin and stdout would hand every read and write to its blocking
//! pool, a thread hop (and a wake-up) per message in each direction.
//!
//! A client that sends but does not read cannot make the server queue
//! answers without end: once `max_pending_requests` messages wait to be
//! written (counting lines read since the writer last looked, each of which
//! may be answered), the reader stops reading stdin until the writer catches up.
//! What a message counts against the session's outbound bound is released
//! once it is written, so a plugin flooding a client that does not read waits.

use std::io::{BufRead, Write};
use std::sync::{Arc, Condvar, Mutex, Weak};

use anyhow::Result;
use tokio::sync::{mpsc, oneshot};

use super::shutdown_signal;
use crate::request::Outgoing;
use crate::server::Hub;
use crate::session::Session;

/// Queued messages are gathered into one write up to this many bytes.
const WRITE_BATCH_BYTES: usize = 64 << 10;

pub async fn serve(hub: Arc<Hub>) -> Result<()> {
    let grace = hub.config.shutdown_grace();
    let max_message_bytes = hub.config.max_message_bytes;
    let backlog = Arc::new(Backlog::new(hub.config.max_pending_requests));
    let (outbox, outgoing) = mpsc::unbounded_channel::<Outgoing>();
    let session = Session::new(hub.clone(), outbox);
    let writing = backlog.clone();
    let writer = std::thread::Builder::new()
        .name("stdout".into())
        .spawn(move || write_messages(outgoing, &writing))?;

    // The reader hands each line to the session on its own thread; requests
    // that reach plugins are spawned onto the runtime from there. It holds the
    // session weakly: after a signal it goes on reading, so that running calls
    // still get the client's answers (sampling, elicitation) while they
    // finish, and it stops once the session is gone.
    let (closed, stdin_closed) = oneshot::channel();
    let reading = Arc::downgrade(&session);
    let runtime = tokio::runtime::Handle::current();
    std::thread::Builder::new().name("stdin".into()).spawn(move || {
        let _runtime = runtime.enter();
        let _ = closed.send(read_messages(&reading, max_message_bytes, &backlog));
    })?;
    let (read, cause) = tokio::select! {
        read = stdin_closed => (read.unwrap_or(Ok(())), "stdin closed"),
        _ = shutdown_signal() => (Ok(()), "signal received"),
    };
    // New requests are refused from before the shutdown is announced.
    session.refuse_new_requests();
    tracing::info!("{cause}; shutting down");
    let why = "the server is shutting down";
    tokio::join!(session.close(grace, why), hub.close_tasks(grace, why));
    drop(session);
    // The writer ends once every sender (the session and its calls) is gone.
    let _ = tokio::time::timeout(grace, tokio::task::spawn_blocking(move || writer.join())).await;
    read
}

/// Hands every line of stdin to the session, until stdin closes or the
/// session is gone.
fn read_messages(session: &Weak<Session>, max_message_bytes: usize, backlog: &Backlog) -> Result<()> {
    let mut stdin = std::io::stdin().lock();
    let mut line = Vec::with_capacity(4096);
    loop {
        backlog.wait_for_room();
        let read = read_line(&mut stdin, &mut line, max_message_bytes)?;
        let Some(session) = session.upgrade() else {
            return Ok(());
        };
        match read {
            Line::End => return Ok(()),
            Line::TooLong => session.refuse_oversized_message(),
            Line::Complete if line.trim_ascii().is_empty() => {}
            Line::Complete => session.receive(&line),
        }
    }
}

/// How far the writer is behind while it is writing: the messages still
/// queued when its write began, plus the lines read since (each may be
/// answered). The reader waits while that reaches the limit; an idle writer
/// (waiting for messages) is never behind.
struct Backlog {
    limit: usize,
    state: Mutex<BacklogState>,
    caught_up: Condvar,
}

#[derive(Default)]
struct BacklogState {
    writing: bool,
    queued: usize,
    read_since: usize,
}

impl Backlog {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            state: Mutex::default(),
            caught_up: Condvar::new(),
        }
    }

    /// Blocks the reader while the writer is `limit` messages behind.
    fn wait_for_room(&self) {
        let state = self.state.lock().unwrap();
        let mut state = self
            .caught_up
            .wait_while(state, |s| s.writing && s.queued + s.read_since >= self.limit)
            .unwrap();
        state.read_since += 1;
    }

    /// The writer begins a write with `queued` more messages waiting after it.
    fn writing(&self, queued: usize) {
        self.set(BacklogState {
            writing: true,
            queued,
            read_since: 0,
        });
    }

    /// The writer waits for messages, or is gone: nothing is behind it.
    fn idle(&self) {
        self.set(BacklogState::default());
    }

    fn set(&self, state: BacklogState) {
        *self.state.lock().unwrap() = state;
        self.caught_up.notify_one();
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
fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> std::io::Result<Line> {
    buf.clear();
    let mut too_long = false;
    let mut read_any = false;
    loop {
        let available = reader.fill_buf()?;
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

/// Writes every message to stdout, one per line; what is queued together
/// goes out in one write and one flush.
fn write_messages(mut outgoing: mpsc::UnboundedReceiver<Outgoing>, backlog: &Backlog) {
    let mut stdout = std::io::stdout().lock();
    let mut batch = Vec::with_capacity(4096);
    // What the batch's messages count against the session's outbound bound,
    // released once they are written.
    let mut charges = Vec::new();
    backlog.idle();
    while let Some(out) = outgoing.blocking_recv() {
        batch.clear();
        let mut next = Some(out);
        while let Some(out) = next {
            serde_json::to_writer(&mut batch, &out.message).expect("a JSON value serializes");
            batch.push(b'\n');
            charges.extend(out.charge);
            next = if batch.len() < WRITE_BATCH_BYTES {
                outgoing.try_recv().ok()
            } else {
                None
            };
        }
        backlog.writing(outgoing.len());
        let written = stdout.write_all(&batch).and_then(|()| stdout.flush());
        charges.clear();
        backlog.idle();
        if written.is_err() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::BufReader;

    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<(Line, String)> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let line = read_line(&mut reader, &mut buf, max).unwrap();
            if line == Line::End {
                return out;
            }
            out.push((line, String::from_utf8(buf.clone()).unwrap()));
        }
    }

    #[test]
    fn long_lines_are_skipped_to_their_newline_and_reading_goes_on() {
        let read = lines(b"short\nthis one is far too long\r\nok\r\n\nlast", 8);
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
        assert_eq!(lines(b"exactly8\n123456789", 8).len(), 2);
        assert_eq!(lines(b"123456789", 8), vec![(Line::TooLong, String::new())]);
    }
}
