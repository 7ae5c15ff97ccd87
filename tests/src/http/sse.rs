//! Server-sent events as the Streamable HTTP transport carries them: a
//! response body read event by event.

use std::io::{BufRead, BufReader};

use reqwest::blocking::Response;
use serde_json::Value;

/// One SSE event.
#[derive(Debug, Clone, Default)]
pub struct Event {
    pub id: Option<String>,
    pub data: String,
    pub retry: Option<u64>,
}

impl Event {
    /// The JSON-RPC message it carries (`None` for a priming or retry event).
    pub fn message(&self) -> Option<Value> {
        (!self.data.is_empty()).then(|| serde_json::from_str(&self.data).expect("SSE data is JSON"))
    }
}

/// Reads an SSE body event by event.
pub struct Sse {
    reader: BufReader<Response>,
}

impl Sse {
    /// Reads `response`, which must be an event stream.
    #[track_caller]
    pub fn new(response: Response) -> Self {
        let content_type = response.headers()["content-type"].to_str().unwrap().to_string();
        assert!(
            content_type.starts_with("text/event-stream"),
            "not an SSE response: {content_type}"
        );
        Sse {
            reader: BufReader::new(response),
        }
    }

    /// The next event, or `None` when the server ends the stream. Comments
    /// (keep-alives) are skipped.
    pub fn next_event(&mut self) -> Option<Event> {
        self.try_next_event().expect("read the SSE stream")
    }

    /// [`next_event`](Self::next_event), with a failure to read (a timeout,
    /// a broken connection) as an error.
    pub fn try_next_event(&mut self) -> std::io::Result<Option<Event>> {
        let mut event = Event::default();
        let mut fields = 0;
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line)? == 0 {
                return Ok(None);
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if fields > 0 {
                    return Ok(Some(event));
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            fields += 1;
            match field {
                "id" => event.id = Some(value.to_string()),
                "data" => event.data.push_str(value),
                "retry" => event.retry = Some(value.parse().expect("retry is a number")),
                other => panic!("unexpected SSE field {other:?}"),
            }
        }
    }

    /// Every remaining event until the server ends the stream.
    pub fn rest(mut self) -> Vec<Event> {
        std::iter::from_fn(|| self.next_event()).collect()
    }
}
