//! The plugin: every tool, resource, template, prompt and skill a component
//! serves, and the WIT exports that route each request to its handler.

use std::cell::OnceCell;

use crate::bindings::exports::wasm_mcp::plugin::{completion, prompts, resources, skills, tools};
use crate::{
    Arguments, CallToolResult, Error, GetPromptResult, Prompt, Resource, ResourceContents, ResourceTemplate, Skill,
    Tool,
};

/// Everything a plugin serves. Build it in a function and export that
/// function with [`export!`](crate::export!). Parts it has none of are
/// served as empty lists, and requests for unknown names or URIs get
/// `Error::NotFound`.
#[derive(Default)]
pub struct Plugin {
    tools: Vec<Tool>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
    prompts: Vec<Prompt>,
    skills: Vec<Skill>,
}

impl Plugin {
    /// A plugin that serves nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds a resource.
    pub fn resource(mut self, resource: Resource) -> Self {
        self.resources.push(resource);
        self
    }

    /// Adds a resource template; reads of URIs that no resource has go to
    /// the first template that matches.
    pub fn resource_template(mut self, template: ResourceTemplate) -> Self {
        self.templates.push(template);
        self
    }

    /// Adds a prompt.
    pub fn prompt(mut self, prompt: Prompt) -> Self {
        self.prompts.push(prompt);
        self
    }

    /// Adds a skill whose files the plugin makes as they are read.
    pub fn skill(mut self, skill: Skill) -> Self {
        self.skills.push(skill);
        self
    }

    /// Reads file `file` of skill `path` as the component would.
    pub fn read_skill_file(&self, path: &str, file: &str) -> Result<ResourceContents, Error> {
        self.skill_at(path)?.read(file)
    }

    fn skill_at(&self, path: &str) -> Result<&Skill, Error> {
        let skill = self.skills.iter().find(|s| s.path == path);
        skill.ok_or_else(|| Error::NotFound(format!("no skill at `{path}`")))
    }

    /// Serves a `tools/call` of `name` with `arguments` (JSON text) as the
    /// component would: handy in native tests of the whole tool, with
    /// argument decoding and result conversion. (The host also checks the
    /// arguments against the input schema before the call; this does not.)
    pub fn call_tool(&self, name: &str, arguments: &str) -> Result<CallToolResult, Error> {
        let tool = self.tools.iter().find(|t| t.def.name == name);
        let tool = tool.ok_or_else(|| Error::NotFound(format!("no tool named `{name}`")))?;
        Ok((tool.call)(arguments))
    }

    /// Serves a `resources/read` of `uri` as the component would: the
    /// resource with that URI, else the first template that matches it.
    pub fn read_resource(&self, uri: &str) -> Result<Vec<ResourceContents>, Error> {
        if let Some(resource) = self.resources.iter().find(|r| r.def.uri == uri) {
            return (resource.read)(uri);
        }
        self.templates
            .iter()
            .find_map(|t| t.pattern.matches(uri).map(|vars| (t.read)(uri, &vars)))
            .unwrap_or_else(|| Err(Error::NotFound(format!("no resource at `{uri}`"))))
    }

    /// Serves a `prompts/get` of `name` with `arguments` as the component would.
    pub fn get_prompt(&self, name: &str, arguments: Vec<(String, String)>) -> Result<GetPromptResult, Error> {
        let prompt = self.prompts.iter().find(|p| p.def.name == name);
        let prompt = prompt.ok_or_else(|| Error::NotFound(format!("no prompt named `{name}`")))?;
        (prompt.get)(arguments)
    }

    /// Serves a `completion/complete` request as the component would.
    pub fn complete(&self, request: completion::CompletionRequest) -> Result<completion::Completions, Error> {
        let completers = match &request.reference {
            completion::Reference::Prompt(name) => self
                .prompts
                .iter()
                .find(|p| &p.def.name == name)
                .map(|p| &p.completers)
                .ok_or_else(|| Error::NotFound(format!("no prompt named `{name}`")))?,
            completion::Reference::ResourceTemplate(template) => self
                .templates
                .iter()
                .find(|t| &t.def.uri_template == template)
                .map(|t| &t.completers)
                .ok_or_else(|| Error::NotFound(format!("no resource template `{template}`")))?,
        };
        let context = Arguments::from(request.context_arguments);
        Ok(completers.complete(&request.argument_name, &request.argument_value, &context))
    }
}

/// Implemented by [`export!`](crate::export!) for the type it exports:
/// names the function that builds the plugin.
#[doc(hidden)]
pub trait Export {
    fn plugin() -> Plugin;
}

