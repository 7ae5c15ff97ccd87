//! One request as it arrives, read once at the edge: its [`Method`] (an
//! unknown method is a variant too), the [`Revision`] it is served in (a
//! 2026-07-28 request's `_meta` checked there and then), the entry it names,
//! its round-trip fields, its progress token and trace context, and what
//! the method asks, typed ([`Request`]). Later layers read the [`Envelope`];
//! nothing reads the raw params again.

use serde_json::{Map, Value};

use super::method::Method;
use super::modern::{self, RequestMeta};
use super::requests::Request;
use super::{RequestId, RpcError, request_digest};

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

/// The fields a multi round-trip request's retry brings back, and what
/// makes it the same request.
#[derive(Debug)]
pub struct RoundTrip {
    /// The digest of its method and params (see [`request_digest`]), which
    /// its `requestState` is bound to.
    pub digest: String,
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
    /// What its method asks, typed (round-trip fields taken out), or why
    /// its params cannot be served.
    pub request: Result<Request, RpcError>,
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
        let request = Request::parse(&method, target.clone(), params);
        Envelope {
            id,
            method,
            revision,
            meta_version,
            target,
            progress_token,
            trace,
            request,
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
        true => Some(round_trip(method, params)?),
        false => None,
    };
    Ok(Box::new(ModernFields { meta, round_trip }))
}

/// Takes `inputResponses` and `requestState` out of `params`, and digests
/// what is left.
fn round_trip(method: &Method, params: &mut Value) -> Result<RoundTrip, RpcError> {
    let digest = request_digest(method.name(), params);
    let Some(fields) = params.as_object_mut() else {
        return Ok(RoundTrip {
            digest,
            input_responses: Map::new(),
            request_state: None,
        });
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
        digest,
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
        assert_eq!(
            round_trip.digest,
            request_digest("tools/call", &json!({ "name": "t", "arguments": {} })),
            "the round-trip fields are no part of what makes it the same request"
        );
        assert!(matches!(&envelope.request, Ok(Request::CallTool(call)) if call.name == "t"));

        let legacy = read("tasks/update", json!({ "taskId": "x", "inputResponses": { "k": {} } }));
        assert!(matches!(legacy.revision, Revision::Legacy));
        assert!(
            matches!(&legacy.request, Ok(Request::UpdateTask { task_id, responses }) if task_id == "x" && responses.contains_key("k")),
            "a method's own params stay its own"
        );
        let ping = read("ping", json!({ "_meta": { PROTOCOL_VERSION: MODERN_VERSION } }));
        assert!(
            matches!(ping.revision, Revision::Modern(Err(ref e)) if e.code == super::super::jsonrpc::METHOD_NOT_FOUND)
        );
    }
}
