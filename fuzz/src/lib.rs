//! What the fuzz targets share: structure-aware generators of JSON values and
//! the checks every message the host sends must pass.

use arbitrary::{Result, Unstructured};
use serde_json::{Map, Number, Value};

/// Strings that steer generated JSON toward what the host looks for.
const WORDS: &[&str] = &[
    "type",
    "object",
    "string",
    "number",
    "properties",
    "required",
    "items",
    "pattern",
    "format",
    "enum",
    "$ref",
    "#",
    "$schema",
    "minLength",
    "maxLength",
    "multipleOf",
    "text",
    "image",
    "audio",
    "tool_use",
    "tool_result",
    "data",
    "mimeType",
    "role",
    "user",
    "assistant",
    "content",
    "model",
    "action",
    "accept",
    "decline",
    "cancel",
    "uri",
    "name",
    "cursor",
    "taskId",
    "ttl",
    "task",
    "arguments",
    "_meta",
    "progressToken",
    "input",
    "toolUseId",
    "structuredContent",
    "isError",
    "id",
    "jsonrpc",
    "2.0",
    "method",
];

/// An arbitrary JSON value, at most `depth` levels deep.
pub fn json_value(u: &mut Unstructured, depth: u32) -> Result<Value> {
    let kinds = if depth == 0 { 5 } else { 7 };
    Ok(match u.choose_index(kinds)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => number(u)?,
        3 => Value::String(u.arbitrary()?),
        4 => Value::String((*u.choose(WORDS)?).to_owned()),
        5 => Value::Array(
            (0..u.int_in_range(0..=4)?)
                .map(|_| json_value(u, depth - 1))
                .collect::<Result<_>>()?,
        ),
        _ => {
            let mut object = Map::new();
            for _ in 0..u.int_in_range(0..=5)? {
                let key = if u.arbitrary()? {
                    (*u.choose(WORDS)?).to_owned()
                } else {
                    u.arbitrary()?
                };
                object.insert(key, json_value(u, depth - 1)?);
            }
            Value::Object(object)
        }
    })
}

fn number(u: &mut Unstructured) -> Result<Value> {
    Ok(match u.choose_index(3)? {
        0 => Value::from(u.arbitrary::<i64>()?),
        1 => Value::from(u.arbitrary::<u64>()?),
        _ => Number::from_f64(u.arbitrary()?).map_or(Value::Null, Value::Number),
    })
}

/// JSON text as a plugin may produce it: mostly valid JSON, sometimes anything.
pub fn json_text(u: &mut Unstructured) -> Result<String> {
    if u.ratio(1, 8)? {
        u.arbitrary()
    } else {
        Ok(json_value(u, 4)?.to_string())
    }
}

/// Panics unless nothing in `value` is `null`: the host leaves absent
/// optional fields out, and the MCP schema has no nullable fields in what
/// the host renders from plugin output.
pub fn assert_no_null(value: &Value, what: &str) {
    match value {
        Value::Null => panic!("{what} renders a null: {value}"),
        Value::Array(items) => items.iter().for_each(|item| assert_no_null(item, what)),
        Value::Object(fields) => {
            for (key, field) in fields {
                // Plugin-provided JSON (`_meta`, schemas, structured content) is embedded as given.
                if !matches!(
                    key.as_str(),
                    "_meta"
                        | "inputSchema"
                        | "outputSchema"
                        | "structuredContent"
                        | "input"
                        | "metadata"
                        | "tools"
                        | "toolChoice"
                ) {
                    assert_no_null(field, &format!("{what}.{key}"));
                }
            }
        }
        _ => {}
    }
}

/// Panics unless `message` is a well-formed JSON-RPC 2.0 response (a result
/// or an error, never both) to `id` (absent only for an unreadable request).
pub fn assert_response(message: &Value, id: Option<&Value>) {
    assert_eq!(message["jsonrpc"], "2.0", "{message}");
    assert_eq!(message.get("id"), id, "the response names the request: {message}");
    match (message.get("result"), message.get("error")) {
        (Some(result), None) => assert!(result.is_object(), "a result is an object: {message}"),
        (None, Some(error)) => {
            assert!(error["code"].is_i64(), "an error has an integer code: {message}");
            let text = error["message"].as_str().expect("an error has a message");
            assert!(!text.is_empty(), "an error says what was wrong: {message}");
        }
        _ => panic!("a response has exactly one of result and error: {message}"),
    }
    let line = serde_json::to_string(message).expect("a message serializes");
    assert!(!line.contains('\n'), "a message fits on one line");
}
