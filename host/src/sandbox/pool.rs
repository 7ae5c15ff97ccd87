//! Connections one call reuses: its requests to the same scheme, host and
//! port share an open HTTP/1.1 connection (once the previous response has
//! been read to its end) or an HTTP/2 one (at once). The pool lives in the
//! call's state; dropping it ends every connection it holds.

use std::collections::HashMap;
use std::sync::Mutex;

use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use tokio::task::JoinSet;
use wasmtime_wasi_http::WasiBody;

/// Idle HTTP/1.1 connections kept per origin; more are closed.
const IDLE_PER_ORIGIN: usize = 4;

/// Where a connection leads: requests to one origin may share it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin {
    pub tls: bool,
    /// Lower-cased, as in the URL (an IP literal keeps its brackets).
    pub host: String,
    pub port: u16,
}

/// The request half of an open connection.
pub enum Sender {
    Http1(http1::SendRequest<WasiBody>),
    Http2(http2::SendRequest<WasiBody>),
}

impl Sender {
    /// Waits until the connection takes a request; false once it has closed.
    pub async fn ready(&mut self) -> bool {
        match self {
            Sender::Http1(s) => s.ready().await.is_ok(),
            Sender::Http2(s) => s.ready().await.is_ok(),
        }
    }

    /// Sends `request` (its URI already reduced as the protocol needs);
    /// resolves with the response head.
    pub async fn send(&mut self, request: http::Request<WasiBody>) -> hyper::Result<http::Response<Incoming>> {
        match self {
            Sender::Http1(s) => s.send_request(request).await,
            Sender::Http2(s) => s.send_request(request).await,
        }
    }

    /// A second handle on a multiplexed (HTTP/2) connection, which can stay
    /// in the pool while this one's request runs.
    pub fn share(&self) -> Option<Sender> {
        match self {
            Sender::Http1(_) => None,
            Sender::Http2(s) => Some(Sender::Http2(s.clone())),
        }
    }

    fn is_closed(&self) -> bool {
        match self {
            Sender::Http1(s) => s.is_closed(),
            Sender::Http2(s) => s.is_closed(),
        }
    }
}

/// The open connections of one call.
#[derive(Default)]
pub struct Pool {
    idle: Mutex<HashMap<Origin, Vec<Sender>>>,
    /// The tasks that drive the connections; aborted when the pool drops.
    drivers: Mutex<JoinSet<()>>,
}

impl Pool {
    /// An open connection to `origin`, if one is idle.
    pub fn take(&self, origin: &Origin) -> Option<Sender> {
        let mut idle = self.idle.lock().unwrap();
        let senders = idle.get_mut(origin)?;
        senders.retain(|s| !s.is_closed());
        senders.pop()
    }

    /// Keeps `sender` for the next request to `origin`.
    pub fn put(&self, origin: Origin, sender: Sender) {
        if sender.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap();
        let senders = idle.entry(origin).or_default();
        senders.retain(|s| !s.is_closed());
        if senders.len() < IDLE_PER_ORIGIN {
            senders.push(sender);
        }
    }

    /// Drives a new connection until it closes or the pool drops.
    pub fn drive(&self, connection: impl Future<Output = ()> + Send + 'static) {
        let mut drivers = self.drivers.lock().unwrap();
        while drivers.try_join_next().is_some() {}
        drivers.spawn(connection);
    }
}
