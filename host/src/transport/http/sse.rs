//! One SSE connection as an HTTP response body: the priming event, the
//! stream's events as they come, keep-alive comments, and, under the polling
//! policy, closing the connection (not the stream) at a deadline so the client
//! reconnects with `Last-Event-ID`.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::time::Instant;

use super::streams::{Connection, Item};

/// How often an idle connection gets a comment, so proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How one connection behaves.
pub struct Connect {
    pub connection: Connection,
    /// The event id to prime the client with (an id and empty data), with the
    /// reconnection delay, or `None` for clients older than 2025-11-25.
    pub priming: Option<(String, Duration)>,
    /// When to close the connection if the stream has not ended by then.
    pub close_at: Option<Instant>,
    pub retry: Duration,
}

struct Writer<G> {
    connect: Connect,
    /// Events replayed at connection time, delivered before any deadline.
    backlog: usize,
    done: bool,
    /// Held for as long as the connection is open.
    _guard: G,
}

fn message_event(item: &Item) -> Bytes {
    Bytes::from(format!("id: {}\ndata: {}\n\n", item.id, item.data))
}

impl<G: Send + 'static> Writer<G> {
    fn deliver(&mut self, item: Item) -> Bytes {
        self.done = item.last;
        let event = message_event(&item);
        // Written, as far as the session's outbound bound is concerned.
        drop(item.charge);
        event
    }

    /// Ends the connection, not the stream: the client polls back for the rest.
    fn close(&mut self) -> Bytes {
        self.done = true;
        Bytes::from(format!("retry: {}\n\n", self.connect.retry.as_millis()))
    }

    async fn next(mut self) -> Option<(Result<Bytes, Infallible>, Self)> {
        if self.done {
            return None;
        }
        if let Some((id, retry)) = self.connect.priming.take() {
            let priming = format!("id: {id}\nretry: {}\ndata: \n\n", retry.as_millis());
            return Some((Ok(Bytes::from(priming)), self));
        }
        if self.backlog > 0 {
            self.backlog -= 1;
            let item = self.connect.connection.recv().await?;
            return Some((Ok(self.deliver(item)), self));
        }
        let close_at = self.connect.close_at;
        if close_at.is_some_and(|at| at <= Instant::now()) {
            return Some((Ok(self.close()), self));
        }
        let deadline = async move {
            match close_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        // The deadline comes first: once it has passed, what is still queued
        // waits in the stream's buffer for the client's reconnection.
        let frame = tokio::select! {
            biased;
            () = deadline => self.close(),
            item = self.connect.connection.recv() => self.deliver(item?),
            () = tokio::time::sleep(KEEP_ALIVE) => Bytes::from_static(b": keep-alive\n\n"),
        };
        Some((Ok(frame), self))
    }
}

fn event_stream(body: Body) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Stops nginx and the like from buffering the stream.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// The `text/event-stream` response for `connect`; `guard` lives as long as
/// the connection.
pub fn response<G: Send + 'static>(connect: Connect, guard: G) -> Response {
    let writer = Writer {
        backlog: connect.connection.len(),
        connect,
        done: false,
        _guard: guard,
    };
    event_stream(Body::from_stream(futures_util::stream::unfold(writer, Writer::next)))
}

/// A complete stream of one message (for an answer that is already known).
pub fn single(data: &str) -> Response {
    event_stream(Body::from(format!("data: {data}\n\n")))
}
