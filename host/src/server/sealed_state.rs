//! The `requestState` of a multi round-trip request: what the server needs
//! to carry from one round to the next (the client's answers so far, and
//! where the call waits), sealed with an AEAD so a client can neither read
//! nor change it, bound to the request it was issued for and to an expiry.
//!
//! The key comes from a file (`request_state_key`) so that every replica
//! can open the state any other issued; without one it is random per
//! process, and a retry that reaches another process is refused.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::protocol::RpcError;

const NONCE_BYTES: usize = 24;

/// What a `requestState` carries.
#[derive(Debug, Serialize, Deserialize)]
pub struct RequestState {
    /// The digest of the request it was issued for (see [`crate::protocol::request_digest`]).
    pub request: String,
    /// Seconds since the Unix epoch after which it is refused.
    pub expires: u64,
    /// The suspended call waiting for this retry, if one was left waiting.
    pub suspended: Option<u64>,
    /// Every answer the client gave so far, by key.
    pub answers: Map<String, Value>,
    /// The principal it was issued to (see [`crate::principal`]); only it may use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
}

/// Seals and opens request states with one key.
pub struct Sealer {
    cipher: XChaCha20Poly1305,
    ttl: Duration,
}

impl Sealer {
    /// A sealer with the key derived from `key_file`'s contents (SHA-256 of
    /// them, so any secret of 32 bytes or more will do), or a random key.
    ///
    /// # Errors
    ///
    /// The key file cannot be read or holds fewer than 32 bytes, or the
    /// operating system gives no random bytes.
    pub fn new(key_file: Option<&Path>, ttl: Duration) -> anyhow::Result<Self> {
        let key: [u8; 32] = match key_file {
            Some(path) => {
                let secret =
                    std::fs::read(path).with_context(|| format!("reading the request state key {}", path.display()))?;
                anyhow::ensure!(
                    secret.len() >= 32,
                    "the request state key {} holds {} bytes; it needs at least 32 random bytes (for example `head -c 32 /dev/urandom > {}`)",
                    path.display(),
                    secret.len(),
                    path.display()
                );
                Sha256::digest(&secret).into()
            }
            None => {
                let mut key = [0; 32];
                getrandom::fill(&mut key)
                    .map_err(|error| anyhow::anyhow!("drawing a random request state key: {error}"))?;
                key
            }
        };
        Ok(Self {
            cipher: XChaCha20Poly1305::new(&key.into()),
            ttl,
        })
    }

    /// The state for a round of `request` of `principal`, expiring after the sealer's ttl.
    pub fn state(
        &self,
        request: String,
        principal: Option<String>,
        suspended: Option<u64>,
        answers: Map<String, Value>,
    ) -> RequestState {
        RequestState {
            request,
            expires: (now() + self.ttl).as_secs(),
            suspended,
            answers,
            principal,
        }
    }

    pub fn seal(&self, state: &RequestState) -> String {
        let mut nonce = [0; NONCE_BYTES];
        getrandom::fill(&mut nonce).expect("the operating system's random source works");
        let plain = serde_json::to_vec(state).expect("a request state serializes");
        let sealed = self
            .cipher
            .encrypt(XNonce::from_slice(&nonce), plain.as_slice())
            .expect("sealing in memory does not fail");
        let mut bytes = nonce.to_vec();
        bytes.extend(sealed);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Opens `sealed` as the state of `request` of `principal`: refused
    /// (-32602) if it was not sealed with this key, was changed, has
    /// expired, or belongs to another request or another principal.
    ///
    /// # Errors
    ///
    /// The -32602 error saying which of those it is.
    pub fn open(&self, sealed: &str, request: &str, principal: Option<&str>) -> Result<RequestState, RpcError> {
        let refused = |why: &str| {
            RpcError::invalid_params(format!(
                "Invalid params: requestState {why}; send the request again without requestState and inputResponses"
            ))
        };
        let bytes = URL_SAFE_NO_PAD
            .decode(sealed)
            .map_err(|_| refused("is not one this server issued"))?;
        if bytes.len() <= NONCE_BYTES {
            return Err(refused("is not one this server issued"));
        }
        let (nonce, sealed) = bytes.split_at(NONCE_BYTES);
        let plain = self
            .cipher
            .decrypt(XNonce::from_slice(nonce), sealed)
            .map_err(|_| refused("was altered, or was issued by a server with another key"))?;
        let state: RequestState =
            serde_json::from_slice(&plain).map_err(|_| refused("is not one this server issued"))?;
        if state.expires < now().as_secs() {
            return Err(refused("has expired"));
        }
        if state.request != request {
            return Err(refused("was issued for a different request"));
        }
        if state.principal.as_deref() != principal {
            return Err(refused(
                "was issued to another caller (another token subject or client)",
            ));
        }
        Ok(state)
    }
}

fn now() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::request_digest;

