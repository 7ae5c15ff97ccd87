//! The operator's credentials as the HTTP gate sees them: what a plugin's
//! outgoing request is bound to, and the header value to add to it. The
//! gate asks only after its egress checks; the values live in
//! `crate::secrets`, never in the plugin's WASI context.

use std::fmt;

use futures_util::future::BoxFuture;
use secrecy::SecretString;

/// An outgoing request, as bindings match it.
#[derive(Debug, Clone, Copy)]
pub struct Destination<'a> {
    /// `https://` (not `http://`).
    pub tls: bool,
    /// Lower-cased, as in the URL (an IP literal keeps its brackets).
    pub host: &'a str,
    pub port: u16,
    /// With its query.
    pub path: &'a str,
    pub method: &'a str,
}

/// What the host adds to one request: the header's value (marked sensitive)
/// and the secrets inside it (the secret, and its encoding where the form
/// encodes it), which no response header handed back to the plugin may hold.
pub struct Added {
    pub value: http::HeaderValue,
    pub secrets: Vec<SecretString>,
}

/// A binding that matched a request: the header it adds, and how to get its value.
pub trait Credential: Send + Sync {
    fn header(&self) -> &http::HeaderName;
    /// The value to add to the request to `url`, recorded as used for
    /// `caller`; or why there is none (an upstream token the authorization
    /// server did not give), in words that hold no secret.
    fn value<'a>(&'a self, url: &'a str, caller: Option<&'a str>) -> BoxFuture<'a, Result<Added, String>>;
}

/// The credentials bound to one plugin's requests.
pub trait Credentials: Send + Sync + fmt::Debug {
    /// The binding a request to `destination` matches, if any.
    fn bound(&self, destination: &Destination<'_>) -> Option<&dyn Credential>;
}
