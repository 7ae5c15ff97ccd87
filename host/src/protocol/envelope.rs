//! One request as it arrives, read once at the edge: its [`Method`] (an
//! unknown method is a variant too), the [`Revision`] it is served in (a
//! 2026-07-28 request's `_meta` checked there and then), the entry it names,
//! its round-trip fields, its progress token and trace context. Later layers
//! read the [`Envelope`]; what stays in its `params` is what the method
//! itself takes ([`super::requests::Request::parse`]).

use serde_json::{Map, Value};

use super::modern::{self, RequestMeta};
use super::{RequestId, RpcError};

/// Declares [`Method`]: one line per method, its variant and its wire name.
macro_rules! methods {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// A request method. A new method is a new line here; every `match`
        /// on `Method` (what it names, which revision has it, whether it may
        /// ask the client) and on [`super::requests::Request`] then asks for it.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Method {
            $($(#[$doc])* $variant,)*
            /// A method this server does not serve, as the client named it.
            Unknown(String),
        }

        impl Method {
            /// The method a client names `name`.
            pub fn from_name(name: &str) -> Method {
                match name {
                    $($name => Method::$variant,)*
                    other => Method::Unknown(other.to_owned()),
                }
            }

            /// The method's name, as a client sends it.
            pub fn name(&self) -> &str {
                match self {
                    $(Method::$variant => $name,)*
                    Method::Unknown(name) => name,
                }
            }

            /// The name, or `other` for an unknown method: a label for
            /// metrics and traces that a client cannot add names to.
            pub fn label(&self) -> &'static str {
                match self {
                    $(Method::$variant => $name,)*
                    Method::Unknown(_) => "other",
                }
            }

            /// Every method this server serves.
            #[cfg(test)]
            pub(crate) const SERVED: &[Method] = &[$(Method::$variant,)*];
        }
    };
}

methods! {
    /// Opens a 2025-11-25 session.
    Initialize = "initialize",
    /// 2026-07-28: versions, capabilities, identity.
    Discover = "server/discover",
    /// 2026-07-28: a stream of the notifications asked for.
    Listen = "subscriptions/listen",
    Ping = "ping",
    SetLogLevel = "logging/setLevel",
    Subscribe = "resources/subscribe",
    Unsubscribe = "resources/unsubscribe",
    ListTools = "tools/list",
    ListPrompts = "prompts/list",
    ListResources = "resources/list",
    ListTemplates = "resources/templates/list",
    ListTasks = "tasks/list",
    CallTool = "tools/call",
    ReadResource = "resources/read",
    GetPrompt = "prompts/get",
    Complete = "completion/complete",
    GetTask = "tasks/get",
    TaskResult = "tasks/result",
    CancelTask = "tasks/cancel",
    /// The 2026-07-28 tasks extension: answers to a task's `inputRequests`.
    UpdateTask = "tasks/update",
    /// The skills extension: the skills served, paginated.
    ListSkills = "skills/list",
    /// The skills extension: one skill's entry, by the URI of its `SKILL.md`.
    GetSkill = "skills/get",
    /// The skills extension: the direct children of a directory resource.
    ReadDirectory = "resources/directory/read",
}

/// What kind of entry a request names in its params.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A tool, by `name`.
    Tool,
    /// A prompt, by `name`.
    Prompt,
    /// A resource, by `uri`.
    Resource,
    /// A task, by `taskId`.
    Task,
}

impl Target {
    /// The key in params that names it.
    pub fn key(self) -> &'static str {
        match self {
            Target::Tool | Target::Prompt => "name",
            Target::Resource => "uri",
            Target::Task => "taskId",
        }
    }
}

impl Method {
    /// Whether only the 2026-07-28 revision has this method (so that a
    /// request of it is of that revision whatever its `_meta` says).
    pub fn is_modern_only(&self) -> bool {
        matches!(self, Method::Discover | Method::Listen)
    }

    /// Whether a 2026-07-28 request may call this method. (`initialize`,
    /// `ping`, `logging/setLevel`, resource subscriptions, `tasks/result`
    /// and `tasks/list` belong to sessions opened by `initialize`.)
    pub fn is_in_modern(&self) -> bool {
        match self {
            Method::Discover
            | Method::Listen
            | Method::ListTools
            | Method::CallTool
            | Method::ListResources
            | Method::ListTemplates
            | Method::ReadResource
            | Method::ListPrompts
            | Method::GetPrompt
            | Method::Complete
            | Method::GetTask
            | Method::UpdateTask
            | Method::CancelTask
            | Method::ListSkills
            | Method::GetSkill
            | Method::ReadDirectory => true,
            Method::Initialize
            | Method::Ping
            | Method::SetLogLevel
            | Method::Subscribe
            | Method::Unsubscribe
            | Method::ListTasks
            | Method::TaskResult
            | Method::Unknown(_) => false,
        }
    }

