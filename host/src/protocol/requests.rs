//! What a client asks, as types: every request method this server knows, with
//! the params the host reads, parsed once. An unknown method or malformed
//! params are an error here, before anything runs; a new method is a new
//! variant, which every `match` on [`Request`] must then handle.

use serde_json::{Map, Value};

use super::headers::MirroredParams;
use super::method::Target;
use super::{LogLevel, Method, RpcError};

/// The lists a client pages through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    Templates,
    /// `tasks/list`.
    Tasks,
    /// `skills/list` (the skills extension).
    Skills,
}

/// The notifications a `subscriptions/listen` stream asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tools_list_changed: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prompts_list_changed: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resources_list_changed: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_subscriptions: Vec<String>,
    /// Tasks whose status changes the stream sends (`notifications/tasks`;
    /// the 2026-07-28 tasks extension).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task_ids: Vec<String>,
}

impl SubscriptionFilter {
    /// Whether the stream asked for notification `method` (about `subject`:
    /// the resource of `notifications/resources/updated`, the task of
    /// `notifications/tasks`).
    pub fn wants(&self, method: &str, subject: Option<&str>) -> bool {
        let listed = |wanted: &[String]| subject.is_some_and(|subject| wanted.iter().any(|w| w == subject));
        match method {
            "notifications/tools/list_changed" => self.tools_list_changed,
            "notifications/prompts/list_changed" => self.prompts_list_changed,
            "notifications/resources/list_changed" => self.resources_list_changed,
            "notifications/resources/updated" => listed(&self.resource_subscriptions),
            "notifications/tasks" => listed(&self.task_ids),
            _ => false,
        }
    }
}

/// A request, by method.
#[derive(Debug)]
pub enum Request {
    /// `server/discover` (2026-07-28): versions, capabilities, identity.
    Discover,
    /// `subscriptions/listen` (2026-07-28): a stream of the notifications asked for.
    Listen(SubscriptionFilter),
    /// `initialize`: opens the session.
    Initialize {
        /// The revision the client asks for (`protocolVersion`).
        protocol_version: String,
        /// The client's capabilities, as sent (null when absent).
        capabilities: Value,
        /// The client's `clientInfo.name`, if it gave one.
        client_name: Option<String>,
    },
    /// `ping`.
    Ping,
    /// `logging/setLevel`.
    SetLogLevel(LogLevel),
    /// `resources/subscribe`.
    Subscribe {
        /// The resource whose updates the client wants.
        uri: String,
    },
    /// `resources/unsubscribe`.
    Unsubscribe {
        /// The resource whose updates the client no longer wants.
        uri: String,
    },
    /// `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`, `tasks/list` and `skills/list`.
    List {
        /// Which list.
        kind: ListKind,
        /// Where the page starts: the `nextCursor` of the page before, if any.
        cursor: Option<String>,
    },
    /// `tools/call`.
    CallTool(CallTool),
    /// `resources/read`.
    ReadResource {
        /// The resource to read.
        uri: String,
    },
    /// `skills/get` (the skills extension): by the URI of the skill's `SKILL.md`.
    GetSkill {
        /// The URI of the skill's `SKILL.md`.
        uri: String,
    },
    /// `resources/directory/read` (the skills extension).
    ReadDirectory {
        /// The directory resource to read.
        uri: String,
        /// Where the page starts: the `nextCursor` of the page before, if any.
        cursor: Option<String>,
    },
    /// `prompts/get`.
    GetPrompt {
        /// The prompt to get.
        name: String,
        /// Its arguments, as name and value.
        arguments: Vec<(String, String)>,
    },
    /// `completion/complete`.
    Complete(Complete),
    /// `tasks/get`.
    GetTask {
        /// The task whose status is asked for.
        task_id: String,
    },
    /// `tasks/result`.
    TaskResult {
        /// The task whose result is asked for.
        task_id: String,
    },
    /// `tasks/cancel`.
    CancelTask {
        /// The task to cancel.
        task_id: String,
    },
    /// `tasks/update` (2026-07-28 tasks extension): answers to the task's `inputRequests`.
    UpdateTask {
        /// The task the answers are for.
        task_id: String,
        /// The answers (`inputResponses`), by the keys of the task's `inputRequests`.
        responses: Map<String, Value>,
    },
}

/// The params of `tools/call`.
#[derive(Debug)]
pub struct CallTool {
    pub name: String,
    /// The arguments object (`{}` when none were sent).
    pub arguments: Value,
    /// Present when the client asks for a task: the ttl it asks for, in ms.
    pub task: Option<TaskRequest>,
    /// The `Mcp-Param-*` headers of a 2026-07-28 call over HTTP, checked
    /// against the tool's input schema once the tool is known; `None` for
    /// a call that came any other way.
    pub mirrored: Option<Box<MirroredParams>>,
}

