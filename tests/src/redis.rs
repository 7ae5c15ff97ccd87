//! A Redis server of a test's own (Debian's `redis-server`, installed by
//! `make scale-deps`) on a free loopback port, persisting nothing, stopped
//! when dropped: the state store replicas share.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};

pub struct TestRedis {
    child: Child,
    port: u16,
}

impl TestRedis {
    pub fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (Debian's package redis-server; `make scale-deps` installs it)");
        let redis = Self { child, port };
        let answered = crate::wait::poll(crate::wait::timeout(), || {
            let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
            stream.write_all(b"PING\r\n").ok()?;
            let mut reply = [0u8; 7];
            stream.read_exact(&mut reply).ok()?;
            (&reply == b"+PONG\r\n").then_some(())
        });
        assert!(answered.is_some(), "redis-server did not answer on port {port}");
        redis
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for TestRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
