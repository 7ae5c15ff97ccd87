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
    drop_nonstandard_formats(&mut schema);
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

/// The `format` values JSON Schema 2020-12 defines; clients' validators know these.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Removes formats schemars adds for Rust number types (`uint`, `int32`, `double`, …):
/// they are not JSON Schema formats, and clients' validators warn about them.
/// The ranges they imply stay, as `minimum` and `maximum`.
fn drop_nonstandard_formats(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| !STANDARD_FORMATS.contains(&f))
            {
                map.remove("format");
            }
            map.values_mut().for_each(drop_nonstandard_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nonstandard_formats),
        _ => {}
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

    #[derive(serde::Serialize, JsonSchema)]
    struct Counts {
        words: usize,
        ratio: f64,
    }

    #[test]
    fn rust_number_formats_are_dropped_but_ranges_stay() {
        let schema = output_schema::<Counts>();
        assert!(schema["properties"]["words"].get("format").is_none(), "{schema}");
        assert_eq!(schema["properties"]["words"]["minimum"], json!(0));
        assert!(schema["properties"]["ratio"].get("format").is_none(), "{schema}");
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
