//! How a call into a plugin ended when it produced no value: the plugin's own
//! error, a limit, a crash, cancellation or shutdown; and how a trap is read
//! back into one of those.

use wasmtime::Trap;

use super::scope::CallScope;
use crate::contract::bindings::types;
use crate::limits::LimitHit;

/// Why a call into a plugin produced no value.
#[derive(Debug, Clone)]
pub enum CallError {
    /// The plugin answered with an error of the contract (not found, invalid params, internal).
    Refused(types::Error),
    /// A limit stopped the call.
    Limit(LimitHit),
    /// The guest trapped or panicked; the text says how.
    Crashed(String),
    /// The request was cancelled; the call was stopped.
    Cancelled,
    /// The host is shutting down and runs no more calls.
    ShuttingDown,
    /// The plugin does not export what the call needs.
    Unsupported(&'static str),
    /// The plugin returned something unusable.
    Invalid(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Refused(types::Error::NotFound(what)) => write!(f, "not found: {what}"),
            CallError::Refused(types::Error::InvalidParams(why)) => {
                write!(f, "invalid params: {why}")
            }
            CallError::Refused(types::Error::Internal(why)) => write!(f, "plugin error: {why}"),
            CallError::Limit(hit) => write!(f, "{hit}"),
            CallError::Crashed(why) => write!(f, "the plugin crashed: {why}"),
            CallError::Cancelled => write!(f, "cancelled"),
            CallError::ShuttingDown => write!(f, "the host is shutting down"),
            CallError::Unsupported(what) => write!(f, "the plugin does not export {what}"),
            CallError::Invalid(why) => write!(f, "{why}"),
        }
    }
}

impl CallError {
    /// What kind of end this is, as metrics label it.
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::Refused(_) => "refused",
            CallError::Limit(_) => "limit",
            CallError::Crashed(_) => "crashed",
            CallError::Cancelled => "cancelled",
            CallError::ShuttingDown => "shutting_down",
            CallError::Unsupported(_) => "unsupported",
            CallError::Invalid(_) => "invalid",
        }
    }
}

/// The error a call ends with when its request was cancelled.
#[derive(Debug)]
pub struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cancelled")
    }
}

impl std::error::Error for Cancelled {}

/// Turns the error a call (serving `scope`, with `fuel` to burn) ended with
/// into the error that says which limit or fault stopped it.
pub fn classify(error: wasmtime::Error, scope: &CallScope, fuel: u64) -> CallError {
    if let Some(hit) = error.downcast_ref::<LimitHit>() {
        return CallError::Limit(hit.clone());
    }
    if error.downcast_ref::<Cancelled>().is_some() || scope.is_cancelled() {
        return CallError::Cancelled;
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => CallError::Limit(LimitHit::Fuel(fuel)),
        Some(Trap::StackOverflow) => CallError::Crashed("stack overflow".into()),
        Some(Trap::UnreachableCodeReached) => CallError::Crashed("it panicked or aborted (wasm `unreachable`)".into()),
        Some(Trap::MemoryOutOfBounds) => CallError::Crashed(
            "wasm trap: out of bounds memory access (in a Rust or C plugin this is most often a stack overflow)".into(),
        ),
        Some(trap) => CallError::Crashed(trap.to_string()),
        None => CallError::Crashed(format!("{error:#}")),
    }
}
