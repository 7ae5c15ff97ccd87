//! Who may talk to the server: `Host` and `Origin` checks against DNS
//! rebinding, then authentication (none, static bearer tokens, or OAuth
//! access tokens, see [`super::oauth`]) giving the request's principal.
//! What a message may use, once it is read, is [`super::scopes`]'s; a
//! request is admitted by both at once ([`Access::admit`]).

use std::net::IpAddr;
use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode, Uri, header};
use subtle::ConstantTimeEq;

use super::oauth::{Refused, ResourceServer};
use crate::catalog::Catalog;
use crate::principal::Principal;
use crate::protocol::Incoming;

/// Host names that always mean this machine.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Whom a request acts for: `None` when no authentication is configured.
/// Sessions, tasks and request states remember it and serve only requests
/// of the same principal.
pub type Credential = Option<Principal>;

/// A request refused: the HTTP status, why (in words the client is shown),
/// for 401 and 403 the `WWW-Authenticate` challenge, and for 503 the
/// seconds after which trying again may help (`Retry-After`).
#[derive(Debug)]
pub struct Refusal {
    pub status: StatusCode,
    pub message: String,
    pub challenge: Option<String>,
    pub retry_after: Option<u64>,
}

impl Refusal {
    pub(super) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            challenge: None,
            retry_after: None,
        }
    }
}

/// How requests authenticate.
enum Authentication {
    /// They do not.
    Open,
    /// With one of these bearer tokens.
    Tokens(Vec<String>),
    /// With an access token of the authorization server.
    OAuth(Arc<ResourceServer>),
}

pub struct Access {
    /// When bound to a loopback address: the `Host` names accepted (the
    /// loopback names and the bound address).
    hosts: Option<Vec<String>>,
    /// Origins accepted besides the loopback ones (exact, lowercase, no
    /// trailing slash); `*` accepts every origin.
    origins: Vec<String>,
    authentication: Authentication,
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

/// The token of an `Authorization: Bearer` header, if there is one.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
        .filter(|token| !token.is_empty())
}

impl Access {
    /// `bound` is the listening address; `origins` are the extra allowed
    /// origins; `tokens` the accepted bearer tokens and `oauth` the
    /// authorization server's resource server (neither: no authentication).
    pub fn new(bound: IpAddr, origins: &[String], tokens: Vec<String>, oauth: Option<Arc<ResourceServer>>) -> Self {
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
        let authentication = match oauth {
            Some(oauth) => Authentication::OAuth(oauth),
            None if tokens.is_empty() => Authentication::Open,
            None => Authentication::Tokens(tokens),
        };
        Self {
            hosts,
            origins: origins.iter().map(|o| normalize_origin(o)).collect(),
            authentication,
        }
    }

    /// Whether requests must authenticate.
    pub fn authenticates(&self) -> bool {
        !matches!(self.authentication, Authentication::Open)
    }

    /// The resource server, when access tokens of an authorization server are required.
    pub fn resource_server(&self) -> Option<&ResourceServer> {
        match &self.authentication {
            Authentication::OAuth(oauth) => Some(oauth),
            _ => None,
        }
    }

    /// Admits a request: its headers first (who sends it), then, when it
    /// carries a `message` that was read, what that message uses (see
    /// [`Access::authorize`], which may wait for the `catalog` that knows
    /// the scopes). Returns whom it acts for.
    ///
    /// # Errors
    ///
    /// As [`Access::check`], then as [`Access::authorize`].
    pub async fn admit<F: Future<Output = Arc<Catalog>>>(
        &self,
        headers: &HeaderMap,
        message: Option<&Incoming>,
        catalog: impl FnOnce() -> F,
    ) -> Result<Credential, Refusal> {
        let credential = self.check(headers).await?;
        if let Some(message) = message {
            self.authorize(&credential, message, catalog).await?;
        }
        Ok(credential)
    }

    /// Checks a request's headers; returns whom it acts for.
    ///
    /// # Errors
    ///
    /// 403 for a `Host` or `Origin` not allowed; 401 (with its challenge)
    /// without a valid token, 403 for a token lacking the scopes every
    /// request needs, 503 (with `Retry-After`) when the authorization
    /// server could not be asked in time.
    async fn check(&self, headers: &HeaderMap) -> Result<Credential, Refusal> {
        self.check_host(headers)?;
        self.check_origin(headers)?;
        match &self.authentication {
            Authentication::Open => Ok(None),
            Authentication::Tokens(tokens) => check_token(tokens, bearer(headers)).map(Some),
            Authentication::OAuth(oauth) => authenticate(oauth, bearer(headers)).await.map(Some),
        }
    }

    fn check_host(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let Some(hosts) = &self.hosts else {
            return Ok(());
        };
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        match host.map(host_name) {
            Some(name) if hosts.contains(&name) => Ok(()),
            _ => Err(Refusal::new(
                StatusCode::FORBIDDEN,
                format!(
                    "Forbidden: Host {:?} is not this server's; a server bound to a loopback address answers only to localhost",
                    host.unwrap_or("")
                ),
            )),
        }
    }

    fn check_origin(&self, headers: &HeaderMap) -> Result<(), Refusal> {
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
            Err(Refusal::new(
                StatusCode::FORBIDDEN,
                format!("Forbidden: Origin {origin:?} is not allowed (see --allow-origin)"),
            ))
        }
    }
}

