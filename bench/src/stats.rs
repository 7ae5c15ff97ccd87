//! Percentiles and the units the report prints.

use std::time::Duration;

/// The `p`th percentile (0–100) of `samples`, nearest rank.
pub fn percentile(samples: &[Duration], p: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn median(samples: &[Duration]) -> Duration {
    percentile(samples, 50.0)
}

pub fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

pub fn millis(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

pub fn ratio(ours: f64, theirs: f64) -> String {
    format!("{:.2}×", ours / theirs)
}
