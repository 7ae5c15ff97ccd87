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

use crate::principal::{self, Principal};
use crate::protocol::RpcError;
use crate::protocol::requests::ListKind;

impl ListKind {
    fn tag(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources => "resources",
            ListKind::Templates => "templates",
            ListKind::Tasks => "tasks",
            ListKind::Skills => "skills",
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

    /// The OAuth scopes a caller needs to see it.
    fn scopes(&self) -> &[String] {
        &[]
    }
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
/// the page of `entries` after `cursor` (none: the first page), of the
/// entries `principal` may use (none: every entry).
///
/// # Errors
///
/// Invalid params when `cursor` is not one this host issued for `kind`'s list.
pub fn page<E: Listed>(
    kind: ListKind,
    entries: &BTreeMap<String, E>,
    cursor: Option<&str>,
    size: usize,
    principal: Option<&Principal>,
) -> Result<Value, RpcError> {
    let cursor = cursor.map(|cursor| decode(kind, cursor)).transpose()?;
    let start = match &cursor {
        Some(key) => Bound::Excluded(key.as_str()),
        None => Bound::Unbounded,
    };
    let mut range = entries
        .range::<str, _>((start, Bound::Unbounded))
        .filter(|(_, entry)| principal::may_use(principal, entry.scopes()));
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

/// Whether `principal` may be shown another list of `entries` than another
/// caller: some entry needs scopes, and the principal's are checked.
pub fn depends_on_caller<E: Listed>(entries: &BTreeMap<String, E>, principal: Option<&Principal>) -> bool {
    principal.is_some_and(|principal| principal.scopes.is_some())
        && entries.values().any(|entry| !entry.scopes().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(keys: &[&str]) -> BTreeMap<String, Value> {
        keys.iter().map(|k| (k.to_string(), json!(k))).collect()
    }

    fn cursor_of(page: &Value) -> Option<&str> {
        page.get("nextCursor").and_then(Value::as_str)
    }

    #[test]
    fn walks_every_entry_once() {
        let map = entries(&["a", "b", "c"]);
        let mut cursor: Option<String> = None;
        let mut seen = Vec::new();
        loop {
            let page = page(ListKind::Tools, &map, cursor.as_deref(), 2, None).unwrap();
            seen.extend(page["tools"].as_array().unwrap().iter().cloned());
            match cursor_of(&page) {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
        assert_eq!(seen, vec![json!("a"), json!("b"), json!("c")]);
    }

    #[test]
    fn cursor_survives_additions_and_rejects_garbage() {
        let map = entries(&["a", "c"]);
        let first = page(ListKind::Tools, &map, None, 1, None).unwrap();
        let grown = entries(&["a", "b", "c"]);
        let second = page(ListKind::Tools, &grown, cursor_of(&first), 5, None).unwrap();
        assert_eq!(second["tools"], json!(["b", "c"]));
        assert!(page(ListKind::Tools, &map, Some("not a cursor!"), 1, None).is_err());
        assert!(page(ListKind::Prompts, &map, cursor_of(&first), 1, None).is_err());
    }

    mod properties {
        use std::collections::BTreeSet;

        use proptest::prelude::*;

        use super::*;

        /// A change to the catalog between two pages: plugins adding or removing entries.
        #[derive(Debug, Clone)]
        enum Change {
            Add(String),
            Remove(usize),
        }

        fn change() -> impl Strategy<Value = Change> {
            prop_oneof![
                "[a-f]{1,3}".prop_map(Change::Add),
                any::<usize>().prop_map(Change::Remove)
            ]
        }

        proptest! {
            /// A walk through any list, with any page size, while entries come and go
            /// between pages, ends; it yields no entry twice, in order, and every entry
            /// that was there for the whole walk exactly once.
            #[test]
            fn every_walk_yields_each_entry_once(
                initial in proptest::collection::btree_set("[a-f]{1,3}", 0..30),
                size in 1usize..7,
                changes in proptest::collection::vec(proptest::collection::vec(change(), 0..4), 0..40),
                kind in prop_oneof![
                    Just(ListKind::Tools), Just(ListKind::Prompts), Just(ListKind::Resources),
                    Just(ListKind::Templates), Just(ListKind::Tasks)
                ],
            ) {
                let mut map = entries(&initial.iter().map(String::as_str).collect::<Vec<_>>());
                let mut always: BTreeSet<String> = initial.clone();
                let mut ever: BTreeSet<String> = initial;
                let mut seen: Vec<String> = Vec::new();
                let mut cursor: Option<String> = None;
                let mut changes = changes.into_iter();
                loop {
                    let page = page(kind, &map, cursor.as_deref(), size, None).unwrap();
                    let items = page[kind.result_key()].as_array().unwrap();
                    prop_assert!(items.len() <= size);
                    seen.extend(items.iter().map(|k| k.as_str().unwrap().to_owned()));
                    let Some(next) = cursor_of(&page) else { break };
                    cursor = Some(next.to_owned());
                    for change in changes.next().unwrap_or_default() {
                        match change {
                            Change::Add(key) => {
                                ever.insert(key.clone());
                                map.insert(key.clone(), json!(key));
                            }
                            Change::Remove(at) if !map.is_empty() => {
                                let key = map.keys().nth(at % map.len()).unwrap().clone();
                                map.remove(&key);
                                always.remove(&key);
                            }
                            Change::Remove(_) => {}
                        }
                    }
                }
                prop_assert!(seen.windows(2).all(|w| w[0] < w[1]), "in order, none twice: {:?}", seen);
                prop_assert!(seen.iter().all(|k| ever.contains(k)));
                for key in &always {
                    prop_assert!(seen.contains(key), "{} was listed the whole walk but never seen", key);
                }
            }
        }
    }

    struct Guarded(Value, Vec<String>);

    impl Listed for Guarded {
        fn listed(&self) -> &Value {
            &self.0
        }
        fn scopes(&self) -> &[String] {
            &self.1
        }
    }

    #[test]
    fn a_list_depends_on_its_caller_only_when_scopes_filter_it() {
        let reader = Principal::oauth("https://as", "ada", None, ["notes:read".to_owned()].into());
        let guarded = BTreeMap::from([
            ("a".to_owned(), Guarded(json!("a"), vec![])),
            ("b".to_owned(), Guarded(json!("b"), vec!["notes:write".into()])),
        ]);
        assert!(depends_on_caller(&guarded, Some(&reader)));
        assert!(
            !depends_on_caller(&guarded, Some(&Principal::static_token(0))),
            "static tokens see everything"
        );
        assert!(!depends_on_caller(&guarded, None));
        assert!(
            !depends_on_caller(&entries(&["a"]), Some(&reader)),
            "nothing needs a scope"
        );
        assert_eq!(
            page(ListKind::Tools, &guarded, None, 5, Some(&reader)).unwrap(),
            json!({ "tools": ["a"] })
        );
    }

    #[test]
    fn templates_are_listed_under_their_protocol_key() {
        let result = page(ListKind::Templates, &entries(&["t"]), None, 5, None).unwrap();
        assert_eq!(result, json!({ "resourceTemplates": ["t"] }));
    }
}
