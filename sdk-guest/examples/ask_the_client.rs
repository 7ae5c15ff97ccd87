//! Asking the client from inside a tool: its model (sampling), its user
//! (elicitation) and its roots, each with what to do when the client
//! cannot or will not answer. Native tests at the end script the client's
//! answers with the SDK's fake host.
//!
//! Build: `cargo build --release --target wasm32-wasip2 --example ask_the_client`
//! (in `sdk-guest/`), then try it with `wasm-mcp serve` and a client that
//! declares sampling, elicitation and roots. Test: `cargo test --example ask_the_client`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use wasm_mcp_sdk::host::{self, ElicitAction, LogLevel, RequestError, SamplingMessage, SamplingRequest};
use wasm_mcp_sdk::{NoArgs, Plugin, Structured, Tool};

#[derive(Deserialize, JsonSchema)]
struct SummarizeArgs {
    /// The text to summarize.
    text: String,
}

/// Sampling: the client's model writes the summary.
fn summarize(args: SummarizeArgs) -> Result<String, RequestError> {
    let mut request = SamplingRequest::new(
        vec![SamplingMessage::user(format!(
            "Summarize in one sentence:\n\n{}",
            args.text
        ))],
        200,
    );
    request.system_prompt = Some("You write short, plain summaries.".into());
    let answer = host::sample(&request)?;
    host::log(LogLevel::Debug, &format!("summary by {}", answer.model));
    Ok(answer.text())
}

#[derive(Deserialize, JsonSchema)]
struct OrderArgs {
    /// What to order.
    item: String,
}

/// The form the user fills in (a flat object of primitive properties).
#[derive(Deserialize)]
struct Delivery {
    address: String,
    express: Option<bool>,
}

#[derive(Serialize, JsonSchema)]
struct Order {
    /// Whether the order was placed.
    placed: bool,
    /// Where it goes, when placed.
    address: Option<String>,
    /// Whether it ships express.
    express: bool,
}

/// Elicitation: ask the user where to deliver; decline and cancel are
/// answers too, not errors.
fn order(args: OrderArgs) -> Result<Structured<Order>, String> {
    let schema = json!({
        "type": "object",
        "properties": {
            "address": { "type": "string", "description": "Delivery address" },
            "express": { "type": "boolean", "description": "Ship express", "default": false }
        },
        "required": ["address"]
    });
    let answer = host::elicit_form(&format!("Where should the {} go?", args.item), &schema)
        .map_err(|e| format!("cannot ask the user: {e}"))?;
    let not_placed = Order {
        placed: false,
        address: None,
        express: false,
    };
    match answer.action {
        ElicitAction::Accept => {
            let delivery: Delivery = answer
                .content_as()
                .ok_or("the form came back empty")?
                .map_err(|e| format!("the form does not fit: {e}"))?;
            Ok(Structured(Order {
                placed: true,
                address: Some(delivery.address),
                express: delivery.express.unwrap_or(false),
            }))
        }
        ElicitAction::Decline | ElicitAction::Cancel => Ok(Structured(not_placed)),
    }
}

/// Roots: the folders the client shares, or none if it declares no roots.
fn shared_folders(_: NoArgs) -> String {
    match host::list_roots() {
        Ok(roots) => roots.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>().join("\n"),
        Err(RequestError::NotSupported(_)) => "the client shares no roots".into(),
        Err(e) => format!("cannot list roots: {e}"),
    }
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool(Tool::new("summarize", summarize).description("Summarizes a text with the client's model"))
        .tool(Tool::new("order", order).description("Orders an item, asking the user where to deliver it"))
        .tool(Tool::new("shared_folders", shared_folders).description("Lists the folders the client shares"))
}

wasm_mcp_sdk::export!(plugin);

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_mcp_sdk::host::{Elicitation, Root};
    use wasm_mcp_sdk::testing::FakeHost;

    #[test]
    fn summarize_asks_the_model_and_returns_its_text() {
        let fake = FakeHost::new().answer_sampling_text("It is short.");
        let summary = fake.run(|| {
            summarize(SummarizeArgs {
                text: "A long story".into(),
            })
        });
        assert_eq!(summary.unwrap(), "It is short.");
        let request = &fake.sampling_requests()[0];
        assert_eq!(request.max_tokens, 200);
        assert!(matches!(&request.messages[0].content[0],
            host::SamplingContent::Text(t) if t.text.ends_with("A long story")));
        assert_eq!(fake.log_messages(), ["summary by fake-model"]);
    }

    #[test]
    fn summarize_fails_when_the_client_has_no_sampling() {
        let error = FakeHost::new().run(|| summarize(SummarizeArgs { text: "x".into() }));
        assert!(matches!(error, Err(RequestError::NotSupported(_))));
    }

    #[test]
    fn order_uses_the_form_the_user_accepts() {
        let fake = FakeHost::new().accept_form(json!({ "address": "1 Main St", "express": true }));
        let Structured(order) = fake.run(|| order(OrderArgs { item: "lamp".into() })).unwrap();
        assert!(order.placed && order.express);
        assert_eq!(order.address.as_deref(), Some("1 Main St"));
        let Elicitation::Form(form) = &fake.elicitations()[0] else {
            panic!("a form was asked")
        };
        assert_eq!(form.message, "Where should the lamp go?");
    }

    #[test]
    fn a_declined_order_is_not_placed() {
        let fake = FakeHost::new().answer_elicitation_with(ElicitAction::Decline);
        let Structured(order) = fake.run(|| order(OrderArgs { item: "lamp".into() })).unwrap();
        assert!(!order.placed);
    }

    #[test]
    fn shared_folders_lists_the_roots() {
        let root = |uri: &str| Root {
            uri: uri.into(),
            name: None,
        };
        let fake = FakeHost::new().roots(vec![root("file:///a"), root("file:///b")]);
        assert_eq!(fake.run(|| shared_folders(NoArgs {})), "file:///a\nfile:///b");
        assert_eq!(
            FakeHost::new().run(|| shared_folders(NoArgs {})),
            "the client shares no roots"
        );
    }

    #[test]
    fn the_plugin_serves_the_tools_by_name() {
        let fake = FakeHost::new().answer_sampling_text("Done.");
        let result = fake
            .run(|| plugin().call_tool("summarize", r#"{"text": "t"}"#))
            .unwrap();
        assert!(!result.is_error);
        let result = FakeHost::new()
            .run(|| plugin().call_tool("order", r#"{"item": "lamp"}"#))
            .unwrap();
        assert!(
            result.is_error,
            "no elicitation scripted: the tool reports it cannot ask"
        );
    }
}
