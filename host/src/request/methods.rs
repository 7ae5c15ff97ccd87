//! The MCP methods a client can call: each request, typed, goes to its
//! handler here, answered from the catalog, from the tasks, or by the
//! plugin that owns the entry (rendered by [`super::results`]). What only
//! a 2025-11-25 session answers (initialize, its log level, its
//! subscriptions) is the session's (see [`super::Lifecycle::answer_own`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::link::RequestLink;
use super::mrtr::ModernRequest;
use super::results::{self, ToolCall, ToolOutcome};
use super::skills;
use super::{Era, Lifecycle, Peer, Reply};
use crate::call::{CallError, CallScope};
use crate::catalog::Catalog;
use crate::catalog::pagination::{self, Listed};
use crate::contract::bindings::tools::TaskSupport;
use crate::contract::bindings::{completion, types};
use crate::limits::NotificationBounds;
use crate::manifest::EntryKind;
use crate::principal::Principal;
use crate::protocol::modern;
use crate::protocol::requests::{CallTool, Complete, CompletionRef, ListKind, Request};
use crate::protocol::{RequestId, RpcError};
use crate::tasks;

/// Most completion values one answer may carry.
const MAX_COMPLETION_VALUES: usize = 100;

/// The capabilities this server declares: at initialize (`legacy`), and in
/// server/discover. List changes and resource updates reach a 2025-11-25
/// session directly and a 2026-07-28 client through `subscriptions/listen`;
/// the 2025-11-25 tasks are declared only at initialize, the tasks extension
/// only in server/discover; the skills extension (with
/// `resources/directory/read`) in both.
pub fn server_capabilities(legacy: bool) -> Value {
    let mut capabilities = json!({
        "tools": { "listChanged": true },
        "resources": { "subscribe": true, "listChanged": true },
        "prompts": { "listChanged": true },
        "logging": {},
        "completions": {},
    });
    if legacy {
        capabilities["tasks"] = json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } });
        capabilities["extensions"] = json!({ skills::EXTENSION: { "directoryRead": true } });
    } else {
        capabilities["extensions"] = json!({
            tasks::EXTENSION: {},
            skills::EXTENSION: { "directoryRead": true },
        });
    }
    capabilities
}

/// The server's description at initialize: name, version, what it is, its icon.
pub fn server_info() -> Value {
    json!({
        "name": "wasm-mcp",
        "title": "wasm-mcp",
        "version": env!("CARGO_PKG_VERSION"),
        "description": "Tools, resources and prompts served by sandboxed WebAssembly components",
        "icons": [{
            "src": "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAxNiAxNiI+PHJlY3Qgd2lkdGg9IjE2IiBoZWlnaHQ9IjE2IiByeD0iMyIgZmlsbD0iIzY1NGZmMCIvPjwvc3ZnPg==",
            "mimeType": "image/svg+xml",
            "sizes": ["any"]
        }]
    })
}

/// server/discover: the versions this server speaks and what it offers.
pub fn discover() -> Value {
    json!({
        "supportedVersions": modern::supported_versions(),
        "capabilities": server_capabilities(false),
    })
}

