//! Arguments as handlers receive them: [`NoArgs`] for a tool or prompt that
//! takes none, [`Arguments`] for string values by name (resource-template
//! variables, completion context), and the decoding of raw arguments into the
//! handler's own type.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The argument type of a tool or prompt that takes no arguments.
///
/// Its schema is `{"type": "object", "properties": {}}`; unknown fields are
/// ignored.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct NoArgs {}

impl JsonSchema for NoArgs {
    fn schema_name() -> Cow<'static, str> {
        "NoArgs".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "object", "properties": {}})
    }

    fn inline_schema() -> bool {
        true
    }
}

/// String values by name, in the order they were given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Arguments(Vec<(String, String)>);

impl Arguments {
    /// The value of `name`, if present.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// Every name and value.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(key, value)| (key.as_str(), value.as_str()))
    }
}

impl From<Vec<(String, String)>> for Arguments {
    fn from(pairs: Vec<(String, String)>) -> Self {
        Arguments(pairs)
    }
}

/// Decodes a tool's JSON arguments; absent arguments (empty or `null`) are `{}`.
pub(crate) fn from_json<A: DeserializeOwned>(arguments: &str) -> serde_json::Result<A> {
    match arguments.trim() {
        "" | "null" => serde_json::from_str("{}"),
        json => serde_json::from_str(json),
    }
}

/// Decodes a prompt's string arguments as a JSON object of strings.
pub(crate) fn from_pairs<A: DeserializeOwned>(pairs: Vec<(String, String)>) -> serde_json::Result<A> {
    let object = pairs
        .into_iter()
        .map(|(key, value)| (key, Value::String(value)))
        .collect();
    serde_json::from_value(Value::Object(object))
}
