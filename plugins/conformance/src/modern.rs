//! The fixtures the pre-release conformance suite
//! (`@modelcontextprotocol/conformance` 0.2.0-alpha.12, `--requirements
//! 2026-07-28`) adds: see `shared/conformance/FIXTURES-2026-07-28.md`.
//!
//! The multi round-trip fixtures ask through [`host::ask`] under the keys
//! the suite looks for; the host turns the questions into the request's
//! `inputRequests` and seals `requestState`, so a fixture never sees either.

use serde::Deserialize;
use serde_json::{Value, json};
use wasm_mcp_sdk::host::{self, Answer, ListKind, LogLevel, Question, RequestError, SamplingMessage, SamplingRequest};
use wasm_mcp_sdk::{ContentBlock, NoArgs, Plugin, Prompt, PromptMessage, Tool};

fn name_schema() -> Value {
    json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] })
}

fn question(text: &str, max_tokens: u32) -> Question {
    Question::Sample(SamplingRequest::new(vec![SamplingMessage::user(text)], max_tokens))
}

/// Asks one question under `key`.
fn ask(key: &str, question: Question) -> Result<Answer, String> {
    let mut answers = host::ask(&[(key, question)]);
    answers.pop().expect("one answer").map_err(|e| format!("{key}: {e}"))
}

/// A form answer's field `field`, as text.
fn field(answer: &Answer, field: &str) -> Result<String, String> {
    let elicited = answer.elicited().ok_or("not an elicitation answer")?;
    let content: Value = elicited
        .content_as()
        .ok_or("the form was not submitted")?
        .map_err(|e| e.to_string())?;
    Ok(match &content[field] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    })
}

fn roots_text(answer: &Answer) -> String {
    let roots = answer.roots().unwrap_or_default();
    let uris: Vec<&str> = roots.iter().map(|root| root.uri.as_str()).collect();
    format!("Roots: {}", uris.join(", "))
}

#[derive(Deserialize, schemars::JsonSchema)]
struct RegionArgs {
    region: String,
    query: Option<String>,
}

fn region_query(args: RegionArgs) -> String {
    format!("Ran {:?} in {}", args.query.unwrap_or_default(), args.region)
}

fn trigger_tool_change(_: NoArgs) -> String {
    host::lists_changed(&[ListKind::Tools]);
    "The tools list was announced as changed".into()
}

fn trigger_prompt_change(_: NoArgs) -> String {
    host::lists_changed(&[ListKind::Prompts]);
    "The prompts list was announced as changed".into()
}

fn missing_capability(_: NoArgs) -> Result<String, String> {
    let answer = host::sample(&SamplingRequest::new(vec![SamplingMessage::user("Say hello")], 10))
        .map_err(|e| format!("Sampling failed: {e}"))?;
    Ok(format!("Sampled: {}", answer.text()))
}

fn logging(_: NoArgs) -> &'static str {
    for step in 1..=3 {
        host::log(LogLevel::Info, &format!("log message {step} of 3"));
    }
    "Logged three messages at info"
}

fn streaming_elicitation(_: NoArgs) -> Result<String, String> {
    let answer =
        host::elicit_form("What is your name?", &name_schema()).map_err(|e| format!("Elicitation failed: {e}"))?;
    Ok(format!(
        "Hello, {}!",
        answer.content_as::<Value>().and_then(Result::ok).unwrap_or_default()["name"]
    ))
}

fn elicitation(_: NoArgs) -> Result<String, String> {
    let answer = ask("user_name", Question::form("What is your name?", &name_schema()))?;
    Ok(format!("Hello, {}!", field(&answer, "name")?))
}

fn sampling(_: NoArgs) -> Result<String, String> {
    let answer = ask("capital_question", question("What is the capital of France?", 100))?;
    Ok(answer.sampled().map(|sampled| sampled.text()).unwrap_or_default())
}

fn list_roots(_: NoArgs) -> Result<String, String> {
    Ok(roots_text(&ask("client_roots", Question::ListRoots)?))
}

/// Asks for a confirmation under `confirm`; the answer's `ok`, as text.
fn confirmed() -> Result<String, String> {
    let schema = json!({ "type": "object", "properties": { "ok": { "type": "boolean" } }, "required": ["ok"] });
    let answer = ask("confirm", Question::form("Confirm to continue", &schema))?;
    field(&answer, "ok")
}

fn request_state(_: NoArgs) -> Result<String, String> {
    Ok(format!("state-ok: confirmed={}", confirmed()?))
}