impl Peer {
    /// Answers a request that needs the catalog, a plugin or a task; these
    /// run concurrently. One `match`, on every [`Request`]: a new method is
    /// one more arm here.
    pub(super) async fn dispatch(
        self: &Arc<Self>,
        id: &RequestId,
        request: Request,
        era: &Era,
        progress_token: Option<Value>,
        cancel: CancellationToken,
    ) -> Result<Reply, RpcError> {
        let scope = || self.call_scope(id, era, progress_token.clone(), cancel.clone());
        let page_size = self.hub.config.page_size;
        let (modern_request, session) = match era {
            Era::Modern(request) => (Some(request), None),
            Era::Legacy(session) => (None, Some(session)),
        };
        if let Some(modern_request) = modern_request {
            needs_tasks_extension(&request, modern_request)?;
        }
        let value = match request {
            Request::List {
                kind: ListKind::Tasks,
                cursor,
            } => self.list_tasks(in_session(session, "tasks/list")?, cursor.as_deref()),
            Request::GetTask { task_id } => match session {
                Some(session) => self.get_task(session, &task_id),
                None => self.get_extension_task(&task_id).await,
            },
            Request::Listen(filter) => self.listen(id, filter, cancel).await,
            Request::TaskResult { task_id } => {
                return self.task_result(in_session(session, "tasks/result")?, &task_id).await;
            }
            Request::CancelTask { task_id } => match session {
                Some(session) => self.cancel_task(session, &task_id),
                None => self.cancel_extension_task(&task_id).await,
            },
            Request::UpdateTask { task_id, responses } if modern_request.is_some() => {
                self.update_task(&task_id, responses).await
            }
            Request::UpdateTask { .. } => Err(RpcError::method_not_found(
                "tasks/update (a method of the 2026-07-28 tasks extension; this session speaks 2025-11-25)",
            )),
            Request::List { kind, cursor } => {
                let catalog = self.hub.loaded_catalog().await;
                let cursor = cursor.as_deref();
                let principal = self.principal();
                let principal = principal.as_ref();
                return match kind {
                    ListKind::Tools => listed(kind, &catalog.tools, cursor, page_size, principal),
                    ListKind::Prompts => listed(kind, &catalog.prompts, cursor, page_size, principal),
                    ListKind::Resources => listed(kind, &catalog.resources, cursor, page_size, principal),
                    ListKind::Templates => listed(kind, &catalog.templates, cursor, page_size, principal),
                    ListKind::Skills => listed(kind, &catalog.skills, cursor, page_size, principal),
                    ListKind::Tasks => unreachable!("answered above"),
                };
            }
            Request::GetSkill { uri } => {
                let catalog = self.hub.loaded_catalog().await;
                return match catalog.skills.get(&uri) {
                    Some(skill) => Ok(Reply::from(json!({ "skill": skill.listed }))),
                    None => Err(RpcError::invalid_params(format!(
                        "No skill is served at {uri}: skills/list gives the URIs of the skills this server serves"
                    ))),
                };
            }
            Request::ReadDirectory { uri, cursor } => {
                let catalog = self.hub.loaded_catalog().await;
                let principal = self.principal();
                let children = match (catalog.directory(&uri, principal.as_ref()), catalog.made_skill(&uri)) {
                    (Some(children), _) => Some(children),
                    (None, Some((skill, _))) => {
                        skills::made_directory(skill, &uri, scope(), principal.as_ref()).await?
                    }
                    (None, None) => None,
                };
                let Some(children) = children else {
                    return Err(RpcError::invalid_params(format!(
                        "{uri} is not a directory resource: resources/directory/read reads the folders of the skills \
                         served (skill://<skill-path> and the folders in it, with no trailing /)"
                    )));
                };
                return listed(
                    ListKind::Resources,
                    &children,
                    cursor.as_deref(),
                    page_size,
                    principal.as_ref(),
                );
            }
            Request::CallTool(params) => {
                let catalog = self.hub.loaded_catalog().await;
                return match era {
                    Era::Modern(modern_request) => self.call_tool_modern(catalog, params, modern_request, scope).await,
                    Era::Legacy(session) => {
                        self.call_tool(session, catalog, params, scope, progress_token.clone())
                            .await
                    }
                };
            }
            Request::ReadResource { uri } => {
                let catalog = self.hub.loaded_catalog().await;
                let guarded = catalog
                    .required_scopes(EntryKind::Resource, &uri)
                    .is_some_and(|scopes| !scopes.is_empty());
                let per_caller = guarded && self.principal().is_some_and(|principal| principal.scopes.is_some());
                if let Some(entry) = catalog.skill_files.get(&uri) {
                    let contents = json!({ "contents": [entry.file().contents(&uri)] });
                    return Ok(Reply::for_caller(contents, per_caller));
                }
                if let Some((skill, file)) = catalog.made_skill(&uri) {
                    let contents = skills::read_made_file(skill, &file, &uri, scope()).await?;
                    return Ok(Reply::for_caller(contents, per_caller));
                }
                let contents = read_resource(&catalog, &uri, scope()).await?;
                return Ok(Reply::for_caller(contents, per_caller));
            }
            Request::GetPrompt { name, arguments } => {
                get_prompt(&*self.hub.loaded_catalog().await, &name, &arguments, scope()).await
            }
            Request::Complete(params) => complete(&*self.hub.loaded_catalog().await, params, scope()).await,
            Request::Discover
            | Request::Initialize { .. }
            | Request::Ping
            | Request::SetLogLevel(_)
            | Request::Subscribe { .. }
            | Request::Unsubscribe { .. } => unreachable!("answered in order, before dispatch"),
        };
        value.map(Reply::from)
    }

