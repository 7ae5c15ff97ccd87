//! The 2026-07-28 revision (the "modern" era): a request carries everything it
//! needs in its `_meta` (protocol version, client capabilities, client info,
//! log level) and is served statelessly, without `initialize`; every result
//! says its `resultType` and names the server. This module reads such a
//! request's `_meta` (for [`super::envelope`], which recognises it) and holds
//! the revision's error codes and keys.

use serde_json::{Map, Value, json};

use super::{LogLevel, RpcError, SUPPORTED_PROTOCOL_VERSIONS};

/// The modern revision this server speaks.
pub const MODERN_VERSION: &str = "2026-07-28";

pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// HTTP headers that disagree with the body, or required ones missing.
pub const HEADER_MISMATCH: i32 = -32020;
/// The request needs a client capability the request did not declare.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i32 = -32021;
/// The request's protocol version is not one this server speaks.
pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;

/// Every version a client may ask for, modern first.
pub fn supported_versions() -> Vec<&'static str> {
    std::iter::once(MODERN_VERSION)
        .chain(SUPPORTED_PROTOCOL_VERSIONS)
        .collect()
}

/// What a modern request says about itself in `_meta`.
#[derive(Debug, Clone)]
pub struct RequestMeta {
    /// The protocol version it speaks (always [`MODERN_VERSION`] once parsed).
    pub version: &'static str,
    /// The client capabilities declared for this request alone.
    pub capabilities: Value,
    /// The client's name, for logs.
    pub client_name: Option<String>,
    /// The level of log messages the client wants for this request; none: no logs.
    pub log_level: Option<LogLevel>,
}

impl RequestMeta {
    /// Reads and checks the `_meta` of a modern request: the protocol version
    /// and the client capabilities are required (-32602 names what is
    /// missing); a version this server does not speak is -32022.
    pub fn parse(params: &Value) -> Result<RequestMeta, RpcError> {
        let Some(meta) = params.get("_meta").and_then(Value::as_object) else {
            return Err(missing(&format!(
                "\"_meta\" with \"{PROTOCOL_VERSION}\" and \"{CLIENT_CAPABILITIES}\""
            )));
        };
        let requested = match meta.get(PROTOCOL_VERSION) {
            Some(Value::String(version)) => version,
            Some(_) => return Err(missing(&format!("a string \"{PROTOCOL_VERSION}\" in \"_meta\""))),
            None => return Err(missing(&format!("\"{PROTOCOL_VERSION}\" in \"_meta\""))),
        };
        if requested != MODERN_VERSION {
            return Err(unsupported_version(requested));
        }
        let capabilities = match meta.get(CLIENT_CAPABILITIES) {
            Some(capabilities @ Value::Object(_)) => capabilities.clone(),
            Some(_) => {
                return Err(missing(&format!("an object \"{CLIENT_CAPABILITIES}\" in \"_meta\"")));
            }
            None => return Err(missing(&format!("\"{CLIENT_CAPABILITIES}\" in \"_meta\""))),
        };
        let log_level = match meta.get(LOG_LEVEL) {
            None | Some(Value::Null) => None,
            Some(level) => Some(serde_json::from_value(level.clone()).map_err(|_| {
                RpcError::invalid_params(format!(
                    "\"{LOG_LEVEL}\" must be one of debug, info, notice, warning, error, critical, alert, emergency"
                ))
            })?),
        };
        Ok(RequestMeta {
            version: MODERN_VERSION,
            capabilities,
            client_name: meta
                .get(CLIENT_INFO)
                .and_then(|info| info.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            log_level,
        })
    }
}

fn missing(what: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "Invalid params: a {MODERN_VERSION} request needs {what} (or send \"initialize\" first for an earlier revision)"
    ))
}

/// The error for a protocol version this server does not speak.
pub fn unsupported_version(requested: &str) -> RpcError {
    let mut error = RpcError::new(
        UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "Unsupported protocol version {requested:?}: this server speaks {}",
            supported_versions().join(", ")
        ),
    );
    error.data = Some(json!({ "supported": supported_versions(), "requested": requested }));
    error
}

impl RequestMeta {
    /// Whether the request declares the client extension `extension`.
    pub fn has_extension(&self, extension: &str) -> bool {
        self.capabilities
            .get("extensions")
            .and_then(|extensions| extensions.get(extension))
            .is_some()
    }