/// The holder of the static token `presented`, compared with every token
/// in constant time, so timing tells nothing.
fn check_token(tokens: &[String], presented: Option<&str>) -> Result<Principal, Refusal> {
    let Some(presented) = presented else {
        return Err(Refusal {
            challenge: Some("Bearer realm=\"wasm-mcp\"".into()),
            ..Refusal::new(
                StatusCode::UNAUTHORIZED,
                "Unauthorized: send Authorization: Bearer <token>",
            )
        });
    };
    let mut found = None;
    for (index, token) in tokens.iter().enumerate() {
        if bool::from(token.as_bytes().ct_eq(presented.as_bytes())) {
            found = Some(index);
        }
    }
    found.map(Principal::static_token).ok_or_else(|| Refusal {
        challenge: Some("Bearer realm=\"wasm-mcp\", error=\"invalid_token\"".into()),
        ..Refusal::new(StatusCode::UNAUTHORIZED, "Unauthorized: the bearer token is not valid")
    })
}

/// The principal of the OAuth access token `presented`: 401 without one or
/// with an invalid one, 403 when it lacks the scopes every request needs.
async fn authenticate(oauth: &ResourceServer, presented: Option<&str>) -> Result<Principal, Refusal> {
    let required = oauth.required();
    let Some(presented) = presented else {
        return Err(Refusal {
            challenge: Some(oauth.challenge(None, required)),
            ..Refusal::new(
                StatusCode::UNAUTHORIZED,
                format!(
                    "Unauthorized: send Authorization: Bearer <access token> with a token of {} for this server \
                     (its resource metadata says how to get one)",
                    oauth.issuer()
                ),
            )
        });
    };
    let principal = oauth.validate(presented).await.map_err(|refused| match refused {
        Refused::Invalid(why) => Refusal {
            challenge: Some(oauth.challenge(Some(("invalid_token", &why)), required)),
            ..Refusal::new(StatusCode::UNAUTHORIZED, format!("Unauthorized: {why}"))
        },
        Refused::Unavailable { why, retry_after } => Refusal {
            retry_after: Some(retry_after),
            ..Refusal::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("Service Unavailable: {why}; try again in {retry_after} s"),
            )
        },
    })?;
    if principal.lacks(required) {
        let description = format!("every request needs the scopes {}", required.join(" "));
        return Err(Refusal {
            challenge: Some(oauth.challenge(Some(("insufficient_scope", &description)), required)),
            ..Refusal::new(StatusCode::FORBIDDEN, format!("Forbidden: {description}"))
        });
    }
    Ok(principal)
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use axum::http::HeaderValue;

    use futures_util::FutureExt;

    use super::*;

    impl Access {
        /// `check`, for the modes that fetch nothing.
        fn check_now(&self, headers: &HeaderMap) -> Result<Credential, Refusal> {
            self.check(headers)
                .now_or_never()
                .expect("no authorization server to ask")
        }
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (name.clone(), HeaderValue::from_str(value).unwrap()))
            .collect()
    }

    fn loopback(origins: &[&str], tokens: &[&str]) -> Access {
        let origins: Vec<String> = origins.iter().map(|o| o.to_string()).collect();
        let tokens = tokens.iter().map(|t| t.to_string()).collect();
        Access::new(IpAddr::V4(Ipv4Addr::LOCALHOST), &origins, tokens, None)
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
        assert!(access.check_now(&headers(&[(header::HOST, "127.0.0.1:9")])).is_ok());
        assert!(access.check_now(&headers(&[(header::HOST, "localhost")])).is_ok());
        let evil = access
            .check_now(&headers(&[(header::HOST, "evil.example.com")]))
            .unwrap_err();
        assert_eq!(evil.status, StatusCode::FORBIDDEN);
        assert!(access.check_now(&HeaderMap::new()).is_err());
        let open = Access::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), &[], Vec::new(), None);
        assert!(open.check_now(&headers(&[(header::HOST, "example.com")])).is_ok());
    }

    #[test]
    fn origins_must_be_local_or_listed() {
        let access = loopback(&["https://app.example.com/"], &[]);
        let with = |origin| headers(&[(header::HOST, "localhost"), (header::ORIGIN, origin)]);
        assert!(access.check_now(&with("http://localhost:6274")).is_ok());
        assert!(access.check_now(&with("http://[::1]:1")).is_ok());
        assert!(access.check_now(&with("https://APP.example.com")).is_ok());
        for bad in [
            "http://evil.example.com",
            "null",
            "file://localhost",
            "https://app.example.com:8443",
        ] {
            let refused = access.check_now(&with(bad)).unwrap_err();
            assert_eq!(refused.status, StatusCode::FORBIDDEN, "{bad}");
        }
        assert!(
            loopback(&["*"], &[])
                .check_now(&with("http://anything.example"))
                .is_ok()
        );
    }

    #[test]
    fn bearer_tokens_identify_the_credential() {
        let access = loopback(&[], &["first", "second"]);
        let with = |auth| headers(&[(header::HOST, "localhost"), (header::AUTHORIZATION, auth)]);
        assert_eq!(
            access.check_now(&with("Bearer second")).unwrap(),
            Some(Principal::static_token(1))
        );
        assert_eq!(
            access.check_now(&with("bearer first")).unwrap(),
            Some(Principal::static_token(0))
        );
        for bad in ["Bearer third", "Basic Zmlyc3Q=", "Bearer"] {
            let refused = access.check_now(&with(bad)).unwrap_err();
            assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{bad}");
            assert!(refused.challenge.is_some_and(|c| c.starts_with("Bearer")));
        }
        let missing = access.check_now(&headers(&[(header::HOST, "localhost")])).unwrap_err();
        assert_eq!(missing.status, StatusCode::UNAUTHORIZED);
    }
}
