//! The one place every limit of a call is enforced:
//!
//! | limit | how |
//! |---|---|
//! | concurrency | [`Turn`]: a place among the plugin's calls and the host's, waited for |
//! | fuel | [`Guard::arm`] sets it; wasmtime traps when it runs out |
//! | deadline | [`Guard::run`]: the call yields every [`FUEL_YIELD_INTERVAL`] of fuel (and in every host wait), and is ended once its time is up |
//! | cancellation | [`Guard::run`], at the same points |
//! | memory | [`MemoryMeter`], the store's resource limiter |
//! | memory of all calls at once | [`MemoryMeter`], against the host's [`MemoryBudget`]: growing waits for room |
//! | output size | [`within_output_limit`], on the rendered result |

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wasmtime::{ResourceLimiterAsync, Store};

use super::outcome::{CallError, Cancelled};
use super::scope::CallScope;
use crate::limits::{LimitHit, Limits};
use crate::metrics::{Held, METRICS};

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

/// The linear memory every call running at once may hold, in MiB, shared
/// by every plugin; a call takes its share as its memories grow and gives it
/// back when it ends.
pub struct MemoryBudget {
    mib: usize,
    available: Arc<Semaphore>,
}

impl MemoryBudget {
    pub fn new(mib: usize) -> Arc<Self> {
        Arc::new(Self {
            mib,
            available: Arc::new(Semaphore::new(mib)),
        })
    }

    /// `more` MiB for a call that will then hold `total` MiB: at once, or,
    /// if `waits`, once other calls have given enough back.
    async fn take(&self, total: usize, more: u32, waits: bool) -> Result<OwnedSemaphorePermit, LimitHit> {
        if total > self.mib {
            return Err(LimitHit::HostMemory {
                needed: total,
                budget: self.mib,
            });
        }
        match self.available.clone().try_acquire_many_owned(more) {
            Ok(permit) => Ok(permit),
            Err(_) if !waits => Err(LimitHit::HostMemoryBusy),
            Err(_) => Ok(self
                .available
                .clone()
                .acquire_many_owned(more)
                .await
                .expect("the budget is never closed")),
        }
    }
}

/// Enforces the memory cap and the host's budget, and records the peak, for
/// the call's usage log.
pub struct MemoryMeter {
    /// Bytes one linear memory may grow to.
    pub cap: usize,
    /// The largest size a linear memory grew to.
    pub peak: usize,
    /// Whether growing waits for the host's budget (a call), or fails at
    /// once when it has no room (an instance made ahead).
    pub waits: bool,
    budget: Arc<MemoryBudget>,
    /// Bytes of all the store's memories, and the MiB of the budget held for them.
    bytes: usize,
    held: Option<OwnedSemaphorePermit>,
}

impl MemoryMeter {
    pub fn new(cap: usize, budget: Arc<MemoryBudget>, waits: bool) -> Self {
        Self {
            cap,
            peak: 0,
            waits,
            budget,
            bytes: 0,
            held: None,
        }
    }
}

#[async_trait::async_trait]
impl ResourceLimiterAsync for MemoryMeter {
    async fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.cap {
            return Err(LimitHit::Memory(self.cap).into());
        }
        let bytes = self.bytes + desired.saturating_sub(current);
        let mib = bytes.div_ceil(1 << 20);
        let held = self.held.as_ref().map_or(0, |permit| permit.num_permits());
        if mib > held {
            let more = u32::try_from(mib - held).unwrap_or(u32::MAX);
            let permit = self.budget.take(mib, more, self.waits).await?;
            match &mut self.held {
                Some(holding) => holding.merge(permit),
                None => self.held = Some(permit),
            }
        }
        self.bytes = bytes;
        self.peak = self.peak.max(desired);
        Ok(true)
    }

    async fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}

/// A call's place among the running calls of its plugin and of the host.
pub struct Turn {
    _permits: [OwnedSemaphorePermit; 2],
    _running: Held,
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
                    let _waiting = METRICS.call_waiting();
                    let permit = semaphore.clone().acquire_owned().await;
                    scope.set_queued(false);
                    permit.map_err(|_| CallError::ShuttingDown)?
                }
            };
            permits.push(permit);
        }
        Ok(Turn {
            _permits: permits.try_into().expect("two permits"),
            _running: METRICS.call_running(),
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
