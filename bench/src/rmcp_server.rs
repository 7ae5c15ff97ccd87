//! The same two tools served by the official Rust SDK (crates.io `rmcp`)
//! over stdio: the public reference point.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use crate::workloads;

#[derive(Clone)]
struct BenchTools;

impl ServerHandler for BenchTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = Arc::new(JsonObject::from_iter([("type".to_string(), Value::from("object"))]));
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new("echo", "Returns the message it is given.", schema.clone()),
            Tool::new("count_primes", "Counts the primes below a number.", schema.clone()),
            Tool::new(
                "count_primes_by_division",
                "Counts the primes below a number by trial division.",
                schema,
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let text = match &*request.name {
            "echo" => workloads::echo(&arguments),
            "count_primes" => workloads::count_primes(&arguments),
            "count_primes_by_division" => workloads::count_primes_by_division(&arguments),
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        let text = text.ok_or_else(|| ErrorData::invalid_params("invalid arguments", None))?;
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

pub fn serve() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let service = BenchTools
            .serve(rmcp::transport::stdio())
            .await
            .expect("rmcp initializes");
        let _ = service.waiting().await;
    });
}
