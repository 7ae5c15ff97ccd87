//! What the process tells every client it serves: a list that changed, a
//! resource updated, a task's new status, the host's own log messages. The
//! hub holds each client as an [`Audience`]; the request layer's peer is one.

use serde_json::Value;

use crate::protocol::LogLevel;

/// A client the hub tells what changed.
pub trait Audience: Send + Sync {
    /// A list change (`uri` none) or an update of resource `uri`, for the
    /// client's session if it asked for it and every listen stream that did.
    fn announce(&self, method: &str, uri: Option<&str>);

    /// `method`, with the params `params` makes, on every listen stream that
    /// asked for it (about `subject`: a resource, a task).
    fn tell_listeners(&self, method: &str, subject: Option<&str>, params: &dyn Fn() -> Value);

    /// Every resource URI the client wants updates of.
    fn watched_resources(&self) -> Vec<String>;

    /// The host's own message about `logger`, if the client's session asked
    /// for messages of `level`.
    fn log(&self, level: LogLevel, logger: &str, data: Value);
}