fn multiple_inputs(_: NoArgs) -> Result<String, String> {
    let answers = host::ask(&[
        ("user_name", Question::form("What is your name?", &name_schema())),
        ("greeting", question("Write a short greeting", 50)),
        ("client_roots", Question::ListRoots),
    ]);
    let [name, greeting, roots]: [Result<Answer, RequestError>; 3] =
        answers.try_into().map_err(|_| "three answers".to_string())?;
    let (name, greeting, roots) = (
        name.map_err(|e| e.to_string())?,
        greeting.map_err(|e| e.to_string())?,
        roots.map_err(|e| e.to_string())?,
    );
    Ok(format!(
        "Name: {}; greeting: {}; {}",
        field(&name, "name")?,
        greeting.sampled().map(|sampled| sampled.text()).unwrap_or_default(),
        roots_text(&roots)
    ))
}

fn multi_round(_: NoArgs) -> Result<String, String> {
    // Logged at info (seen when the request asks for logs): a replayed call
    // logs a step again, a resumed one does not.
    host::log(LogLevel::Info, "asking step1");
    let name = ask("step1", Question::form("What is your name?", &name_schema()))?;
    let schema = json!({ "type": "object", "properties": { "color": { "type": "string" } }, "required": ["color"] });
    host::log(LogLevel::Info, "asking step2");
    let color = ask("step2", Question::form("What is your favourite colour?", &schema))?;
    Ok(format!("{} likes {}", field(&name, "name")?, field(&color, "color")?))
}

fn tampered_state(_: NoArgs) -> Result<String, String> {
    Ok(format!("confirmed={}", confirmed()?))
}

/// Asks for a form and a completion at once: the host sends only what the
/// request's client declared, and refuses the other at once.
fn capabilities(_: NoArgs) -> Result<String, String> {
    let answers = host::ask(&[
        ("user_input", Question::form("What is your name?", &name_schema())),
        ("model_input", question("Suggest a name", 20)),
    ]);
    let said: Vec<String> = answers
        .iter()
        .map(|answer| match answer {
            Ok(Answer::Sample(sampled)) => format!("sampled: {}", sampled.text()),
            Ok(Answer::Elicit(_)) => "elicited".to_string(),
            Ok(Answer::ListRoots(_)) => "roots".to_string(),
            Err(e) => format!("not asked ({e})"),
        })
        .collect();
    Ok(said.join("; "))
}

fn prompt(_: NoArgs) -> Result<Vec<PromptMessage>, wasm_mcp_sdk::Error> {
    let schema =
        json!({ "type": "object", "properties": { "context": { "type": "string" } }, "required": ["context"] });
    let answer = ask(
        "user_context",
        Question::form("What context should the prompt use?", &schema),
    )
    .map_err(wasm_mcp_sdk::Error::Internal)?;
    let context = field(&answer, "context").map_err(wasm_mcp_sdk::Error::Internal)?;
    Ok(vec![PromptMessage::user(ContentBlock::text(format!(
        "Context: {context}"
    )))])
}

pub fn fixtures(plugin: Plugin) -> Plugin {
    let tools = [
        Tool::new("test_missing_capability", missing_capability)
            .description("Asks the client's model; needs the sampling capability"),
        Tool::new("test_logging_tool", logging).description("Logs three messages at info"),
        Tool::new("test_trigger_tool_change", trigger_tool_change)
            .description("Says the tools list changed; listeners are told"),
        Tool::new("test_trigger_prompt_change", trigger_prompt_change)
            .description("Says the prompts list changed; listeners are told"),
        Tool::new("test_header_param", region_query)
            .description("A tool whose region parameter is mirrored in the Mcp-Param-Region header")
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "region": { "type": "string", "x-mcp-header": "Region" },
                    "query": { "type": "string" }
                },
                "required": ["region"]
            })),
        Tool::new("test_streaming_elicitation", streaming_elicitation).description("Asks the user's name"),
        Tool::new("test_input_required_result_elicitation", elicitation)
            .description("Asks the user's name (key user_name)"),
        Tool::new("test_input_required_result_sampling", sampling)
            .description("Asks the client's model the capital of France (key capital_question)"),
        Tool::new("test_input_required_result_list_roots", list_roots)
            .description("Asks the client's roots (key client_roots)"),
        Tool::new("test_input_required_result_request_state", request_state)
            .description("Asks for a confirmation (key confirm) across a sealed requestState"),
        Tool::new("test_input_required_result_multiple_inputs", multiple_inputs)
            .description("Asks three things in one round: user_name, greeting, client_roots"),
        Tool::new("test_input_required_result_multi_round", multi_round)
            .description("Asks step1 (a name), then step2 (a colour)"),
        Tool::new("test_input_required_result_tampered_state", tampered_state)
            .description("Asks for a confirmation; a changed requestState is refused"),
        Tool::new("test_input_required_result_capabilities", capabilities)
            .description("Asks for a form and a completion; only what the client declared is sent"),
    ];
    tools.into_iter().fold(plugin, Plugin::tool).prompt(
        Prompt::new("test_input_required_result_prompt", prompt)
            .description("Asks for context (key user_context), then returns the prompt"),
    )
}
