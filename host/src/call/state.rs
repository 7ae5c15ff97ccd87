//! The state of the store one call runs in: its WASI context, its sandbox, its
//! memory meter and the request it serves. Dropped with the store when the call ends.

use std::sync::Arc;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::buckets::Buckets;
use super::guard::MemoryMeter;
use super::scope::CallScope;
use crate::sandbox::http::HttpGate;
use crate::sandbox::{CapturedOutput, Grants, NetworkPolicy, NetworkView};

/// Everything one plugin call owns.
pub struct CallState {
    pub wasi: WasiCtx,
    pub table: ResourceTable,
    pub memory: MemoryMeter,
    pub scope: Arc<CallScope>,
    /// The plugin's name: the logger of its messages.
    pub plugin: Arc<str>,
    /// The plugin's network grants (the name lookups it may make).
    pub network: Arc<NetworkPolicy>,
    /// `wasi:http` state; its hooks hold outgoing requests to the network grants.
    pub http: WasiHttpCtx,
    pub http_gate: HttpGate,
    /// The `wasi:keyvalue` buckets the plugin may open.
    pub buckets: Arc<Buckets>,
    /// Buckets and compare-and-swaps the call holds open.
    pub keyvalue_handles: usize,
}

impl CallState {
    /// The state of a call of `plugin` in the sandbox of `grants`, serving
    /// `scope` with its linear memory metered by `memory`, keeping state in
    /// `buckets`; and the buffers
    /// its stdout and stderr write to.
    pub fn new(
        plugin: Arc<str>,
        grants: &Grants,
        scope: Arc<CallScope>,
        memory: MemoryMeter,
        buckets: Arc<Buckets>,
    ) -> anyhow::Result<(Self, CapturedOutput)> {
        let (wasi, output) = grants.wasi_context()?;
        let mut http_gate = HttpGate::new(grants.network(), grants.tls(), grants.credentials());
        http_gate.act_for(scope.caller());
        let state = Self {
            http_gate,
            wasi,
            table: ResourceTable::new(),
            memory,
            scope,
            plugin,
            network: grants.network(),
            http: WasiHttpCtx::new(),
            buckets,
            keyvalue_handles: 0,
        };
        Ok((state, output))
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.http_gate,
        }
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl NetworkView for CallState {
    fn network_policy(&self) -> &Arc<NetworkPolicy> {
        &self.network
    }
}
