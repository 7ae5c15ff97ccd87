//! [`HttpServer`]: `wasm-mcp serve --http 127.0.0.1:0`, and the URL it
//! listens on.

use std::net::TcpStream;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::McpClient;
use crate::PluginDir;
use crate::process::{ServerProcess, Stderr, serve_command};

/// The URL in the line the server logs once it listens, when that line is complete.
fn listening_url(log: &str) -> Option<String> {
    const LISTENING: &str = "listening on ";
    let rest = &log[log.find("listening on http://")? + LISTENING.len()..];
    let (line, _) = rest.split_once('\n')?;
    line.split_whitespace().next().map(str::to_string)
}

/// `wasm-mcp serve --http` on an ephemeral loopback port.
pub struct HttpServer {
    process: ServerProcess,
    /// The MCP endpoint, e.g. `http://127.0.0.1:41234/mcp`.
    pub url: String,
    _plugins: Option<PluginDir>,
}

impl HttpServer {
    /// Serves `plugins` with extra `serve` flags (and no watching) and waits
    /// until it listens and its plugins are loaded.
    pub fn start(plugins: PluginDir, args: &[&str]) -> Self {
        Self::start_with_env(plugins, args, &[])
    }

    /// [`start`](Self::start) with extra environment variables.
    pub fn start_with_env(plugins: PluginDir, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = serve_command(plugins.path());
        command
            .args(["--no-watch", "--http", "127.0.0.1:0"])
            .args(args)
            .env("WASM_MCP_LOG", "info,wasm_mcp::transport::http=debug")
            .envs(env.iter().copied());
        let mut server = Self::spawn(command, Stderr::Captured);
        server._plugins = Some(plugins);
        server.wait_for_stderr("the server to load its plugins", |log| {
            log.contains("plugins directory loaded")
        });
        server
    }

    /// Runs `command`, a `wasm-mcp serve --http 127.0.0.1:0` whose log shows
    /// at least `wasm_mcp::transport::http` at info, and waits until it listens.
    pub fn spawn(mut command: Command, stderr: Stderr) -> Self {
        command.stdin(Stdio::null()).stdout(Stdio::null());
        let mut process = ServerProcess::spawn(command, stderr);
        let log = process.wait_for_stderr("the server to listen", |log| listening_url(log).is_some());
        let url = listening_url(&log).expect("the server listens");
        HttpServer {
            process,
            url,
            _plugins: None,
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Everything the server wrote on stderr so far.
    pub fn stderr(&self) -> String {
        self.process.stderr()
    }

    /// Waits (up to the harness timeout) until stderr satisfies `done`.
    #[track_caller]
    pub fn wait_for_stderr(&mut self, what: &str, done: impl Fn(&str) -> bool) -> String {
        self.process.wait_for_stderr(what, done)
    }

    /// Sends `signal` (a name `kill -s` takes: `TERM`, `INT`) to the server.
    pub fn send_signal(&self, signal: &str) {
        self.process.send_signal(signal);
    }

    /// Waits (up to the harness timeout) for the server to exit.
    #[track_caller]
    pub fn wait_for_exit(&mut self) -> ExitStatus {
        self.process.wait_for_exit("being asked to")
    }

    /// The exit status once the server exits, or `None` if it still runs after `limit`.
    pub fn exit_within(&mut self, limit: Duration) -> Option<ExitStatus> {
        self.process.exit_within(limit)
    }

    /// A raw TCP connection to the server, with nothing sent yet.
    pub fn connect(&self) -> TcpStream {
        let authority = self
            .url
            .strip_prefix("http://")
            .and_then(|rest| rest.split('/').next())
            .expect("an http:// URL");
        TcpStream::connect(authority).expect("connect to the server")
    }

    /// A client with no session yet.
    pub fn client(&self) -> McpClient {
        McpClient::new(&self.url)
    }

    /// A client that has initialized a session (offering `capabilities`).
    pub fn session(&self, capabilities: Value) -> McpClient {
        let mut client = self.client();
        client.initialize(capabilities);
        client
    }
}
