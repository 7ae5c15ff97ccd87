//! Trust in what is pulled, settled before it is compiled or served:
//! signatures in cosign's key-based form ([`signature`]) and keyless
//! Sigstore bundles ([`bundle`]) checked against the operator's trust policy
//! ([`policy`]); the grants a plugin asks for, held against those approved
//! ([`grants`]). The registry front fetches the signatures (see
//! `registry::client`) and asks the policy on every load.

pub mod bundle;
pub mod grants;
pub mod policy;
pub mod signature;

pub use grants::Grants;
pub use policy::{Policy, Signature, Signatures, Verdict};