thread_local! {
    static PLUGIN: OnceCell<Plugin> = const { OnceCell::new() };
}

/// Runs `f` on the plugin, built once per instance.
fn with<E: Export, R>(f: impl FnOnce(&Plugin) -> R) -> R {
    PLUGIN.with(|cell| f(cell.get_or_init(E::plugin)))
}

impl<E: Export> tools::Guest for E {
    fn list_tools() -> Vec<tools::Tool> {
        with::<E, _>(|p| p.tools.iter().map(|t| t.def.clone()).collect())
    }

    fn call_tool(name: String, arguments: String) -> Result<CallToolResult, Error> {
        with::<E, _>(|p| p.call_tool(&name, &arguments))
    }
}

impl<E: Export> resources::Guest for E {
    fn list_resources() -> Vec<resources::Resource> {
        with::<E, _>(|p| p.resources.iter().map(|r| r.def.clone()).collect())
    }

    fn list_resource_templates() -> Vec<resources::ResourceTemplate> {
        with::<E, _>(|p| p.templates.iter().map(|t| t.def.clone()).collect())
    }

    fn read_resource(uri: String) -> Result<Vec<ResourceContents>, Error> {
        with::<E, _>(|p| p.read_resource(&uri))
    }
}

impl<E: Export> prompts::Guest for E {
    fn list_prompts() -> Vec<prompts::Prompt> {
        with::<E, _>(|p| p.prompts.iter().map(|p| p.def.clone()).collect())
    }

    fn get_prompt(name: String, arguments: Vec<(String, String)>) -> Result<GetPromptResult, Error> {
        with::<E, _>(|p| p.get_prompt(&name, arguments))
    }
}

impl<E: Export> skills::Guest for E {
    fn list_skills() -> Vec<String> {
        with::<E, _>(|p| p.skills.iter().map(|s| s.path.clone()).collect())
    }

    fn list_skill_files(path: String) -> Result<Vec<String>, Error> {
        with::<E, _>(|p| Ok(p.skill_at(&path)?.files()))
    }

    fn read_skill_file(path: String, file: String) -> Result<ResourceContents, Error> {
        with::<E, _>(|p| p.read_skill_file(&path, &file))
    }
}

impl<E: Export> completion::Guest for E {
    fn complete(request: completion::CompletionRequest) -> Result<completion::Completions, Error> {
        with::<E, _>(|p| p.complete(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NoArgs, Structured};
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    #[derive(Deserialize, JsonSchema)]
    struct Args {
        text: String,
    }

    #[derive(Serialize, JsonSchema)]
    struct Out {
        n: usize,
    }

    fn plugin() -> Plugin {
        Plugin::new()
            .tool(Tool::new("len", |a: Args| Structured(Out { n: a.text.len() })))
            .tool(Tool::new("fail", |_: NoArgs| Err::<String, _>("nope")))
            .resource_template(ResourceTemplate::new("t://{id}", "t", |uri, vars| {
                Ok(vec![ResourceContents::text(uri, "text/plain", vars.get("id").unwrap())])
            }))
    }

    fn text(result: &CallToolResult) -> &str {
        match &result.content[0] {
            crate::ContentBlock::Text(t) => &t.text,
            _ => panic!("not text"),
        }
    }

    #[test]
    fn structured_results_carry_json_twice() {
        let result = plugin().call_tool("len", r#"{"text":"abc"}"#).unwrap();
        assert!(!result.is_error);
        assert_eq!(result.structured_content.as_deref(), Some(r#"{"n":3}"#));
        assert_eq!(text(&result), r#"{"n":3}"#);
        let schema = plugin().tools[0].def.output_schema.clone().unwrap();
        assert!(schema.contains(r#""type":"object""#), "{schema}");
    }

    #[test]
    fn errors_become_error_results() {
        let result = plugin().call_tool("fail", "").unwrap();
        assert!(result.is_error);
        assert_eq!(text(&result), "nope");
        let result = plugin().call_tool("len", r#"{"txt":"abc"}"#).unwrap();
        assert!(result.is_error);
        assert!(text(&result).contains("missing field `text`"), "{}", text(&result));
        assert!(matches!(plugin().call_tool("nope", "{}"), Err(Error::NotFound(_))));
    }

    #[test]
    fn reads_route_through_templates() {
        let contents = plugin().read_resource("t://42").unwrap();
        assert!(matches!(&contents[0].body, crate::ContentsBody::Text(t) if t == "42"));
        assert!(matches!(plugin().read_resource("u://42"), Err(Error::NotFound(_))));
    }
}