    fn sealer() -> Sealer {
        Sealer::new(None, Duration::from_secs(60)).unwrap()
    }

    #[test]
    fn a_sealed_state_opens_for_its_own_request_only() {
        let sealer = sealer();
        let request = request_digest("tools/call", &json!({ "name": "t", "arguments": { "a": 1, "b": 2 } }));
        let mut answers = Map::new();
        answers.insert("k".into(), json!({ "action": "accept" }));
        let sealed = sealer.seal(&sealer.state(request.clone(), Some("alice".into()), Some(7), answers));
        let opened = sealer.open(&sealed, &request, Some("alice")).unwrap();
        assert_eq!(opened.suspended, Some(7));
        assert_eq!(opened.answers["k"]["action"], "accept");
        let other = request_digest("tools/call", &json!({ "name": "t", "arguments": { "a": 2 } }));
        assert!(
            sealer
                .open(&sealed, &other, Some("alice"))
                .unwrap_err()
                .message
                .contains("different request")
        );
        for stranger in [Some("bob"), None] {
            let refused = sealer.open(&sealed, &request, stranger).unwrap_err();
            assert!(refused.message.contains("another caller"), "{}", refused.message);
        }
    }

    #[test]
    fn tampered_foreign_and_expired_states_are_refused() {
        let sealer = sealer();
        let request = request_digest("tools/call", &json!({}));
        let sealed = sealer.seal(&sealer.state(request.clone(), None, None, Map::new()));
        let mut bytes = URL_SAFE_NO_PAD.decode(&sealed).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        let tampered = URL_SAFE_NO_PAD.encode(bytes);
        assert!(
            sealer
                .open(&tampered, &request, None)
                .unwrap_err()
                .message
                .contains("altered")
        );
        assert!(sealer.open("not-a-state", &request, None).is_err());
        assert!(
            super::Sealer::new(None, Duration::from_secs(60))
                .unwrap()
                .open(&sealed, &request, None)
                .is_err()
        );
        let expired = Sealer::new(None, Duration::ZERO).unwrap();
        let mut state = expired.state(request.clone(), None, None, Map::new());
        state.expires -= 1;
        assert!(
            expired
                .open(&expired.seal(&state), &request, None)
                .unwrap_err()
                .message
                .contains("expired")
        );
    }

    #[test]
    fn a_key_file_is_shared_and_must_be_long_enough() {
        let dir = std::env::temp_dir().join(format!("wasm-mcp-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let short = dir.join("short");
        std::fs::write(&short, b"too short").unwrap();
        let error = Sealer::new(Some(&short), Duration::from_secs(1))
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("at least 32"), "{error}");
        let key = dir.join("key");
        std::fs::write(&key, [7u8; 40]).unwrap();
        let one = Sealer::new(Some(&key), Duration::from_secs(60)).unwrap();
        let two = Sealer::new(Some(&key), Duration::from_secs(60)).unwrap();
        let sealed = one.seal(&one.state("r".into(), None, None, Map::new()));
        assert!(two.open(&sealed, "r", None).is_ok());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
