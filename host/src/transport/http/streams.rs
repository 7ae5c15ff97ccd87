//! The SSE streams of one HTTP session: which stream each message the session
//! sends belongs on, the event ids that number them, a bounded replay buffer
//! per stream, and the connection (if any) currently reading each stream.
//!
//! A message related to a client request goes on the stream of the POST that
//! carried that request; every other message goes on the standalone stream
//! (number 0, read with GET). Event ids are `<stream>-<seq>`, so a
//! `Last-Event-ID` names both the stream and the position in it. A stream
//! outlives its connections: when one drops (or the server closes it to make
//! the client poll), the client reconnects with GET + `Last-Event-ID` and gets
//! what it missed, up to the response that ends the stream.
//!
//! A message's charge against the session's outbound bound travels with it to
//! the connection reading its stream, and is released once the connection
//! writes it; with no connection reading, at once (the message waits in the
//! replay buffer, which is bounded in events and in bytes).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};

use crate::protocol::RequestId;
use crate::request::{Charge, Outgoing};

/// Events kept per stream for replay, and queued per connection. A client
/// that falls further behind is disconnected and resumes from the buffer.
const STREAM_BUFFER: usize = 1024;
/// Bytes of events kept per stream for replay: older ones are let go (the
/// newest is always kept, so a stream's response is never lost).
const STREAM_REPLAY_BYTES: usize = 4 << 20;
/// Finished streams kept per session for a client that lost the end of one
/// (a connection can drop just as the response is written), newest first,
/// up to this many and this many bytes.
const RETAINED_FINISHED: usize = 32;
const RETAINED_BYTES: usize = 16 << 20;
/// The standalone stream's number.
pub const STANDALONE: u64 = 0;

/// One SSE event for a connection to write.
#[derive(Debug)]
pub struct Item {
    pub id: String,
    pub data: Arc<str>,
    /// The response that ends a request's stream.
    pub last: bool,
    /// What it counts against the session's outbound bound, released once written.
    pub charge: Option<Charge>,
}

/// The reading end of a connection to one stream.
pub type Connection = mpsc::Receiver<Item>;

/// The event id of event `seq` on `stream`.
pub fn event_id(stream: u64, seq: u64) -> String {
    format!("{stream}-{seq}")
}

/// Reads an event id back into (stream, seq).
pub fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.trim().split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

#[derive(Debug, PartialEq, Eq)]
pub enum StreamError {
    /// A request with this id is still being answered in this session.
    DuplicateRequest,
    /// No such stream: never opened, or finished long enough ago to be let go.
    UnknownStream,
    /// The session ended.
    Closed,
}

struct Stream {
    /// Recent events, oldest first, as (seq, data).
    events: VecDeque<(u64, Arc<str>)>,
    /// The bytes of data in `events`.
    bytes: usize,
    /// The seq of the next event; 0 is the priming event, never stored.
    next_seq: u64,
    finished: bool,
    connection: Option<mpsc::Sender<Item>>,
}

impl Stream {
    fn new() -> Self {
        Self {
            events: VecDeque::new(),
            bytes: 0,
            next_seq: 1,
            finished: false,
            connection: None,
        }
    }

    /// Connects a new reader, replacing (and so ending) any previous one, and
    /// queues every buffered event after `after`.
    fn connect(&mut self, number: u64, after: u64) -> Connection {
        let (sender, receiver) = mpsc::channel(STREAM_BUFFER);
        if self.events.front().is_some_and(|(seq, _)| *seq > after + 1) {
            tracing::warn!(stream = number, after, "events older than the replay buffer were lost");
        }
        let last_seq = self.next_seq - 1;
        for (seq, data) in self.events.iter().filter(|(seq, _)| *seq > after) {
            let item = Item {
                id: event_id(number, *seq),
                data: data.clone(),
                last: self.finished && *seq == last_seq,
                charge: None,
            };
            // Cannot fail: the channel holds as many events as the buffer.
            let _ = sender.try_send(item);
        }
        if !self.finished {
            self.connection = Some(sender);
        }
        receiver
    }

