//! The multi round-trip calls suspended in this process between a client's
//! rounds, by the key their `requestState` names: bounded in number (the
//! one waiting longest makes room) and in time, each ended through its
//! cancellation token when it is dropped unclaimed. What a suspended call
//! is belongs to the request layer; the table holds it unopened.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// One suspended call.
struct Parked {
    call: Box<dyn Any + Send>,
    /// The digest of the request it serves (see [`crate::protocol::request_digest`]).
    request: String,
    /// Ends the call when it is dropped unclaimed.
    cancel: CancellationToken,
    since: Instant,
}

/// The calls suspended in this process.
pub struct SuspendedCalls {
    calls: Mutex<HashMap<u64, Parked>>,
    capacity: usize,
    wait: Duration,
}

impl SuspendedCalls {
    /// At most `capacity` calls, each kept at most `wait`.
    pub fn new(capacity: usize, wait: Duration) -> Arc<Self> {
        Arc::new(Self {
            calls: Mutex::new(HashMap::new()),
            capacity,
            wait,
        })
    }

    /// Keeps `call` of `request` until its retry takes it or its wait runs
    /// out; when full, the call waiting longest is dropped (its retry will
    /// replay it). `cancel` ends a call dropped so.
    pub fn park(self: &Arc<Self>, call: Box<dyn Any + Send>, request: String, cancel: CancellationToken) -> u64 {
        let mut key = [0; 8];
        getrandom::fill(&mut key).expect("the operating system's random source works");
        let key = u64::from_le_bytes(key);
        let parked = Parked {
            call,
            request,
            cancel,
            since: Instant::now(),
        };
        let evicted = {
            let mut calls = self.calls.lock().unwrap();
            let evicted = if calls.len() >= self.capacity {
                let oldest = calls.iter().min_by_key(|(_, call)| call.since).map(|(key, _)| *key);
                oldest.and_then(|oldest| calls.remove(&oldest))
            } else {
                None
            };
            calls.insert(key, parked);
            evicted
        };
        if let Some(evicted) = evicted {
            tracing::debug!("dropped the longest suspended call to make room; its retry will replay it");
            evicted.cancel.cancel();
        }
        let table: Weak<Self> = Arc::downgrade(self);
        let wait = self.wait;
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let expired = table
                .upgrade()
                .and_then(|table| table.calls.lock().unwrap().remove(&key));
            if let Some(expired) = expired {
                tracing::debug!("a suspended call was not retried in time; dropped (a later retry replays it)");
                expired.cancel.cancel();
            }
        });
        key
    }

    /// The call suspended under `key`, if it is still here and belongs to `request`.
    pub fn take(&self, key: u64, request: &str) -> Option<Box<dyn Any + Send>> {
        let mut calls = self.calls.lock().unwrap();
        if calls.get(&key)?.request != request {
            return None;
        }
        calls.remove(&key).map(|parked| parked.call)
    }
}
