//! The listening socket's connections, each served by hyper's HTTP/1 with a
//! bound on the time a request head may take: from the connection's opening,
//! and again from the end of each response, so the same bound ends a
//! kept-alive connection that sits idle. A response being sent (an open SSE
//! stream) is not bound by it, but every open connection counts towards the
//! cap, beyond which a new connection is answered 503 at once and closed.
//! At shutdown each connection closes as soon as it has no response left to
//! send; [`Connections`] dropped closes the rest.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::{Service, service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::error::refusal_body;
use crate::settings::{self, HttpValues};

/// How long to wait after an error accepting a connection that is not the
/// connection's own (e.g. out of descriptors) before accepting again.
const ACCEPT_BACKOFF: Duration = Duration::from_secs(1);

/// The longest a refused connection is kept to deliver its 503.
const REFUSAL_LINGER: Duration = Duration::from_secs(1);

/// The open connections, and how new ones are served.
pub struct Connections {
    http: http1::Builder,
    /// One per connection that may open.
    permits: Arc<Semaphore>,
    /// The whole answer to a connection beyond the cap.
    full: Bytes,
    open: JoinSet<()>,
}

impl Connections {
    pub fn new(settings: &HttpValues) -> Self {
        let mut http = http1::Builder::new();
        http.timer(TokioTimer::new())
            .header_read_timeout(settings.header_timeout());
        Self {
            http,
            // More than a semaphore counts is more than a process can open.
            permits: Arc::new(Semaphore::new(settings.max_connections.min(Semaphore::MAX_PERMITS))),
            full: full_answer(settings.max_connections),
            open: JoinSet::new(),
        }
    }

    /// Accepts connections and serves `router` on each, for as long as it is
    /// polled; once `stopping` is cancelled, each connection closes as
    /// [`serve`] says (see [`Self::closed`]).
    pub async fn accept(&mut self, listener: TcpListener, router: Router, stopping: &CancellationToken) {
        loop {
            let stream = tokio::select! {
                // Reaps the connections that ended.
                Some(_) = self.open.join_next() => continue,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) if is_connection_error(&e) => continue,
                    Err(e) => {
                        tracing::error!("cannot accept a connection: {e}");
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                        continue;
                    }
                },
            };
            match self.permits.clone().try_acquire_owned() {
                Ok(permit) => self.open.spawn(serve(
                    self.http.clone(),
                    stream,
                    router.clone(),
                    stopping.clone(),
                    permit,
                )),
                Err(_) => self.open.spawn(refuse(stream, self.full.clone())),
            };
        }
    }

    /// Resolves once every connection has closed.
    pub async fn closed(&mut self) {
        while self.open.join_next().await.is_some() {}
    }
}

/// An error that concerns only the connection being accepted.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    )
}

/// The 503 a connection beyond the cap gets, whatever it asks.
fn full_answer(max_connections: usize) -> Bytes {
    let body = refusal_body(&format!(
        "Service Unavailable: too many connections ({max_connections} open); try again later, \
         or raise the limit ({})",
        settings::http::max_connections.hint()
    ));
    Bytes::from(format!(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ))
}

/// Answers a connection beyond the cap with `answer`, then closes it. What
/// the client sent is read and dropped meanwhile, as closing a socket with
/// unread data would reset the connection before the client reads the answer.
async fn refuse(mut stream: TcpStream, answer: Bytes) {
    let _ = tokio::time::timeout(REFUSAL_LINGER, async {
        stream.write_all(&answer).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 1024];
        while stream.read(&mut sink).await? > 0 {}
        Ok::<_, io::Error>(())
    })
    .await;
}

/// Serves one connection, holding `_permit`, until it closes; once
/// `stopping` is cancelled, it closes at once if it has not sent a complete
/// request head yet or is idle, else after the response it is being sent.
async fn serve(
    http: http1::Builder,
    stream: TcpStream,
    router: Router,
    stopping: CancellationToken,
    _permit: OwnedSemaphorePermit,
) {
    // SSE events are small writes that must leave at once (no Nagle delay).
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!("cannot set TCP_NODELAY: {e}");
    }
    // Whether a complete request head has arrived: until then, a shutdown
    // closes the connection at once.
    let requested = Arc::new(AtomicBool::new(false));
    let service = {
        let requested = requested.clone();
        let router = TowerToHyperService::new(router);
        service_fn(move |request| {
            requested.store(true, Ordering::Relaxed);
            router.call(request)
        })
    };
    let connection = http.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    let ended = tokio::select! {
        ended = connection.as_mut() => ended,
        () = stopping.cancelled() => {
            if !requested.load(Ordering::Relaxed) {
                return;
            }
            // Closes an idle connection at once, any other after its response.
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(e) = ended {
        tracing::debug!("HTTP connection ended: {e}");
    }
}
