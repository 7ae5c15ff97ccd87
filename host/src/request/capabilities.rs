//! What a client said it can do, as far as the server's requests to it go
//! (sampling, elicitation, roots), and the capability a request lacks.

use serde_json::{Value, json};

/// What the client said it can do, as far as the server's requests go.
#[derive(Debug, Clone, Default)]
pub struct ClientCapabilities {
    pub sampling: bool,
    pub sampling_tools: bool,
    pub elicitation_form: bool,
    pub elicitation_url: bool,
    pub roots: bool,
}

impl ClientCapabilities {
    pub fn from_initialize(capabilities: &Value) -> Self {
        let elicitation = capabilities.get("elicitation").filter(|v| v.is_object());
        let has = |outer: Option<&Value>, key: &str| outer.and_then(|o| o.get(key)).is_some_and(Value::is_object);
        let sampling = capabilities.get("sampling").filter(|v| v.is_object());
        Self {
            sampling: sampling.is_some(),
            sampling_tools: has(sampling, "tools"),
            // An empty elicitation object means form mode, for older clients.
            elicitation_form: elicitation.is_some_and(|e| has(Some(e), "form") || !has(Some(e), "url")),
            elicitation_url: has(elicitation, "url"),
            roots: capabilities.get("roots").is_some_and(Value::is_object),
        }
    }

    /// Refuses a request the client did not declare support for, naming the
    /// capability it lacks.
    pub fn check(&self, method: &str, params: &Value) -> Result<(), Missing> {
        let mode = params.get("mode").and_then(Value::as_str);
        let capability = match method {
            "sampling/createMessage" if !self.sampling => "sampling",
            "sampling/createMessage"
                if !self.sampling_tools && (params.get("tools").is_some() || params.get("toolChoice").is_some()) =>
            {
                "sampling.tools"
            }
            "elicitation/create" if mode == Some("url") && !self.elicitation_url => "elicitation.url",
            "elicitation/create" if mode != Some("url") && !self.elicitation_form => "elicitation",
            "roots/list" if !self.roots => "roots",
            _ => return Ok(()),
        };
        Err(Missing {
            capability,
            method: method.to_owned(),
        })
    }
}

/// A client capability a request to the client needs and the client lacks.
#[derive(Debug)]
pub struct Missing {
    /// Its path in the client's capabilities, e.g. `sampling.tools`.
    pub capability: &'static str,
    pub method: String,
}

impl Missing {
    pub fn why(&self) -> String {
        let capability = match self.capability {
            "elicitation" => "elicitation (form mode)",
            other => other,
        };
        format!(
            "the client did not declare the {capability} capability, so {} cannot be used",
            self.method
        )
    }

    /// The capability as a ClientCapabilities object, e.g. `{"sampling": {"tools": {}}}`.
    pub fn as_capabilities(&self) -> Value {
        self.capability
            .rsplit('.')
            .fold(json!({}), |inner, key| json!({ key: inner }))
    }
}
