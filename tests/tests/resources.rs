//! resources/list, resources/templates/list, resources/read (text, blob,
//! templates, unknown URIs) and subscriptions over stdio.

use serde_json::json;
use wasm_mcp_tests::StdioServer;
use wasm_mcp_tests::expect::by_field;

const CONFORMANCE: &str = "conformance";

fn server() -> StdioServer {
    StdioServer::start_initialized(&[CONFORMANCE])
}

#[test]
fn resources_list_carries_the_declared_fields() {
    let mut server = server();
    let resources = server.list_all("resources/list", "resources");
    let text = by_field(&resources, "uri", "test://static-text");
    assert_eq!(text["name"], "static-text", "{text}");
    assert_eq!(text["title"], "Static Text Resource", "{text}");
    assert_eq!(text["description"], "A static text resource for testing", "{text}");
    assert_eq!(text["mimeType"], "text/plain", "{text}");
    let binary = by_field(&resources, "uri", "test://static-binary");
    assert_eq!(binary["mimeType"], "image/png", "{binary}");
    server.shutdown();
}

#[test]
fn templates_list_carries_the_rfc6570_template() {
    let mut server = server();
    let templates = server.list_all("resources/templates/list", "resourceTemplates");
    let template = by_field(&templates, "uriTemplate", "test://template/{id}/data");
    assert_eq!(template["name"], "template", "{template}");
    assert_eq!(template["title"], "Resource Template", "{template}");
    assert_eq!(template["mimeType"], "application/json", "{template}");
    server.shutdown();
}

#[test]
fn a_template_read_substitutes_the_variable() {
    let mut server = server();
    for id in ["7", "abc", "x-1_2.3"] {
        let uri = format!("test://template/{id}/data");
        let read = server.request("resources/read", json!({"uri": uri}));
        let contents = &read.result()["contents"][0];
        assert_eq!(contents["uri"], uri.as_str(), "{contents}");
        let data: serde_json::Value = serde_json::from_str(contents["text"].as_str().expect("text")).expect("JSON");
        assert_eq!(data["data"], format!("Data for ID: {id}"), "{data}");
    }
    server.shutdown();
}

#[test]
fn reading_an_unknown_uri_is_resource_not_found() {
    let mut server = server();
    for uri in [
        "test://no-such-resource",
        "file:///etc/passwd",
        "test://template/1/other",
    ] {
        let error = server
            .request("resources/read", json!({"uri": uri}))
            .expect_error_code(-32002);
        assert!(!error.message.is_empty(), "{error:?}");
    }
    server.request("resources/read", json!({})).expect_error_code(-32602);
    server.shutdown();
}

#[test]
fn blob_contents_are_base64() {
    let mut server = server();
    let read = server.request("resources/read", json!({"uri": "test://static-binary"}));
    let contents = &read.result()["contents"][0];
    assert!(contents.get("text").is_none(), "a blob has no text: {contents}");
    let blob = contents["blob"].as_str().expect("blob");
    assert!(blob.starts_with("iVBORw0KGgo"), "a base64 PNG: {blob}");
    server.shutdown();
}

/// The uris of the resources/updated notifications received so far.
fn updated_uris(server: &StdioServer) -> Vec<String> {
    server
        .notifications_of("notifications/resources/updated")
        .iter()
        .map(|n| n["params"]["uri"].as_str().expect("params.uri").to_string())
        .collect()
}

/// Has the probe plugin announce that `uri` changed.
fn announce(server: &mut StdioServer, uri: &str) {
    let result = server.call_tool("announce", json!({"uri": uri})).result().clone();
    assert_eq!(wasm_mcp_tests::expect::single_text(&result), format!("announced {uri}"));
}

#[test]
fn resources_updated_goes_only_to_subscribed_uris() {
    let mut server = StdioServer::start_initialized(&[CONFORMANCE, "probe"]);
    let watched = "test://watched-resource";
    let other = "test://static-text";

    // Not subscribed: nothing.
    announce(&mut server, watched);
    assert_eq!(updated_uris(&server), Vec::<String>::new());

    // Subscribed: an update for that URI only.
    assert_eq!(
        server.request("resources/subscribe", json!({"uri": watched})).result(),
        &json!({})
    );
    announce(&mut server, watched);
    server.wait_for_notification("resources/updated for the watched resource", |n| {
        n["method"] == "notifications/resources/updated" && n["params"]["uri"] == watched
    });
    announce(&mut server, other);

    // Unsubscribed: nothing more.
    assert_eq!(
        server
            .request("resources/unsubscribe", json!({"uri": watched}))
            .result(),
        &json!({})
    );
    announce(&mut server, watched);

    // Read stdout to its end: exactly the one update.
    let status = server.close_and_wait();
    assert!(status.success(), "exit status {status}");
    assert_eq!(
        updated_uris(&server),
        vec![watched.to_string()],
        "only the subscribed URI, once"
    );
}

#[test]
fn subscriptions_are_per_uri() {
    let mut server = StdioServer::start_initialized(&[CONFORMANCE, "probe"]);
    let a = "test://static-text";
    let b = "test://static-binary";
    server.request("resources/subscribe", json!({"uri": a})).result();
    server.request("resources/subscribe", json!({"uri": b})).result();
    announce(&mut server, a);
    announce(&mut server, b);
    server.request("resources/unsubscribe", json!({"uri": a})).result();
    announce(&mut server, a);
    announce(&mut server, b);
    let status = server.close_and_wait();
    assert!(status.success(), "exit status {status}");
    assert_eq!(updated_uris(&server), vec![a.to_string(), b.to_string(), b.to_string()]);
}
