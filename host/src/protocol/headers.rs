//! The HTTP headers of the 2026-07-28 revision that mirror a request's
//! body: how their values are written (plain, or `=?base64?…?=`), the
//! error when they disagree with the body (-32020), and the
//! `Mcp-Param-{Name}` headers of a `tools/call` ([`MirroredParams`]), which
//! the transport collects and the request checks once it knows the tool's
//! input schema.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::Value;

use super::RpcError;
use super::modern::HEADER_MISMATCH;

/// The prefix of the headers that mirror a tool's arguments.
const PARAM_PREFIX: &str = "mcp-param-";

/// A header that disagrees with the body, or a required one missing.
pub fn mismatch(message: String) -> RpcError {
    RpcError::new(HEADER_MISMATCH, format!("Header mismatch: {message}"))
}

/// A header value in the revision's Base64 form (`=?base64?…?=`) decoded;
/// plain values as they are.
///
/// # Errors
///
/// What is wrong with a Base64 form that does not decode to UTF-8 text.
pub fn decoded(value: &str) -> Result<String, String> {
    match value.strip_prefix("=?base64?").and_then(|v| v.strip_suffix("?=")) {
        Some(encoded) => BASE64
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(|| format!("{value:?} is not valid Base64 of UTF-8 text")),
        None => Ok(value.to_owned()),
    }
}

/// The `Mcp-Param-{Name}` headers a `tools/call` came with, by name
/// (lowercase, as HTTP compares them), each trimmed value as sent (`None`:
/// it held characters outside visible ASCII).
#[derive(Debug, Default)]
pub struct MirroredParams(Vec<(String, Option<String>)>);

impl MirroredParams {
    /// The `Mcp-Param-*` headers among `headers` (name, and the value when
    /// it is visible ASCII); any other header is left out.
    pub fn collect<'a>(headers: impl IntoIterator<Item = (&'a str, Option<&'a str>)>) -> Self {
        Self(
            headers
                .into_iter()
                .filter(|(name, _)| {
                    name.get(..PARAM_PREFIX.len())
                        .is_some_and(|prefix| prefix.eq_ignore_ascii_case(PARAM_PREFIX))
                })
                .map(|(name, value)| (name.to_ascii_lowercase(), value.map(|value| value.trim().to_owned())))
                .collect(),
        )
    }

    /// The header named `Mcp-Param-{name}`, if sent.
    fn get(&self, name: &str) -> Option<&Option<String>> {
        let wanted = format!("{PARAM_PREFIX}{}", name.to_ascii_lowercase());
        self.0.iter().find(|(sent, _)| *sent == wanted).map(|(_, value)| value)
    }

    /// Checks them against the call's `arguments`: every property of the
    /// tool's input `schema` annotated `x-mcp-header` (reached through
    /// `properties` alone) is mirrored by its header when the argument is
    /// present, and only then, with the same value.
    ///
    /// # Errors
    ///
    /// A header mismatch (-32020) naming the header and the argument.
    pub fn check(&self, schema: &Value, arguments: &Value) -> Result<(), RpcError> {
        let mut mirrored = Vec::new();
        mirrored_properties(schema, &mut Vec::new(), &mut mirrored);
        for (name, path) in mirrored {
            let value = path.iter().try_fold(arguments, |value, key| value.get(key));
            let header_name = format!("Mcp-Param-{name}");
            let header = match self.get(name) {
                None => None,
                Some(None) => {
                    return Err(mismatch(format!(
                        "the {header_name} header holds characters outside visible ASCII; send such values as =?base64?…?="
                    )));
                }
                Some(Some(header)) => Some(header),
            };
            let argument = path.join(".");
            match (value, header) {
                (None, None) => {}
                (Some(_), None) => {
                    return Err(mismatch(format!(
                        "the {header_name} header is required: the argument {argument:?} is in the body"
                    )));
                }
                (None, Some(_)) => {
                    return Err(mismatch(format!(
                        "the {header_name} header is sent but the body has no argument {argument:?}"
                    )));
                }
                (Some(value), Some(header)) => {
                    let header = decoded(header).map_err(|why| mismatch(format!("{header_name} header {why}")))?;
                    let body = match value {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    if header != body {
                        return Err(mismatch(format!(
                            "{header_name} header value {header:?} does not match the argument {argument:?} ({body:?})"
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}

/// The `x-mcp-header` names in `schema` with the property path to each.
fn mirrored_properties<'a>(schema: &'a Value, path: &mut Vec<&'a str>, found: &mut Vec<(&'a str, Vec<&'a str>)>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, property) in properties {
        path.push(key);
        if let Some(name) = property.get("x-mcp-header").and_then(Value::as_str) {
            found.push((name, path.clone()));
        }
        mirrored_properties(property, path, found);
        path.pop();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn mirrored_parameters_must_match_their_arguments() {
        let schema = json!({ "type": "object", "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "options": { "type": "object", "properties": { "dry": { "type": "boolean", "x-mcp-header": "Dry" } } },
            "query": { "type": "string" },
        }});
        let check = |pairs: &[(&str, Option<&str>)], arguments: Value| {
            MirroredParams::collect(pairs.iter().copied()).check(&schema, &arguments)
        };
        let arguments = json!({ "region": "us-west1", "options": { "dry": true }, "query": "q" });
        assert!(
            check(
                &[
                    ("Mcp-Param-Region", Some(" us-west1 ")),
                    ("mcp-param-dry", Some("true"))
                ],
                arguments.clone()
            )
            .is_ok()
        );
        assert!(
            check(
                &[
                    ("mcp-param-region", Some("=?base64?dXMtd2VzdDE=?=")),
                    ("mcp-param-dry", Some("true")),
                    ("content-type", None),
                ],
                arguments.clone()
            )
            .is_ok()
        );
        let missing = check(&[("mcp-param-region", Some("us-west1"))], arguments.clone()).unwrap_err();
        assert!(
            missing.message.contains("Mcp-Param-Dry header is required"),
            "{}",
            missing.message
        );
        let wrong = check(
            &[("mcp-param-region", Some("eu")), ("mcp-param-dry", Some("true"))],
            arguments.clone(),
        )
        .unwrap_err();
        assert_eq!(wrong.code, HEADER_MISMATCH);
        let not_ascii = check(
            &[("mcp-param-region", None), ("mcp-param-dry", Some("true"))],
            arguments.clone(),
        )
        .unwrap_err();
        assert!(not_ascii.message.contains("visible ASCII"), "{}", not_ascii.message);
        assert!(
            check(
                &[
                    ("mcp-param-region", Some("=?base64?dXMtd2VzdDE?=")),
                    ("mcp-param-dry", Some("true"))
                ],
                arguments
            )
            .is_err()
        );
        assert!(check(&[], json!({ "query": "q" })).is_ok());
        assert!(check(&[("mcp-param-region", Some("x"))], json!({})).is_err());
    }
}
