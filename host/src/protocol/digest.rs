//! What makes a request the same request when a client retries it: a
//! digest of its method and params, which a multi round-trip request's
//! sealed `requestState` is bound to. Read from the raw params once, when
//! the request's envelope is read.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// A digest of what makes a request the same request on retry: its method
/// and params, without `_meta`, `inputResponses` and `requestState`, with
/// object keys in sorted order.
pub fn request_digest(method: &str, params: &Value) -> String {
    let mut hasher = Sha256::new();
    hasher.update(method.as_bytes());
    hasher.update([0]);
    if let Some(params) = params.as_object() {
        let mut keys: Vec<&String> = params
            .keys()
            .filter(|key| !matches!(key.as_str(), "_meta" | "inputResponses" | "requestState"))
            .collect();
        keys.sort();
        for key in keys {
            hash_canonical(&mut hasher, &Value::String(key.clone()));
            hash_canonical(&mut hasher, &params[key]);
        }
    }
    format!("{:x}", hasher.finalize())
}

fn hash_canonical(hasher: &mut Sha256, value: &Value) {
    match value {
        Value::Object(object) => {
            let mut keys: Vec<&String> = object.keys().collect();
            keys.sort();
            hasher.update(b"{");
            for key in keys {
                hash_canonical(hasher, &Value::String(key.clone()));
                hasher.update(b":");
                hash_canonical(hasher, &object[key]);
                hasher.update(b",");
            }
            hasher.update(b"}");
        }
        Value::Array(items) => {
            hasher.update(b"[");
            for item in items {
                hash_canonical(hasher, item);
                hasher.update(b",");
            }
            hasher.update(b"]");
        }
        scalar => hasher.update(scalar.to_string().as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_digest_ignores_key_order_meta_and_the_round_trip_fields() {
        let one = request_digest(
            "tools/call",
            &json!({ "name": "t", "arguments": { "a": 1, "b": [1, { "x": 1, "y": 2 }] } }),
        );
        let two = request_digest(
            "tools/call",
            &json!({ "arguments": { "b": [1, { "y": 2, "x": 1 }], "a": 1 }, "name": "t", "_meta": { "x": 1 }, "requestState": "s", "inputResponses": {} }),
        );
        assert_eq!(one, two);
        assert_ne!(
            one,
            request_digest(
                "prompts/get",
                &json!({ "name": "t", "arguments": { "a": 1, "b": [1, { "x": 1, "y": 2 }] } })
            )
        );
    }
}
