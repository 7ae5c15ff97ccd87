//! The wire format: JSON-RPC 2.0 framing, MCP error codes, protocol versions and log levels.
//!
//! Nothing here knows about sessions, transports or plugins.

pub mod jsonrpc;

pub use jsonrpc::{Incoming, RequestId, RpcError};

use serde::{Deserialize, Serialize};

/// The revision this server speaks natively.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Every revision a client may negotiate, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The version to answer `initialize` with: the client's if we speak it, else our latest.
pub fn negotiate_version(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|v| SUPPORTED_PROTOCOL_VERSIONS.iter().find(|s| **s == v))
        .copied()
        .unwrap_or(LATEST_PROTOCOL_VERSION)
}

/// RFC 5424 severities, lowest first, as MCP names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}
