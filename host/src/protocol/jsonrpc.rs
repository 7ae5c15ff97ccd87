//! JSON-RPC 2.0 messages: parsing what the client sends and rendering what we send.

use std::fmt;

use serde_json::{Map, Value, json};

pub const PARSE_ERROR: i32 = -32700;
pub const INVALID_REQUEST: i32 = -32600;
pub const METHOD_NOT_FOUND: i32 = -32601;
pub const INVALID_PARAMS: i32 = -32602;
pub const INTERNAL_ERROR: i32 = -32603;
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
    pub code: i32,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(INTERNAL_ERROR, message)
    }

    pub fn method_not_found(method: &str) -> Self {
        Self::new(METHOD_NOT_FOUND, format!("Method not found: {method}"))
    }

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

    fn from_value(value: &Value) -> Self {
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

/// A message from the client.
#[derive(Debug)]
pub enum Incoming {
    Request {
        id: RequestId,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    Response {
        id: RequestId,
        outcome: Result<Value, RpcError>,
    },
}

/// A message that could not be understood, and the id to answer it with (null when unknown).
#[derive(Debug)]
pub struct Unparseable {
    pub id: Option<RequestId>,
    pub error: RpcError,
}

impl Incoming {
    /// Parses one framed message as it arrived, in bytes: a message that is
    /// not UTF-8 is a parse error like any other malformed one.
    pub fn parse_bytes(bytes: &[u8]) -> Result<Self, Box<Unparseable>> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            Box::new(Unparseable {
                id: None,
                error: RpcError::new(
                    PARSE_ERROR,
                    format!("Parse error: the message is not UTF-8 ({e}). Send JSON-RPC 2.0 messages in UTF-8."),
                ),
            })
        })?;
        Self::parse(text)
    }

    /// Parses one framed message (a line on stdio, a body over HTTP).
    pub fn parse(text: &str) -> Result<Self, Box<Unparseable>> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            Box::new(Unparseable {
                id: None,
                error: RpcError::new(
                    PARSE_ERROR,
                    format!("Parse error: {e}. Send one JSON-RPC 2.0 object per message."),
                ),
            })
        })?;
        Self::from_value(value)
    }

    pub fn from_value(value: Value) -> Result<Self, Box<Unparseable>> {
        let Value::Object(mut object) = value else {
            return Err(Box::new(Unparseable {
                id: None,
                error: RpcError::new(
                    INVALID_REQUEST,
                    "Invalid Request: a message must be a JSON object (batches are not supported)",
                ),
            }));
        };
        let raw_id = object.remove("id");
        let id = raw_id.as_ref().and_then(RequestId::from_value);
        let invalid = |id: Option<RequestId>, why: &str| {
            Box::new(Unparseable {
                id,
                error: RpcError::new(INVALID_REQUEST, format!("Invalid Request: {why}")),
            })
        };
        if object.get("jsonrpc") != Some(&Value::String("2.0".into())) {
            return Err(invalid(id, "\"jsonrpc\" must be \"2.0\""));
        }
        if raw_id.is_some() && id.is_none() {
            return Err(invalid(None, "\"id\" must be a string or an integer"));
        }
        let params = match object.remove("params") {
            None => Value::Object(Map::new()),
            Some(p @ Value::Object(_)) => p,
            Some(_) => return Err(invalid(id, "\"params\" must be an object")),
        };
        match (object.remove("method"), id) {
            (Some(Value::String(method)), Some(id)) => Ok(Incoming::Request { id, method, params }),
            (Some(Value::String(method)), None) => Ok(Incoming::Notification { method, params }),
            (Some(_), id) => Err(invalid(id, "\"method\" must be a string")),
            (None, Some(id)) => {
                if let Some(result) = object.remove("result") {
                    Ok(Incoming::Response {
                        id,
                        outcome: Ok(result),
                    })
                } else if let Some(error) = object.remove("error") {
                    Ok(Incoming::Response {
                        id,
                        outcome: Err(RpcError::from_value(&error)),
                    })
                } else {
                    Err(invalid(Some(id), "a message needs \"method\", \"result\" or \"error\""))
                }
            }
            (None, None) => Err(invalid(None, "a message needs \"method\", \"result\" or \"error\"")),
        }
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

pub fn notification(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

pub fn request(id: i64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}
