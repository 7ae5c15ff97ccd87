//! Pagination cursors and task ids, as a client sends them back: any string
//! (or any JSON) is a valid page or a clear invalid-params error, and a
//! cursor the host issued leads on to the entries after that page.
#![no_main]

use std::collections::BTreeMap;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use wasm_mcp::catalog::pagination::{ListKind, page};
use wasm_mcp::protocol::jsonrpc::INVALID_PARAMS;
use wasm_mcp::tasks::{TaskSettings, TaskStore};

#[derive(Arbitrary, Debug)]
struct Input {
    keys: Vec<String>,
    kind: u8,
    size: u8,
    cursor: Cursor,
    task_id: String,
}

#[derive(Arbitrary, Debug)]
enum Cursor {
    Text(String),
    Number(i64),
    Bool(bool),
    /// Follow the first page's cursor, then this text appended to it.
    Issued(String),
}

const KINDS: [(ListKind, &str); 5] = [
    (ListKind::Tools, "tools"),
    (ListKind::Prompts, "prompts"),
    (ListKind::Resources, "resources"),
    (ListKind::Templates, "resourceTemplates"),
    (ListKind::Tasks, "tasks"),
];

fuzz_target!(|input: Input| {
    let (kind, key) = KINDS[input.kind as usize % KINDS.len()];
    let size = usize::from(input.size).max(1);
    let entries: BTreeMap<String, Value> = input.keys.iter().map(|k| (k.clone(), json!(k))).collect();
    let cursor = match &input.cursor {
        Cursor::Text(text) => json!(text),
        Cursor::Number(n) => json!(n),
        Cursor::Bool(b) => json!(b),
        Cursor::Issued(suffix) => {
            let first = page(kind, &entries, &json!({}), size).expect("the first page always exists");
            match first.get("nextCursor").and_then(Value::as_str) {
                Some(next) => json!(format!("{next}{suffix}")),
                None => json!(suffix),
            }
        }
    };
    match page(kind, &entries, &json!({ "cursor": cursor }), size) {
        Ok(result) => {
            let items = result[key].as_array().expect("a page lists its entries");
            assert!(items.len() <= size);
            if let Some(next) = result.get("nextCursor") {
                assert_eq!(items.len(), size, "only a full page has a next one");
                let rest = page(kind, &entries, &json!({ "cursor": next }), usize::MAX).expect("issued cursors work");
                let last = items.last().unwrap().as_str().unwrap();
                let rest = rest[key].as_array().unwrap();
                assert!(!rest.is_empty());
                assert!(
                    rest.iter().all(|k| k.as_str().unwrap() > last),
                    "the next page starts after this one"
                );
            }
        }
        Err(error) => {
            assert_eq!(error.code, INVALID_PARAMS);
            assert!(error.message.contains("cursor"), "{}", error.message);
        }
    }
    let store = TaskStore::new(TaskSettings::default());
    let task = store.create(None).unwrap();
    match store.get(&input.task_id) {
        Ok(found) => assert_eq!(found.id, input.task_id, "only the exact id finds a task"),
        Err(error) => {
            assert_ne!(input.task_id, task.id);
            assert_eq!(error.code, INVALID_PARAMS);
        }
    }
});
