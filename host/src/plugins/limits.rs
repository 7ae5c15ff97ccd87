//! The bounds every plugin call runs under, and how hitting one is reported.
//!
//! Fuel counts instructions, the deadline counts wall-clock time spent running
//! (time spent waiting on the client is not charged), and the memory cap bounds
//! each linear memory. Hitting any of them ends that call only.

use std::fmt;
use std::time::Duration;

use wasmtime::ResourceLimiter;

/// The limits one call runs under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Instructions (wasmtime fuel units) a call may execute.
    pub fuel: u64,
    /// Wall-clock time a call may run.
    pub deadline: Duration,
    /// Bytes one linear memory may grow to.
    pub memory_bytes: usize,
    /// Bytes of serialized output a call may return.
    pub max_output_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            fuel: 20_000_000_000,
            deadline: Duration::from_secs(30),
            memory_bytes: 256 << 20,
            max_output_bytes: 8 << 20,
        }
    }
}

/// A limit that stopped a call; its Display text names the limit and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LimitHit {
    Fuel(u64),
    Deadline(Duration),
    Memory(usize),
    Output(usize),
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
            LimitHit::Output(bytes) => {
                write!(
                    f,
                    "output exceeded the limit of {} (max_output_kib: raise it with --max-output-kib, \
                     or under [limits] in the config file or the plugin's manifest)",
                    human_bytes(*bytes)
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

/// Enforces the memory cap and records the peak, for the call's usage log.
pub struct MemoryMeter {
    /// Bytes one linear memory may grow to.
    pub cap: usize,
    /// The largest size a linear memory grew to.
    pub peak: usize,
}

impl MemoryMeter {
    pub fn new(cap: usize) -> Self {
        Self { cap, peak: 0 }
    }
}

impl ResourceLimiter for MemoryMeter {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.cap {
            return Err(LimitHit::Memory(self.cap).into());
        }
        self.peak = self.peak.max(desired);
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}