    /// A 2026-07-28 tools/call: a tool that supports tasks may become one
    /// (when it runs long or asks to), for a client that negotiated the
    /// tasks extension; one that requires a task needs that extension.
    async fn call_tool_modern(
        self: &Arc<Self>,
        catalog: Arc<Catalog>,
        params: CallTool,
        request: &ModernRequest,
        scope: impl Fn() -> Arc<CallScope>,
    ) -> Result<Reply, RpcError> {
        let extension = request.meta.has_extension(tasks::EXTENSION);
        // A call that may run again from the start keeps what started it.
        let rerunnable = catalog
            .tools
            .get(&params.name)
            .filter(|tool| extension && tool.task_support != TaskSupport::Forbidden && tool.is_idempotent())
            .map(|_| json!({ "name": params.name, "arguments": params.arguments, "_meta": request.meta.to_meta() }));
        let call = ToolCall::new(catalog, params.name, params.arguments)?;
        if let (Some(mirrored), Some(schema)) = (&params.mirrored, call.tool().listed.get("inputSchema")) {
            mirrored.check(schema, call.arguments())?;
        }
        let exchange = request.exchange();
        match call.tool().task_support {
            TaskSupport::Forbidden => {}
            // While the state store does not answer, a tool that may run
            // without a task does, rather than fail to become one.
            support if extension => {
                let may_record = support == TaskSupport::Required || self.hub.tasks.store().is_reachable();
                if let Some(exchange) = exchange.filter(|_| may_record) {
                    exchange.allow_task(Duration::from_millis(self.hub.config.task_after_ms));
                    if let Some(params) = rerunnable {
                        exchange.keep_for_rerun(params);
                    }
                }
            }
            TaskSupport::Required => {
                return Err(modern::missing_extension(
                    tasks::EXTENSION,
                    &format!("tools/call of {}, a tool that runs only as a task,", call.name),
                ));
            }
            TaskSupport::Optional => {}
        }
        match call.run(scope()).await? {
            ToolOutcome::Crashed { error, .. } if exchange.is_some_and(|exchange| exchange.is_task()) => Err(error),
            outcome => Ok(outcome.into_reply()),
        }
    }

    /// tools/call in a session: run now, or as a task when the client asks for one.
    async fn call_tool(
        self: &Arc<Self>,
        session: &Arc<dyn Lifecycle>,
        catalog: Arc<Catalog>,
        params: CallTool,
        scope: impl Fn() -> Arc<CallScope>,
        progress_token: Option<Value>,
    ) -> Result<Reply, RpcError> {
        let call = ToolCall::new(catalog, params.name, params.arguments)?;
        match params.task {
            Some(task) => self
                .start_task(session, call, task.ttl_ms, progress_token)
                .map(Reply::from),
            None => {
                if call.tool().task_support == TaskSupport::Required {
                    return Err(RpcError::method_not_found(&format!(
                        "tools/call of {} without a task: this tool must be called as a task (add \"task\": {{}} to params)",
                        call.name
                    )));
                }
                Ok(call.run(scope()).await?.into_reply())
            }
        }
    }

    fn call_scope(
        self: &Arc<Self>,
        id: &RequestId,
        era: &Era,
        progress_token: Option<Value>,
        cancel: CancellationToken,
    ) -> Arc<CallScope> {
        let link = Arc::new(RequestLink {
            peer: self.clone(),
            request: id.clone(),
            era: era.clone(),
        });
        Arc::new(
            CallScope::new(link, progress_token, cancel, NotificationBounds::of(&self.hub.config))
                .acting_for(self.caller()),
        )
    }
}

/// The session a method of 2025-11-25 sessions needs (a 2026-07-28
/// request of it is refused with its envelope, before it gets here).
fn in_session<'a>(session: Option<&'a Arc<dyn Lifecycle>>, method: &str) -> Result<&'a Arc<dyn Lifecycle>, RpcError> {
    session.ok_or_else(|| {
        RpcError::method_not_found(&format!(
            "{method} (not part of the {} revision: send \"initialize\" first to use it)",
            modern::MODERN_VERSION
        ))
    })
}

