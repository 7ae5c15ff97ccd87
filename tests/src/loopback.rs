//! Servers the network tests run themselves on 127.0.0.1 (random ports), and
//! the loopback names this machine knows: nothing here needs the internet.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A TCP server on 127.0.0.1 that counts its connections and answers each.
pub struct TestServer {
    pub port: u16,
    connections: Arc<AtomicUsize>,
}

impl TestServer {
    /// Writes `greeting` to every connection.
    pub fn greeting(greeting: &'static str) -> Self {
        Self::serve(move |stream| {
            let _ = stream.write_all(greeting.as_bytes());
        })
    }

    /// Answers every HTTP request (once its head has arrived) with 200 and `body`.
    pub fn http(body: &'static str) -> Self {
        Self::serve(move |stream| {
            read_request_head(stream);
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes());
        })
    }

    /// Counts every connection and hands it to `answer`.
    pub fn serve(answer: impl Fn(&mut TcpStream) + Send + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let counter = connections.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                counter.fetch_add(1, Ordering::SeqCst);
                answer(&mut stream);
            }
        });
        TestServer { port, connections }
    }

    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// Reads an HTTP request's head (up to its blank line); none if the
/// connection ends or fails first.
pub fn read_request_head(stream: &mut impl Read) -> Option<Vec<u8>> {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.ends_with(b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    Some(request)
}

/// A name other than `localhost` that /etc/hosts maps to loopback, if any.
pub fn loopback_alias() -> Option<String> {
    let hosts = std::fs::read_to_string("/etc/hosts").ok()?;
    hosts.lines().find_map(|line| {
        let mut fields = line.split('#').next()?.split_whitespace();
        let addr = fields.next()?;
        if !addr.starts_with("127.") {
            return None;
        }
        fields
            .find(|name| *name != "localhost" && !name.starts_with("localhost.") && name.contains(char::is_alphabetic))
            .map(str::to_string)
    })
}
