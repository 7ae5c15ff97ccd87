//! What a tool returns: [`IntoToolResult`] turns plain Rust values (a string,
//! content blocks, a [`Structured`] value, a `Result`) into a `CallToolResult`.

use std::fmt::Display;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::{CallToolResult, ContentBlock, schema};

/// A value a tool handler can return.
pub trait IntoToolResult {
    /// Converts the value into the result sent to the client.
    fn into_tool_result(self) -> CallToolResult;

    /// The output schema this type declares, or `None` (the default) for
    /// unstructured results.
    fn output_schema() -> Option<Value> {
        None
    }
}

/// A structured tool result: `T` is sent as `structuredContent` and, for
/// clients that only read content, as a text block of serialized JSON. The
/// tool's output schema is derived from `T`, which must serialize to an object.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Structured<T>(pub T);

impl CallToolResult {
    /// A successful result with these content blocks.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        CallToolResult {
            content,
            structured_content: None,
            is_error: false,
            meta: None,
        }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![ContentBlock::text(text)])
    }

    /// A tool execution error the model can read and correct.
    pub fn error(message: impl Into<String>) -> Self {
        CallToolResult {
            is_error: true,
            ..Self::text(message)
        }
    }

    /// A successful structured result: `value` as `structuredContent` and as
    /// a text block of serialized JSON.
    pub fn structured(value: Value) -> Self {
        let json = value.to_string();
        CallToolResult {
            structured_content: Some(json.clone()),
            ..Self::text(json)
        }
    }

    /// Sets the result's `_meta` object.
    pub fn with_meta(mut self, meta: Value) -> Self {
        self.meta = Some(meta.to_string());
        self
    }
}

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> CallToolResult {
        self
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

impl IntoToolResult for &str {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

impl IntoToolResult for ContentBlock {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::new(vec![self])
    }
}

impl IntoToolResult for Vec<ContentBlock> {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::new(self)
    }
}

impl<T: Serialize + JsonSchema> IntoToolResult for Structured<T> {
    fn into_tool_result(self) -> CallToolResult {
        match serde_json::to_value(&self.0) {
            Ok(value) => CallToolResult::structured(value),
            Err(e) => CallToolResult::error(format!("the tool's result does not serialize: {e}")),
        }
    }

    fn output_schema() -> Option<Value> {
        Some(schema::output_schema::<T>())
    }
}

/// `Err(e)` becomes an error result with `e`'s `Display` text.
impl<R: IntoToolResult, E: Display> IntoToolResult for Result<R, E> {
    fn into_tool_result(self) -> CallToolResult {
        match self {
            Ok(value) => value.into_tool_result(),
            Err(e) => CallToolResult::error(e.to_string()),
        }
    }

    fn output_schema() -> Option<Value> {
        R::output_schema()
    }
}
