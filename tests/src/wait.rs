//! How long the harness waits for the server to do something. The limit is
//! generous: reaching it fails the test with what was seen, it is never a
//! timing assertion.

use std::time::{Duration, Instant};

/// How long to wait for anything the server should do before failing the
/// test: `WASM_MCP_TEST_TIMEOUT_SECS`, default 60 seconds.
pub fn timeout() -> Duration {
    let secs = std::env::var("WASM_MCP_TEST_TIMEOUT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    Duration::from_secs(secs)
}

/// How long to wait for something that follows compiling a plugin: five times
/// [`timeout`], as compiling a large component (Python, JavaScript) on a busy
/// machine is slow.
pub fn compile_timeout() -> Duration {
    timeout() * 5
}

/// How often [`poll`] looks again.
const POLL_EVERY: Duration = Duration::from_millis(20);

/// Calls `look` until it gives a value or `limit` has passed (then `None`),
/// sleeping a little between looks.
pub fn poll<T>(limit: Duration, mut look: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(found) = look() {
            return Some(found);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(POLL_EVERY);
    }
}
