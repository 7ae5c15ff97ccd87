//! The methods only a 2025-11-25 session answers, from its own state and in
//! the order they arrive: `initialize` (the version negotiated, the client's
//! capabilities), `ping`, `logging/setLevel` and resource subscriptions.
//! Every other request is the request layer's (see [`crate::request`]).

use serde_json::{Value, json};

use super::{Phase, Session};
use crate::metrics::METRICS;
use crate::protocol::jsonrpc::{INVALID_REQUEST, SERVER_ERROR};
use crate::protocol::requests::Request;
use crate::protocol::{RpcError, negotiate_version};
use crate::request::{ClientCapabilities, server_capabilities, server_info};
use crate::settings;

impl Session {
    /// Answers a request that only touches the session's state; hands back any other.
    pub(super) fn answer_in_session(&self, request: Request) -> Result<Result<Value, RpcError>, Request> {
        Ok(match request {
            Request::Initialize {
                protocol_version,
                capabilities,
                client_name,
            } => self.initialize(&protocol_version, &capabilities, client_name.as_deref()),
            Request::Ping => Ok(json!({})),
            Request::SetLogLevel(level) => {
                self.state.lock().unwrap().log_level = level;
                Ok(json!({}))
            }
            Request::Subscribe { uri } => self.subscribe(uri),
            Request::Unsubscribe { uri } => {
                if self.state.lock().unwrap().subscriptions.remove(&uri) {
                    METRICS.subscriptions("resource", -1);
                }
                Ok(json!({}))
            }
            other @ (Request::Discover
            | Request::List { .. }
            | Request::Listen(_)
            | Request::CallTool(_)
            | Request::ReadResource { .. }
            | Request::GetSkill { .. }
            | Request::ReadDirectory { .. }
            | Request::GetPrompt { .. }
            | Request::Complete(_)
            | Request::GetTask { .. }
            | Request::TaskResult { .. }
            | Request::CancelTask { .. }
            | Request::UpdateTask { .. }) => return Err(other),
        })
    }

    fn initialize(&self, requested: &str, capabilities: &Value, client: Option<&str>) -> Result<Value, RpcError> {
        let mut state = self.state.lock().unwrap();
        if state.phase != Phase::AwaitingInitialize {
            return Err(RpcError::new(
                INVALID_REQUEST,
                "initialize was already received in this session; start a new session to initialize again",
            ));
        }
        state.protocol_version = negotiate_version(Some(requested));
        state.client = ClientCapabilities::from_initialize(capabilities);
        state.phase = Phase::Initialized;
        METRICS.session_opened(state.protocol_version);
        tracing::info!(
            client = client.unwrap_or("unknown"),
            requested,
            negotiated = state.protocol_version,
            "session initialized"
        );
        Ok(json!({
            "protocolVersion": state.protocol_version,
            "capabilities": server_capabilities(true),
            "serverInfo": server_info(),
        }))
    }

    /// resources/subscribe, within the session's `max_subscriptions`.
    fn subscribe(&self, uri: String) -> Result<Value, RpcError> {
        let limit = self.hub.config.max_subscriptions;
        let mut state = self.state.lock().unwrap();
        if state.subscriptions.len() >= limit && !state.subscriptions.contains(&uri) {
            return Err(RpcError::new(
                SERVER_ERROR,
                format!(
                    "Too many subscriptions: this session already holds {limit} (the max_subscriptions limit); \
                     unsubscribe from some, or raise the limit ({})",
                    settings::server::max_subscriptions.hint()
                ),
            ));
        }
        if state.subscriptions.insert(uri) {
            METRICS.subscriptions("resource", 1);
        }
        Ok(json!({}))
    }
}
