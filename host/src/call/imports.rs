//! The host imports a plugin calls while serving a request (`wasm-mcp:plugin/host`):
//! logging, progress, cancellation, and the requests to the client (sampling,
//! elicitation, roots), all acting on the call's [`CallScope`].

use serde_json::{Value, json};

use super::scope::ClientRequestError;
use super::state::CallState;
use crate::contract::bindings::host::{
    self, ClientError, ElicitResult, Elicitation, LogLevel as WitLogLevel, Root, RpcError, SamplingRequest,
    SamplingResult,
};
use crate::contract::bindings::types;
use crate::contract::wire;
use crate::protocol::LogLevel;

fn log_level(level: WitLogLevel) -> LogLevel {
    match level {
        WitLogLevel::Debug => LogLevel::Debug,
        WitLogLevel::Info => LogLevel::Info,
        WitLogLevel::Notice => LogLevel::Notice,
        WitLogLevel::Warning => LogLevel::Warning,
        WitLogLevel::Error => LogLevel::Error,
        WitLogLevel::Critical => LogLevel::Critical,
        WitLogLevel::Alert => LogLevel::Alert,
        WitLogLevel::Emergency => LogLevel::Emergency,
    }
}

fn client_error(error: ClientRequestError) -> ClientError {
    match error {
        ClientRequestError::NotSupported(why) => ClientError::NotSupported(why),
        ClientRequestError::Rejected { code, message } => ClientError::Rejected(RpcError { code, message }),
        ClientRequestError::TimedOut => ClientError::TimedOut,
        ClientRequestError::Cancelled => ClientError::Cancelled,
    }
}

/// A client answer that does not parse is reported to the plugin as a rejection.
fn malformed_answer(what: &str, why: String) -> ClientError {
    ClientError::Rejected(RpcError {
        code: crate::protocol::jsonrpc::INVALID_PARAMS,
        message: format!("the client's {what} answer is malformed: {why}"),
    })
}

impl CallState {
    /// Asks the client; the scope is cloned so the store state is not held across the wait.
    fn ask(
        &self,
        method: &'static str,
        params: Value,
    ) -> impl Future<Output = Result<Value, ClientError>> + Send + use<> {
        let scope = self.scope.clone();
        async move { scope.ask_client(method, params).await.map_err(client_error) }
    }
}

impl types::Host for CallState {}

impl host::Host for CallState {
    async fn log(&mut self, level: WitLogLevel, message: String) -> wasmtime::Result<()> {
        self.scope.log(&self.plugin, log_level(level), Value::String(message));
        Ok(())
    }

    async fn log_json(&mut self, level: WitLogLevel, data: String) -> wasmtime::Result<()> {
        let data = serde_json::from_str(&data).unwrap_or(Value::String(data));
        self.scope.log(&self.plugin, log_level(level), data);
        Ok(())
    }

    async fn progress(&mut self, progress: f64, total: Option<f64>, message: Option<String>) -> wasmtime::Result<()> {
        self.scope.progress(progress, total, message);
        Ok(())
    }

    async fn is_cancelled(&mut self) -> wasmtime::Result<bool> {
        Ok(self.scope.is_cancelled())
    }

    async fn sample(&mut self, request: SamplingRequest) -> wasmtime::Result<Result<SamplingResult, ClientError>> {
        let params = match wire::sampling_request(request) {
            Ok(params) => params,
            Err(why) => return Ok(Err(ClientError::NotSupported(why))),
        };
        Ok(match self.ask("sampling/createMessage", params).await {
            Ok(answer) => wire::parse_sampling_result(&answer).map_err(|why| malformed_answer("sampling", why)),
            Err(e) => Err(e),
        })
    }

    async fn elicit(&mut self, request: Elicitation) -> wasmtime::Result<Result<ElicitResult, ClientError>> {
        let params = match request {
            Elicitation::Form(form) => match wire::parse_json(&form.requested_schema, "requestedSchema") {
                Ok(schema) => {
                    json!({ "mode": "form", "message": form.message, "requestedSchema": schema })
                }
                Err(why) => return Ok(Err(ClientError::NotSupported(why))),
            },
            Elicitation::Url(url) => json!({
                "mode": "url", "message": url.message, "url": url.url, "elicitationId": url.elicitation_id,
            }),
        };
        Ok(match self.ask("elicitation/create", params).await {
            Ok(answer) => wire::parse_elicit_result(&answer).map_err(|why| malformed_answer("elicitation", why)),
            Err(e) => Err(e),
        })
    }

    async fn elicitation_complete(&mut self, elicitation_id: String) -> wasmtime::Result<()> {
        self.scope.notify(
            "notifications/elicitation/complete",
            json!({ "elicitationId": elicitation_id }),
        );
        Ok(())
    }

    async fn list_roots(&mut self) -> wasmtime::Result<Result<Vec<Root>, ClientError>> {
        Ok(match self.ask("roots/list", json!({})).await {
            Ok(answer) => answer
                .get("roots")
                .and_then(Value::as_array)
                .map(|roots| {
                    roots
                        .iter()
                        .filter_map(|root| {
                            Some(Root {
                                uri: root.get("uri")?.as_str()?.to_owned(),
                                name: root.get("name").and_then(Value::as_str).map(str::to_owned),
                            })
                        })
                        .collect()
                })
                .ok_or_else(|| malformed_answer("roots", "no \"roots\" array".into())),
            Err(e) => Err(e),
        })
    }

    async fn resource_updated(&mut self, uri: String) -> wasmtime::Result<()> {
        self.scope.resource_updated(&uri);
        Ok(())
    }
}