/// The `task` of a task-augmented request.
#[derive(Debug)]
pub struct TaskRequest {
    pub ttl_ms: Option<u64>,
}

/// What `completion/complete` completes.
#[derive(Debug)]
pub enum CompletionRef {
    Prompt(String),
    ResourceTemplate(String),
}

/// The params of `completion/complete`.
#[derive(Debug)]
pub struct Complete {
    pub reference: CompletionRef,
    pub argument_name: String,
    pub argument_value: String,
    pub context_arguments: Vec<(String, String)>,
}

/// `params[key]` as a string, or the error naming the method and the key.
pub fn str_param<'a>(params: &'a Value, key: &str, method: &str) -> Result<&'a str, RpcError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params(format!("{method} needs a string \"{key}\" in params")))
}

fn string_param(params: &Value, key: &str, method: &str) -> Result<String, RpcError> {
    str_param(params, key, method).map(str::to_owned)
}

/// An object of strings (prompt arguments and the like); `what` names one in errors.
fn string_map(value: Option<&Value>, what: &str) -> Result<Vec<(String, String)>, RpcError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(RpcError::invalid_params(format!("{what} \"{k}\" must be a string"))),
            })
            .collect(),
        Some(_) => Err(RpcError::invalid_params(format!(
            "{what}s must be an object of strings"
        ))),
    }
}

impl Request {
    /// Parses the params of `method`, taking what it keeps out of them; the
    /// entry it names is its envelope's `target` (read there, not again here).
    ///
    /// # Errors
    ///
    /// Method not found for an unknown method; invalid params when the params
    /// lack what the method needs or hold it in the wrong type (the error
    /// names the method and the key).
    pub fn parse(method: &Method, mut target: Option<String>, mut params: Value) -> Result<Request, RpcError> {
        let name = method.name();
        let mut named = || {
            target.take().ok_or_else(|| {
                let key = method.target().map_or("name", Target::key);
                RpcError::invalid_params(format!("{name} needs a string \"{key}\" in params"))
            })
        };
        let cursor = || match params.get("cursor") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(cursor)) => Ok(Some(cursor.clone())),
            Some(_) => Err(RpcError::invalid_params("\"cursor\" must be a string")),
        };
        let list = |kind| -> Result<Request, RpcError> {
            Ok(Request::List {
                kind,
                cursor: cursor()?,
            })
        };
        Ok(match method {
            Method::Initialize => Request::Initialize {
                protocol_version: string_param(&params, "protocolVersion", name)?,
                client_name: params
                    .pointer("/clientInfo/name")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                capabilities: params.get_mut("capabilities").map(Value::take).unwrap_or(Value::Null),
            },
            Method::Discover => Request::Discover,
            Method::Listen => Request::Listen(
                params
                    .get_mut("notifications")
                    .map(Value::take)
                    .ok_or_else(|| RpcError::invalid_params("Invalid params: subscriptions/listen needs \"notifications\", an object saying which notifications to send"))
                    .and_then(|filter| {
                        serde_json::from_value(filter).map_err(|e| {
                            RpcError::invalid_params(format!("Invalid params: \"notifications\" of subscriptions/listen: {e}"))
                        })
                    })?,
            ),
            Method::Ping => Request::Ping,
            Method::SetLogLevel => Request::SetLogLevel(
                params
                    .get("level")
                    .and_then(|l| serde_json::from_value(l.clone()).ok())
                    .ok_or_else(|| RpcError::invalid_params("logging/setLevel needs \"level\": one of debug, info, notice, warning, error, critical, alert, emergency"))?,
            ),
            Method::Subscribe => Request::Subscribe { uri: named()? },
            Method::Unsubscribe => Request::Unsubscribe { uri: named()? },
            Method::ListTools => list(ListKind::Tools)?,
            Method::ListPrompts => list(ListKind::Prompts)?,
            Method::ListResources => list(ListKind::Resources)?,
            Method::ListTemplates => list(ListKind::Templates)?,
            Method::ListTasks => list(ListKind::Tasks)?,
            Method::ListSkills => list(ListKind::Skills)?,
            Method::GetSkill => Request::GetSkill {
                uri: string_param(&params, "uri", name)?,
            },
            Method::ReadDirectory => Request::ReadDirectory {
                uri: string_param(&params, "uri", name)?,
                cursor: cursor()?,
            },
            Method::CallTool => Request::CallTool(CallTool::parse(named()?, &mut params)?),
            Method::ReadResource => Request::ReadResource { uri: named()? },
            Method::GetPrompt => Request::GetPrompt {
                name: named()?,
                arguments: string_map(params.get("arguments"), "prompt argument")?,
            },
            Method::Complete => Request::Complete(Complete::parse(&params)?),
            Method::GetTask => Request::GetTask { task_id: named()? },
            Method::TaskResult => Request::TaskResult { task_id: named()? },
            Method::CancelTask => Request::CancelTask { task_id: named()? },
            Method::UpdateTask => Request::UpdateTask {
                task_id: named()?,
                responses: match params.get_mut("inputResponses").map(Value::take) {
                    None | Some(Value::Null) => Map::new(),
                    Some(Value::Object(responses)) => responses,
                    Some(_) => {
                        return Err(RpcError::invalid_params(
                            "Invalid params: \"inputResponses\" of tasks/update must be an object of answers by the keys of the task's \"inputRequests\"",
                        ));
                    }
                },
            },
            Method::Unknown(other) => return Err(RpcError::method_not_found(other)),
        })
    }
}

