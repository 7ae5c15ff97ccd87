//! `wasi:sockets/ip-name-lookup` limited to the names a plugin's manifest grants.
//!
//! wasmtime-wasi only has an on/off switch for name lookups. A lookup is
//! traffic of its own (a DNS query for `<secret>.attacker.example` leaks the
//! secret without any connection), so the host replaces the interface in the
//! linker with this one: `resolve-addresses` of a name no `[network]` rule
//! names fails with `access-denied` before any query is made; a granted name
//! (or an IP literal, which needs no query) goes on to wasmtime-wasi's own
//! implementation. What the guest then connects to is checked again, on the
//! address, by [`super::NetworkPolicy`].

use std::sync::Arc;

use wasmtime::component::{HasData, Linker, Resource};
use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::{
    self, Host, HostResolveAddressStream, ResolveAddressStream,
};
use wasmtime_wasi::p2::bindings::sockets::network::{self, ErrorCode, IpAddress, Network};
use wasmtime_wasi::p2::{DynPollable, SocketError};
use wasmtime_wasi::sockets::{WasiSocketsCtxView, WasiSocketsView};

use super::{NetworkPolicy, NetworkView};
use crate::metrics::METRICS;

/// The name lookup interface, seen through the plugin's policy.
pub struct NameGate<'a> {
    sockets: WasiSocketsCtxView<'a>,
    policy: Arc<NetworkPolicy>,
}

struct GatedLookup;

impl HasData for GatedLookup {
    type Data<'a> = NameGate<'a>;
}

fn gate<T: NetworkView>(state: &mut T) -> NameGate<'_> {
    let policy = state.network_policy().clone();
    NameGate {
        sockets: state.sockets(),
        policy,
    }
}

/// Replaces `wasi:sockets/ip-name-lookup` (added by
/// `wasmtime_wasi::p2::add_to_linker_async`) with the gated one.
pub fn add_to_linker<T: NetworkView + 'static>(linker: &mut Linker<T>) -> anyhow::Result<()> {
    linker.allow_shadowing(true);
    let added = ip_name_lookup::add_to_linker::<T, GatedLookup>(linker, gate::<T>);
    linker.allow_shadowing(false);
    Ok(added?)
}

// The lookup interface uses `wasi:sockets/network` types; plain delegation.
impl network::Host for NameGate<'_> {
    fn convert_error_code(&mut self, error: SocketError) -> wasmtime::Result<ErrorCode> {
        network::Host::convert_error_code(&mut self.sockets, error)
    }

    fn network_error_code(&mut self, err: Resource<wasmtime::Error>) -> wasmtime::Result<Option<ErrorCode>> {
        network::Host::network_error_code(&mut self.sockets, err)
    }
}

impl network::HostNetwork for NameGate<'_> {
    fn drop(&mut self, network: Resource<Network>) -> wasmtime::Result<()> {
        network::HostNetwork::drop(&mut self.sockets, network)
    }
}

impl Host for NameGate<'_> {
    fn resolve_addresses(
        &mut self,
        network: Resource<Network>,
        name: String,
    ) -> Result<Resource<ResolveAddressStream>, SocketError> {
        if !self.policy.may_resolve(&name) {
            tracing::warn!(
                plugin = %self.policy.plugin(), name,
                "name lookup refused: no [network] rule of the plugin's manifest names it"
            );
            METRICS.egress_refused(
                self.policy.plugin(),
                &name,
                "name lookup refused: no [network] rule of the plugin's manifest names it",
            );
            return Err(ErrorCode::AccessDenied.into());
        }
        Host::resolve_addresses(&mut self.sockets, network, name)
    }
}

impl HostResolveAddressStream for NameGate<'_> {
    fn resolve_next_address(
        &mut self,
        stream: Resource<ResolveAddressStream>,
    ) -> Result<Option<IpAddress>, SocketError> {
        HostResolveAddressStream::resolve_next_address(&mut self.sockets, stream)
    }

    fn subscribe(&mut self, stream: Resource<ResolveAddressStream>) -> wasmtime::Result<Resource<DynPollable>> {
        HostResolveAddressStream::subscribe(&mut self.sockets, stream)
    }

    async fn drop(&mut self, stream: Resource<ResolveAddressStream>) -> wasmtime::Result<()> {
        HostResolveAddressStream::drop(&mut self.sockets, stream).await
    }
}