/// In the 2026-07-28 revision, the tasks methods and listening for tasks
/// need the tasks extension; the -32021 error that says so.
fn needs_tasks_extension(request: &Request, modern_request: &ModernRequest) -> Result<(), RpcError> {
    let what = match request {
        Request::GetTask { .. } | Request::UpdateTask { .. } | Request::CancelTask { .. } => "this request",
        Request::Listen(filter) if !filter.task_ids.is_empty() => "listening for task status (\"taskIds\")",
        _ => return Ok(()),
    };
    match modern_request.meta.has_extension(tasks::EXTENSION) {
        true => Ok(()),
        false => Err(modern::missing_extension(tasks::EXTENSION, what)),
    }
}

/// The JSON-RPC error for a failed resources/read, prompts/get or completion/complete.
fn request_error(error: CallError) -> RpcError {
    match error {
        CallError::Refused(types::Error::InvalidParams(why)) => RpcError::invalid_params(why),
        other => RpcError::internal(other.to_string()),
    }
}

/// A page of the list `entries` as `principal` may see it, which depends
/// on the caller when scopes filter it.
fn listed<E: Listed>(
    kind: ListKind,
    entries: &BTreeMap<String, E>,
    cursor: Option<&str>,
    size: usize,
    principal: Option<&Principal>,
) -> Result<Reply, RpcError> {
    let page = pagination::page(kind, entries, cursor, size, principal)?;
    Ok(Reply::for_caller(
        page,
        pagination::depends_on_caller(entries, principal),
    ))
}

async fn read_resource(catalog: &Catalog, uri: &str, scope: Arc<CallScope>) -> Result<Value, RpcError> {
    let Some((plugin, _)) = catalog.resource_owner(uri) else {
        return Err(RpcError::resource_not_found(uri));
    };
    let contents = plugin.read_resource(scope, uri).await.map_err(|e| match e {
        CallError::Refused(types::Error::NotFound(_)) => RpcError::resource_not_found(uri),
        other => request_error(other),
    })?;
    results::resource_contents(contents, plugin)
}

async fn get_prompt(
    catalog: &Catalog,
    name: &str,
    arguments: &[(String, String)],
    scope: Arc<CallScope>,
) -> Result<Value, RpcError> {
    let Some(prompt) = catalog.prompts.get(name) else {
        return Err(RpcError::invalid_params(format!(
            "Unknown prompt: {name}. Call prompts/list for the prompts available."
        )));
    };
    if let Some(missing) = prompt
        .required_arguments
        .iter()
        .find(|r| !arguments.iter().any(|(k, _)| k == *r))
    {
        return Err(RpcError::invalid_params(format!(
            "Missing required argument \"{missing}\" for prompt {name}"
        )));
    }
    let result = prompt
        .plugin
        .get_prompt(scope, &prompt.own_name, arguments)
        .await
        .map_err(|e| match e {
            CallError::Refused(types::Error::NotFound(_)) => {
                RpcError::invalid_params(format!("Unknown prompt: {name}"))
            }
            other => request_error(other),
        })?;
    results::prompt(result, &prompt.plugin)
}

async fn complete(catalog: &Catalog, params: Complete, scope: Arc<CallScope>) -> Result<Value, RpcError> {
    let (plugin, reference) = match params.reference {
        CompletionRef::Prompt(name) => {
            let prompt = catalog
                .prompts
                .get(&name)
                .ok_or_else(|| RpcError::invalid_params(format!("Unknown prompt: {name}")))?;
            (&prompt.plugin, completion::Reference::Prompt(prompt.own_name.clone()))
        }
        CompletionRef::ResourceTemplate(uri) => {
            let template = catalog
                .templates
                .get(&uri)
                .ok_or_else(|| RpcError::invalid_params(format!("Unknown resource template: {uri}")))?;
            (&template.plugin, completion::Reference::ResourceTemplate(uri))
        }
    };
    if !plugin.has_completion() {
        return Ok(json!({ "completion": { "values": [], "total": 0, "hasMore": false } }));
    }
    let request = completion::CompletionRequest {
        reference,
        argument_name: params.argument_name,
        argument_value: params.argument_value,
        context_arguments: params.context_arguments,
    };
    let mut completions = plugin.complete(scope, &request).await.map_err(request_error)?;
    let offered = completions.values.len();
    completions.values.truncate(MAX_COMPLETION_VALUES);
    let total = completions.total.map_or(offered, |t| (t as usize).max(offered));
    let result = json!({
        "completion": {
            "values": completions.values,
            "total": total,
            "hasMore": completions.has_more || total > completions.values.len(),
        }
    });
    results::within_output_limit(result, plugin)
}
