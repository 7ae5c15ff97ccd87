//! An OpenTelemetry collector's trace endpoint on a loopback port: every
//! `POST /v1/traces` (OTLP/HTTP, protobuf) is decoded with the protocol's own
//! types and its spans kept, for the trace tests and the telemetry bench.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
pub use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
pub use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

use crate::timeout;

/// The receiver; it serves until the process ends.
pub struct OtlpReceiver {
    pub port: u16,
    spans: Arc<Mutex<Vec<Span>>>,
}

impl OtlpReceiver {
    pub fn start() -> OtlpReceiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().unwrap().port();
        let spans = Arc::new(Mutex::new(Vec::new()));
        let keep = spans.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let keep = keep.clone();
                std::thread::spawn(move || serve(stream, &keep));
            }
        });
        OtlpReceiver { port, spans }
    }

    /// The base URL to give `--otlp-endpoint`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        self.spans.lock().unwrap().clone()
    }

    /// The first span received named `name`, once it has arrived.
    #[track_caller]
    pub fn span(&self, name: &str) -> Span {
        let deadline = Instant::now() + timeout();
        while Instant::now() < deadline {
            if let Some(span) = self.spans.lock().unwrap().iter().find(|s| s.name == name) {
                return span.clone();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let names: Vec<String> = self.spans().into_iter().map(|s| s.name).collect();
        panic!("no span named {name:?} arrived; got {names:?}");
    }
}

/// Answers the requests of one connection (the exporter keeps it open).
fn serve(stream: TcpStream, spans: &Mutex<Vec<Span>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    loop {
        let (mut path, mut length) = (String::new(), 0);
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if path.is_empty() {
                path = line.split_whitespace().nth(1).unwrap_or_default().to_owned();
            }
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap_or(0);
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        assert_eq!(path, "/v1/traces", "spans go to the traces path");
        let request = ExportTraceServiceRequest::decode(body.as_slice()).expect("an OTLP trace request");
        let mut kept = spans.lock().unwrap();
        for resource in request.resource_spans {
            for scope in resource.scope_spans {
                kept.extend(scope.spans);
            }
        }
        drop(kept);
        let answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";
        if stream.write_all(answer).is_err() {
            return;
        }
    }
}
