//! JSON Schemas derived from Rust types with `schemars`: the input schema of a
//! tool or prompt (how its arguments deserialize) and the output schema of a
//! structured tool result (how it serializes). Draft 2020-12, inlined, with
//! an object at the root as MCP requires.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

/// The schema of the arguments `T` deserializes from.
pub(crate) fn input_schema<T: JsonSchema>() -> Value {
    object_schema::<T>(SchemaSettings::draft2020_12().for_deserialize())
}

/// The schema of the value `T` serializes to.
pub(crate) fn output_schema<T: JsonSchema>() -> Value {
    object_schema::<T>(SchemaSettings::draft2020_12().for_serialize())
}

/// Generates the schema of `T`, inlined and without the root `$schema` and
/// `title` (MCP's default dialect is 2020-12, and the tool has its own name).
///
/// A type that accepts anything (`serde_json::Value`) becomes an object with
/// no declared properties. Any other non-object type is a programming error:
/// MCP arguments and structured results are JSON objects.
fn object_schema<T: JsonSchema>(settings: SchemaSettings) -> Value {
    let generator = settings
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut schema {
        map.remove("title");
    }
    match schema {
        Value::Bool(true) => json!({"type": "object", "properties": {}}),
        Value::Object(map) if map.is_empty() => json!({"type": "object", "properties": {}}),
        Value::Object(mut map) if map.get("type") == Some(&json!("object")) => {
            map.entry("properties").or_insert_with(|| json!({}));
            Value::Object(map)
        }
        other => panic!(
            "`{}` must be a struct with named fields (a JSON object), but its schema is {other}",
            T::schema_name()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoArgs;

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    /// Arguments.
    struct Args {
        /// The text.
        text: String,
        to: Option<Case>,
    }

    #[derive(serde::Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Case {
        Upper,
        Lower,
    }

    #[test]
    fn empty_args_are_an_object_with_properties() {
        assert_eq!(input_schema::<NoArgs>(), json!({"type": "object", "properties": {}}));
        assert_eq!(input_schema::<Value>(), json!({"type": "object", "properties": {}}));
    }

    #[test]
    fn nested_types_are_inlined() {
        let schema = input_schema::<Args>();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["description"], "Arguments.");
        assert_eq!(schema["properties"]["text"]["description"], "The text.");
        assert_eq!(schema["required"], json!(["text"]));
        assert!(schema.get("$defs").is_none(), "{schema}");
        assert!(schema.get("title").is_none());
        assert_eq!(schema["properties"]["to"]["enum"], json!(["upper", "lower", null]));
    }
}
