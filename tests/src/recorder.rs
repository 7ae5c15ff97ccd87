//! An upstream that records what it receives, for the tests of the
//! credentials the host adds to plugins' requests: on 127.0.0.1, over HTTPS
//! (a certificate from a test CA) or plain HTTP, keeping the head of every
//! request. It answers `.../redirect?to=URL` with a 302 to URL; anything else
//! with 200 and `recorded PATH`, echoing the `Authorization` and
//! `X-Api-Key` headers it got in response headers (as a careless server
//! might).

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};

use crate::https::{ServerCert, server_config};
use crate::loopback::{TestServer, read_request_head};

/// A recording upstream; it serves until the process ends.
pub struct Recorder {
    pub port: u16,
    heads: Arc<Mutex<Vec<String>>>,
    _server: TestServer,
}

impl Recorder {
    /// Over HTTPS, presenting `cert`.
    pub fn https(cert: ServerCert) -> Recorder {
        let config = server_config(cert, &[b"http/1.1"], None);
        Self::serve(move |tcp, heads| {
            let Ok(mut conn) = rustls::ServerConnection::new(config.clone()) else {
                return;
            };
            answer_each(&mut rustls::Stream::new(&mut conn, tcp), &heads);
        })
    }

    /// Over plain HTTP.
    pub fn http() -> Recorder {
        Self::serve(|tcp, heads| answer_each(tcp, &heads))
    }

    fn serve(
        connection: impl Fn(&mut std::net::TcpStream, Arc<Mutex<Vec<String>>>) + Send + Sync + 'static,
    ) -> Recorder {
        let heads = Arc::new(Mutex::new(Vec::new()));
        let kept = heads.clone();
        let connection = Arc::new(connection);
        let server = TestServer::serve(move |stream| {
            let (Ok(mut stream), heads, connection) = (stream.try_clone(), kept.clone(), connection.clone()) else {
                return;
            };
            std::thread::spawn(move || connection(&mut stream, heads));
        });
        Recorder {
            port: server.port,
            heads,
            _server: server,
        }
    }

    /// The heads of the requests received so far, in order.
    pub fn requests(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }

    /// The value of header `name` in each request received so far (none where it was absent).
    pub fn header_of_each(&self, name: &str) -> Vec<Option<String>> {
        self.requests().iter().map(|head| header(head, name)).collect()
    }
}

/// The value of header `name` in the request head `head`.
pub fn header(head: &str, name: &str) -> Option<String> {
    head.lines().skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim().eq_ignore_ascii_case(name).then(|| value.trim().to_owned())
    })
}

/// Answers every request on `stream` until it closes, recording each head.
fn answer_each(stream: &mut (impl Read + Write), heads: &Mutex<Vec<String>>) {
    while let Some(head) = read_request_head(stream) {
        let head = String::from_utf8_lossy(&head).into_owned();
        let target = head.split_whitespace().nth(1).unwrap_or_default().to_owned();
        heads.lock().unwrap().push(head.clone());
        let response = match target.split_once("redirect?to=") {
            Some((_, location)) => {
                format!("HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n")
            }
            None => {
                let echoed = |name| header(&head, name).unwrap_or_else(|| "-".to_owned());
                let (authorization, key) = (echoed("authorization"), echoed("x-api-key"));
                let body = format!("recorded {target}");
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Echo-Authorization: {authorization}\r\n\
                     X-Echo-Key: {key}\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                )
            }
        };
        if stream
            .write_all(response.as_bytes())
            .and_then(|()| stream.flush())
            .is_err()
        {
            return;
        }
    }
}
