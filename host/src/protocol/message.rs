//! A message from the client, read: a request into its [`Envelope`], a
//! notification, or a response to a request of ours.

use serde_json::{Map, Value};

use super::envelope::Envelope;
use super::jsonrpc::{INVALID_REQUEST, PARSE_ERROR, RequestId, RpcError};

/// A message from the client.
#[derive(Debug)]
pub enum Incoming {
    /// A request, read into its envelope.
    Request(Box<Envelope>),
    /// A notification: a method and no id.
    Notification {
        /// Its method, as sent.
        method: String,
        /// Its params (`{}` when none were sent).
        params: Value,
    },
    /// A response to a request the server sent the client.
    Response {
        /// The id of the request it answers.
        id: RequestId,
        /// Its `result`, or its `error`.
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
    ///
    /// # Errors
    ///
    /// As [`Incoming::parse`]; bytes that are not UTF-8 are a parse error.
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
    ///
    /// # Errors
    ///
    /// As [`Incoming::from_value`]; text that is not JSON is a parse error.
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

    /// Reads one message already parsed as JSON.
    ///
    /// # Errors
    ///
    /// An invalid request when it is not a JSON-RPC 2.0 object with a
    /// `method`, a `result` or an `error`, or its id or params are of the
    /// wrong type; the error carries the id to answer with, when it is known.
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
            (Some(Value::String(method)), Some(id)) => {
                Ok(Incoming::Request(Box::new(Envelope::read(id, &method, params))))
            }
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
