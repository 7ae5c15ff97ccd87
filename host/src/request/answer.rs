//! How a request ended, typed, and its rendering into the JSON-RPC response
//! of the revision it was served in.

use std::sync::LazyLock;

use serde_json::{Map, Value, json};

use crate::protocol::jsonrpc;
use crate::protocol::modern::{self, CacheHint};
use crate::protocol::{RequestId, RpcError};

/// The server's identity in every 2026-07-28 result's `_meta`: its name and version.
static SERVER_IDENTITY: LazyLock<Value> =
    LazyLock::new(|| json!({ "name": "wasm-mcp", "title": "wasm-mcp", "version": env!("CARGO_PKG_VERSION") }));

/// A method's result, whether it is a tool's result that says the tool
/// failed (`isError`: labelled `tool_error` in metrics and traces), and
/// whether it depends on who asked.
#[derive(Debug)]
pub struct Reply {
    /// The result, as the method renders it.
    pub value: Value,
    /// Whether it is a tool's result with `isError`.
    pub tool_error: bool,
    /// Whether another caller could be answered otherwise (a list filtered
    /// by the caller's scopes, a read served under scopes): never cached
    /// as `public`.
    pub per_caller: bool,
}

impl From<Value> for Reply {
    fn from(value: Value) -> Self {
        Reply {
            value,
            tool_error: false,
            per_caller: false,
        }
    }
}

impl Reply {
    /// `value`, which depends on who asked when `per_caller`.
    pub fn for_caller(value: Value, per_caller: bool) -> Self {
        Reply {
            per_caller,
            ..Reply::from(value)
        }
    }
}

/// How a request ended.
#[derive(Debug)]
pub enum Answer {
    /// The method's result.
    Result(Reply),
    /// 2026-07-28: the call asked the client `requests` (by key); the retry
    /// brings the answers and `state`, the sealed state of the round.
    InputRequired {
        requests: Map<String, Value>,
        state: String,
    },
    /// 2026-07-28 tasks extension: the call runs on as this task (`CreateTaskResult`).
    TaskCreated(Value),
    /// The request failed (in the JSON-RPC codes of 2025-11-25; see
    /// [`Answer::into_modern_response`] for a 2026-07-28 request's).
    Error(RpcError),
}

/// What kind of answer a response carries, for whoever delivers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerKind {
    /// [`Answer::Result`].
    Result,
    /// [`Answer::InputRequired`].
    InputRequired,
    /// [`Answer::TaskCreated`].
    TaskCreated,
    /// An error, by the code the client gets.
    Error(i32),
}

impl<T: Into<Reply>> From<Result<T, RpcError>> for Answer {
    fn from(outcome: Result<T, RpcError>) -> Self {
        match outcome {
            Ok(reply) => Answer::Result(reply.into()),
            Err(error) => Answer::Error(error),
        }
    }
}

impl Answer {
    /// Its kind, by which a transport delivers it.
    pub fn kind(&self) -> AnswerKind {
        match self {
            Answer::Result(_) => AnswerKind::Result,
            Answer::InputRequired { .. } => AnswerKind::InputRequired,
            Answer::TaskCreated(_) => AnswerKind::TaskCreated,
            Answer::Error(error) => AnswerKind::Error(error.code),
        }
    }

    /// How metrics and traces label a request that ended so: an error by
    /// its code, a tool's failure as `tool_error`; none for the rest.
    pub fn error_label(&self) -> Option<String> {
        match self {
            Answer::Error(error) => Some(error.code.to_string()),
            Answer::Result(Reply { tool_error: true, .. }) => Some("tool_error".to_owned()),
            Answer::Result(_) | Answer::InputRequired { .. } | Answer::TaskCreated(_) => None,
        }
    }

    /// The response to request `id` as the method gave it (a 2025-11-25
    /// session's, or a request refused before its revision was known).
    pub fn into_response(self, id: &RequestId) -> (Value, AnswerKind) {
        let kind = self.kind();
        let message = match self.into_outcome() {
            Ok(result) => jsonrpc::response(id, result),
            Err(error) => jsonrpc::error_response(Some(id), &error),
        };
        (message, kind)
    }