    /// Appends an event and hands it to the connected reader, if any, with
    /// its charge (dropped at once when none reads).
    fn push(&mut self, number: u64, data: Arc<str>, last: bool, charge: Option<Charge>) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.bytes += data.len();
        self.events.push_back((seq, data.clone()));
        while (self.events.len() > STREAM_BUFFER || self.bytes > STREAM_REPLAY_BYTES)
            && self.events.len() > 1
            && let Some((_, old)) = self.events.pop_front()
        {
            self.bytes -= old.len();
        }
        self.finished = last;
        if let Some(connection) = &self.connection {
            let item = Item {
                id: event_id(number, seq),
                data,
                last,
                charge,
            };
            if connection.try_send(item).is_err() {
                // Gone, or too far behind: it resumes from the buffer.
                self.connection = None;
            }
        }
        if last {
            // Dropping the sender ends the connection after this event.
            self.connection = None;
        }
    }
}

/// Where a request's messages go.
enum Route {
    Stream(u64),
    /// A client that accepts only JSON: the response alone, as the HTTP body.
    Json(oneshot::Sender<Arc<str>>),
}

#[derive(Default)]
struct Registry {
    closed: bool,
    next_stream: u64,
    routes: HashMap<RequestId, Route>,
    streams: HashMap<u64, Stream>,
    /// Finished streams kept for resumption, oldest first, and their bytes.
    finished: VecDeque<u64>,
    finished_bytes: usize,
}

impl Registry {
    fn check_new_request(&self, request: &RequestId) -> Result<(), StreamError> {
        if self.closed {
            Err(StreamError::Closed)
        } else if self.routes.contains_key(request) {
            Err(StreamError::DuplicateRequest)
        } else {
            Ok(())
        }
    }

    /// Keeps finished stream `number` for a while, letting older ones go.
    fn retain_finished(&mut self, number: u64) {
        self.finished_bytes += self.streams.get(&number).map_or(0, |s| s.bytes);
        self.finished.push_back(number);
        while self.finished.len() > RETAINED_FINISHED
            || (self.finished.len() > 1 && self.finished_bytes > RETAINED_BYTES)
        {
            let oldest = self.finished.pop_front().expect("not empty");
            if let Some(stream) = self.streams.remove(&oldest) {
                self.finished_bytes -= stream.bytes;
            }
        }
    }

    fn standalone(&mut self, data: Arc<str>, charge: Option<Charge>) {
        if let Some(stream) = self.streams.get_mut(&STANDALONE) {
            stream.push(STANDALONE, data, false, charge);
        }
    }
}

/// The streams of one session.
pub struct Streams {
    registry: Mutex<Registry>,
}

impl Default for Streams {
    fn default() -> Self {
        let mut registry = Registry {
            next_stream: STANDALONE + 1,
            ..Registry::default()
        };
        registry.streams.insert(STANDALONE, Stream::new());
        Self {
            registry: Mutex::new(registry),
        }
    }
}

impl Streams {
    /// Opens the stream that will carry what belongs to `request`, connected
    /// to the POST that carried it. Returns the stream's number.
    pub fn open_request(&self, request: &RequestId) -> Result<(u64, Connection), StreamError> {
        let mut registry = self.registry.lock().unwrap();
        registry.check_new_request(request)?;
        let number = registry.next_stream;
        registry.next_stream += 1;
        let mut stream = Stream::new();
        let connection = stream.connect(number, 0);
        registry.streams.insert(number, stream);
        registry.routes.insert(request.clone(), Route::Stream(number));
        Ok((number, connection))
    }

    /// Routes `request`'s response to the returned receiver; its other
    /// messages go on the standalone stream.
    pub fn open_json(&self, request: &RequestId) -> Result<oneshot::Receiver<Arc<str>>, StreamError> {
        let mut registry = self.registry.lock().unwrap();
        registry.check_new_request(request)?;
        let (sender, receiver) = oneshot::channel();
        registry.routes.insert(request.clone(), Route::Json(sender));
        Ok(receiver)
    }

