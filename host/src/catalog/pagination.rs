//! Opaque cursors over the catalog's sorted lists.
//!
//! A cursor names the last key of the page it ends (and which list it belongs
//! to), so it stays valid when plugins come and go: the next page starts at the
//! first key after it, whatever the catalog holds by then.

use std::collections::BTreeMap;
use std::ops::Bound;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

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
}

pub struct Page {
    pub items: Vec<Value>,
    pub next_cursor: Option<String>,
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

/// One page of `entries` (rendered by `listed`) after `cursor`.
pub fn page<E>(
    kind: ListKind,
    entries: &BTreeMap<String, E>,
    listed: impl Fn(&E) -> &Value,
    cursor: Option<&str>,
    size: usize,
) -> Result<Page, RpcError> {
    let after = cursor.map(|c| decode(kind, c)).transpose()?;
    let start = match &after {
        Some(key) => Bound::Excluded(key.as_str()),
        None => Bound::Unbounded,
    };
    let mut range = entries.range::<str, _>((start, Bound::Unbounded));
    let mut items = Vec::with_capacity(size.min(entries.len()));
    let mut last_key = None;
    for (key, entry) in range.by_ref().take(size) {
        items.push(listed(entry).clone());
        last_key = Some(key);
    }
    let next_cursor = match (range.next(), last_key) {
        (Some(_), Some(last)) => Some(encode(kind, last)),
        _ => None,
    };
    Ok(Page { items, next_cursor })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entries(keys: &[&str]) -> BTreeMap<String, Value> {
        keys.iter().map(|k| (k.to_string(), json!(k))).collect()
    }

    #[test]
    fn walks_every_entry_once() {
        let map = entries(&["a", "b", "c"]);
        let mut cursor = None;
        let mut seen = Vec::new();
        loop {
            let page = page(ListKind::Tools, &map, |v| v, cursor.as_deref(), 2).unwrap();
            seen.extend(page.items);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, vec![json!("a"), json!("b"), json!("c")]);
    }

    #[test]
    fn cursor_survives_additions_and_rejects_garbage() {
        let map = entries(&["a", "c"]);
        let first = page(ListKind::Tools, &map, |v| v, None, 1).unwrap();
        let grown = entries(&["a", "b", "c"]);
        let second = page(ListKind::Tools, &grown, |v| v, first.next_cursor.as_deref(), 5).unwrap();
        assert_eq!(second.items, vec![json!("b"), json!("c")]);
        assert!(page(ListKind::Tools, &map, |v| v, Some("not a cursor!"), 1).is_err());
        assert!(page(ListKind::Prompts, &map, |v| v, first.next_cursor.as_deref(), 1).is_err());
    }
}
