//! Checks server messages against the official MCP 2025-11-25 JSON Schema,
//! and (with [`validate_modern`]) results against the 2026-07-28 one, and
//! (with [`validate_tasks`]) the shapes of its tasks extension.
//!
//! `tests/spec/schema-2025-11-25.json` is a verbatim copy of the published
//! schema. Its `$defs` are compiled once; each message is checked against the
//! envelope (`JSONRPCResultResponse`, `JSONRPCErrorResponse`, a specific
//! notification or request type) and, for results, against the result type
//! of the request's method.

use std::sync::LazyLock;

use jsonschema::ValidatorMap;
use serde_json::Value;

use crate::jsonrpc::{Kind, SentRequest, kind};

static SCHEMA_TEXT: &str = include_str!("../spec/schema-2025-11-25.json");

static VALIDATORS: LazyLock<ValidatorMap> = LazyLock::new(|| {
    let schema: Value = serde_json::from_str(SCHEMA_TEXT).expect("the MCP schema is JSON");
    jsonschema::validator_map_for(&schema).expect("the MCP schema compiles")
});

static MODERN_SCHEMA_TEXT: &str = include_str!("../spec/schema-2026-07-28.json");

static MODERN_VALIDATORS: LazyLock<ValidatorMap> = LazyLock::new(|| {
    let schema: Value = serde_json::from_str(MODERN_SCHEMA_TEXT).expect("the MCP 2026-07-28 schema is JSON");
    jsonschema::validator_map_for(&schema).expect("the MCP 2026-07-28 schema compiles")
});

static TASKS_SCHEMA_TEXT: &str = include_str!("../spec/schema-2026-07-28-tasks.json");

static TASKS_VALIDATORS: LazyLock<ValidatorMap> = LazyLock::new(|| {
    let schema: Value = serde_json::from_str(TASKS_SCHEMA_TEXT).expect("the tasks extension schema is JSON");
    jsonschema::validator_map_for(&schema).expect("the tasks extension schema compiles")
});

/// Validates `value` against the schema definition `def` (e.g. `"CallToolResult"`).
pub fn validate_def(def: &str, value: &Value) -> Result<(), String> {
    validate_in(&VALIDATORS, def, value)
}

/// Validates `value` against the 2026-07-28 schema's definition `def`.
pub fn validate_modern(def: &str, value: &Value) -> Result<(), String> {
    validate_in(&MODERN_VALIDATORS, def, value)
}

/// Validates `value` against the 2026-07-28 tasks extension's definition `def`.
pub fn validate_tasks(def: &str, value: &Value) -> Result<(), String> {
    validate_in(&TASKS_VALIDATORS, def, value)
}

/// The result of `response`, checked by `validate` against definition
/// `def`; panics, saying why, when it has none or it does not validate.
#[track_caller]
pub fn checked_result(validate: fn(&str, &Value) -> Result<(), String>, def: &str, response: &Value) -> Value {
    let result = response
        .get("result")
        .unwrap_or_else(|| panic!("expected a result, got {response}"))
        .clone();
    if let Err(why) = validate(def, &result) {
        panic!("{why}\n{result:#}");
    }
    result
}

fn validate_in(validators: &ValidatorMap, def: &str, value: &Value) -> Result<(), String> {
    let pointer = format!("#/$defs/{def}");
    let validator = validators
        .get(&pointer)
        .unwrap_or_else(|| panic!("the MCP schema has no definition {def}"));
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("  - at `{}`: {e}", e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("does not validate as {def}:\n{}", errors.join("\n")))
    }
}

/// The result type of a request, by method. `task` is whether the request
/// carried `params.task` (then `tools/call` answers with `CreateTaskResult`).
pub fn result_def(method: &str, task: bool) -> &'static str {
    match method {
        "initialize" => "InitializeResult",
        "tools/list" => "ListToolsResult",
        "tools/call" if task => "CreateTaskResult",
        "tools/call" => "CallToolResult",
        "resources/list" => "ListResourcesResult",
        "resources/templates/list" => "ListResourceTemplatesResult",
        "resources/read" => "ReadResourceResult",
        "prompts/list" => "ListPromptsResult",
        "prompts/get" => "GetPromptResult",
        "completion/complete" => "CompleteResult",
        "tasks/get" => "GetTaskResult",
        "tasks/cancel" => "CancelTaskResult",
        "tasks/list" => "ListTasksResult",
        "tasks/result" => "GetTaskPayloadResult",
        // ping, logging/setLevel, resources/subscribe, resources/unsubscribe
        _ => "EmptyResult",
    }
}

/// The schema type of a server notification, by method.
pub fn notification_def(method: &str) -> &'static str {
    match method {
        "notifications/cancelled" => "CancelledNotification",
        "notifications/progress" => "ProgressNotification",
        "notifications/resources/list_changed" => "ResourceListChangedNotification",
        "notifications/resources/updated" => "ResourceUpdatedNotification",
        "notifications/prompts/list_changed" => "PromptListChangedNotification",
        "notifications/tools/list_changed" => "ToolListChangedNotification",
        "notifications/tasks/status" => "TaskStatusNotification",
        "notifications/message" => "LoggingMessageNotification",
        "notifications/elicitation/complete" => "ElicitationCompleteNotification",
        _ => "ServerNotification",
    }
}

