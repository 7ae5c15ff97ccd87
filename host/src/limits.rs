//! The bounds one plugin call runs under, in the units the engine counts, and
//! how hitting one is reported.
//!
//! The values are the `[limits]` settings ([`Limits`], declared in
//! [`crate::settings`]): fuel counts instructions, the deadline counts
//! wall-clock time spent running (time spent waiting on the client is not
//! charged), the memory cap bounds each linear memory, and the output limit
//! bounds the serialized result. Hitting any of them ends that call only.
//! [`crate::call`] enforces them.

use std::fmt;
use std::time::Duration;

pub use crate::settings::Limits;
use crate::settings::{self, ServerValues, Setting};

/// The bounds on what one call sends toward its client, from the `[server]`
/// settings: the size of one log message and of one progress message, the
/// bytes of all its notifications, and its progress rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotificationBounds {
    /// Bytes of one log message; a longer one is cut.
    pub log_message_bytes: usize,
    /// Bytes of one progress message; a longer one is cut.
    pub progress_message_bytes: usize,
    /// Bytes of all the log and progress messages of one call.
    pub call_bytes: usize,
    /// Progress notifications a second (in bursts of as many).
    pub progress_per_sec: u32,
}

impl NotificationBounds {
    /// The bounds the `[server]` settings set.
    pub(crate) fn of(server: &ServerValues) -> Self {
        Self {
            log_message_bytes: server.max_log_message_bytes,
            progress_message_bytes: server.max_progress_message_bytes,
            call_bytes: server.max_call_notification_bytes,
            progress_per_sec: server.max_progress_rate,
        }
    }
}

impl Default for NotificationBounds {
    fn default() -> Self {
        Self::of(&ServerValues::default())
    }
}

/// `text` cut to at most `max` bytes (on a character boundary), with a
/// marker saying how much was cut and which `setting` raises the cap; as it
/// is when it fits.
pub fn truncated(text: String, max: usize, setting: &Setting) -> String {
    if text.len() <= max {
        return text;
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}… [truncated: {} of {} bytes shown; raise the cap with {}]",
        &text[..cut],
        cut,
        text.len(),
        setting.hint()
    )
}

impl Limits {
    /// Wall-clock time a call may run.
    pub fn deadline(&self) -> Duration {
        Duration::from_secs_f64(self.timeout_secs)
    }

    /// Bytes one linear memory may grow to.
    pub fn memory_bytes(&self) -> usize {
        self.memory_mib << 20
    }

    /// Bytes of serialized output a call may return.
    pub fn max_output_bytes(&self) -> usize {
        self.max_output_kib << 10
    }
}

/// A limit that stopped a call; its Display text names the limit and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LimitHit {
    Fuel(u64),
    Deadline(Duration),
    Memory(usize),
    /// A call needs `needed` MiB of linear memory in all, more than the
    /// host's budget of `budget` MiB for every call at once.
    HostMemory {
        needed: usize,
        budget: usize,
    },
    /// The host's memory budget is held by running calls (an instance made
    /// ahead does not wait for it).
    HostMemoryBusy,
    Output(usize),
}

impl LimitHit {
    /// Which limit this is, as metrics and traces name it.
    pub fn kind(&self) -> &'static str {
        match self {
            LimitHit::Fuel(_) => "fuel",
            LimitHit::Deadline(_) => "deadline",
            LimitHit::Memory(_) => "memory",
            LimitHit::HostMemory { .. } | LimitHit::HostMemoryBusy => "host_memory",
            LimitHit::Output(_) => "output",
        }
    }
}

impl fmt::Display for LimitHit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitHit::Fuel(fuel) => write!(f, "stopped after using its fuel limit of {fuel} instructions"),
            LimitHit::Deadline(d) => {
                write!(f, "stopped after {} wall-clock limit", human_duration(*d))
            }
            LimitHit::Memory(bytes) => {
                write!(f, "stopped at its memory limit of {}", human_bytes(*bytes))
            }
            LimitHit::HostMemory { needed, budget } => write!(
                f,
                "stopped: it needs {needed} MiB of linear memory, more than the {budget} MiB all calls running at \
                 once may hold (raise it with {})",
                settings::server::max_total_memory_mib.hint()
            ),
            LimitHit::HostMemoryBusy => write!(f, "the host's memory budget is held by running calls"),
            LimitHit::Output(bytes) => {
                write!(
                    f,
                    "output exceeded the limit of {} (raise it with {})",
                    human_bytes(*bytes),
                    settings::limits::max_output_kib.hint()
                )
            }
        }
    }
}

impl std::error::Error for LimitHit {}

fn human_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

fn human_bytes(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_cuts_on_a_character_boundary_and_says_so() {
        let setting = &settings::server::max_log_message_bytes;
        assert_eq!(truncated("short".into(), 5, setting), "short");
        let cut = truncated("ééé".into(), 3, setting);
        assert!(cut.starts_with("é… [truncated: 2 of 6 bytes shown"), "{cut}");
        assert!(cut.contains("--max-log-message-bytes"), "{cut}");
    }
}
