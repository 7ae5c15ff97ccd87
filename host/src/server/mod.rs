//! The process: what every client and every request share, for as long as
//! the server runs. The [`Hub`] holds the catalog of the loaded plugins, the
//! server settings, the clients served now (each an [`Audience`] it tells
//! what changed), the calls suspended between the rounds of multi
//! round-trip requests and the key that seals their state, and the tasks of
//! the 2026-07-28 tasks extension; it follows the other replicas
//! (`replicas.rs`) and hands the status page a snapshot ([`Hub::status`]).
//!
//! Nothing here knows a session or a request: the layers above hold their
//! own and register with the hub.

mod audience;
mod hub;
mod replicas;
mod sealed_state;
mod status;
pub(crate) mod suspended;

pub use audience::Audience;
pub use hub::Hub;