/// The schema type of a server → client request, by method.
pub fn server_request_def(method: &str) -> &'static str {
    match method {
        "ping" => "PingRequest",
        "tasks/get" => "GetTaskRequest",
        "tasks/result" => "GetTaskPayloadRequest",
        "tasks/cancel" => "CancelTaskRequest",
        "tasks/list" => "ListTasksRequest",
        "sampling/createMessage" => "CreateMessageRequest",
        "roots/list" => "ListRootsRequest",
        "elicitation/create" => "ElicitRequest",
        _ => "ServerRequest",
    }
}

/// The schema type of the client's answer to a server → client request.
pub fn client_result_def(method: &str) -> &'static str {
    match method {
        "sampling/createMessage" => "CreateMessageResult",
        "roots/list" => "ListRootsResult",
        "elicitation/create" => "ElicitResult",
        _ => "Result",
    }
}

/// Checks any message from the server by its kind; `answers` is the request
/// a response answers (`None` when it could not be identified, e.g. a parse
/// error).
pub fn check_message(msg: &Value, answers: Option<&SentRequest>) -> Result<(), String> {
    match kind(msg) {
        Kind::Result | Kind::Error => check_response(
            msg,
            answers.map(|sent| sent.method.as_str()),
            answers.is_some_and(|sent| sent.task),
        ),
        Kind::Notification => check_notification(msg),
        Kind::Request => check_server_request(msg),
        Kind::Invalid(why) => Err(format!("is not a JSON-RPC message: {why}")),
    }
}

/// Checks a response to a request whose method is `method` (`None` when the
/// request could not be identified, e.g. a parse error).
pub fn check_response(msg: &Value, method: Option<&str>, task: bool) -> Result<(), String> {
    match kind(msg) {
        Kind::Result => {
            validate_def("JSONRPCResultResponse", msg)?;
            let method = method.ok_or("a successful result to a request that was never sent")?;
            validate_def(result_def(method, task), &msg["result"]).map_err(|e| format!("the result of `{method}` {e}"))
        }
        // JSON-RPC 2.0 writes `"id": null` when a request's id could not be
        // read; the MCP schema (and the official TypeScript SDK, which
        // rejects a null id) leave `id` out instead. The schema wins here.
        Kind::Error => validate_def("JSONRPCErrorResponse", msg),
        other => Err(format!("expected a response, got {other:?}")),
    }
}

/// Checks a notification from the server.
pub fn check_notification(msg: &Value) -> Result<(), String> {
    let method = msg["method"].as_str().unwrap_or_default();
    let def = notification_def(method);
    if def == "ServerNotification" {
        return Err(format!("`{method}` is not a server notification of MCP 2025-11-25"));
    }
    validate_def(def, msg)
}

/// Checks a request from the server to the client.
pub fn check_server_request(msg: &Value) -> Result<(), String> {
    let method = msg["method"].as_str().unwrap_or_default();
    let def = server_request_def(method);
    if def == "ServerRequest" {
        return Err(format!(
            "`{method}` is not a server-to-client request of MCP 2025-11-25"
        ));
    }
    validate_def(def, msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn valid_messages_pass() {
        let init = json!({"jsonrpc":"2.0","id":1,"result":{
            "protocolVersion":"2025-11-25","capabilities":{},
            "serverInfo":{"name":"x","version":"1"}}});
        check_response(&init, Some("initialize"), false).unwrap();
        let err = json!({"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}});
        check_response(&err, None, false).unwrap();
        let note = json!({"jsonrpc":"2.0","method":"notifications/message",
            "params":{"level":"info","logger":"p","data":"hi"}});
        check_notification(&note).unwrap();
    }

    #[test]
    fn invalid_messages_fail() {
        // serverInfo is required in InitializeResult.
        let init = json!({"jsonrpc":"2.0","id":1,"result":{
            "protocolVersion":"2025-11-25","capabilities":{}}});
        assert!(check_response(&init, Some("initialize"), false).is_err());
        // content is required in CallToolResult.
        let call = json!({"jsonrpc":"2.0","id":2,"result":{"isError":true}});
        assert!(check_response(&call, Some("tools/call"), false).is_err());
        // `level` must be an RFC 5424 level.
        let note = json!({"jsonrpc":"2.0","method":"notifications/message",
            "params":{"level":"verbose","data":"hi"}});
        assert!(check_notification(&note).is_err());
        let unknown = json!({"jsonrpc":"2.0","method":"notifications/whatever"});
        assert!(check_notification(&unknown).is_err());
        // MCP's RequestId is a string or an integer, never null.
        let null_id = json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}});
        assert!(check_response(&null_id, None, false).is_err());
        let bad_version = json!({"jsonrpc":"1.0","id":3,"result":{}});
        assert!(check_response(&bad_version, Some("ping"), false).is_err());
    }
}
