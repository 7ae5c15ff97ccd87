//! JSON-RPC framing and decoding: the input is what arrives on stdin (split
//! into lines as the stdio transport splits it) and, whole, an HTTP POST body.
//! Every message decodes to a request, notification or response, or to an
//! error the host can answer with a well-formed response; ids round-trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use wasm_mcp::fuzzing::jsonrpc::{self, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
use wasm_mcp::fuzzing::{Incoming, RpcError};
use wasm_mcp_fuzz::assert_response;

fn decode(message: &[u8]) {
    let sent: Option<Value> = serde_json::from_slice(message).ok();
    let sent_id = sent.as_ref().and_then(|m| m.get("id"));
    match Incoming::parse_bytes(message) {
        Ok(Incoming::Request(envelope)) => {
            let id = envelope.id;
            // Its params are typed once, or refused as what they are.
            if let Err(error) = &envelope.request {
                assert!([INVALID_PARAMS, METHOD_NOT_FOUND].contains(&error.code), "{error:?}");
            }
            assert_eq!(Some(&id.to_value()), sent_id, "a request id is echoed exactly");
            let answer = jsonrpc::response(&id, json!({}));
            assert_response(&answer, sent_id);
            // What the host writes back reads as the response to that request.
            let line = serde_json::to_vec(&answer).unwrap();
            match Incoming::parse_bytes(&line) {
                Ok(Incoming::Response { id: echoed, outcome }) => {
                    assert_eq!(echoed, id);
                    assert!(outcome.is_ok());
                }
                other => panic!("the host's own response does not read back: {other:?}"),
            }
        }
        Ok(Incoming::Notification { params, .. }) => assert!(params.is_object()),
        Ok(Incoming::Response { id, .. }) => {
            assert_eq!(Some(&id.to_value()), sent_id);
            assert_response(&jsonrpc::error_response(Some(&id), &RpcError::internal("x")), sent_id);
        }
        Err(bad) => {
            assert!(
                [PARSE_ERROR, INVALID_REQUEST].contains(&bad.error.code),
                "{:?}",
                bad.error
            );
            let id = bad.id.as_ref().map(|id| id.to_value());
            assert!(
                id.is_none() || id.as_ref() == sent_id,
                "an error names the request it answers"
            );
            assert_response(&jsonrpc::error_response(bad.id.as_ref(), &bad.error), id.as_ref());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    for line in data.split(|b| *b == b'\n') {
        if !line.trim_ascii().is_empty() {
            decode(line);
        }
    }
    decode(data);
});
