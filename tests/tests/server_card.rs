//! The Server Card (SEP-2127, a draft) over HTTP, from the outside: served
//! at `<endpoint>/server-card` only with `--server-card NAME`, valid against
//! the card's JSON Schema (`spec/server-card.schema.json`, a copy of the
//! draft's), naming the server as the operator said with its own version
//! and the protocol versions it serves at the URL the client used; readable
//! from any origin (CORS, with its preflight), cacheable, and answered 304
//! when the client's `If-None-Match` names its `ETag`. A name that is no
//! reverse-DNS name stops the server at start, saying so.

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName};
use serde_json::Value;
use wasm_mcp_tests::PluginDir;
use wasm_mcp_tests::http::{HttpServer, blocking_client};
use wasm_mcp_tests::process::serve_command;

const MEDIA_TYPE: &str = "application/mcp-server-card+json";
const SCHEMA: &str = include_str!("../spec/server-card.schema.json");

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(HeaderName::from_bytes(name.as_bytes()).unwrap())
        .unwrap_or_else(|| panic!("no {name} header: {headers:?}"))
        .to_str()
        .unwrap()
}

#[test]
fn the_card_names_the_server_and_where_it_is_and_is_cached_by_its_etag() {
    let server = HttpServer::start(PluginDir::empty(), &["--server-card", "io.example/tools"]);
    let card_url = format!("{}/server-card", server.url);
    let response = blocking_client().get(&card_url).send().expect("GET the card");
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    assert_eq!(header(&headers, "content-type"), MEDIA_TYPE);
    assert_eq!(header(&headers, "access-control-allow-origin"), "*");
    assert_eq!(header(&headers, "access-control-expose-headers"), "ETag");
    assert_eq!(header(&headers, "cache-control"), "public, max-age=3600");
    let etag = header(&headers, "etag").to_owned();
    let card: Value = serde_json::from_str(&response.text().unwrap()).expect("the card is JSON");

    let mut schema: Value = serde_json::from_str(SCHEMA).unwrap();
    schema["$ref"] = "#/$defs/ServerCard".into();
    let validator = jsonschema::validator_for(&schema).expect("the card's schema compiles");
    let problems: Vec<String> = validator.iter_errors(&card).map(|e| e.to_string()).collect();
    assert!(problems.is_empty(), "{problems:?}\n{card}");
    assert_eq!(card["name"], "io.example/tools");
    assert_eq!(card["title"], "wasm-mcp");
    assert_eq!(card["version"], env!("CARGO_PKG_VERSION"));
    let remote = &card["remotes"][0];
    assert_eq!(remote["type"], "streamable-http");
    assert_eq!(
        remote["url"],
        server.url.as_str(),
        "the endpoint as the client reached it"
    );
    assert_eq!(
        remote["supportedProtocolVersions"][0], "2026-07-28",
        "the versions server/discover gives: {card}"
    );
    assert!(
        remote["supportedProtocolVersions"]
            .as_array()
            .unwrap()
            .contains(&"2025-11-25".into())
    );

    let again = blocking_client()
        .get(&card_url)
        .header("If-None-Match", &etag)
        .send()
        .unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(header(again.headers(), "etag"), etag);
    assert!(again.text().unwrap().is_empty());

    let preflight = blocking_client()
        .request(reqwest::Method::OPTIONS, &card_url)
        .header("Origin", "https://catalog.example")
        .header("Access-Control-Request-Method", "GET")
        .send()
        .unwrap();
    assert_eq!(preflight.status(), StatusCode::NO_CONTENT);
    assert_eq!(header(preflight.headers(), "access-control-allow-methods"), "GET");
    assert_eq!(
        header(preflight.headers(), "access-control-allow-headers"),
        "Content-Type, If-None-Match"
    );
}

#[test]
fn without_the_setting_no_card_is_served() {
    let server = HttpServer::start(PluginDir::empty(), &[]);
    let response = blocking_client()
        .get(format!("{}/server-card", server.url))
        .send()
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

#[test]
fn a_name_that_is_not_reverse_dns_stops_the_server_at_start() {
    let plugins = PluginDir::empty();
    let output = serve_command(plugins.path())
        .args(["--no-watch", "--http", "127.0.0.1:0", "--server-card", "tools"])
        .output()
        .expect("run wasm-mcp serve");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--server-card") && stderr.contains("io.example/tools"),
        "{stderr}"
    );
}
