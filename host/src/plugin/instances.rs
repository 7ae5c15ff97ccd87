//! The instances of one plugin version. Every call gets a fresh instance that
//! nothing has run in before, so calls stay isolated from each other. While the
//! plugin is idle one such instance is made ahead of time (a spare), so that
//! instantiating is not on the path of its next call; a finished call's
//! instance is dropped off that path too.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wasmtime::component::InstancePre;

use crate::call::{Buckets, Call, CallError, CallScope, CallState, MemoryBudget, MemoryMeter};
use crate::limits::{LimitHit, Limits};
use crate::sandbox::Grants;

/// A spare instance and its place among the host's spares.
struct Spare {
    call: Call,
    _slot: OwnedSemaphorePermit,
}

/// Makes the instances of one plugin version, and keeps one ready.
pub struct Instances {
    pre: InstancePre<CallState>,
    grants: Grants,
    /// The `wasi:keyvalue` buckets its manifest grants.
    buckets: Arc<Buckets>,
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
    /// The linear memory of every call at once, shared by every plugin.
    memory: Arc<MemoryBudget>,
    /// The scope a spare is made in: no request yet.
    no_request: Arc<CallScope>,
}

impl Instances {
    pub fn new(
        pre: InstancePre<CallState>,
        (grants, buckets): (Grants, Arc<Buckets>),
        plugin: Arc<str>,
        limits: Limits,
        spare_slots: Arc<Semaphore>,
        memory: Arc<MemoryBudget>,
    ) -> Self {
        Self {
            pre,
            grants,
            buckets,
            plugin,
            limits,
            spare: Mutex::new(None),
            making: AtomicBool::new(false),
            no_spares: AtomicBool::new(false),
            spare_slots,
            memory,
            no_request: Arc::new(CallScope::detached()),
        }
    }

    /// An instance for one call serving `scope` under `limits`: the spare if
    /// one is ready (and fits the call's memory limit), else one made now.
    pub async fn take(&self, scope: Arc<CallScope>, limits: &Limits) -> Result<Call, CallError> {
        let spare = {
            let mut spare = self.spare.lock().unwrap();
            match &*spare {
                Some(ready) if ready.call.peak_memory() <= limits.memory_bytes() => spare.take(),
                _ => None,
            }
        };
        let Some(Spare { mut call, .. }) = spare else {
            return self.instantiate(scope, limits, true).await;
        };
        call.rearm(scope, limits)?;
        Ok(call)
    }

    /// A new instance; its memory waits for the host's budget if `waits`.
    async fn instantiate(&self, scope: Arc<CallScope>, limits: &Limits, waits: bool) -> Result<Call, CallError> {
        let memory = MemoryMeter::new(limits.memory_bytes(), self.memory.clone(), waits);
        Call::instantiate(
            &self.pre,
            self.plugin.clone(),
            &self.grants,
            &self.buckets,
            scope,
            limits,
            memory,
        )
        .await
    }

    /// Drops a finished call (its instance and its turn) and makes a spare if
    /// none is ready, on a task of its own, off the caller's path.
    pub fn retire(self: &Arc<Self>, finished: Call) {
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
            // Made only while the host's memory budget has room: running calls come first.
            match self.instantiate(self.no_request.clone(), &self.limits, false).await {
                Ok(call) => *self.spare.lock().unwrap() = Some(Spare { call, _slot: slot }),
                Err(CallError::Limit(LimitHit::HostMemoryBusy)) => {}
                Err(error) => {
                    tracing::debug!(plugin = %self.plugin, %error, "no instance is made ahead for this plugin");
                    self.no_spares.store(true, Ordering::Relaxed);
                }
            }
        }
        self.making.store(false, Ordering::Release);
    }
}
