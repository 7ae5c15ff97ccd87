//! Connections one call reuses: its requests to the same scheme, host and
//! port share an open HTTP/1.1 connection (once the previous response has
//! been read to its end) or an HTTP/2 one (at once). The pool lives in the
//! call's state; dropping it ends every connection it holds.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;

use hyper::body::Incoming;
use hyper::client::conn::{TrySendError, http1, http2};
use tokio::task::JoinSet;
use wasmtime_wasi_http::WasiBody;

use super::tls::Failure;

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
pub struct Sender {
    http: Http,
    /// The address the connection leads to.
    peer: SocketAddr,
    /// The connection's first TLS failure (never set on plain TCP).
    tls_failure: Failure,
}

enum Http {
    V1(http1::SendRequest<WasiBody>),
    V2(http2::SendRequest<WasiBody>),
}

impl Sender {
    pub fn http1(sender: http1::SendRequest<WasiBody>, peer: SocketAddr, tls_failure: Failure) -> Self {
        Self {
            http: Http::V1(sender),
            peer,
            tls_failure,
        }
    }

    pub fn http2(sender: http2::SendRequest<WasiBody>, peer: SocketAddr, tls_failure: Failure) -> Self {
        Self {
            http: Http::V2(sender),
            peer,
            tls_failure,
        }
    }

    /// The address the connection leads to.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// Whether the connection speaks HTTP/1.1 (one request at a time), not HTTP/2.
    pub fn is_http1(&self) -> bool {
        matches!(self.http, Http::V1(_))
    }

    /// The TLS failure that ended the connection, if one did.
    pub fn tls_failure(&self) -> Option<&rustls::Error> {
        self.tls_failure.get()
    }

    /// Waits until the connection takes a request; false once it has closed.
    pub async fn ready(&mut self) -> bool {
        match &mut self.http {
            Http::V1(s) => s.ready().await.is_ok(),
            Http::V2(s) => s.ready().await.is_ok(),
        }
    }

    /// Sends `request` (shaped as the protocol needs); resolves with the
    /// response head, or with the error and, if the connection never took
    /// the request (closed before it sent a byte of it), the request.
    pub async fn try_send(
        &mut self,
        request: http::Request<WasiBody>,
    ) -> Result<http::Response<Incoming>, TrySendError<http::Request<WasiBody>>> {
        match &mut self.http {
            Http::V1(s) => s.try_send_request(request).await,
            Http::V2(s) => s.try_send_request(request).await,
        }
    }

    /// A second handle on a multiplexed (HTTP/2) connection, which can stay
    /// in the pool while this one's request runs.
    pub fn share(&self) -> Option<Sender> {
        match &self.http {
            Http::V1(_) => None,
            Http::V2(s) => Some(Sender::http2(s.clone(), self.peer, self.tls_failure.clone())),
        }
    }

    fn is_closed(&self) -> bool {
        match &self.http {
            Http::V1(s) => s.is_closed(),
            Http::V2(s) => s.is_closed(),
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
