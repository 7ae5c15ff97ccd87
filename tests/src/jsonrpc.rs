//! JSON-RPC 2.0 messages as every client of the harness builds and reads
//! them: the messages a client sends, what kind of message a line is, the
//! request a response answers, and the response to one request.

use serde_json::{Value, json};

use crate::LATEST_PROTOCOL_VERSION;

/// A request (`params` left out when null).
pub fn request(id: impl Into<Value>, method: &str, params: Value) -> Value {
    let mut message = json!({"jsonrpc": "2.0", "id": id.into(), "method": method});
    if !params.is_null() {
        message["params"] = params;
    }
    message
}

/// A notification (`params` left out when null).
pub fn notification(method: &str, params: Value) -> Value {
    let mut message = json!({"jsonrpc": "2.0", "method": method});
    if !params.is_null() {
        message["params"] = params;
    }
    message
}

/// `notifications/cancelled` for the request `request_id`.
pub fn cancelled(request_id: impl Into<Value>) -> Value {
    notification("notifications/cancelled", json!({"requestId": request_id.into()}))
}

/// The client's successful answer to a server → client request.
pub fn result_response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// The client's error answer to a server → client request.
pub fn error_response(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The `initialize` params of a client called `client_name` offering
/// `capabilities` and the latest protocol version.
pub fn initialize_params(client_name: &str, capabilities: Value) -> Value {
    json!({
        "protocolVersion": LATEST_PROTOCOL_VERSION,
        "capabilities": capabilities,
        "clientInfo": {"name": client_name, "version": "0.1.0"},
    })
}

/// Fresh integer request ids, counting up from 1.
#[derive(Debug, Clone)]
pub struct Ids {
    next: i64,
}

impl Default for Ids {
    fn default() -> Self {
        Ids { next: 1 }
    }
}

impl Ids {
    /// The next id.
    pub fn next_id(&mut self) -> i64 {
        self.next += 1;
        self.next - 1
    }

    /// The next `count` ids at once; returns the first.
    pub fn take(&mut self, count: i64) -> i64 {
        self.next += count;
        self.next - count
    }
}

/// What kind of JSON-RPC message a value is.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// Has `id` and `method`: a request (here: server → client).
    Request,
    /// Has `method` and no `id`.
    Notification,
    /// Has `id` and `result`.
    Result,
    /// Has `error` (the `id` may be null or absent for parse errors).
    Error,
    /// None of the above, with the reason.
    Invalid(String),
}

/// Classifies a message. Does not check the schema (see `schema`).
pub fn kind(msg: &Value) -> Kind {
    let Some(obj) = msg.as_object() else {
        return Kind::Invalid("not a JSON object".into());
    };
    let has_id = obj.contains_key("id");
    match (obj.get("method"), obj.get("result"), obj.get("error")) {
        (Some(_), None, None) if has_id => Kind::Request,
        (Some(_), None, None) => Kind::Notification,
        (None, Some(_), None) if has_id => Kind::Result,
        (None, Some(_), None) => Kind::Invalid("a result without an id".into()),
        (None, None, Some(_)) => Kind::Error,
        (None, Some(_), Some(_)) => Kind::Invalid("both `result` and `error`".into()),
        _ => Kind::Invalid("neither a request, a notification nor a response".into()),
    }
}

/// A key that identifies a request id, telling `1` from `"1"` apart.
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

/// A request the client sent, as far as checking its response needs: the
/// method, and whether it asked for a task (then `tools/call` answers with
/// a `CreateTaskResult`).
#[derive(Debug, Clone)]
pub struct SentRequest {
    pub method: String,
    pub task: bool,
}

impl SentRequest {
    /// For a message the client sends: its [`id_key`] and what it asks, when
    /// it expects a response (it has an id and is no response itself; an
    /// invalid request with an id gets an error carrying that id).
    pub fn expecting_response(message: &Value) -> Option<(String, SentRequest)> {
        let id = message.get("id").filter(|id| !id.is_null())?;
        if message.get("result").is_some() || message.get("error").is_some() {
            return None;
        }
        let sent = SentRequest {
            method: message["method"].as_str().unwrap_or("<invalid request>").to_string(),
            task: message["params"].get("task").is_some(),
        };
        Some((id_key(id), sent))
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

/// The server's response to one request.
#[derive(Debug, Clone)]
pub struct Response {
    /// The method of the request this answers.
    pub method: String,
    /// The id exactly as the server sent it.
    pub id: Value,
    /// The whole response message.
    pub raw: Value,
}

impl Response {
    /// Whether this is an error response.
    pub fn is_error(&self) -> bool {
        self.raw.get("error").is_some()
    }

    /// The `result`; panics (naming the method and the error) if this is an error.
    pub fn result(&self) -> &Value {
        match self.raw.get("result") {
            Some(result) => result,
            None => panic!(
                "expected a result for `{}` (id {}), got an error response: {}",
                self.method, self.id, self.raw
            ),
        }
    }

    /// The `error`; panics (naming the method and the result) if this succeeded.
    pub fn error(&self) -> RpcError {
        let Some(error) = self.raw.get("error") else {
            panic!(
                "expected a JSON-RPC error for `{}` (id {}), got a result: {}",
                self.method, self.id, self.raw
            );
        };
        RpcError {
            code: error["code"]
                .as_i64()
                .unwrap_or_else(|| panic!("error.code is not an integer in {}", self.raw)),
            message: error["message"].as_str().unwrap_or_default().to_string(),
            data: error.get("data").cloned(),
        }
    }

    /// Asserts this is an error with `code`, and returns it.
    #[track_caller]
    pub fn expect_error_code(&self, code: i64) -> RpcError {
        let error = self.error();
        assert_eq!(
            error.code, code,
            "`{}` should fail with JSON-RPC error {code}, got {}: {:?} (response {})",
            self.method, error.code, error.message, self.raw
        );
        error
    }
}
