//! The one place every limit of a call is enforced:
//!
//! | limit | how |
//! |---|---|
//! | concurrency | [`Turn`]: a place among the plugin's calls and the host's, waited for |
//! | fuel | [`Guard::arm`] sets it; wasmtime traps when it runs out |
//! | deadline | [`Guard::run`]: the call yields every [`FUEL_YIELD_INTERVAL`] of fuel (and in every host wait), and is ended once its time is up |
//! | cancellation | [`Guard::run`], at the same points |
//! | memory | [`MemoryMeter`], the store's resource limiter |
//! | output size | [`within_output_limit`], on the rendered result |

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wasmtime::{ResourceLimiter, Store};

use super::outcome::{CallError, Cancelled};
use super::scope::CallScope;
use crate::limits::{LimitHit, Limits};

/// Fuel a running plugin burns between two yields to the runtime: a tight
/// loop burns it in about 0.1 ms, most code in under a millisecond. Each
/// yield lets other tasks run on the worker and lets the guard end the call.
pub const FUEL_YIELD_INTERVAL: u64 = 1_000_000;

/// Ends a call once its deadline passes or its request is cancelled, whether
/// it runs wasm or waits in a host call such as a WASI sleep or poll. Time
/// spent waiting on the client is not counted.
pub struct Guard {
    scope: Arc<CallScope>,
    started: Instant,
    deadline: Duration,
    fuel: u64,
}

impl Guard {
    /// Arms `limits` on `store` from now, for a call serving `scope`: its
    /// fuel (the memory cap is the store's [`MemoryMeter`]); the guard then
    /// enforces the deadline.
    pub fn arm<T>(store: &mut Store<T>, scope: Arc<CallScope>, limits: &Limits) -> Result<Guard, CallError> {
        store
            .set_fuel(limits.fuel)
            .map_err(|e| CallError::Crashed(e.to_string()))?;
        Ok(Guard {
            scope,
            started: Instant::now(),
            deadline: limits.deadline(),
            fuel: limits.fuel,
        })
    }

    /// The request the call serves.
    pub fn scope(&self) -> &Arc<CallScope> {
        &self.scope
    }

    /// The fuel the call started with.
    pub fn fuel(&self) -> u64 {
        self.fuel
    }

    /// Wall-clock time since the guard was armed.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Runs `call` until it ends, its deadline passes or its request is
    /// cancelled. The call is polled first: one that finishes at once never
    /// arms a timer.
    pub async fn run<T>(&self, call: impl Future<Output = wasmtime::Result<T>>) -> wasmtime::Result<T> {
        tokio::select! {
            biased;
            result = call => result,
            _ = self.expired() => Err(LimitHit::Deadline(self.deadline).into()),
            _ = self.scope.cancel_token().cancelled() => Err(Cancelled.into()),
        }
    }

    /// What is left of the call's time, as it stands whenever asked (the
    /// bound of its outgoing requests' waits).
    pub fn time_left(&self) -> impl Fn() -> Duration + Send + Sync + 'static {
        let (started, deadline, scope) = (self.started, self.deadline, self.scope.clone());
        move || due(started, deadline, &scope).saturating_duration_since(Instant::now())
    }

    async fn expired(&self) {
        loop {
            let due = due(self.started, self.deadline, &self.scope);
            if Instant::now() >= due {
                return;
            }
            tokio::time::sleep_until(due.into()).await;
        }
    }
}

/// When a call armed at `started` with `deadline` is up: time waiting on the client is not counted.
fn due(started: Instant, deadline: Duration, scope: &CallScope) -> Instant {
    started + deadline + scope.time_waiting_on_client()
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

/// A call's place among the running calls of its plugin and of the host.
pub struct Turn {
    _permits: [OwnedSemaphorePermit; 2],
}

impl Turn {
    /// Takes a place among `plugin_calls` and `host_calls`; while none is
    /// free the call waits, and its scope says it is queued.
    pub async fn take(
        scope: &CallScope,
        plugin_calls: &Arc<Semaphore>,
        host_calls: &Arc<Semaphore>,
    ) -> Result<Turn, CallError> {
        let mut permits = Vec::with_capacity(2);
        for semaphore in [plugin_calls, host_calls] {
            let permit = match semaphore.clone().try_acquire_owned() {
                Ok(permit) => permit,
                Err(_) => {
                    scope.set_queued(true);
                    let permit = semaphore.clone().acquire_owned().await;
                    scope.set_queued(false);
                    permit.map_err(|_| CallError::ShuttingDown)?
                }
            };
            permits.push(permit);
        }
        Ok(Turn {
            _permits: permits.try_into().expect("two permits"),
        })
    }
}

/// `Ok` when a result of `size` serialized bytes fits `limits`; else the limit it hit.
pub fn within_output_limit(size: usize, limits: &Limits) -> Result<(), LimitHit> {
    let max = limits.max_output_bytes();
    if size > max {
        return Err(LimitHit::Output(max));
    }
    Ok(())
}
