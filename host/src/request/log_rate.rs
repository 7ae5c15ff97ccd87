//! The log rate of each plugin within one client's requests: at most `max_log_rate`
//! messages a second reach the client (log, log-json and captured
//! stdout/stderr alike); the excess is dropped and counted, and once the
//! second is over one warning says how many were dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::Peer;
use crate::protocol::LogLevel;
use crate::server::Audience;
use crate::settings;

const WINDOW: Duration = Duration::from_secs(1);

/// One plugin's messages in the current second.
struct Window {
    started: Instant,
    sent: u32,
    /// Dropped and not yet reported; a report is scheduled while this is above 0.
    dropped: u64,
}

pub struct LogRate {
    per_sec: u32,
    windows: Mutex<HashMap<String, Window>>,
}

impl LogRate {
    pub fn new(per_sec: u32) -> Self {
        Self {
            per_sec,
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// Whether one more message of `plugin` may go to the client now. The
    /// first one dropped in a second schedules the report of that second's
    /// drops to `peer`.
    pub fn admit(self: &Arc<Self>, plugin: &str, peer: Weak<Peer>) -> bool {
        let mut windows = self.windows.lock().unwrap();
        let now = Instant::now();
        let window = windows.entry(plugin.to_owned()).or_insert(Window {
            started: now,
            sent: 0,
            dropped: 0,
        });
        if now.duration_since(window.started) >= WINDOW {
            window.started = now;
            window.sent = 0;
        }
        if window.sent < self.per_sec {
            window.sent += 1;
            return true;
        }
        window.dropped += 1;
        if window.dropped == 1 {
            let report_at = window.started + WINDOW;
            tokio::spawn(self.clone().report(plugin.to_owned(), report_at, peer));
        }
        false
    }

    /// At `at`, tells the client how many of `plugin`'s messages were dropped.
    async fn report(self: Arc<Self>, plugin: String, at: Instant, peer: Weak<Peer>) {
        tokio::time::sleep_until(at).await;
        let dropped = match self.windows.lock().unwrap().get_mut(&plugin) {
            Some(window) => std::mem::take(&mut window.dropped),
            None => return,
        };
        let Some(peer) = peer.upgrade() else { return };
        let summary = format!(
            "{dropped} log message(s) from plugin {plugin} were dropped: it went over its limit of {} per second \
             (raise it with {})",
            self.per_sec,
            settings::server::max_log_rate.hint()
        );
        tracing::warn!(plugin, dropped, "plugin log messages dropped over the log rate limit");
        peer.log(LogLevel::Warning, &plugin, Value::String(summary));
    }
}
