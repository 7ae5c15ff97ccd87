//! The metric of one request: what was asked (of which tool), how long the
//! answer took and how it ended, recorded as `mcp.server.operation.duration`
//! (see [`crate::metrics`]).

use std::time::Instant;

use serde_json::Value;

use super::Hub;
use crate::metrics::{METRICS, Operation};
use crate::protocol::RpcError;
use crate::protocol::requests::known_method;

/// A request being served.
pub(super) struct Served {
    method: &'static str,
    /// The tool a `tools/call` names, when the catalog has it (never a
    /// name only the client made up).
    tool: Option<String>,
    started: Instant,
}

impl Served {
    pub fn new(method: &str, params: &Value, hub: &Hub) -> Self {
        let method = known_method(method);
        let tool = match method {
            "tools/call" => params
                .get("name")
                .and_then(Value::as_str)
                .filter(|name| hub.catalog().tools.contains_key(*name))
                .map(str::to_owned),
            _ => None,
        };
        Served {
            method,
            tool,
            started: Instant::now(),
        }
    }

    /// Records the answer, in protocol `version`: an error by its code, a
    /// tool result with `isError` as `tool_error`.
    pub fn record(&self, version: &'static str, outcome: Result<&Value, &RpcError>) {
        let error = match outcome {
            Err(error) => Some(error.code.to_string()),
            Ok(result) if result.get("isError") == Some(&Value::Bool(true)) => Some("tool_error".to_owned()),
            Ok(_) => None,
        };
        let operation = Operation {
            method: self.method,
            tool: self.tool.as_deref(),
            version,
        };
        METRICS.operation(operation, error, self.started.elapsed());
    }
}
