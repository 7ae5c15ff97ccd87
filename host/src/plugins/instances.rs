//! The instances a plugin's calls run in. Every call gets a fresh instance that
//! nothing has run in before, so calls stay isolated from each other. While the
//! plugin is idle one such instance is made ahead of time (a spare), so that
//! instantiating is not on the path of its next call; a finished call's
//! instance is dropped off that path too.
//!
//! It also arms the limits every instance runs under: fuel, the memory cap,
//! and the watchdog that ends a call when its time is up or its request is
//! cancelled.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wasmtime::Store;
use wasmtime::component::{Instance, InstancePre, ResourceTable};

use super::host_api::CallState;
use super::limits::{LimitHit, Limits, MemoryMeter};
use super::plugin::{CallError, classify};
use super::scope::CallScope;
use crate::sandbox::{CapturedOutput, Grants};

/// Fuel a running plugin burns between two yields to the runtime: a tight
/// loop burns it in about 0.1 ms, most code in under a millisecond. Each
/// yield lets other tasks run on the worker and lets the watchdog end the call.
const FUEL_YIELD_INTERVAL: u64 = 1_000_000;

/// An instance no call has run in yet, with its store and captured stdio.
pub struct Fresh {
    pub store: Store<CallState>,
    pub instance: Instance,
    pub output: CapturedOutput,
    /// When the limits now armed started counting.
    pub started: Instant,
}

/// A spare instance and its place among the host's spares.
struct Spare {
    fresh: Fresh,
    _slot: OwnedSemaphorePermit,
}

/// Makes the instances of one plugin version, and keeps one ready.
pub struct Instances {
    pre: InstancePre<CallState>,
    grants: Grants,
    plugin: Arc<str>,
    /// The limits a spare is made under: the plugin's own.
    limits: Limits,
    spare: Mutex<Option<Spare>>,
    /// A spare is being made.
    making: AtomicBool,
    /// Making a spare failed; calls make their own instances (and report why).
    no_spares: AtomicBool,
    /// Spares the host keeps at once, shared by every plugin.
    spare_slots: Arc<Semaphore>,
    /// The scope a spare is made in: no request yet.
    no_request: Arc<CallScope>,
}

impl Instances {
    pub fn new(
        pre: InstancePre<CallState>,
        grants: Grants,
        plugin: Arc<str>,
        limits: Limits,
        spare_slots: Arc<Semaphore>,
    ) -> Self {
        Self {
            pre,
            grants,
            plugin,
            limits,
            spare: Mutex::new(None),
            making: AtomicBool::new(false),
            no_spares: AtomicBool::new(false),
            spare_slots,
            no_request: Arc::new(CallScope::detached()),
        }
    }

    /// An instance for one call serving `scope` under `limits`: the spare if
    /// one is ready (and fits the call's memory limit), else one made now.
    pub async fn take(&self, scope: Arc<CallScope>, limits: &Limits) -> Result<Fresh, CallError> {
        let spare = {
            let mut spare = self.spare.lock().unwrap();
            match &*spare {
                Some(ready) if ready.fresh.store.data().memory.peak <= limits.memory_bytes => spare.take(),
                _ => None,
            }
        };
        let Some(Spare { mut fresh, .. }) = spare else {
            return self.make(scope, limits).await;
        };
        fresh.store.data_mut().scope = scope;
        fresh.store.data_mut().memory.cap = limits.memory_bytes;
        fresh.started = arm(&mut fresh.store, limits)?;
        Ok(fresh)
    }

    /// Instantiates under `limits` (instantiating runs the component's start
    /// functions, which the limits bound like any call).
    async fn make(&self, scope: Arc<CallScope>, limits: &Limits) -> Result<Fresh, CallError> {
        let (wasi, output) = self
            .grants
            .wasi_context()
            .map_err(|e| CallError::Crashed(format!("cannot set up its sandbox: {e:#}")))?;
        let state = CallState {
            wasi,
            table: ResourceTable::new(),
            memory: MemoryMeter::new(limits.memory_bytes),
            scope,
            plugin: self.plugin.clone(),
            network: self.grants.network(),
            http: wasmtime_wasi_http::WasiHttpCtx::new(),
            http_gate: crate::sandbox::http::HttpGate::new(self.grants.network()),
        };
        let mut store = Store::new(self.pre.engine(), state);
        store.limiter(|state| &mut state.memory);
        store
            .fuel_async_yield_interval(Some(FUEL_YIELD_INTERVAL))
            .map_err(|e| CallError::Crashed(e.to_string()))?;
        let started = arm(&mut store, limits)?;
        let watchdog = Watchdog::new(&store, started, limits.deadline);
        match watchdog.run(self.pre.instantiate_async(&mut store)).await {
            Ok(instance) => Ok(Fresh {
                store,
                instance,
                output,
                started,
            }),
            Err(e) => Err(classify(&store, limits, e)),
        }
    }

    /// Drops what a finished call holds (its instance, its turn) and makes a
    /// spare if none is ready, on a task of its own.
    pub fn recycle(self: &Arc<Self>, finished: impl Send + 'static) {
        let instances = self.clone();
        tokio::spawn(async move {
            drop(finished);
            instances.make_spare().await;
        });
    }

    async fn make_spare(&self) {
        if self.no_spares.load(Ordering::Relaxed)
            || self.spare.lock().unwrap().is_some()
            || self.making.swap(true, Ordering::AcqRel)
        {
            return;
        }
        if let Ok(slot) = self.spare_slots.clone().try_acquire_owned() {
            match self.make(self.no_request.clone(), &self.limits).await {
                Ok(fresh) => *self.spare.lock().unwrap() = Some(Spare { fresh, _slot: slot }),
                Err(error) => {
                    tracing::debug!(plugin = %self.plugin, %error, "no instance is made ahead for this plugin");
                    self.no_spares.store(true, Ordering::Relaxed);
                }
            }
        }
        self.making.store(false, Ordering::Release);
    }
}

/// The error a call ends with when its request was cancelled.
#[derive(Debug)]
pub(super) struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cancelled")
    }
}

impl std::error::Error for Cancelled {}

/// Arms `limits` on a store from now: its fuel (the watchdog enforces the
/// deadline). Returns when the time started.
fn arm(store: &mut Store<CallState>, limits: &Limits) -> Result<Instant, CallError> {
    store
        .set_fuel(limits.fuel)
        .map_err(|e| CallError::Crashed(e.to_string()))?;
    Ok(Instant::now())
}

/// Ends a call once its deadline passes or its request is cancelled, whether
/// it runs wasm (which yields every [`FUEL_YIELD_INTERVAL`] of fuel) or waits
/// in a host call such as a WASI sleep or poll. Time spent waiting on the
/// client is not counted.
pub(super) struct Watchdog {
    scope: Arc<CallScope>,
    started: Instant,
    deadline: Duration,
}

impl Watchdog {
    pub fn new(store: &Store<CallState>, started: Instant, deadline: Duration) -> Self {
        Self {
            scope: store.data().scope.clone(),
            started,
            deadline,
        }
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

    async fn expired(&self) {
        loop {
            let due = self.started + self.deadline + self.scope.time_waiting_on_client();
            if Instant::now() >= due {
                return;
            }
            tokio::time::sleep_until(due.into()).await;
        }
    }
}
