//! What a plugin can ask of the host while it serves a request: logging,
//! progress, cancellation, and requests to the client (sampling,
//! elicitation, roots). Calls made outside a request are ignored or refused.
//!
//! The host binds every call to the request being served; a plugin never
//! sees progress tokens or request ids.
//!
//! In native tests (off wasm) these functions act on a
//! [`FakeHost`](crate::testing::FakeHost) instead: see [`crate::testing`].

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::bindings::wasm_mcp::plugin::host as raw;
// The component's imports; off wasm, the fake host of native tests.
#[cfg(target_arch = "wasm32")]
use crate::bindings::wasm_mcp::plugin::host as imports;
pub use crate::bindings::wasm_mcp::plugin::host::{
    Answer, ElicitAction, ElicitResult, Elicitation, FormElicitation, IncludeContext, ListKind, LogLevel,
    ModelPreferences, Question, Root, SamplingContent, SamplingMessage, SamplingRequest, SamplingResult, ToolResult,
    ToolUse, UrlElicitation,
};
#[cfg(not(target_arch = "wasm32"))]
use crate::testing::imports;
use crate::{Role, TextContent};

/// Sends a log message (`notifications/message`, logger = the plugin) if the
/// client's log level lets it through.
pub fn log(level: LogLevel, message: &str) {
    imports::log(level, message);
}

/// Like [`log`], with structured data; data that does not serialize is dropped.
pub fn log_json(level: LogLevel, data: &impl Serialize) {
    if let Ok(json) = serde_json::to_string(data) {
        imports::log_json(level, &json);
    }
}

/// Reports progress on the current request. Values must increase; the host
/// drops any that do not, and sends nothing if the client asked for no
/// progress.
pub fn progress(progress: f64, total: Option<f64>, message: Option<&str>) {
    imports::progress(progress, total, message);
}

/// Whether the client has cancelled the current request. Long loops should
/// check it and return early; the host also stops the call itself.
pub fn is_cancelled() -> bool {
    imports::is_cancelled()
}

/// Asks the client's model for a completion (`sampling/createMessage`).
pub fn sample(request: &SamplingRequest) -> Result<SamplingResult, RequestError> {
    imports::sample(request).map_err(Into::into)
}

/// Asks the user to fill in a form (`elicitation/create`, form mode).
/// `schema` is a flat object schema of primitive properties.
pub fn elicit_form(message: &str, schema: &Value) -> Result<ElicitResult, RequestError> {
    imports::elicit(&raw::Elicitation::Form(raw::FormElicitation {
        message: message.to_string(),
        requested_schema: schema.to_string(),
    }))
    .map_err(Into::into)
}

/// Asks the user to complete an interaction at `url` (`elicitation/create`,
/// URL mode). Call [`elicitation_complete`] with the same id when it is done.
pub fn elicit_url(message: &str, url: &str, elicitation_id: &str) -> Result<ElicitResult, RequestError> {
    imports::elicit(&raw::Elicitation::Url(raw::UrlElicitation {
        message: message.to_string(),
        url: url.to_string(),
        elicitation_id: elicitation_id.to_string(),
    }))
    .map_err(Into::into)
}

/// Tells the client that the URL-mode elicitation `elicitation_id` finished.
pub fn elicitation_complete(elicitation_id: &str) {
    imports::elicitation_complete(elicitation_id);
}

/// The client's current roots (`roots/list`).
pub fn list_roots() -> Result<Vec<Root>, RequestError> {
    imports::list_roots().map_err(Into::into)
}

/// Asks the client several things at once, each under a key you name
/// (unique within the request); the answers come back in the order asked.
///
/// A 2026-07-28 client sees the keys: they are the `inputRequests` of the
/// `InputRequiredResult` the host answers with, and the client's retry
/// brings the answers. If the retry reaches a host that no longer holds
/// this call (another replica, a restart), the call runs again from the
/// start and each question already answered returns its earlier answer at
/// once: so ask first, then act, and keep work before a question free of
/// side effects. An earlier client gets the questions as concurrent requests.
pub fn ask(questions: &[(&str, Question)]) -> Vec<Result<Answer, RequestError>> {
    let questions: Vec<(String, Question)> = questions
        .iter()
        .map(|(key, question)| ((*key).to_string(), question.clone()))
        .collect();
    imports::ask(&questions)
        .into_iter()
        .map(|answer| answer.map_err(Into::into))
        .collect()
}

