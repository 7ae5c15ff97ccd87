//! One call into a plugin, from its turn to its outcome: the store and fresh
//! instance it runs in ([`Call`]), that store's state ([`CallState`]), the
//! request it serves ([`CallScope`]), the host imports it may use
//! (`imports`, and `wasi:keyvalue` in `keyvalue` on the granted
//! [`buckets`]), the guard that enforces every limit ([`guard`]) and how it
//! ended ([`CallError`]).

pub mod buckets;
mod guard;
mod imports;
mod keyvalue;
mod outcome;
mod scope;
mod state;

use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::{Instance, InstancePre};

pub use buckets::{Buckets, PluginStore};
pub use guard::{FUEL_YIELD_INTERVAL, Guard, MemoryBudget, MemoryMeter, Turn, within_output_limit};
pub use outcome::CallError;
pub use scope::{BoxFuture, CallScope, ChangedLists, ClientLink, ClientRequestError, Question, ask_each};
pub use state::CallState;

use crate::contract::bindings::LoadExport;
use crate::limits::Limits;
use crate::metrics::{METRICS, PluginCallEnd};
use crate::protocol::LogLevel;
use crate::sandbox::{CapturedOutput, Grants};
use crate::telemetry;

/// Characters of a crashed plugin's stderr quoted in its error.
const STDERR_TAIL_CHARS: usize = 500;

/// A fresh instance of a plugin version and the store it runs in, armed for
/// one call. No two calls ever share one.
pub struct Call {
    store: Store<CallState>,
    instance: Instance,
    output: CapturedOutput,
    guard: Guard,
    /// The call's place among running calls, once it has one.
    turn: Option<Turn>,
}

impl Call {
    /// Instantiates `pre`, a version of `plugin`, in the sandbox of `grants`
    /// for a call serving `scope` under `limits` (instantiating runs the
    /// component's start functions, which the limits bound like any call);
    /// its memory counts against `memory` (see [`MemoryMeter`]); it keeps
    /// state in `buckets`.
    pub async fn instantiate(
        pre: &InstancePre<CallState>,
        plugin: Arc<str>,
        grants: &Grants,
        buckets: &Arc<Buckets>,
        scope: Arc<CallScope>,
        limits: &Limits,
        memory: MemoryMeter,
    ) -> Result<Call, CallError> {
        let (state, output) = CallState::new(plugin, grants, scope.clone(), memory, buckets.clone())
            .map_err(|e| CallError::Crashed(format!("cannot set up its sandbox: {e:#}")))?;
        let mut store = Store::new(pre.engine(), state);
        store.limiter_async(|state| &mut state.memory);
        store
            .fuel_async_yield_interval(Some(FUEL_YIELD_INTERVAL))
            .map_err(|e| CallError::Crashed(e.to_string()))?;
        let guard = Guard::arm(&mut store, scope.clone(), limits)?;
        store.data_mut().http_gate.bound_by(Arc::new(guard.time_left()));
        match guard.run(pre.instantiate_async(&mut store)).await {
            Ok(instance) => Ok(Call {
                store,
                instance,
                output,
                guard,
                turn: None,
            }),
            Err(e) => Err(outcome::classify(e, &scope, limits.fuel)),
        }
    }

    /// The most linear memory the instance has used so far.
    pub fn peak_memory(&self) -> usize {
        self.store.data().memory.peak
    }

    /// Arms an instance no call has run in yet (made ahead, under other
    /// limits) for a call serving `scope` under `limits`.
    pub fn rearm(&mut self, scope: Arc<CallScope>, limits: &Limits) -> Result<(), CallError> {
        let state = self.store.data_mut();
        state.http_gate.act_for(scope.caller());
        state.scope = scope.clone();
        state.memory.cap = limits.memory_bytes();
        state.memory.waits = true;
        self.guard = Guard::arm(&mut self.store, scope, limits)?;
        self.store
            .data_mut()
            .http_gate
            .bound_by(Arc::new(self.guard.time_left()));
        Ok(())
    }

    /// Holds the call's place among running calls until it is dropped.
    pub fn hold(&mut self, turn: Turn) {
        self.turn = Some(turn);
    }

    /// Runs one export of the interface `indices` names, under the guard:
    /// `export` gets the loaded interface and the store.
    pub async fn run<I, T, F>(&mut self, indices: &I, export: F) -> wasmtime::Result<T>
    where
        I: LoadExport,
        F: AsyncFnOnce(&I::Guest, &mut Store<CallState>) -> wasmtime::Result<T>,
    {
        let guest = indices.load_export(&mut self.store, &self.instance)?;
        self.guard.run(export(&guest, &mut self.store)).await
    }

    /// Ends the call: forwards what the guest wrote to stdout and stderr, logs
    /// what the call used, and turns an error into the [`CallError`] that
    /// says which limit or fault stopped it.
    pub fn finish<T>(&self, what: &'static str, result: wasmtime::Result<T>) -> Result<T, CallError> {
        let state = self.store.data();
        let fuel_used = self.guard.fuel().saturating_sub(self.store.get_fuel().unwrap_or(0));
        let took = self.guard.elapsed();
        let wall_ms = took.as_secs_f64() * 1000.0;
        tracing::debug!(
            plugin = %state.plugin, call = what, fuel_used, wall_ms,
            peak_memory_bytes = state.memory.peak,
            "plugin call finished"
        );
        let stderr_tail = self.forward_output();
        let outcome = result.map_err(|e| match outcome::classify(e, self.guard.scope(), self.guard.fuel()) {
            CallError::Crashed(why) if !stderr_tail.is_empty() => {
                CallError::Crashed(format!("{why}; its stderr ended with: {stderr_tail}"))
            }
            other => other,
        });
        let ended = PluginCallEnd {
            outcome: outcome.as_ref().err().map_or("ok", CallError::kind),
            took,
            fuel: fuel_used,
            peak_memory: state.memory.peak,
        };
        METRICS.plugin_call(&state.plugin, what, ended);
        let limit = match &outcome {
            Err(CallError::Limit(hit)) => {
                METRICS.limit_hit(&state.plugin, hit);
                Some(hit.kind())
            }
            _ => None,
        };
        telemetry::plugin_call_ended(fuel_used, state.memory.peak, wall_ms, ended.outcome, limit);
        outcome
    }

    /// Sends what the guest wrote to stdout and stderr to the client's log and
    /// to our stderr; returns the last lines of its stderr.
    fn forward_output(&self) -> String {
        let state = self.store.data();
        let outputs = [
            ("stdout", self.output.stdout.contents(), LogLevel::Info),
            ("stderr", self.output.stderr.contents(), LogLevel::Warning),
        ];
        for (stream, bytes, level) in &outputs {
            let text = String::from_utf8_lossy(bytes);
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                tracing::info!(plugin = %state.plugin, stream, "{line}");
                // Sent now if the client has room, else dropped and counted.
                drop(
                    state
                        .scope
                        .log_text(&state.plugin, *level, format!("[{stream}] {line}")),
                );
            }
        }
        state.scope.finish(&state.plugin);
        // The last lines of stderr, without Rust's backtrace hint: for a panic,
        // where it happened and its message.
        let stderr = String::from_utf8_lossy(&outputs[1].1);
        let stderr_tail: Vec<&str> = stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("note: run with"))
            .collect();
        let keep = stderr_tail.len().saturating_sub(2);
        let tail = stderr_tail[keep..].join(" ");
        match tail.char_indices().nth(STDERR_TAIL_CHARS) {
            Some((cut, _)) => format!("{}…", &tail[..cut]),
            None => tail,
        }
    }
}
