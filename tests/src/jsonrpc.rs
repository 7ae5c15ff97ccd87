//! JSON-RPC 2.0 message shapes as the tests see them: what kind of message a
//! line is, and the response to one request.

use serde_json::Value;

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
