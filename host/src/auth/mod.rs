//! Who may use the server over HTTP, and for what: the `Host` and `Origin`
//! checks, authentication (static bearer tokens, or OAuth 2.1 access tokens
//! of one authorization server, validated here and nowhere else) giving the
//! [`Credential`] a request acts for, and authorization against the scopes
//! the manifests require of what a request uses. The HTTP transport applies
//! it as a layer of its router; it decides, the transport only answers.

mod access;
mod issuer;
mod oauth;
mod scopes;

pub use access::{Access, Credential, Refusal};
pub use oauth::{METADATA_PATH, ResourceServer};