    /// Whether the plugin call serving a 2026-07-28 request of this method
    /// may ask the client something (a multi round-trip request).
    pub fn may_ask_client(&self) -> bool {
        matches!(self, Method::CallTool | Method::GetPrompt | Method::ReadResource)
    }

    /// The kind of entry a request of this method names, if it names one.
    pub fn target(&self) -> Option<Target> {
        match self {
            Method::CallTool => Some(Target::Tool),
            Method::GetPrompt => Some(Target::Prompt),
            Method::ReadResource | Method::Subscribe | Method::Unsubscribe => Some(Target::Resource),
            Method::GetTask | Method::TaskResult | Method::CancelTask | Method::UpdateTask => Some(Target::Task),
            Method::Initialize
            | Method::Discover
            | Method::Listen
            | Method::Ping
            | Method::SetLogLevel
            | Method::ListTools
            | Method::ListPrompts
            | Method::ListResources
            | Method::ListTemplates
            | Method::ListTasks
            // The skills extension's methods name a URI the revision's
            // headers do not carry.
            | Method::ListSkills
            | Method::GetSkill
            | Method::ReadDirectory
            | Method::Complete
            | Method::Unknown(_) => None,
        }
    }
}

/// The revision a request is served in, decided once from its body.
#[derive(Debug)]
pub enum Revision {
    /// A request of the session `initialize` opened (2025-11-25 and earlier).
    Legacy,
    /// A 2026-07-28 request (its `_meta` says so, or its method exists only
    /// then): what it says about itself, or why it cannot be served (a
    /// method the revision does not have, a `_meta` missing what it needs,
    /// malformed round-trip fields).
    Modern(Result<Box<ModernFields>, RpcError>),
}

/// What a 2026-07-28 request carries besides its method's params.
#[derive(Debug)]
pub struct ModernFields {
    pub meta: RequestMeta,
    /// For a method that may ask the client: the answers and state of the
    /// earlier rounds (both empty in a first round).
    pub round_trip: Option<RoundTrip>,
}

/// The fields a multi round-trip request's retry brings back.
#[derive(Debug, Default)]
pub struct RoundTrip {
    /// `inputResponses`: the client's answers, by the keys of the `inputRequests`.
    pub input_responses: Map<String, Value>,
    /// `requestState`: the sealed state the server sent, unchanged.
    pub request_state: Option<String>,
}

/// The W3C trace context a request carries in `_meta` (`traceparent`, and
/// `tracestate` with it), in either revision.
#[derive(Debug)]
pub struct TraceContext {
    pub traceparent: String,
    pub tracestate: Option<String>,
}

/// One request, read once.
#[derive(Debug)]
pub struct Envelope {
    pub id: RequestId,
    pub method: Method,
    pub revision: Revision,
    /// The `io.modelcontextprotocol/protocolVersion` its `_meta` names, as
    /// sent (what an HTTP header must mirror).
    pub meta_version: Option<String>,
    /// The entry it names (see [`Method::target`]), when that is a string.
    pub target: Option<String>,
    /// Its progress token, when it gave a valid one (a string or an integer).
    pub progress_token: Option<Value>,
    pub trace: Option<TraceContext>,
    /// The params its method reads (round-trip fields taken out).
    pub params: Value,
}

impl Envelope {
    /// Reads request `id` of `method` with `params` (an object).
    pub fn read(id: RequestId, method: &str, mut params: Value) -> Envelope {
        let method = Method::from_name(method);
        let meta = params.get("_meta");
        let text = |key: &str| meta.and_then(|m| m.get(key)).and_then(Value::as_str).map(str::to_owned);
        let meta_version = text(modern::PROTOCOL_VERSION);
        let progress_token = meta
            .and_then(|m| m.get("progressToken"))
            .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
            .cloned();
        let trace = text("traceparent").map(|traceparent| TraceContext {
            traceparent,
            tracestate: text("tracestate"),
        });
        let is_modern = method.is_modern_only() || meta_is_modern(&params);
        let target = method
            .target()
            .and_then(|target| params.get(target.key()))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let revision = if is_modern {
            Revision::Modern(modern_fields(&method, &mut params))
        } else {
            Revision::Legacy
        };
        Envelope {
            id,
            method,
            revision,
            meta_version,
            target,
            progress_token,
            trace,
            params,
        }
    }

    /// Whether it is a 2026-07-28 request.
    pub fn is_modern(&self) -> bool {
        matches!(self.revision, Revision::Modern(_))
    }
}

/// Whether a message's `_meta` carries one of the 2026-07-28 revision's
/// request keys (which makes it a message of that revision).
pub fn meta_is_modern(params: &Value) -> bool {
    let meta = params.get("_meta");
    [
        modern::PROTOCOL_VERSION,
        modern::CLIENT_CAPABILITIES,
        modern::CLIENT_INFO,
    ]
    .iter()
    .any(|key| meta.and_then(|m| m.get(*key)).is_some())
}