    /// The `_meta` a request with this version and these capabilities
    /// carries (for a request made again: no log level, no client info).
    pub fn to_meta(&self) -> Value {
        json!({ PROTOCOL_VERSION: self.version, CLIENT_CAPABILITIES: self.capabilities })
    }
}

/// The error for a request that needs the client extension `extension`,
/// which it did not declare; `why` says what needed it.
pub fn missing_extension(extension: &str, why: &str) -> RpcError {
    let mut required = Map::new();
    required.insert("extensions".into(), json!({ extension: {} }));
    missing_capability(
        required,
        &format!(
            "Missing required client capability: {why} needs the {extension} extension (declare it under \"extensions\" in \"{CLIENT_CAPABILITIES}\")"
        ),
    )
}

/// The error for a request that needs client capabilities it did not declare.
pub fn missing_capability(required: Map<String, Value>, why: &str) -> RpcError {
    let mut error = RpcError::new(MISSING_REQUIRED_CLIENT_CAPABILITY, why);
    error.data = Some(json!({ "requiredCapabilities": required }));
    error
}

/// How long and by whom a result may be cached (`ttlMs`, `cacheScope`); by
/// default not at all (0, `private`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheHint {
    pub ttl_ms: u64,
    pub public: bool,
}

/// Makes `result` a modern result: `resultType` "complete", the server's
/// identity in `_meta`, and the caching hint when it has one.
pub fn complete(mut result: Value, server_info: &Value, cache: Option<CacheHint>) -> Value {
    let Some(object) = result.as_object_mut() else {
        return result;
    };
    object.entry("resultType").or_insert_with(|| json!("complete"));
    let meta = object.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(SERVER_INFO.into(), server_info.clone());
    }
    if let Some(cache) = cache {
        object.insert("ttlMs".into(), json!(cache.ttl_ms));
        object.insert(
            "cacheScope".into(),
            json!(if cache.public { "public" } else { "private" }),
        );
    }
    result
}

/// An error as a modern client gets it: "resource not found" is -32602 in
/// this revision (-32002 before), with the same data.
pub fn error(mut error: RpcError) -> RpcError {
    if error.code == super::jsonrpc::RESOURCE_NOT_FOUND {
        error.code = super::jsonrpc::INVALID_PARAMS;
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_meta(meta: Value) -> Value {
        json!({ "_meta": meta })
    }

    #[test]
    fn meta_is_checked_and_read() {
        let missing_caps = RequestMeta::parse(&with_meta(json!({ PROTOCOL_VERSION: MODERN_VERSION }))).unwrap_err();
        assert_eq!(missing_caps.code, super::super::jsonrpc::INVALID_PARAMS);
        assert!(
            missing_caps.message.contains(CLIENT_CAPABILITIES),
            "{}",
            missing_caps.message
        );
        let old = RequestMeta::parse(&with_meta(
            json!({ PROTOCOL_VERSION: "1999-01-01", CLIENT_CAPABILITIES: {} }),
        ))
        .unwrap_err();
        assert_eq!(old.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(old.data.as_ref().unwrap()["requested"], "1999-01-01");
        let meta = RequestMeta::parse(&with_meta(json!({
            PROTOCOL_VERSION: MODERN_VERSION,
            CLIENT_CAPABILITIES: { "sampling": {} },
            LOG_LEVEL: "warning",
            CLIENT_INFO: { "name": "c", "version": "1" },
        })))
        .unwrap();
        assert_eq!(meta.log_level, Some(LogLevel::Warning));
        assert_eq!(meta.client_name.as_deref(), Some("c"));
    }

    #[test]
    fn a_modern_result_says_its_type_and_the_server_and_may_be_cached() {
        let info = json!({ "name": "s", "version": "1" });
        let cache = CacheHint {
            ttl_ms: 5,
            public: true,
        };
        let result = complete(json!({ "tools": [] }), &info, Some(cache));
        assert_eq!(
            result,
            json!({ "tools": [], "resultType": "complete", "_meta": { SERVER_INFO: info }, "ttlMs": 5, "cacheScope": "public" })
        );
    }
}