    /// Connects a GET to stream `number`, replaying what came after event
    /// `after` (all of it when `None` is given for a request stream; only new
    /// events for the standalone stream). Returns the connection and the seq
    /// it starts after.
    pub fn connect(&self, number: u64, after: Option<u64>) -> Result<(Connection, u64), StreamError> {
        let mut registry = self.registry.lock().unwrap();
        if registry.closed {
            return Err(StreamError::Closed);
        }
        let stream = registry.streams.get_mut(&number).ok_or(StreamError::UnknownStream)?;
        let after = after.unwrap_or(stream.next_seq - 1);
        Ok((stream.connect(number, after), after))
    }

    /// Delivers one message the session sent.
    pub fn route(&self, out: Outgoing) {
        let data: Arc<str> = serde_json::to_string(&out.message)
            .expect("a JSON value serializes")
            .into();
        let is_response = out.answer.is_some();
        let mut registry = self.registry.lock().unwrap();
        if registry.closed {
            return;
        }
        let Some(request) = out.related_request else {
            return registry.standalone(data, out.charge);
        };
        let route = if is_response {
            registry.routes.remove(&request)
        } else {
            match registry.routes.get(&request) {
                Some(Route::Stream(number)) => Some(Route::Stream(*number)),
                _ => None,
            }
        };
        match route {
            Some(Route::Stream(number)) => {
                let Some(stream) = registry.streams.get_mut(&number) else {
                    return;
                };
                stream.push(number, data, is_response, out.charge);
                if is_response {
                    registry.retain_finished(number);
                }
            }
            Some(Route::Json(sender)) => {
                let _ = sender.send(data);
            }
            // The request's stream is gone: its messages are still worth
            // delivering, its response has nowhere to go.
            None if !is_response => registry.standalone(data, out.charge),
            None => tracing::debug!(%request, "dropping a response with no stream to carry it"),
        }
    }

    /// The client cancelled `request`: no response will come, so its stream ends.
    pub fn cancelled(&self, request: &RequestId) {
        let mut registry = self.registry.lock().unwrap();
        if let Some(Route::Stream(number)) = registry.routes.remove(request) {
            registry.streams.remove(&number);
        }
    }