/// Checks what a 2026-07-28 request needs, in order: a method the revision
/// has, its `_meta`, and for a method that may ask the client, its
/// round-trip fields (taken out of `params`).
fn modern_fields(method: &Method, params: &mut Value) -> Result<Box<ModernFields>, RpcError> {
    if !method.is_in_modern() {
        return Err(RpcError::method_not_found(&format!(
            "{} (not part of the {} revision: send \"initialize\" first to use it)",
            method.name(),
            modern::MODERN_VERSION
        )));
    }
    let meta = RequestMeta::parse(params)?;
    let round_trip = match method.may_ask_client() {
        true => Some(round_trip(params)?),
        false => None,
    };
    Ok(Box::new(ModernFields { meta, round_trip }))
}

/// Takes `inputResponses` and `requestState` out of `params`.
fn round_trip(params: &mut Value) -> Result<RoundTrip, RpcError> {
    let Some(fields) = params.as_object_mut() else {
        return Ok(RoundTrip::default());
    };
    let input_responses = match fields.remove("inputResponses") {
        None => Map::new(),
        Some(Value::Object(responses)) => responses,
        Some(_) => {
            return Err(RpcError::invalid_params(
                "Invalid params: \"inputResponses\" must be an object of answers by the keys of \"inputRequests\"",
            ));
        }
    };
    let request_state = match fields.remove("requestState") {
        None => None,
        Some(Value::String(sealed)) => Some(sealed),
        Some(_) => {
            return Err(RpcError::invalid_params(
                "Invalid params: \"requestState\" must be the string the server sent, unchanged",
            ));
        }
    };
    Ok(RoundTrip {
        input_responses,
        request_state,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::modern::{CLIENT_CAPABILITIES, MODERN_VERSION, PROTOCOL_VERSION};

    fn read(method: &str, params: Value) -> Envelope {
        Envelope::read(RequestId::from_value(&json!(1)).unwrap(), method, params)
    }

    #[test]
    fn every_served_method_reads_back_by_its_name() {
        for method in Method::SERVED {
            assert_eq!(&Method::from_name(method.name()), method);
            assert_eq!(method.label(), method.name());
        }
        let unknown = Method::from_name("made/up");
        assert_eq!(unknown, Method::Unknown("made/up".into()));
        assert_eq!((unknown.name(), unknown.label()), ("made/up", "other"));
    }

    #[test]
    fn a_request_is_modern_by_its_meta_or_a_modern_only_method() {
        let with_meta = |meta: Value| json!({ "_meta": meta });
        assert!(read("tools/list", with_meta(json!({ PROTOCOL_VERSION: MODERN_VERSION }))).is_modern());
        assert!(read("tools/list", with_meta(json!({ CLIENT_CAPABILITIES: {} }))).is_modern());
        assert!(read("server/discover", json!({})).is_modern());
        assert!(!read("tools/list", json!({})).is_modern());
        assert!(!read("tools/call", with_meta(json!({ "progressToken": 1 }))).is_modern());
    }

    #[test]
    fn the_envelope_holds_what_later_layers_read() {
        let meta = json!({ PROTOCOL_VERSION: MODERN_VERSION, CLIENT_CAPABILITIES: {}, "progressToken": "p", "traceparent": "00-a-b-01" });
        let envelope = read(
            "tools/call",
            json!({ "name": "t", "arguments": {}, "_meta": meta, "inputResponses": { "k": {} }, "requestState": "s" }),
        );
        assert_eq!(envelope.method, Method::CallTool);
        assert_eq!(envelope.target.as_deref(), Some("t"));
        assert_eq!(envelope.meta_version.as_deref(), Some(MODERN_VERSION));
        assert_eq!(envelope.progress_token, Some(json!("p")));
        assert_eq!(envelope.trace.as_ref().unwrap().traceparent, "00-a-b-01");
        let Revision::Modern(Ok(fields)) = &envelope.revision else {
            panic!("{envelope:?}")
        };
        let round_trip = fields.round_trip.as_ref().unwrap();
        assert_eq!(round_trip.request_state.as_deref(), Some("s"));
        assert!(round_trip.input_responses.contains_key("k"));
        assert!(envelope.params.get("requestState").is_none() && envelope.params.get("inputResponses").is_none());

        let legacy = read("tasks/update", json!({ "taskId": "x", "inputResponses": {} }));
        assert!(matches!(legacy.revision, Revision::Legacy));
        assert!(
            legacy.params.get("inputResponses").is_some(),
            "a method's own params stay"
        );
        let ping = read("ping", json!({ "_meta": { PROTOCOL_VERSION: MODERN_VERSION } }));
        assert!(
            matches!(ping.revision, Revision::Modern(Err(ref e)) if e.code == super::super::jsonrpc::METHOD_NOT_FOUND)
        );
    }
}
