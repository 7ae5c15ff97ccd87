//! Small lookups over MCP results with failure messages that show what was
//! there instead: items by name, text blocks of a result.

use serde_json::Value;

/// The `name` (or `uri`) of every item, for failure messages and set checks.
pub fn names(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|item| {
            item.get("name")
                .or_else(|| item.get("uri"))
                .or_else(|| item.get("uriTemplate"))
                .and_then(Value::as_str)
                .unwrap_or("<unnamed>")
                .to_string()
        })
        .collect()
}

/// The item whose `name` is `name`; fails listing the names there are.
#[track_caller]
pub fn by_name<'a>(items: &'a [Value], name: &str) -> &'a Value {
    by_field(items, "name", name)
}

/// The item whose `field` equals `value`; fails listing what there is.
#[track_caller]
pub fn by_field<'a>(items: &'a [Value], field: &str, value: &str) -> &'a Value {
    let found: Vec<&Value> = items.iter().filter(|i| i[field] == value).collect();
    match found.as_slice() {
        [one] => one,
        [] => panic!("no item with {field} = {value:?}; there are: {:?}", names(items)),
        many => panic!("{} items with {field} = {value:?}: {many:?}", many.len()),
    }
}

/// The `text` of every text block in a result's `content`.
pub fn texts(result: &Value) -> Vec<String> {
    result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("the result has no `content` array: {result}"))
        .iter()
        .filter(|block| block["type"] == "text")
        .map(|block| block["text"].as_str().expect("a text block has text").to_string())
        .collect()
}

/// The text of a result whose content is exactly one text block.
#[track_caller]
pub fn single_text(result: &Value) -> String {
    let content = result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("the result has no `content` array: {result}"));
    assert!(
        content.len() == 1 && content[0]["type"] == "text",
        "expected exactly one text block, got: {result}"
    );
    content[0]["text"].as_str().expect("a text block has text").to_string()
}

/// Whether the result is a tool execution error (`isError: true`).
pub fn is_tool_error(result: &Value) -> bool {
    result.get("isError") == Some(&Value::Bool(true))
}

/// Asserts the result is a successful tool result (no `isError: true`).
#[track_caller]
pub fn tool_ok(result: &Value) {
    assert!(!is_tool_error(result), "the tool call failed: {result}");
}

/// Whether an error message names `field` as a field (`/field`, `"field"`,
/// `` `field` `` or `'field'`), not merely contains its letters.
pub fn names_field(message: &str, field: &str) -> bool {
    [
        format!("/{field}"),
        format!("\"{field}\""),
        format!("`{field}`"),
        format!("'{field}'"),
    ]
    .iter()
    .any(|form| message.contains(form.as_str()))
}
