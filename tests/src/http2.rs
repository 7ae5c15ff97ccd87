//! An HTTPS server on 127.0.0.1 that speaks HTTP/2 (the h2 crate over
//! tokio-rustls, offering ALPN h2 then http/1.1) for the sandbox tests: it
//! answers every request with 200 and a body, and records what it saw (its
//! TCP accepts, each connection's negotiated protocol, each request's version
//! and URI), so a test can tell which protocol a plugin's requests travelled.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

use crate::https::{ServerCert, server_config};

/// What an [`http2`] server saw.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    /// TCP connections accepted.
    pub accepts: usize,
    /// The ALPN protocol of each completed handshake, in order.
    pub protocols: Vec<Option<String>>,
    /// Each request's HTTP version and URI (with the `:authority`), in order.
    pub requests: Vec<(http::Version, String)>,
}

/// A running [`http2`] server.
pub struct Http2Server {
    pub port: u16,
    seen: Arc<Mutex<Seen>>,
}

impl Http2Server {
    pub fn seen(&self) -> Seen {
        self.seen.lock().unwrap().clone()
    }
}

/// An HTTP/2 server presenting `cert`, answering 200 with `body`.
pub fn http2(cert: ServerCert, body: &'static str) -> Http2Server {
    let acceptor = TlsAcceptor::from(server_config(cert, &[b"h2", b"http/1.1"], None));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let record = seen.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((tcp, _)) = listener.accept().await {
                record.lock().unwrap().accepts += 1;
                tokio::spawn(serve_connection(tcp, acceptor.clone(), record.clone(), body));
            }
        });
    });
    Http2Server { port, seen }
}

async fn serve_connection(tcp: TcpStream, acceptor: TlsAcceptor, seen: Arc<Mutex<Seen>>, body: &'static str) {
    let Ok(tls) = acceptor.accept(tcp).await else {
        return;
    };
    let protocol = tls
        .get_ref()
        .1
        .alpn_protocol()
        .map(|p| String::from_utf8_lossy(p).into_owned());
    seen.lock().unwrap().protocols.push(protocol);
    // A client that did not choose h2 fails here: its first bytes are no HTTP/2 preface.
    let Ok(mut connection) = h2::server::handshake(tls).await else {
        return;
    };
    while let Some(Ok((request, mut respond))) = connection.accept().await {
        seen.lock()
            .unwrap()
            .requests
            .push((request.version(), request.uri().to_string()));
        let head = http::Response::builder()
            .status(200)
            .header("content-type", "text/plain")
            .body(())
            .unwrap();
        if let Ok(mut stream) = respond.send_response(head, false) {
            let _ = stream.send_data(Bytes::from_static(body.as_bytes()), true);
        }
    }
}
