//! Opaque cursors over the catalog's sorted lists.
//!
//! A cursor names the last key of the page it ends (and which list it belongs
//! to), so it stays valid when plugins come and go: the next page starts at the
//! first key after it, whatever the catalog holds by then.

use std::collections::BTreeMap;
use std::ops::Bound;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::protocol::RpcError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    Tools,
    Prompts,
    Resources,
    Templates,
    Tasks,
}

impl ListKind {
    fn tag(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources => "resources",
            ListKind::Templates => "templates",
            ListKind::Tasks => "tasks",
        }
    }

    /// The key of the list in its result object.
    fn result_key(self) -> &'static str {
        match self {
            ListKind::Templates => "resourceTemplates",
            other => other.tag(),
        }
    }
}

/// An entry with the JSON object it is listed as.
pub trait Listed {
    fn listed(&self) -> &Value;
}

impl Listed for Value {
    fn listed(&self) -> &Value {
        self
    }
}

fn encode(kind: ListKind, last_key: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{}\n{last_key}", kind.tag()))
}

fn decode(kind: ListKind, cursor: &str) -> Result<String, RpcError> {
    let invalid = || {
        RpcError::invalid_params(format!(
            "Invalid cursor {cursor:?}: pass the nextCursor of a previous {} list response, or none for the first page",
            kind.tag()
        ))
    };
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    let text = String::from_utf8(bytes).map_err(|_| invalid())?;
    let (tag, key) = text.split_once('\n').ok_or_else(invalid)?;
    if tag != kind.tag() {
        return Err(invalid());
    }
    Ok(key.to_owned())
}

/// The list result (`{"tools": [...], "nextCursor": ...}` and the like) of
/// the page of `entries` after the cursor in `params`.
pub fn page<E: Listed>(
    kind: ListKind,
    entries: &BTreeMap<String, E>,
    params: &Value,
    size: usize,
) -> Result<Value, RpcError> {
    let cursor = match params.get("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(cursor)) => Some(decode(kind, cursor)?),
        Some(_) => return Err(RpcError::invalid_params("\"cursor\" must be a string")),
    };
    let start = match &cursor {
        Some(key) => Bound::Excluded(key.as_str()),
        None => Bound::Unbounded,
    };
    let mut range = entries.range::<str, _>((start, Bound::Unbounded));
    let mut items = Vec::with_capacity(size.min(entries.len()));
    let mut last_key = None;
    for (key, entry) in range.by_ref().take(size) {
        items.push(entry.listed().clone());
        last_key = Some(key);
    }
    let mut result = json!({ kind.result_key(): items });
    if let (Some(_), Some(last)) = (range.next(), last_key) {
        result["nextCursor"] = json!(encode(kind, last));
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(keys: &[&str]) -> BTreeMap<String, Value> {
        keys.iter().map(|k| (k.to_string(), json!(k))).collect()
    }

    fn after(cursor: &Value) -> Value {
        json!({ "cursor": cursor })
    }

    #[test]
    fn walks_every_entry_once() {
        let map = entries(&["a", "b", "c"]);
        let mut params = json!({});
        let mut seen = Vec::new();
        loop {
            let page = page(ListKind::Tools, &map, &params, 2).unwrap();
            seen.extend(page["tools"].as_array().unwrap().iter().cloned());
            match page.get("nextCursor") {
                Some(next) => params = after(next),
                None => break,
            }
        }
        assert_eq!(seen, vec![json!("a"), json!("b"), json!("c")]);
    }

    #[test]
    fn cursor_survives_additions_and_rejects_garbage() {
        let map = entries(&["a", "c"]);
        let first = page(ListKind::Tools, &map, &json!({}), 1).unwrap();
        let grown = entries(&["a", "b", "c"]);
        let second = page(ListKind::Tools, &grown, &after(&first["nextCursor"]), 5).unwrap();
        assert_eq!(second["tools"], json!(["b", "c"]));
        assert!(page(ListKind::Tools, &map, &after(&json!("not a cursor!")), 1).is_err());
        assert!(page(ListKind::Prompts, &map, &after(&first["nextCursor"]), 1).is_err());
        assert!(page(ListKind::Tools, &map, &after(&json!(7)), 1).is_err());
    }

    #[test]
    fn templates_are_listed_under_their_protocol_key() {
        let result = page(ListKind::Templates, &entries(&["t"]), &json!({}), 5).unwrap();
        assert_eq!(result, json!({ "resourceTemplates": ["t"] }));
    }
}