    /// The response to a 2026-07-28 request `id`: a result says its type,
    /// the server, and (`cache`) how long it may be cached, and by whom:
    /// only by its caller when it depends on the caller, whatever `cache`
    /// says; an error uses the revision's codes.
    pub fn into_modern_response(self, id: &RequestId, cache: Option<CacheHint>) -> (Value, AnswerKind) {
        let per_caller = matches!(&self, Answer::Result(Reply { per_caller: true, .. }));
        let cache = cache.map(|hint| CacheHint {
            public: hint.public && !per_caller,
            ..hint
        });
        let answer = match self {
            Answer::Error(error) => Answer::Error(modern::error(error)),
            other => other,
        };
        let kind = answer.kind();
        let message = match answer.into_outcome() {
            Ok(result) => jsonrpc::response(id, modern::complete(result, &SERVER_IDENTITY, cache)),
            Err(error) => jsonrpc::error_response(Some(id), &error),
        };
        (message, kind)
    }

    /// The result or error it says.
    fn into_outcome(self) -> Result<Value, RpcError> {
        match self {
            Answer::Result(reply) => Ok(reply.value),
            Answer::InputRequired { requests, state } => Ok(json!({
                "resultType": "input_required",
                "inputRequests": requests,
                "requestState": state,
            })),
            Answer::TaskCreated(task) => Ok(task),
            Answer::Error(error) => Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::jsonrpc::{INVALID_PARAMS, RESOURCE_NOT_FOUND};

    fn id() -> RequestId {
        RequestId::from_value(&json!(7)).unwrap()
    }

    #[test]
    fn an_answer_is_rendered_in_its_revision_with_its_kind() {
        let tool_failed = Answer::Result(Reply {
            value: json!({ "content": [], "isError": true }),
            tool_error: true,
            per_caller: false,
        });
        assert_eq!(tool_failed.error_label().as_deref(), Some("tool_error"));
        let (legacy, kind) = tool_failed.into_response(&id());
        assert_eq!(kind, AnswerKind::Result);
        assert_eq!(
            legacy,
            json!({ "jsonrpc": "2.0", "id": 7, "result": { "content": [], "isError": true } })
        );

        let asked = Answer::InputRequired {
            requests: Map::from_iter([("k".to_owned(), json!({ "method": "roots/list" }))]),
            state: "sealed".into(),
        };
        let (modern, kind) = asked.into_modern_response(&id(), None);
        assert_eq!(kind, AnswerKind::InputRequired);
        assert_eq!(modern["result"]["resultType"], "input_required");
        assert_eq!(modern["result"]["requestState"], "sealed");
        assert_eq!(modern["result"]["_meta"][modern::SERVER_INFO]["name"], "wasm-mcp");

        let missing = || Answer::Error(RpcError::resource_not_found("file:///x"));
        assert_eq!(missing().error_label(), Some(RESOURCE_NOT_FOUND.to_string()));
        assert_eq!(missing().into_response(&id()).1, AnswerKind::Error(RESOURCE_NOT_FOUND));
        let (modern, kind) = missing().into_modern_response(&id(), None);
        assert_eq!(kind, AnswerKind::Error(INVALID_PARAMS));
        assert_eq!(modern["error"]["code"], INVALID_PARAMS);
    }

    #[test]
    fn an_answer_that_depends_on_its_caller_is_never_public() {
        let public = Some(CacheHint {
            ttl_ms: 10,
            public: true,
        });
        let scope = |per_caller| {
            let answer = Answer::Result(Reply::for_caller(json!({ "tools": [] }), per_caller));
            let (response, _) = answer.into_modern_response(&id(), public);
            (
                response["result"]["cacheScope"].clone(),
                response["result"]["ttlMs"].clone(),
            )
        };
        assert_eq!(scope(false), (json!("public"), json!(10)));
        assert_eq!(scope(true), (json!("private"), json!(10)));
    }
}
