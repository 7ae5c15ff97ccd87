//! The wire format: JSON-RPC 2.0 framing, MCP error codes, a request's
//! envelope (read once) and its typed params, protocol versions and log levels.
//!
//! Nothing here knows about sessions, transports or plugins.

mod digest;
pub mod envelope;
pub mod headers;
pub mod jsonrpc;
pub mod message;
mod method;
pub mod modern;
pub mod requests;

pub use digest::request_digest;
pub use envelope::Envelope;
pub use jsonrpc::{RequestId, RpcError};
pub use message::Incoming;
pub use method::{Method, Target};

use serde::{Deserialize, Serialize};

/// The newest revision that opens a session with `initialize` (see
/// [`modern`] for 2026-07-28, which does not).
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Every revision a client may negotiate with `initialize`, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The version to answer `initialize` with: the client's if we speak it, else our latest.
pub fn negotiate_version(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|v| SUPPORTED_PROTOCOL_VERSIONS.iter().find(|s| **s == v))
        .copied()
        .unwrap_or(LATEST_PROTOCOL_VERSION)
}

/// The longest tool or prompt name MCP allows (2025-11-25).
pub const MAX_NAME_LEN: usize = 128;

/// Whether MCP allows `c` in a tool or prompt name: `A-Z a-z 0-9 _ - .`.
pub fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// What is wrong with `name` as a tool or prompt name under the 2025-11-25
/// rule (1 to 128 of `A-Z a-z 0-9 _ - .`), if anything.
pub fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("the name is empty".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Some(format!("the name is {} bytes long, over {MAX_NAME_LEN}", name.len()));
    }
    let bad: String = name.chars().filter(|c| !name_char(*c)).collect();
    (!bad.is_empty()).then(|| format!("the name has characters other than A-Z a-z 0-9 _ - . ({bad:?})"))
}

/// RFC 5424 severities, lowest first, as MCP names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// Information.
    Info,
    /// A normal but significant event.
    Notice,
    /// A warning.
    Warning,
    /// An error.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Whatever version a client asks for, the answer is one this server speaks:
        /// the client's own when supported, else the latest.
        #[test]
        fn negotiation_answers_a_supported_version(requested in prop_oneof![
            proptest::sample::select(SUPPORTED_PROTOCOL_VERSIONS.to_vec()).prop_map(str::to_owned),
            "20[0-9]{2}-[0-9]{2}-[0-9]{2}",
            any::<String>(),
        ]) {
            let answer = negotiate_version(Some(&requested));
            prop_assert!(SUPPORTED_PROTOCOL_VERSIONS.contains(&answer));
            if SUPPORTED_PROTOCOL_VERSIONS.contains(&requested.as_str()) {
                prop_assert_eq!(answer, requested.as_str());
            } else {
                prop_assert_eq!(answer, LATEST_PROTOCOL_VERSION);
            }
        }
    }

    #[test]
    fn names_follow_the_2025_11_25_rule() {
        for good in ["a", "get_weather", "v1.search-docs", &"x".repeat(MAX_NAME_LEN)] {
            assert_eq!(name_problem(good), None, "{good}");
        }
        for bad in ["", "has space", "naïve", "a/b", &"x".repeat(MAX_NAME_LEN + 1)] {
            assert!(name_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn no_version_asked_is_the_latest() {
        assert_eq!(negotiate_version(None), LATEST_PROTOCOL_VERSION);
    }
}
