//! [`ServerProcess`]: a server under test as a child process, whichever
//! client drives it: how it is started (`wasm-mcp serve`), where its stderr
//! goes, signals, waiting for it to exit, and killing it when dropped.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::paths::binary;
use crate::wait::{poll, timeout};

/// `wasm-mcp serve --plugins DIR`, to add flags and environment to.
pub fn serve_command(plugins_dir: &Path) -> Command {
    let mut command = Command::new(binary());
    command.arg("serve").arg("--plugins").arg(plugins_dir);
    command
}

/// Where the server's stderr goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stderr {
    /// Kept, for [`ServerProcess::stderr`] and failure messages.
    Captured,
    /// Kept, and copied to this process's stderr as it comes.
    Echoed,
    /// Not read at all (the benchmarks: nothing beside the measured work).
    Discarded,
}

/// A running server; killed (if still running) when dropped.
pub struct ServerProcess {
    child: Child,
    stderr: Arc<Mutex<String>>,
    stderr_reader: Option<JoinHandle<()>>,
}

impl ServerProcess {
    /// Starts `command` (its stdin and stdout set up by the caller) with
    /// stderr going where `stderr` says.
    pub fn spawn(mut command: Command, stderr: Stderr) -> Self {
        command.stderr(match stderr {
            Stderr::Discarded => Stdio::null(),
            Stderr::Captured | Stderr::Echoed => Stdio::piped(),
        });
        let mut child = command.spawn().unwrap_or_else(|e| panic!("spawn {command:?}: {e}"));
        let log = Arc::new(Mutex::new(String::new()));
        let stderr_reader = child.stderr.take().map(|pipe| {
            let log = log.clone();
            let echo = stderr == Stderr::Echoed;
            std::thread::spawn(move || read_stderr(pipe, &log, echo))
        });
        ServerProcess {
            child,
            stderr: log,
            stderr_reader,
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The piped stdin, taken once.
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.child
            .stdin
            .take()
            .expect("the server's stdin is piped and not taken yet")
    }

    /// The piped stdout, taken once.
    pub fn take_stdout(&mut self) -> ChildStdout {
        self.child
            .stdout
            .take()
            .expect("the server's stdout is piped and not taken yet")
    }

    /// Everything the server wrote on stderr so far (nothing when discarded).
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The exit status, if the process has exited; then [`stderr`](Self::stderr)
    /// holds all it wrote.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        let status = self.child.try_wait().expect("query the child's status")?;
        self.join_stderr_reader();
        Some(status)
    }

    /// Sends `signal` (a name `kill -s` takes: `TERM`, `INT`).
    pub fn send_signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args(["-s", signal, &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -s {signal} {} failed", self.pid());
    }

    /// Waits until stderr satisfies `done` (`what` describes it); fails if
    /// the server exits first or the harness timeout passes. Returns stderr.
    #[track_caller]
    pub fn wait_for_stderr(&mut self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let found = poll(timeout(), || {
            let log = self.stderr();
            if done(&log) {
                return Some(log);
            }
            if let Some(status) = self.try_wait() {
                panic!("the server exited ({status}) before {what}; stderr:\n{}", self.stderr());
            }
            None
        });
        found.unwrap_or_else(|| panic!("{what}: not seen in stderr:\n{}", self.stderr()))
    }

    /// The exit status once the process exits, or `None` if it is still
    /// running after `limit`.
    pub fn exit_within(&mut self, limit: Duration) -> Option<ExitStatus> {
        poll(limit, || self.try_wait())
    }

    /// Waits (up to the harness timeout) for the process to exit after
    /// `cause`; fails with its stderr if it does not.
    #[track_caller]
    pub fn wait_for_exit(&mut self, cause: &str) -> ExitStatus {
        self.exit_within(timeout()).unwrap_or_else(|| {
            panic!(
                "the server did not exit within {:?} after {cause}; stderr:\n{}",
                timeout(),
                self.stderr()
            )
        })
    }

    /// Kills the process unless it has exited, reaps it, and waits for its
    /// stderr to end.
    pub fn kill(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        self.join_stderr_reader();
    }

    /// Waits for the end of stderr (once the process has exited).
    fn join_stderr_reader(&mut self) {
        if let Some(reader) = self.stderr_reader.take() {
            let _ = reader.join();
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

fn read_stderr(mut pipe: impl Read, log: &Mutex<String>, echo: bool) {
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if echo {
                    let _ = std::io::stderr().write_all(&buf[..n]);
                }
                log.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        }
    }
}
