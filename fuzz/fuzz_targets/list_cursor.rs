//! Pagination cursors and task ids, as a client sends them back: any string
//! (or any JSON) is a valid page or a clear invalid-params error, and a
//! cursor the host issued leads on to the entries after that page.
#![no_main]

use std::collections::BTreeMap;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use wasm_mcp::fuzzing::jsonrpc::INVALID_PARAMS;
use wasm_mcp::fuzzing::{ListKind, Method, Request, RpcError, TaskSettings, TaskStore, page};

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

const KINDS: [(ListKind, &str, &str); 5] = [
    (ListKind::Tools, "tools", "tools/list"),
    (ListKind::Prompts, "prompts", "prompts/list"),
    (ListKind::Resources, "resources", "resources/list"),
    (ListKind::Templates, "resourceTemplates", "resources/templates/list"),
    (ListKind::Tasks, "tasks", "tasks/list"),
];

/// The page a list request with `params` asks for, as the session reads it.
fn list_page(method: &str, entries: &BTreeMap<String, Value>, params: Value, size: usize) -> Result<Value, RpcError> {
    match Request::parse(&Method::from_name(method), None, params)? {
        Request::List { kind, cursor } => page(kind, entries, cursor.as_deref(), size, None),
        other => panic!("{method} parsed as {other:?}"),
    }
}

fuzz_target!(|input: Input| {
    let (kind, key, method) = KINDS[input.kind as usize % KINDS.len()];
    let size = usize::from(input.size).max(1);
    let entries: BTreeMap<String, Value> = input.keys.iter().map(|k| (k.clone(), json!(k))).collect();
    let cursor = match &input.cursor {
        Cursor::Text(text) => json!(text),
        Cursor::Number(n) => json!(n),
        Cursor::Bool(b) => json!(b),
        Cursor::Issued(suffix) => {
            let first = page(kind, &entries, None, size, None).expect("the first page always exists");
            match first.get("nextCursor").and_then(Value::as_str) {
                Some(next) => json!(format!("{next}{suffix}")),
                None => json!(suffix),
            }
        }
    };
    match list_page(method, &entries, json!({ "cursor": cursor }), size) {
        Ok(result) => {
            let items = result[key].as_array().expect("a page lists its entries");
            assert!(items.len() <= size);
            if let Some(next) = result.get("nextCursor") {
                assert_eq!(items.len(), size, "only a full page has a next one");
                let rest = page(kind, &entries, next.as_str(), usize::MAX, None).expect("issued cursors work");
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
