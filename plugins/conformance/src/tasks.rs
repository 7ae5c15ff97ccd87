//! The fixtures of the pre-release suite's `tasks-*` scenarios (the
//! 2026-07-28 tasks extension): see `shared/conformance/FIXTURES-2026-07-28.md`.
//!
//! The host decides when a call becomes a task; these fixtures say so at
//! once with [`host::run_as_task`] (`test_tool_with_task` only after its
//! first question, which is a multi round-trip round), so each scenario
//! sees the same shape every time.

use std::thread::sleep;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wasm_mcp_sdk::host::{self, Answer, Question};
use wasm_mcp_sdk::{NoArgs, Plugin, TaskSupport, Tool};

/// How often a waiting fixture checks whether it was cancelled.
const TICK: Duration = Duration::from_millis(50);

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

fn greet(args: GreetArgs) -> String {
    format!("Hello, {}!", args.name)
}

#[derive(Deserialize, JsonSchema)]
struct ComputeArgs {
    /// How long the computation takes (0: at once).
    seconds: f64,
    /// A label echoed in the result.
    label: Option<String>,
}

/// Waits `seconds`, or until the call is cancelled (then false).
fn wait(seconds: f64) -> bool {
    let mut left = Duration::from_secs_f64(seconds.max(0.0));
    while !left.is_zero() {
        if host::is_cancelled() {
            return false;
        }
        let step = left.min(TICK);
        sleep(step);
        left -= step;
    }
    true
}

fn slow_compute(args: ComputeArgs) -> Result<String, String> {
    if args.seconds > 0.0 {
        host::run_as_task();
    }
    if !wait(args.seconds) {
        return Err("cancelled".into());
    }
    Ok(format!(
        "Computed {} after {} s",
        args.label.unwrap_or_else(|| "a result".into()),
        args.seconds
    ))
}

fn failing_job(_: NoArgs) -> Result<String, String> {
    host::run_as_task();
    wait(0.5);
    Err("The job failed: this fixture always fails".into())
}

fn protocol_error_job(_: NoArgs) -> String {
    host::run_as_task();
    wait(0.2);
    panic!("protocol_error_job fails below the tool: the plugin call itself breaks");
}

fn confirm_schema() -> Value {
    json!({
        "type": "object",
        "properties": { "name": { "type": "string" }, "confirm": { "type": "boolean" } },
        "required": ["confirm"]
    })
}

/// The submitted form of an elicitation answer, or why there is none.
fn form(answer: Result<Answer, host::RequestError>) -> Result<Value, String> {
    let answer = answer.map_err(|e| e.to_string())?;
    let elicited = answer.elicited().ok_or("not an elicitation answer")?;
    elicited
        .content_as::<Value>()
        .ok_or_else(|| "the form was not submitted".to_string())?
        .map_err(|e| e.to_string())
}

#[derive(Deserialize, JsonSchema)]
struct DeleteArgs {
    /// The file to delete (nothing is deleted: this is a fixture).
    filename: String,
}

fn confirm_delete(args: DeleteArgs) -> Result<String, String> {
    host::run_as_task();
    let question = Question::form(&format!("Delete {}?", args.filename), &confirm_schema());
    let answer = host::ask(&[("confirm", question)]).pop().expect("one answer");
    let confirmed = form(answer)?["confirm"] == json!(true);
    Ok(match confirmed {
        true => format!("Deleted {}", args.filename),
        false => format!("Kept {}", args.filename),
    })
}

fn multi_input(_: NoArgs) -> Result<String, String> {
    host::run_as_task();
    let answers = host::ask(&[
        ("first", Question::form("First input", &confirm_schema())),
        ("second", Question::form("Second input", &confirm_schema())),
    ]);
    let names: Vec<String> = answers
        .into_iter()
        .map(|answer| form(answer).map(|content| content["name"].as_str().unwrap_or_default().to_owned()))
        .collect::<Result<_, _>>()?;
    Ok(format!("Got {}", names.join(" and ")))
}

fn tool_with_task(_: NoArgs) -> Result<String, String> {
    let schema = json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] });
    let question = Question::form("What is your name?", &schema);
    let answer = host::ask(&[("user_name", question)]).pop().expect("one answer");
    let name = form(answer)?["name"].as_str().unwrap_or_default().to_owned();
    host::run_as_task();
    wait(0.2);
    Ok(format!("Hello, {name}! (finished as a task)"))
}

pub fn fixtures(plugin: Plugin) -> Plugin {
    let tools = [
        Tool::new("greet", greet).description("Greets by name, at once (never a task)"),
        Tool::new("slow_compute", slow_compute)
            .description("Computes for `seconds` seconds (a task unless 0); stops when cancelled")
            .task_support(TaskSupport::Optional),
        Tool::new("recompute", slow_compute)
            .description(
                "Computes like slow_compute, and is declared idempotent: when the replica running it stops, \
                 another runs it again from the start",
            )
            .idempotent_hint(true)
            .task_support(TaskSupport::Optional),
        Tool::new("failing_job", failing_job)
            .description("Runs as a task and fails with a tool error")
            .task_support(TaskSupport::Required),
        Tool::new("protocol_error_job", protocol_error_job)
            .description("Runs as a task whose plugin call breaks (a protocol error)")
            .task_support(TaskSupport::Optional),
        Tool::new("confirm_delete", confirm_delete)
            .description("Runs as a task and asks to confirm the deletion (key confirm)")
            .task_support(TaskSupport::Optional),
        Tool::new("multi_input", multi_input)
            .description("Runs as a task and asks two things at once (keys first and second)")
            .task_support(TaskSupport::Optional),
        Tool::new("test_tool_with_task", tool_with_task)
            .description("Asks the user's name (key user_name), then finishes as a task")
            .task_support(TaskSupport::Required),
    ];
    tools.into_iter().fold(plugin, Plugin::tool)
}