impl Question {
    /// A form for the user to fill in (`elicitation/create`, form mode).
    pub fn form(message: &str, schema: &Value) -> Self {
        Question::Elicit(raw::Elicitation::Form(raw::FormElicitation {
            message: message.to_string(),
            requested_schema: schema.to_string(),
        }))
    }
}

impl Answer {
    /// The elicitation answer, if this is one.
    pub fn elicited(&self) -> Option<&ElicitResult> {
        match self {
            Answer::Elicit(result) => Some(result),
            _ => None,
        }
    }

    /// The sampling answer, if this is one.
    pub fn sampled(&self) -> Option<&SamplingResult> {
        match self {
            Answer::Sample(result) => Some(result),
            _ => None,
        }
    }

    /// The roots, if this answers a roots question.
    pub fn roots(&self) -> Option<&[Root]> {
        match self {
            Answer::ListRoots(roots) => Some(roots),
            _ => None,
        }
    }
}

/// Announces that the resource at `uri` changed; the host tells the clients
/// subscribed to it.
pub fn resource_updated(uri: &str) {
    imports::resource_updated(uri);
}

/// Says that this plugin's `lists` may have changed (its tools come from data
/// it just changed, say): the host lists the plugin again in a fresh instance,
/// serves what it lists from then on, and tells clients to fetch those lists
/// again. Calls close together are handled once.
pub fn lists_changed(lists: &[ListKind]) {
    imports::lists_changed(lists);
}

/// Says that this call will take a while. For a client that negotiated the
/// 2026-07-28 tasks extension, calling a tool whose task support is
/// `Optional` or `Required`, the host answers the request now with a task
/// and the call goes on in the background (what it asks the client from then
/// on becomes the task's `inputRequests`). Returns whether the call now runs
/// as a task; elsewhere it does nothing and returns false. Without it, such
/// a call becomes a task once it has run for the server's `task_after_ms`.
pub fn run_as_task() -> bool {
    imports::run_as_task()
}

/// Why a request to the client produced no answer.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestError {
    /// The client did not declare the capability this needs.
    NotSupported(String),
    /// The client answered with a JSON-RPC error.
    Rejected {
        /// The JSON-RPC error code.
        code: i32,
        /// The client's error message.
        message: String,
    },
    /// No answer within the host's timeout.
    TimedOut,
    /// The current request was cancelled while waiting.
    Cancelled,
}

impl From<raw::ClientError> for RequestError {
    fn from(e: raw::ClientError) -> Self {
        match e {
            raw::ClientError::NotSupported(why) => RequestError::NotSupported(why),
            raw::ClientError::Rejected(e) => RequestError::Rejected {
                code: e.code,
                message: e.message,
            },
            raw::ClientError::TimedOut => RequestError::TimedOut,
            raw::ClientError::Cancelled => RequestError::Cancelled,
        }
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::NotSupported(why) => write!(f, "not supported by the client: {why}"),
            RequestError::Rejected { code, message } => {
                write!(f, "the client refused ({code}): {message}")
            }
            RequestError::TimedOut => f.write_str("the client did not answer in time"),
            RequestError::Cancelled => f.write_str("the request was cancelled"),
        }
    }
}

impl std::error::Error for RequestError {}

impl SamplingRequest {
    /// A request for at most `max_tokens` tokens continuing `messages`; set
    /// the other fields with struct update syntax.
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: u32) -> Self {
        SamplingRequest {
            messages,
            model_preferences: None,
            system_prompt: None,
            include_context: None,
            temperature: None,
            max_tokens,
            stop_sequences: Vec::new(),
            metadata: None,
            tools: None,
            tool_choice: None,
        }
    }
}

impl SamplingMessage {
    /// A text message from the user.
    pub fn user(text: impl Into<String>) -> Self {
        Self::text(Role::User, text.into())
    }

    /// A text message from the assistant.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::text(Role::Assistant, text.into())
    }

    fn text(role: Role, text: String) -> Self {
        SamplingMessage {
            role,
            content: vec![SamplingContent::Text(TextContent {
                text,
                annotations: None,
                meta: None,
            })],
        }
    }
}

impl SamplingResult {
    /// The text blocks of the answer, joined; empty if it has none.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| match c {
                SamplingContent::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect()
    }
}

impl ElicitResult {
    /// The submitted form values decoded as `T` (`None` unless accepted with
    /// content).
    pub fn content_as<T: DeserializeOwned>(&self) -> Option<serde_json::Result<T>> {
        self.content.as_deref().map(serde_json::from_str)
    }
}