    /// The session ended: every connection ends and nothing more is delivered.
    pub fn close(&self) {
        let mut registry = self.registry.lock().unwrap();
        registry.closed = true;
        registry.routes.clear();
        registry.streams.clear();
        registry.finished.clear();
        registry.finished_bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::request::AnswerKind;

    fn id(n: i64) -> RequestId {
        RequestId::from_value(&json!(n)).unwrap()
    }

    /// A message as a session sends it: a response says how its request ended.
    fn out(message: serde_json::Value, related: Option<i64>) -> Outgoing {
        let answer = message.get("result").map(|_| AnswerKind::Result);
        Outgoing {
            answer,
            ..Outgoing::new(message, related.map(id))
        }
    }

    fn drain(connection: &mut Connection) -> Vec<(String, bool)> {
        let mut items = Vec::new();
        while let Ok(item) = connection.try_recv() {
            items.push((item.id, item.last));
        }
        items
    }

    #[test]
    fn event_ids_round_trip() {
        assert_eq!(parse_event_id(&event_id(3, 17)), Some((3, 17)));
        assert_eq!(parse_event_id("x-1"), None);
        assert_eq!(parse_event_id("12"), None);
    }

    #[test]
    fn messages_follow_their_request_and_resume_after_a_drop() {
        let streams = Streams::default();
        let (number, mut post) = streams.open_request(&id(1)).unwrap();
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}});
        streams.route(out(progress.clone(), Some(1)));
        assert_eq!(drain(&mut post), [(event_id(number, 1), false)]);
        // The POST connection drops; two more events arrive meanwhile.
        drop(post);
        streams.route(out(progress, Some(1)));
        streams.route(out(json!({"jsonrpc": "2.0", "id": 1, "result": {}}), Some(1)));
        let (mut resumed, after) = streams.connect(number, Some(1)).unwrap();
        assert_eq!(after, 1);
        assert_eq!(
            drain(&mut resumed),
            [(event_id(number, 2), false), (event_id(number, 3), true)]
        );
        // Resuming at the end finds nothing more, and the connection ends.
        let (mut done, _) = streams.connect(number, Some(3)).unwrap();
        assert!(drain(&mut done).is_empty() && done.is_closed());
    }

    #[test]
    fn finished_streams_are_kept_only_up_to_a_limit() {
        let streams = Streams::default();
        let response = |n| out(json!({"jsonrpc": "2.0", "id": n, "result": {}}), Some(n));
        let first = streams.open_request(&id(0)).unwrap().0;
        streams.route(response(0));
        for n in 1..=RETAINED_FINISHED as i64 {
            streams.open_request(&id(n)).unwrap();
            streams.route(response(n));
        }
        assert_eq!(streams.connect(first, Some(0)).unwrap_err(), StreamError::UnknownStream);
        assert!(streams.connect(first + 1, Some(0)).is_ok());
    }

    #[test]
    fn unrelated_messages_go_on_the_standalone_stream() {
        let streams = Streams::default();
        let (mut get, _) = streams.connect(STANDALONE, None).unwrap();
        let (_, mut post) = streams.open_request(&id(7)).unwrap();
        let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        streams.route(out(changed, None));
        assert_eq!(drain(&mut get), [(event_id(STANDALONE, 1), false)]);
        assert!(drain(&mut post).is_empty());
    }

    #[test]
    fn json_routes_carry_only_the_response() {
        let streams = Streams::default();
        let (mut get, _) = streams.connect(STANDALONE, None).unwrap();
        let mut response = streams.open_json(&id(2)).unwrap();
        streams.route(out(
            json!({"jsonrpc": "2.0", "method": "notifications/message"}),
            Some(2),
        ));
        streams.route(out(json!({"jsonrpc": "2.0", "id": 2, "result": {}}), Some(2)));
        assert_eq!(drain(&mut get).len(), 1);
        assert!(response.try_recv().unwrap().contains("\"result\""));
    }

    #[test]
    fn a_request_id_in_flight_cannot_be_reused() {
        let streams = Streams::default();
        let _open = streams.open_request(&id(5)).unwrap();
        assert_eq!(streams.open_json(&id(5)).unwrap_err(), StreamError::DuplicateRequest);
        streams.route(out(json!({"jsonrpc": "2.0", "id": 5, "result": {}}), Some(5)));
        assert!(streams.open_request(&id(5)).is_ok());
    }

    #[test]
    fn the_replay_buffer_is_bounded_in_bytes_and_keeps_the_response() {
        let streams = Streams::default();
        let (number, post) = streams.open_request(&id(1)).unwrap();
        drop(post);
        let big = "x".repeat(1 << 20);
        let log = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": big}});
        for _ in 0..10 {
            streams.route(out(log.clone(), Some(1)));
        }
        streams.route(out(
            json!({"jsonrpc": "2.0", "id": 1, "result": {"data": big}}),
            Some(1),
        ));
        let (mut resumed, _) = streams.connect(number, Some(0)).unwrap();
        let replayed = drain(&mut resumed);
        let kept = replayed.len();
        assert!(kept <= STREAM_REPLAY_BYTES >> 20, "{kept} events of 1 MiB kept");
        assert_eq!(
            replayed.last(),
            Some(&(event_id(number, 11), true)),
            "the response is kept"
        );
    }

    #[test]
    fn closing_ends_every_connection() {
        let streams = Streams::default();
        let (mut get, _) = streams.connect(STANDALONE, None).unwrap();
        streams.close();
        assert!(get.try_recv().is_err() && get.is_closed());
        assert_eq!(streams.open_request(&id(1)).unwrap_err(), StreamError::Closed);
    }
}
