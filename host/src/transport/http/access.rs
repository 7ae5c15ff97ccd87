//! Who may talk to the server: `Host` and `Origin` checks against DNS
//! rebinding, and optional bearer-token authentication. Every request passes
//! here before anything else looks at it.

use std::net::IpAddr;

use axum::http::{HeaderMap, StatusCode, Uri, header};
use subtle::ConstantTimeEq;

use super::error::HttpError;

/// Host names that always mean this machine.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// The token a request authenticated with: its index in the configured
/// list, or `None` when no authentication is configured. Sessions remember it
/// and answer only requests that present the same one.
pub type Credential = Option<usize>;

pub struct Access {
    /// When bound to a loopback address: the `Host` names accepted (the
    /// loopback names and the bound address).
    hosts: Option<Vec<String>>,
    /// Origins accepted besides the loopback ones (exact, lowercase, no
    /// trailing slash); `*` accepts every origin.
    origins: Vec<String>,
    tokens: Vec<String>,
}

/// `host` without its port, lowercase (`[::1]:80` → `[::1]`).
fn host_name(host: &str) -> String {
    let host = host.trim().to_ascii_lowercase();
    if let Some(end) = host.find(']') {
        return host[..=end].to_owned();
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name.to_owned(),
        _ => host,
    }
}

