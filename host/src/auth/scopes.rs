//! What a request uses that a manifest may guard with scopes: the tool it
//! calls, the prompt it gets or completes, the resources it reads,
//! subscribes to or listens for. Every method is named here, so a new one
//! is a decision the compiler asks for.

use serde_json::Value;

use crate::manifest::EntryKind;
use crate::protocol::{Envelope, Method};

/// The catalog entries `envelope` uses, by kind and the name the client sees.
pub fn entries_used<'a>(envelope: &'a Envelope) -> Vec<(EntryKind, &'a str)> {
    let params = &envelope.params;
    let text = |pointer: &str| params.pointer(pointer).and_then(Value::as_str);
    let one = |kind, name: Option<&'a str>| name.map(|name| (kind, name)).into_iter().collect();
    let target = envelope.target.as_deref();
    match envelope.method {
        Method::CallTool => one(EntryKind::Tool, target),
        Method::GetPrompt => one(EntryKind::Prompt, target),
        Method::ReadResource | Method::Subscribe => one(EntryKind::Resource, target),
        Method::GetSkill => one(EntryKind::Skill, text("/uri")),
        Method::Complete => match text("/ref/type") {
            Some("ref/prompt") => one(EntryKind::Prompt, text("/ref/name")),
            Some("ref/resource") => one(EntryKind::Resource, text("/ref/uri")),
            _ => Vec::new(),
        },
        Method::Listen => params
            .pointer("/notifications/resourceSubscriptions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|uri| Some((EntryKind::Resource, uri.as_str()?)))
            .collect(),
        // Nothing a manifest guards: the session's own state, the lists
        // (filtered by scope when rendered), tasks (which belong to their
        // principal), a directory's children (filtered like the lists), and
        // methods this server does not serve.
        Method::Initialize
        | Method::Discover
        | Method::Ping
        | Method::SetLogLevel
        | Method::Unsubscribe
        | Method::ListTools
        | Method::ListPrompts
        | Method::ListResources
        | Method::ListTemplates
        | Method::ListTasks
        | Method::GetTask
        | Method::TaskResult
        | Method::CancelTask
        | Method::UpdateTask
        | Method::ListSkills
        | Method::ReadDirectory
        | Method::Unknown(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::RequestId;

    fn used(method: &str, params: Value) -> Vec<(EntryKind, String)> {
        let envelope = Envelope::read(RequestId::from_value(&json!(1)).unwrap(), method, params);
        entries_used(&envelope)
            .into_iter()
            .map(|(kind, name)| (kind, name.to_owned()))
            .collect()
    }

    #[test]
    fn a_request_uses_the_entries_it_names() {
        assert_eq!(
            used("tools/call", json!({ "name": "echo" })),
            [(EntryKind::Tool, "echo".to_owned())]
        );
        assert_eq!(
            used(
                "completion/complete",
                json!({ "ref": { "type": "ref/prompt", "name": "p" } })
            ),
            [(EntryKind::Prompt, "p".to_owned())]
        );
        assert_eq!(
            used(
                "subscriptions/listen",
                json!({ "notifications": { "resourceSubscriptions": ["a://1", 2] } })
            ),
            [(EntryKind::Resource, "a://1".to_owned())]
        );
        assert!(used("tools/list", json!({})).is_empty());
        assert!(used("made/up", json!({ "name": "echo" })).is_empty());
    }
}
