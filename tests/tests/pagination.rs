//! Pagination across all plugins: with `--page-size 1` every list walks the
//! whole catalog one item per page, without duplicates or gaps, in the same
//! order as unpaginated; an invalid cursor is -32602.

use std::collections::HashSet;

use serde_json::{Value, json};
use wasm_mcp_tests::expect::names;
use wasm_mcp_tests::{PluginDir, StdioServer};

/// The lists and the field that holds their items.
const LISTS: [(&str, &str); 4] = [
    ("tools/list", "tools"),
    ("resources/list", "resources"),
    ("resources/templates/list", "resourceTemplates"),
    ("prompts/list", "prompts"),
];

/// The identity of a listed item.
/// Every built plugin, served one item to a page, initialized and loaded.
fn paged_by_one() -> StdioServer {
    let mut server = StdioServer::start_with_args(PluginDir::with_all_built(true), &["--page-size", "1"]);
    server.initialize(json!({}));
    server.wait_until_loaded();
    server
}

fn key(item: &Value) -> String {
    ["name", "uri", "uriTemplate"]
        .iter()
        .filter_map(|k| item.get(*k).and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every item of every list, each list walked with `list_all`.
fn catalog(server: &mut StdioServer) -> Vec<Vec<Value>> {
    LISTS
        .iter()
        .map(|(method, field)| server.list_all(method, field))
        .collect()
}

#[test]
fn page_size_one_walks_every_list_without_duplicates_or_gaps() {
    let mut reference = StdioServer::start(PluginDir::with_all_built(true));
    reference.initialize(json!({}));
    reference.wait_until_loaded();
    let expected = catalog(&mut reference);
    reference.shutdown();
    assert!(
        expected.iter().all(|items| items.len() >= 2),
        "each list needs at least two items to prove paging: {:?}",
        expected.iter().map(|items| names(items)).collect::<Vec<_>>()
    );

    let mut server = paged_by_one();
    for ((method, field), expected) in LISTS.iter().zip(&expected) {
        let mut walked: Vec<Value> = Vec::new();
        let mut cursor: Option<Value> = None;
        let mut pages = 0;
        loop {
            let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
            let response = server.request(method, params);
            let result = response.result().clone();
            let page = result[field].as_array().expect("a page of items").clone();
            pages += 1;
            assert_eq!(
                page.len(),
                1,
                "{method} page {pages} must hold exactly one item: {result}"
            );
            walked.extend(page);
            match result.get("nextCursor") {
                Some(next) => {
                    assert!(next.is_string(), "a cursor is an opaque string: {result}");
                    cursor = Some(next.clone());
                }
                None => break,
            }
            assert!(
                pages <= expected.len(),
                "{method}: more pages than items, pagination loops"
            );
        }
        let keys: Vec<String> = walked.iter().map(key).collect();
        let unique: HashSet<&String> = keys.iter().collect();
        assert_eq!(unique.len(), keys.len(), "{method}: duplicates in {keys:?}");
        assert_eq!(
            &walked, expected,
            "{method}: one item per page must give the same items, in the same order, as the full list"
        );
    }
    server.shutdown();
}

#[test]
fn an_invalid_cursor_is_invalid_params() {
    let mut server = paged_by_one();
    for (method, field) in LISTS {
        for cursor in [json!("not-a-cursor"), json!(""), json!("eyJvZmZzZXQiOjk5OTl9")] {
            server
                .request(method, json!({"cursor": cursor}))
                .expect_error_code(-32602);
        }
        server.request(method, json!({"cursor": 3})).expect_error_code(-32602);
        // A valid cursor still works afterwards.
        let first = server.request(method, json!({})).result().clone();
        let next = first["nextCursor"].clone();
        assert!(next.is_string(), "{method} with page size 1 has a second page: {first}");
        let second = server.request(method, json!({"cursor": next})).result().clone();
        assert_eq!(second[field].as_array().map(Vec::len), Some(1), "{second}");
    }
    server.shutdown();
}

#[test]
fn a_cursor_of_one_list_is_invalid_for_another() {
    let mut server = paged_by_one();
    let tools = server.request("tools/list", json!({})).result().clone();
    let cursor = tools["nextCursor"].clone();
    assert!(cursor.is_string(), "{tools}");
    server
        .request("prompts/list", json!({"cursor": cursor}))
        .expect_error_code(-32602);
    server
        .request("resources/list", json!({"cursor": cursor}))
        .expect_error_code(-32602);
    server.shutdown();
}

#[test]
fn a_cursor_can_be_used_twice() {
    let mut server = paged_by_one();
    let first = server.request("tools/list", json!({})).result().clone();
    let cursor = first["nextCursor"].clone();
    let a = server.request("tools/list", json!({"cursor": cursor})).result().clone();
    let b = server.request("tools/list", json!({"cursor": cursor})).result().clone();
    assert_eq!(a, b, "the same cursor gives the same page");
    server.shutdown();
}