fn normalize_origin(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

impl Access {
    /// `bound` is the listening address; `origins` are the extra allowed
    /// origins; `tokens` the accepted bearer tokens (none: no authentication).
    pub fn new(bound: IpAddr, origins: &[String], tokens: Vec<String>) -> Self {
        let hosts = bound.is_loopback().then(|| {
            let bound = match bound {
                IpAddr::V4(ip) => ip.to_string(),
                IpAddr::V6(ip) => format!("[{ip}]"),
            };
            LOOPBACK_NAMES
                .iter()
                .map(|name| name.to_string())
                .chain([bound])
                .collect()
        });
        Self {
            hosts,
            origins: origins.iter().map(|o| normalize_origin(o)).collect(),
            tokens,
        }
    }

    /// Checks a request's headers; returns the credential it presented.
    pub fn check(&self, headers: &HeaderMap) -> Result<Credential, HttpError> {
        self.check_host(headers)?;
        self.check_origin(headers)?;
        self.authenticate(headers)
    }

    fn check_host(&self, headers: &HeaderMap) -> Result<(), HttpError> {
        let Some(hosts) = &self.hosts else {
            return Ok(());
        };
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        match host.map(host_name) {
            Some(name) if hosts.contains(&name) => Ok(()),
            _ => Err(HttpError::new(
                StatusCode::FORBIDDEN,
                format!(
                    "Forbidden: Host {:?} is not this server's; a server bound to a loopback address answers only to localhost",
                    host.unwrap_or("")
                ),
            )),
        }
    }

    fn check_origin(&self, headers: &HeaderMap) -> Result<(), HttpError> {
        let Some(origin) = headers.get(header::ORIGIN) else {
            return Ok(());
        };
        let origin = origin.to_str().unwrap_or_default();
        let normalized = normalize_origin(origin);
        let loopback = origin.parse::<Uri>().ok().is_some_and(|uri| {
            matches!(uri.scheme_str(), Some("http" | "https"))
                && uri
                    .host()
                    .is_some_and(|h| LOOPBACK_NAMES.contains(&h.to_ascii_lowercase().as_str()))
        });
        if loopback || self.origins.iter().any(|o| o == "*" || *o == normalized) {
            Ok(())
        } else {
            Err(HttpError::new(
                StatusCode::FORBIDDEN,
                format!("Forbidden: Origin {origin:?} is not allowed (see --allow-origin)"),
            ))
        }
    }

    fn authenticate(&self, headers: &HeaderMap) -> Result<Credential, HttpError> {
        if self.tokens.is_empty() {
            return Ok(None);
        }
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        let Some(presented) = presented else {
            return Err(HttpError {
                challenge: Some("Bearer realm=\"wasm-mcp\""),
                ..HttpError::new(
                    StatusCode::UNAUTHORIZED,
                    "Unauthorized: send Authorization: Bearer <token>",
                )
            });
        };
        // Compare with every token, in constant time, so timing tells nothing.
        let mut found = None;
        for (index, token) in self.tokens.iter().enumerate() {
            if bool::from(token.as_bytes().ct_eq(presented.as_bytes())) {
                found = Some(index);
            }
        }
        match found {
            Some(index) => Ok(Some(index)),
            None => Err(HttpError {
                challenge: Some("Bearer realm=\"wasm-mcp\", error=\"invalid_token\""),
                ..HttpError::new(StatusCode::UNAUTHORIZED, "Unauthorized: the bearer token is not valid")
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use axum::http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (name.clone(), HeaderValue::from_str(value).unwrap()))
            .collect()
    }

    fn loopback(origins: &[&str], tokens: &[&str]) -> Access {
        let origins: Vec<String> = origins.iter().map(|o| o.to_string()).collect();
        let tokens = tokens.iter().map(|t| t.to_string()).collect();
        Access::new(IpAddr::V4(Ipv4Addr::LOCALHOST), &origins, tokens)
    }

    #[test]
    fn host_names_drop_ports() {
        assert_eq!(host_name("LocalHost:8080"), "localhost");
        assert_eq!(host_name("[::1]:80"), "[::1]");
        assert_eq!(host_name("127.0.0.1"), "127.0.0.1");
        assert_eq!(host_name("evil.example.com:8080"), "evil.example.com");
    }

    #[test]
    fn loopback_binds_answer_only_to_local_hosts() {
        let access = loopback(&[], &[]);
        assert!(access.check(&headers(&[(header::HOST, "127.0.0.1:9")])).is_ok());
        assert!(access.check(&headers(&[(header::HOST, "localhost")])).is_ok());
        let evil = access
            .check(&headers(&[(header::HOST, "evil.example.com")]))
            .unwrap_err();
        assert_eq!(evil.status, StatusCode::FORBIDDEN);
        assert!(access.check(&HeaderMap::new()).is_err());
        let open = Access::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), &[], Vec::new());
        assert!(open.check(&headers(&[(header::HOST, "example.com")])).is_ok());
    }

    #[test]
    fn origins_must_be_local_or_listed() {
        let access = loopback(&["https://app.example.com/"], &[]);
        let with = |origin| headers(&[(header::HOST, "localhost"), (header::ORIGIN, origin)]);
        assert!(access.check(&with("http://localhost:6274")).is_ok());
        assert!(access.check(&with("http://[::1]:1")).is_ok());
        assert!(access.check(&with("https://APP.example.com")).is_ok());
        for bad in [
            "http://evil.example.com",
            "null",
            "file://localhost",
            "https://app.example.com:8443",
        ] {
            let refused = access.check(&with(bad)).unwrap_err();
            assert_eq!(refused.status, StatusCode::FORBIDDEN, "{bad}");
        }
        assert!(loopback(&["*"], &[]).check(&with("http://anything.example")).is_ok());
    }

    #[test]
    fn bearer_tokens_identify_the_credential() {
        let access = loopback(&[], &["first", "second"]);
        let with = |auth| headers(&[(header::HOST, "localhost"), (header::AUTHORIZATION, auth)]);
        assert_eq!(access.check(&with("Bearer second")).unwrap(), Some(1));
        assert_eq!(access.check(&with("bearer first")).unwrap(), Some(0));
        for bad in ["Bearer third", "Basic Zmlyc3Q=", "Bearer"] {
            let refused = access.check(&with(bad)).unwrap_err();
            assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{bad}");
            assert!(refused.challenge.is_some_and(|c| c.starts_with("Bearer")));
        }
        let missing = access.check(&headers(&[(header::HOST, "localhost")])).unwrap_err();
        assert_eq!(missing.status, StatusCode::UNAUTHORIZED);
    }
}
