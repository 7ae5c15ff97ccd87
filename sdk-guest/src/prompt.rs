//! Prompts: the metadata the client lists, with arguments derived from a
//! Rust type, and the function that renders the messages.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::bindings::exports::wasm_mcp::plugin::prompts::{Prompt as PromptDef, PromptArgument};
use crate::completion::Completers;
use crate::{ContentBlock, Error, GetPromptResult, PromptMessage, Role, args, builder, schema};

type GetFn = Box<dyn Fn(Vec<(String, String)>) -> Result<GetPromptResult, Error>>;

/// A prompt template. Add it with [`Plugin::prompt`](crate::Plugin::prompt).
pub struct Prompt {
    pub(crate) def: PromptDef,
    pub(crate) get: GetFn,
    pub(crate) completers: Completers,
}

impl Prompt {
    /// A prompt named `name` rendered by `handler`.
    ///
    /// `A` is the arguments type: a struct of `String` fields (required
    /// arguments) and `Option<String>` fields (optional ones) deriving
    /// `Deserialize` and `JsonSchema`, or [`NoArgs`](crate::NoArgs). The
    /// listed arguments come from it: field names (after serde renames),
    /// doc comments as descriptions, `#[schemars(title = "...")]` as titles.
    /// Arguments that do not fit give an `invalid-params` error.
    ///
    /// `handler` returns the messages (`Vec<PromptMessage>`) or a full
    /// [`GetPromptResult`], or an [`Error`] such as `Error::NotFound`.
    pub fn new<A, R, F>(name: impl Into<String>, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema,
        R: Into<GetPromptResult>,
        F: Fn(A) -> Result<R, Error> + 'static,
    {
        let name = name.into();
        let def = PromptDef {
            name: name.clone(),
            title: None,
            description: None,
            arguments: prompt_arguments(&schema::input_schema::<A>()),
            icons: Vec::new(),
            meta: None,
        };
        let get = Box::new(move |pairs| match args::from_pairs::<A>(pairs) {
            Ok(args) => handler(args).map(Into::into),
            Err(e) => Err(Error::InvalidParams(format!(
                "invalid arguments for prompt `{name}`: {e}"
            ))),
        });
        Prompt {
            def,
            get,
            completers: Completers::default(),
        }
    }

    builder::setters! {
        /// A human-readable name for display.
        text title;
        /// What the prompt is for.
        text description;
        /// Adds an icon.
        icon;
        /// Sets the prompt's `_meta` object.
        meta;
        /// Suggests values for the argument `argument`: `handler` receives the
        /// value typed so far and the values the client already resolved for
        /// other arguments, and returns the suggestions (the SDK passes on the
        /// first 100 and reports the total).
        complete argument;
    }
}

/// The prompt arguments an object schema describes.
fn prompt_arguments(schema: &Value) -> Vec<PromptArgument> {
    let required = |name: &str| {
        schema["required"]
            .as_array()
            .is_some_and(|names| names.iter().any(|n| n == name))
    };
    let text = |property: &Value, key: &str| property[key].as_str().map(str::to_string);
    schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, property)| PromptArgument {
            name: name.clone(),
            title: text(property, "title"),
            description: text(property, "description"),
            required: required(name),
        })
        .collect()
}

impl PromptMessage {
    /// A message from the user.
    pub fn user(content: ContentBlock) -> Self {
        PromptMessage {
            role: Role::User,
            content,
        }
    }

    /// A message from the assistant.
    pub fn assistant(content: ContentBlock) -> Self {
        PromptMessage {
            role: Role::Assistant,
            content,
        }
    }
}

impl From<Vec<PromptMessage>> for GetPromptResult {
    fn from(messages: Vec<PromptMessage>) -> Self {
        GetPromptResult {
            description: None,
            messages,
            meta: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        /// First test argument
        arg1: String,
        #[serde(rename = "resourceUri")]
        #[schemars(title = "Resource URI")]
        resource_uri: Option<String>,
    }

    #[test]
    fn arguments_come_from_the_type() {
        let arguments = prompt_arguments(&schema::input_schema::<Args>());
        let shape: Vec<_> = arguments
            .iter()
            .map(|a| {
                (
                    a.name.as_str(),
                    a.title.as_deref(),
                    a.description.as_deref(),
                    a.required,
                )
            })
            .collect();
        assert_eq!(
            shape,
            [
                ("arg1", None, Some("First test argument"), true),
                ("resourceUri", Some("Resource URI"), None, false),
            ]
        );
    }
}
