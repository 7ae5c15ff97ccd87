//! The statistics every benchmark reports, over samples of durations: the
//! percentiles (by nearest rank), the fastest and slowest, and the units the
//! reports print them in.

use std::time::Duration;

/// The `p`th percentile (0–100) of `samples`, nearest rank: 0 is the
/// fastest, 50 the median (the lower middle of an even count), 100 the slowest.
pub fn percentile(samples: &[Duration], p: f64) -> Duration {
    assert!(!samples.is_empty(), "a percentile of no samples");
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn median(samples: &[Duration]) -> Duration {
    percentile(samples, 50.0)
}

/// The median of rates (the upper middle of an even count).
pub fn median_rate(rates: &[f64]) -> f64 {
    let mut sorted = rates.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

pub fn fastest(samples: &[Duration]) -> Duration {
    percentile(samples, 0.0)
}

pub fn slowest(samples: &[Duration]) -> Duration {
    percentile(samples, 100.0)
}

/// Milliseconds, as a number for a table column.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

pub fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

pub fn millis(d: Duration) -> String {
    format!("{:.1} ms", ms(d))
}

pub fn ratio(ours: f64, theirs: f64) -> String {
    format!("{:.2}×", ours / theirs)
}
