//! Tools: a name, the metadata the client lists, and the Rust function that
//! runs a call. The input schema is derived from the function's argument
//! type, the output schema from its return type.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::bindings::exports::wasm_mcp::plugin::tools::Tool as ToolDef;
use crate::{CallToolResult, IntoToolResult, TaskSupport, ToolAnnotations, args, builder, schema};

type CallFn = Box<dyn Fn(&str) -> CallToolResult>;

/// A tool: build it with [`Tool::new`], refine it with the builder methods,
/// and add it with [`Plugin::tool`](crate::Plugin::tool).
pub struct Tool {
    pub(crate) def: ToolDef,
    pub(crate) call: CallFn,
}

impl Tool {
    /// A tool named `name` that runs `handler`.
    ///
    /// `A` is the arguments type (a struct deriving `Deserialize` and
    /// `JsonSchema`, or [`NoArgs`](crate::NoArgs)); its schema is the tool's
    /// input schema and its doc comments become the descriptions. Arguments
    /// that do not deserialize into `A` give an error result naming the
    /// problem, without calling `handler`.
    ///
    /// `R` is anything that implements [`IntoToolResult`]: a `String`, content
    /// blocks, a [`Structured`](crate::Structured) value (which also sets the
    /// output schema), or a `Result` of one of these whose error is shown.
    pub fn new<A, R, F>(name: impl Into<String>, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema,
        R: IntoToolResult,
        F: Fn(A) -> R + 'static,
    {
        let name = name.into();
        let def = ToolDef {
            name: name.clone(),
            title: None,
            description: None,
            input_schema: schema::input_schema::<A>().to_string(),
            output_schema: R::output_schema().map(|s| s.to_string()),
            annotations: None,
            icons: Vec::new(),
            task_support: TaskSupport::Forbidden,
            meta: None,
        };
        let call = Box::new(move |arguments: &str| match args::from_json::<A>(arguments) {
            Ok(args) => handler(args).into_tool_result(),
            Err(e) => CallToolResult::error(format!("invalid arguments for tool `{name}`: {e}")),
        });
        Tool { def, call }
    }

    builder::setters! {
        /// A human-readable name for display.
        text title;
        /// What the tool does, for the model.
        text description;
        /// Replaces all annotations at once.
        value annotations: ToolAnnotations;
        /// Adds an icon.
        icon;
        /// Sets the tool's `_meta` object.
        meta;
    }

    /// `readOnlyHint`: the tool does not modify its environment.
    pub fn read_only_hint(self, value: bool) -> Self {
        self.annotate(|a| a.read_only_hint = Some(value))
    }

    /// `destructiveHint`: the tool may perform destructive updates.
    pub fn destructive_hint(self, value: bool) -> Self {
        self.annotate(|a| a.destructive_hint = Some(value))
    }

    /// `idempotentHint`: calling it again with the same arguments has no
    /// further effect.
    pub fn idempotent_hint(self, value: bool) -> Self {
        self.annotate(|a| a.idempotent_hint = Some(value))
    }

    /// `openWorldHint`: the tool interacts with external entities.
    pub fn open_world_hint(self, value: bool) -> Self {
        self.annotate(|a| a.open_world_hint = Some(value))
    }

    fn annotate(mut self, set: impl FnOnce(&mut ToolAnnotations)) -> Self {
        set(self.def.annotations.get_or_insert_with(Default::default));
        self
    }

    /// Whether the tool may (or must) run as an MCP task; the default is
    /// [`TaskSupport::Forbidden`].
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.def.task_support = support;
        self
    }

    /// Replaces the derived input schema, for schemas a Rust type cannot
    /// express. It must still be an object schema, and the arguments must
    /// still deserialize into the handler's type (`serde_json::Value` takes
    /// anything).
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.def.input_schema = schema.to_string();
        self
    }

    /// Replaces (or sets) the output schema; every successful result must
    /// then carry `structuredContent` that conforms to it.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.def.output_schema = Some(schema.to_string());
        self
    }
}
