//! Authorization of a message once it is read: what it uses that a
//! manifest may guard with scopes (the tool it calls, the prompt it gets or
//! completes, the resources it reads, subscribes to or listens for), and
//! whether its principal was granted them. It reads the request as its
//! envelope typed it; every request is named here, so a new one is a
//! decision the compiler asks for.

use std::sync::Arc;

use axum::http::StatusCode;

use super::access::{Access, Credential, Refusal};
use crate::catalog::Catalog;
use crate::manifest::EntryKind;
use crate::protocol::requests::{CompletionRef, Request};
use crate::protocol::{Envelope, Incoming};

impl Access {
    /// Refuses (403, with the scopes to ask for) a message whose entries
    /// need scopes `principal` was not granted, by the manifests of the
    /// plugins in the catalog `catalog` gives (asked for only when there
    /// are OAuth scopes to check, which static tokens and open servers do
    /// not have). The challenge names every scope the request needs, those
    /// every request needs included, so that a client that asks for exactly
    /// these gets a token that serves it.
    ///
    /// # Errors
    ///
    /// That 403, with its `insufficient_scope` challenge.
    pub(super) async fn authorize<F: Future<Output = Arc<Catalog>>>(
        &self,
        principal: &Credential,
        message: &Incoming,
        catalog: impl FnOnce() -> F,
    ) -> Result<(), Refusal> {
        let (Some(oauth), Some(principal)) = (self.resource_server(), principal) else {
            return Ok(());
        };
        let Incoming::Request(envelope) = message else {
            return Ok(());
        };
        if principal.scopes.is_none() {
            return Ok(());
        }
        let catalog = catalog().await;
        let mut needed = Vec::new();
        for (kind, name) in entries_used(envelope) {
            needed.extend(catalog.required_scopes(kind, name).unwrap_or_default());
        }
        if !principal.lacks(&needed) {
            return Ok(());
        }
        needed.extend(oauth.required().iter().cloned());
        needed.sort();
        needed.dedup();
        let description = format!("{} needs the scopes {}", envelope.method.name(), needed.join(" "));
        Err(Refusal {
            challenge: Some(oauth.challenge(Some(("insufficient_scope", &description)), &needed)),
            ..Refusal::new(
                StatusCode::FORBIDDEN,
                format!("Forbidden: {description}; ask the authorization server for a token that grants them"),
            )
        })
    }
}

/// The catalog entries `envelope` uses, by kind and the name the client
/// sees. A request whose params do not parse uses nothing: it is refused
/// for them before anything runs.
fn entries_used<'a>(envelope: &'a Envelope) -> Vec<(EntryKind, &'a str)> {
    let Ok(request) = &envelope.request else {
        return Vec::new();
    };
    let one = |kind, name: &'a str| vec![(kind, name)];
    match request {
        Request::CallTool(call) => one(EntryKind::Tool, &call.name),
        Request::GetPrompt { name, .. } => one(EntryKind::Prompt, name),
        Request::ReadResource { uri } | Request::Subscribe { uri } => one(EntryKind::Resource, uri),
        Request::GetSkill { uri } => one(EntryKind::Skill, uri),
        Request::Complete(complete) => match &complete.reference {
            CompletionRef::Prompt(name) => one(EntryKind::Prompt, name),
            CompletionRef::ResourceTemplate(uri) => one(EntryKind::Resource, uri),
        },
        Request::Listen(filter) => filter
            .resource_subscriptions
            .iter()
            .map(|uri| (EntryKind::Resource, uri.as_str()))
            .collect(),
        // Nothing a manifest guards: the session's own state, the lists
        // (filtered by scope when rendered), tasks (which belong to their
        // principal), a directory's children (filtered like the lists).
        Request::Initialize { .. }
        | Request::Discover
        | Request::Ping
        | Request::SetLogLevel(_)
        | Request::Unsubscribe { .. }
        | Request::List { .. }
        | Request::GetTask { .. }
        | Request::TaskResult { .. }
        | Request::CancelTask { .. }
        | Request::UpdateTask { .. }
        | Request::ReadDirectory { .. } => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use serde_json::Value;

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
                json!({ "ref": { "type": "ref/prompt", "name": "p" }, "argument": { "name": "a", "value": "" } })
            ),
            [(EntryKind::Prompt, "p".to_owned())]
        );
        assert_eq!(
            used(
                "subscriptions/listen",
                json!({ "notifications": { "resourceSubscriptions": ["a://1", "a://2"] } })
            ),
            [
                (EntryKind::Resource, "a://1".to_owned()),
                (EntryKind::Resource, "a://2".to_owned())
            ]
        );
        // Malformed params use nothing: the request is refused for them.
        assert!(
            used(
                "subscriptions/listen",
                json!({ "notifications": { "resourceSubscriptions": ["a://1", 2] } })
            )
            .is_empty()
        );
        assert!(used("tools/list", json!({})).is_empty());
        assert!(used("made/up", json!({ "name": "echo" })).is_empty());
    }
}