impl CallTool {
    /// The call of tool `name`, taking the arguments out of `params`.
    fn parse(name: String, params: &mut Value) -> Result<Self, RpcError> {
        let arguments = match params.get_mut("arguments").map(Value::take) {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(args @ Value::Object(_)) => args,
            Some(_) => return Err(RpcError::invalid_params("tools/call \"arguments\" must be an object")),
        };
        let task = match params.get("task") {
            None => None,
            Some(task) => Some(TaskRequest {
                ttl_ms: match task.get("ttl") {
                    None | Some(Value::Null) => None,
                    Some(ttl) => Some(ttl.as_u64().ok_or_else(|| {
                        RpcError::invalid_params("\"task.ttl\" must be a non-negative integer of milliseconds")
                    })?),
                },
            }),
        };
        Ok(Self {
            name,
            arguments,
            task,
            mirrored: None,
        })
    }
}

impl Complete {
    fn parse(params: &Value) -> Result<Self, RpcError> {
        let reference = params
            .get("ref")
            .ok_or_else(|| RpcError::invalid_params("completion/complete needs \"ref\""))?;
        let reference = match reference.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => CompletionRef::Prompt(string_param(reference, "name", "ref/prompt")?),
            Some("ref/resource") => CompletionRef::ResourceTemplate(string_param(reference, "uri", "ref/resource")?),
            _ => {
                return Err(RpcError::invalid_params(
                    "\"ref.type\" must be \"ref/prompt\" or \"ref/resource\"",
                ));
            }
        };
        let argument = params
            .get("argument")
            .ok_or_else(|| RpcError::invalid_params("completion/complete needs \"argument\""))?;
        Ok(Self {
            reference,
            argument_name: string_param(argument, "name", "argument")?,
            argument_value: string_param(argument, "value", "argument")?,
            context_arguments: string_map(params.pointer("/context/arguments"), "context argument")?,
        })
    }
}

/// A notification the client sent, by method.
#[derive(Debug)]
pub enum Notification {
    Initialized,
    /// `notifications/cancelled` for the request `request_id` (`None`: not a valid id).
    Cancelled {
        request_id: Option<super::RequestId>,
        reason: Option<Value>,
    },
    /// Notifications that need no work: roots are fetched afresh on every
    /// plugin call, and a client's progress concerns no request of ours.
    Ignored,
    Unknown(String),
}

impl Notification {
    pub fn parse(method: &str, params: &Value) -> Notification {
        match method {
            "notifications/initialized" => Notification::Initialized,
            "notifications/cancelled" => Notification::Cancelled {
                request_id: params.get("requestId").and_then(super::RequestId::from_value),
                reason: params.get("reason").cloned(),
            },
            "notifications/roots/list_changed" | "notifications/progress" => Notification::Ignored,
            other => Notification::Unknown(other.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::jsonrpc::METHOD_NOT_FOUND;
    use serde_json::json;

    #[test]
    fn every_served_method_parses_and_an_unknown_one_is_not_found() {
        for method in Method::SERVED {
            let parsed = Request::parse(method, None, json!({}));
            assert!(
                !matches!(&parsed, Err(error) if error.code == METHOD_NOT_FOUND),
                "{method:?} is known but not served"
            );
        }
        let unknown = Request::parse(&Method::from_name("made/up"), None, json!({}));
        assert!(matches!(unknown, Err(e) if e.code == METHOD_NOT_FOUND));
    }

    #[test]
    fn the_entry_a_request_names_is_its_envelopes_target() {
        let read = Request::parse(
            &Method::ReadResource,
            Some("file:///a".into()),
            json!({ "uri": "ignored" }),
        );
        assert!(matches!(read, Ok(Request::ReadResource { uri }) if uri == "file:///a"));
        let missing = Request::parse(&Method::CallTool, None, json!({ "name": 7 })).unwrap_err();
        assert_eq!(missing.message, "tools/call needs a string \"name\" in params");
        let task = Request::parse(&Method::GetTask, None, json!({})).unwrap_err();
        assert_eq!(task.message, "tasks/get needs a string \"taskId\" in params");
    }
}
