//! JSON-RPC 2.0 messages: parsing what the client sends and rendering what we send.

use std::fmt;

use serde_json::{Value, json};

/// The message is not JSON (or not UTF-8).
pub const PARSE_ERROR: i32 = -32700;
/// The message is not one this server can take: not JSON-RPC 2.0, too
/// large, or out of order in its session.
pub const INVALID_REQUEST: i32 = -32600;
/// The method is not one this server serves.
pub const METHOD_NOT_FOUND: i32 = -32601;
/// The params lack what the method needs, or hold it in the wrong type.
pub const INVALID_PARAMS: i32 = -32602;
/// The server failed to serve a valid request.
pub const INTERNAL_ERROR: i32 = -32603;
/// MCP's code for a URI that names no resource.
pub const RESOURCE_NOT_FOUND: i32 = -32002;
/// JSON-RPC's implementation-defined server error: a limit was reached or the server is stopping.
pub const SERVER_ERROR: i32 = -32000;

/// A request id: a string or an integer, echoed exactly as the client sent it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RequestId(String);

impl RequestId {
    /// Accepts only what JSON-RPC allows for MCP: strings and integers.
    pub fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::String(_) => Some(Self(value.to_string())),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(Self(value.to_string())),
            _ => None,
        }
    }

    /// The id as JSON, as the client sent it.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.0).expect("a request id is valid JSON")
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The error code.
    pub code: i32,
    /// What went wrong, for the client to read.
    pub message: String,
    /// Detail for a program to read (`data`), if any.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error of `code` saying `message`, with no data.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// An [`INVALID_PARAMS`] error saying `message`.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }

    /// An [`INTERNAL_ERROR`] saying `message`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(INTERNAL_ERROR, message)
    }

    /// A [`METHOD_NOT_FOUND`] error naming `method`.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(METHOD_NOT_FOUND, format!("Method not found: {method}"))
    }

    /// A [`RESOURCE_NOT_FOUND`] error naming `uri`, with the URI in its data.
    pub fn resource_not_found(uri: &str) -> Self {
        let mut error = Self::new(RESOURCE_NOT_FOUND, format!("Resource not found: {uri}"));
        error.data = Some(json!({ "uri": uri }));
        error
    }

    /// The error object as it goes on the wire.
    pub fn to_value(&self) -> Value {
        let mut error = json!({ "code": self.code, "message": self.message });
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }

    /// An error object a client sent.
    pub(super) fn from_value(value: &Value) -> Self {
        Self {
            code: value
                .get("code")
                .and_then(Value::as_i64)
                .unwrap_or(INTERNAL_ERROR as i64) as i32,
            message: value.get("message").and_then(Value::as_str).unwrap_or("").to_owned(),
            data: value.get("data").cloned(),
        }
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

/// The length of `value` serialized, counted without building the text.
pub fn serialized_len(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    serde_json::to_writer(&mut counter, value).expect("a JSON value serializes");
    counter.0
}

/// A success response to request `id`.
pub fn response(id: &RequestId, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id.to_value(), "result": result })
}

/// An error response. When the id could not be read (a parse error) it is left
/// out, as the MCP schema requires, rather than sent as null.
pub fn error_response(id: Option<&RequestId>, error: &RpcError) -> Value {
    let mut message = json!({ "jsonrpc": "2.0", "error": error.to_value() });
    if let Some(id) = id {
        message["id"] = id.to_value();
    }
    message
}

/// A notification of `method` with `params`.
pub fn notification(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

/// A request to the client: `method` with `params`, under the integer `id`.
pub fn request(id: i64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}
