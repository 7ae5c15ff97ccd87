//! The server as an OAuth 2.1 resource server of one authorization server
//! (`--auth-issuer`): its Protected Resource Metadata (RFC 9728), the
//! `WWW-Authenticate` challenges of its refusals, and the validation of
//! access tokens, locally as JWTs against the issuer's JWKS (RFC 9068) or
//! by the issuer's introspection endpoint (RFC 7662).
//!
//! A JWT is accepted only when signed with one of the configured
//! algorithms (asymmetric only) by a key of the issuer's JWKS, issued by
//! the issuer (`iss`), for this server (`aud` holds its canonical URI, RFC
//! 8707), and valid now (`exp`, `nbf`, with the leeway). The JWKS comes
//! from [`super::issuer`]: a token whose key is known is checked at once,
//! whatever the issuer is doing; one naming a key the set lacks waits for
//! at most one fetch, and never longer than `--auth-issuer-wait`, as an
//! introspection does. A token once accepted is remembered until it
//! expires, and introspection's answers (either way) for
//! `--auth-introspection-cache`, so a client's next requests cost a lookup.
//! Tokens never go further than here.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use http_body_util::Full;
use hyper::body::Bytes;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use url::Url;

use super::issuer::{Issuer, KEYS_MAX_AGE, Snapshot};
use crate::catalog::Catalog;
use crate::manifest::is_scope_token;
use crate::principal::Principal;
use crate::sandbox::checked_url;
use crate::settings::AuthValues;

/// Where the Protected Resource Metadata is served: this path, and this
/// path followed by the endpoint's.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The algorithms accepted when the configuration names none.
const DEFAULT_ALGORITHMS: [Algorithm; 2] = [Algorithm::RS256, Algorithm::ES256];

/// How tokens are checked.
enum Validator {
    /// Locally, as JWTs.
    Jwt { algorithms: Vec<Algorithm>, leeway: u64 },
    /// By the issuer's introspection endpoint, as this client; its answers
    /// are remembered for `remember` (see [`Introspected`]).
    Introspection {
        client_id: String,
        secret: String,
        remember: Duration,
    },
}

/// Why a token is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The token is not good: a 401 `invalid_token` with this description.
    Invalid(String),
    /// The authorization server could not be read or asked in time (`why`
    /// says what happened): nothing is known of the token yet, a 503 with
    /// `Retry-After: retry_after` (seconds).
    Unavailable { why: String, retry_after: u64 },
}

use Refused::{Invalid, Unavailable};

pub struct ResourceServer {
    /// The authorization server: its metadata and keys as last fetched.
    issuer: Arc<Issuer>,
    /// The canonical URI of the MCP endpoint: the audience tokens must name.
    resource: String,
    /// Where the Protected Resource Metadata is (the path-inserted form).
    metadata_url: String,
    /// The scopes every token must grant.
    required: Vec<String>,
    validator: Validator,
    /// The longest a request waits on the authorization server.
    wait: Duration,
    /// JWTs already validated, with when they expire (see [`Remembered`]).
    accepted: Remembered<Principal>,
    /// What introspection said of tokens lately.
    introspected: Introspected,
}

/// Milliseconds since the Unix epoch.
fn unix_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}

/// Values about tokens, by the SHA-256 of the token, each until a time
/// (Unix milliseconds): a client's next requests with the same token cost
/// a lookup, not a signature check or a question to the issuer. At most
/// [`Remembered::CAPACITY`] are kept.
struct Remembered<T>(std::sync::Mutex<HashMap<[u8; 32], (T, u64)>>);

impl<T: Clone> Remembered<T> {
    const CAPACITY: usize = 4096;

    fn new() -> Self {
        Self(std::sync::Mutex::new(HashMap::new()))
    }

    fn key(token: &str) -> [u8; 32] {
        Sha256::digest(token.as_bytes()).into()
    }

    /// What is remembered of `token`, unless it expired by `now`.
    fn get(&self, token: &str, now: u64) -> Option<T> {
        let cache = self.0.lock().unwrap();
        let (value, until) = cache.get(&Self::key(token))?;
        (now <= *until).then(|| value.clone())
    }

    /// Remembers `value` of `token` until `until`; when full, the expired
    /// entries go, or all if none has.
    fn insert(&self, token: &str, value: T, until: u64, now: u64) {
        let key = Self::key(token);
        let mut cache = self.0.lock().unwrap();
        if cache.len() >= Self::CAPACITY {
            cache.retain(|_, (_, until)| now <= *until);
            if cache.len() >= Self::CAPACITY {
                cache.clear();
            }
        }
        cache.insert(key, (value, until));
    }
}

/// What introspection said of tokens lately: the active ones (with their
/// principal, never past their `exp`) and, apart, so that a flood of bad
/// tokens cannot push the good ones out, why the others were refused.
struct Introspected {
    active: Remembered<Principal>,
    refused: Remembered<String>,
}

/// `text` split at whitespace, each part an OAuth scope token.
fn scope_list(text: Option<&str>, setting: &str) -> Result<Vec<String>> {
    let scopes: Vec<String> = text.unwrap_or_default().split_whitespace().map(str::to_owned).collect();
    if let Some(bad) = scopes.iter().find(|scope| !is_scope_token(scope)) {
        bail!("{setting}: {bad:?} is not a scope (visible ASCII without '\"' or '\\')");
    }
    Ok(scopes)
}

/// The algorithms named in `text` (space-separated), asymmetric ones only.
fn algorithms(text: Option<&str>) -> Result<Vec<Algorithm>> {
    let Some(text) = text else {
        return Ok(DEFAULT_ALGORITHMS.to_vec());
    };
    let mut chosen = Vec::new();
    for name in text.split_whitespace() {
        let algorithm = Algorithm::from_str(name).map_err(|_| {
            anyhow::anyhow!(
                "--auth-algorithms: {name:?} is not a JWS algorithm (RS256, PS256, ES256, ES384, EdDSA, ...)"
            )
        })?;
        if matches!(algorithm, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512) {
            bail!("--auth-algorithms: {name} is a shared-secret algorithm; name the issuer's public-key algorithms");
        }
        chosen.push(algorithm);
    }
    if chosen.is_empty() {
        bail!("--auth-algorithms names no algorithm");
    }
    Ok(chosen)
}

/// The Protected Resource Metadata URL of `resource`: the well-known
/// prefix inserted before its path (RFC 9728 §3.1).
fn metadata_url_of(resource: &Url) -> String {
    let path = resource.path().trim_end_matches('/');
    format!(
        "{}/.well-known/oauth-protected-resource{path}",
        resource.origin().ascii_serialization()
    )
}

/// How a refusal names the key a token is signed with.
fn key_name(kid: Option<&str>) -> String {
    match kid {
        Some(kid) => format!("key {kid:?}"),
        None => "a key it does not name (no kid)".into(),
    }
}

/// How long ago, in words.
fn ago(age: Duration) -> String {
    format!("{} s ago", age.as_secs())
}

/// The key `kid` of `keys` for `algorithm`; `None` when the set lacks it.
fn find_key(keys: &JwkSet, kid: Option<&str>, algorithm: Algorithm) -> Result<Option<DecodingKey>, Refused> {
    let jwk = match kid {
        Some(kid) => keys.find(kid),
        None if keys.keys.len() == 1 => keys.keys.first(),
        None => None,
    };
    let Some(jwk) = jwk else { return Ok(None) };
    if let Some(declared) = jwk.common.key_algorithm
        && declared.to_string() != format!("{algorithm:?}")
    {
        return Err(Invalid(format!(
            "the access token is signed with {algorithm:?}, but its key is for {declared}"
        )));
    }
    DecodingKey::from_jwk(jwk)
        .map(Some)
        .map_err(|error| Invalid(format!("the issuer's key cannot verify the token ({error})")))
}

impl ResourceServer {
    /// The resource server `settings` describe, for the endpoint listening
    /// at `local` (its path `endpoint`); `None` when no issuer is configured.
    ///
    /// # Errors
    ///
    /// A setting that is not what it must be (the issuer or resource not a
    /// URL, a scope that is not a scope token, an algorithm not allowed, an
    /// introspection client without its secret), named with the flag that
    /// sets it.
    pub fn new(
        settings: &AuthValues,
        client_secret: Option<String>,
        local: SocketAddr,
        endpoint: &str,
    ) -> Result<Option<Self>> {
        let Some(issuer) = &settings.issuer else {
            return Ok(None);
        };
        checked_url(issuer, "--auth-issuer")?;
        let resource = match &settings.resource {
            Some(resource) => resource.clone(),
            None => format!("http://{local}{endpoint}"),
        };
        let resource_url =
            Url::parse(&resource).with_context(|| format!("--auth-resource: {resource:?} is not a URL"))?;
        if resource_url.fragment().is_some() {
            bail!("--auth-resource: {resource} must not have a fragment (RFC 8707)");
        }
        let validator = match &settings.introspection_client {
            Some(client_id) => Validator::Introspection {
                client_id: client_id.clone(),
                secret: client_secret
                    .context("--auth-introspection-client needs the client's secret in WASM_MCP_AUTH_CLIENT_SECRET")?,
                remember: Duration::from_secs_f64(settings.introspection_cache_secs),
            },
            None => Validator::Jwt {
                algorithms: algorithms(settings.algorithms.as_deref())?,
                leeway: settings.leeway_secs,
            },
        };
        let needs_keys = matches!(validator, Validator::Jwt { .. });
        Ok(Some(Self {
            issuer: Arc::new(Issuer::new(issuer, needs_keys)),
            metadata_url: metadata_url_of(&resource_url),
            resource,
            required: scope_list(settings.scopes.as_deref(), "--auth-scopes")?,
            validator,
            wait: Duration::from_secs_f64(settings.issuer_wait_secs),
            accepted: Remembered::new(),
            introspected: Introspected {
                active: Remembered::new(),
                refused: Remembered::new(),
            },
        }))
    }

    /// The issuer whose tokens are accepted.
    pub fn issuer(&self) -> &str {
        self.issuer.id()
    }

    /// The scopes every token must grant.
    pub fn required(&self) -> &[String] {
        &self.required
    }

    /// The Protected Resource Metadata document: it advertises the
    /// required scopes and those the entries of `catalog` need.
    pub fn metadata(&self, catalog: &Catalog) -> Value {
        let mut supported: BTreeSet<&str> = self.required.iter().map(String::as_str).collect();
        supported.extend(catalog.scopes());
        json!({
            "resource": self.resource,
            "authorization_servers": [self.issuer()],
            "scopes_supported": supported,
            "bearer_methods_supported": ["header"],
            "resource_name": "wasm-mcp",
        })
    }

    /// The `WWW-Authenticate` challenge of a refusal: `error` (none for a
    /// request without a token) and the scopes the request needs.
    pub fn challenge(&self, error: Option<(&str, &str)>, scopes: &[String]) -> String {
        let mut challenge = format!("Bearer resource_metadata=\"{}\"", self.metadata_url);
        if !scopes.is_empty() {
            challenge.push_str(&format!(", scope=\"{}\"", scopes.join(" ")));
        }
        if let Some((error, description)) = error {
            let description: String = description.chars().filter(|c| *c != '"' && *c != '\\').collect();
            challenge.push_str(&format!(", error=\"{error}\", error_description=\"{description}\""));
        }
        challenge
    }

    /// Reads the metadata and keys once at start, to say early what is wrong.
    pub async fn warm_up(self: Arc<Self>) {
        if let Some(fetch) = self.issuer.refresh(true) {
            fetch.await;
        }
        if self.issuer.snapshot().failure.is_none() {
            tracing::info!(issuer = %self.issuer(), resource = %self.resource, "accepting OAuth access tokens");
        } else {
            tracing::warn!(issuer = %self.issuer(), "tokens are refused until the authorization server can be read");
        }
    }

    /// The principal `token` was issued for, or why it is refused.
    ///
    /// # Errors
    ///
    /// [`Refused::Invalid`] for a token that is not good, and
    /// [`Refused::Unavailable`] when the authorization server could not be
    /// read or asked within the wait.
    pub async fn validate(&self, token: &str) -> Result<Principal, Refused> {
        match &self.validator {
            Validator::Jwt { algorithms, leeway } => self.validate_jwt(token, algorithms, *leeway).await,
            Validator::Introspection {
                client_id,
                secret,
                remember,
            } => self.introspect(token, client_id, secret, *remember).await,
        }
    }

    async fn validate_jwt(&self, token: &str, algorithms: &[Algorithm], leeway: u64) -> Result<Principal, Refused> {
        let now = unix_millis();
        if let Some(principal) = self.accepted.get(token, now) {
            return Ok(principal);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|_| {
            let accepted: Vec<String> = algorithms.iter().map(|a| format!("{a:?}")).collect();
            Invalid(format!(
                "the access token is not a JWT signed with an algorithm this server accepts ({})",
                accepted.join(" ")
            ))
        })?;
        if !algorithms.contains(&header.alg) {
            return Err(Invalid(format!(
                "the access token is signed with {:?}, which this server does not accept",
                header.alg
            )));
        }
        let key = self.key(header.kid.as_deref(), header.alg).await?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = leeway;
        validation.validate_nbf = true;
        validation.set_issuer(&[self.issuer()]);
        validation.set_audience(&[&self.resource]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let claims = jsonwebtoken::decode::<Value>(token, &key, &validation)
            .map_err(|error| Invalid(describe(error.kind(), &self.resource)))?
            .claims;
        let principal = principal_of(self.issuer(), &claims)?;
        if let Some(exp) = claims.get("exp").and_then(Value::as_u64) {
            let until = exp.saturating_add(leeway).saturating_mul(1000);
            self.accepted.insert(token, principal.clone(), until, now);
        }
        Ok(principal)
    }

    /// The key `kid` of the issuer's JWKS for `algorithm`. A known key
    /// serves at once (old keys are fetched again meanwhile, in the
    /// background); for an unknown one, the keys are fetched again (at most
    /// once per backoff, one fetch at a time) and waited for at most
    /// [`Self::wait`].
    async fn key(&self, kid: Option<&str>, algorithm: Algorithm) -> Result<DecodingKey, Refused> {
        let known = self.issuer.snapshot();
        if let Some(key) = find_key(&known.keys, kid, algorithm)? {
            if known.age.is_some_and(|age| age > KEYS_MAX_AGE) {
                drop(self.issuer.refresh(false));
            }
            return Ok(key);
        }
        if let Some(fetch) = self.issuer.refresh(false)
            && tokio::time::timeout(self.wait, fetch).await.is_err()
        {
            return Err(Unavailable {
                why: format!(
                    "the access token is signed with {}, which is not among the authorization server's keys as \
                     last fetched, and the authorization server did not answer within {:?} when they were fetched again",
                    key_name(kid),
                    self.wait
                ),
                retry_after: self.issuer.snapshot().retry_after,
            });
        }
        let known = self.issuer.snapshot();
        if let Some(key) = find_key(&known.keys, kid, algorithm)? {
            return Ok(key);
        }
        Err(unknown_key(kid, known))
    }

    /// RFC 7662: asks the issuer whether `token` is active, as `client_id`,
    /// unless its answer about the token is remembered; remembers the new
    /// answer for `remember` (an active token never past its `exp`).
    async fn introspect(
        &self,
        token: &str,
        client_id: &str,
        secret: &str,
        remember: Duration,
    ) -> Result<Principal, Refused> {
        let now = unix_millis();
        if let Some(principal) = self.introspected.active.get(token, now) {
            return Ok(principal);
        }
        if let Some(why) = self.introspected.refused.get(token, now) {
            return Err(Invalid(why));
        }
        let answer = self.ask_issuer(token, client_id, secret).await;
        let until = now.saturating_add(remember.as_millis() as u64);
        if !remember.is_zero() {
            match &answer {
                Ok((principal, exp)) => {
                    let until = exp.map_or(until, |exp| until.min(exp.saturating_mul(1000)));
                    self.introspected.active.insert(token, principal.clone(), until, now);
                }
                Err(Invalid(why)) => self.introspected.refused.insert(token, why.clone(), until, now),
                Err(Unavailable { .. }) => {}
            }
        }
        answer.map(|(principal, _)| principal)
    }

    /// The issuer's introspection endpoint, reading its metadata (for at
    /// most `wait`) when it has not been read yet.
    async fn introspection_endpoint(&self, wait: Duration) -> Result<String, Refused> {
        let mut known = self.issuer.snapshot();
        if known.metadata.is_none() {
            if let Some(fetch) = self.issuer.refresh(false)
                && tokio::time::timeout(wait, fetch).await.is_err()
            {
                return Err(Unavailable {
                    why: format!(
                        "the authorization server's metadata (which names its introspection endpoint) could not be \
                         read: it did not answer within {:?}",
                        self.wait
                    ),
                    retry_after: self.issuer.snapshot().retry_after,
                });
            }
            known = self.issuer.snapshot();
        }
        match known.metadata {
            Some(metadata) => metadata.introspection_endpoint.ok_or_else(|| Unavailable {
                why: "the authorization server's metadata names no introspection_endpoint".into(),
                retry_after: known.retry_after,
            }),
            None => Err(Unavailable {
                why: format!(
                    "the authorization server's metadata could not be read: {}",
                    known.failure.as_deref().unwrap_or("no answer yet")
                ),
                retry_after: known.retry_after,
            }),
        }
    }

    /// The principal introspection gives `token`, with its `exp` (seconds), or why it is refused.
    async fn ask_issuer(
        &self,
        token: &str,
        client_id: &str,
        secret: &str,
    ) -> Result<(Principal, Option<u64>), Refused> {
        // One bound for reading the metadata (when needed) and asking.
        let deadline = tokio::time::Instant::now() + self.wait;
        let endpoint = self.introspection_endpoint(self.wait).await?;
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let retry_after = self.wait.as_secs_f64().ceil().max(1.0) as u64;
        let unavailable = |why: String| {
            tracing::warn!(issuer = %self.issuer(), "token introspection failed: {why}");
            Unavailable {
                why: format!("the authorization server could not be asked about the token: {why}"),
                retry_after,
            }
        };
        let form = |pairs: &[(&str, &str)]| {
            url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(pairs)
                .finish()
        };
        // RFC 6749 §2.3.1: the client's id and secret, each form-encoded, as Basic credentials.
        let encoded = |text: &str| url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
        let credentials = format!("{}:{}", encoded(client_id), encoded(secret));
        let request = http::Request::post(endpoint.as_str())
            .header(
                http::header::AUTHORIZATION,
                format!("Basic {}", BASE64.encode(credentials)),
            )
            .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(http::header::ACCEPT, "application/json")
            .body(Full::<Bytes>::from(form(&[
                ("token", token),
                ("token_type_hint", "access_token"),
            ])))
            .map_err(|e| unavailable(e.to_string()))?;
        let (status, body) = self
            .issuer
            .send(request, left)
            .await
            .map_err(|e| unavailable(format!("POST {endpoint}: {e:#}")))?;
        if status == http::StatusCode::BAD_REQUEST {
            return Err(Invalid(
                "the authorization server does not take the access token as one it issued".into(),
            ));
        }
        if !status.is_success() {
            return Err(unavailable(format!("POST {endpoint}: {status}")));
        }
        let claims: Value = serde_json::from_slice(&body).map_err(|e| unavailable(format!("POST {endpoint}: {e}")))?;
        if claims.get("active") != Some(&Value::Bool(true)) {
            return Err(Invalid(
                "the access token is not active (expired, revoked or unknown)".into(),
            ));
        }
        if claims.get("iss").is_some_and(|iss| iss.as_str() != Some(self.issuer())) {
            return Err(Invalid(
                "the access token was issued by another authorization server".into(),
            ));
        }
        if !audience_has(claims.get("aud"), &self.resource) {
            return Err(Invalid(format!(
                "the access token was not issued for this server (its audience must include {})",
                self.resource
            )));
        }
        let exp = claims.get("exp").and_then(Value::as_u64);
        principal_of(self.issuer(), &claims).map(|principal| (principal, exp))
    }
}

/// Why a token signed with `kid`, which the keys `known` lack after the
/// last fetch, is refused: it is not the issuer's (401) when that fetch
/// worked; nothing can be said (503) when the keys could not be read.
fn unknown_key(kid: Option<&str>, known: Snapshot) -> Refused {
    let retry_after = known.retry_after;
    match (known.age, known.failure) {
        (None, failure) => Unavailable {
            why: format!(
                "the authorization server's keys could not be read: {}",
                failure.as_deref().unwrap_or("no answer yet")
            ),
            retry_after,
        },
        (Some(age), Some(failure)) => Unavailable {
            why: format!(
                "the access token is signed with {}, which is not among the authorization server's keys fetched {}, \
                 and fetching them again failed: {failure}",
                key_name(kid),
                ago(age)
            ),
            retry_after,
        },
        (Some(age), None) => Invalid(match kid {
            Some(kid) => format!(
                "the access token is signed with key {kid:?}, which the issuer does not publish (its keys as fetched {})",
                ago(age)
            ),
            None => "the access token names no key (kid) and the issuer publishes more than one".into(),
        }),
    }
}

/// Whether an `aud` claim (a string or an array of them) holds `resource`.
fn audience_has(aud: Option<&Value>, resource: &str) -> bool {
    match aud {
        Some(Value::String(aud)) => aud == resource,
        Some(Value::Array(auds)) => auds.iter().any(|aud| aud.as_str() == Some(resource)),
        _ => false,
    }
}

/// The principal of a token's claims: `sub` (else, for a client acting for
/// itself, whose introspection may have none, the client), the client
/// (`client_id`, else `azp`) and the scopes (`scope`, space-separated, or
/// `scp`, a list).
fn principal_of(issuer: &str, claims: &Value) -> Result<Principal, Refused> {
    let client = claims
        .get("client_id")
        .or_else(|| claims.get("azp"))
        .and_then(Value::as_str);
    let subject = claims
        .get("sub")
        .and_then(Value::as_str)
        .or(client)
        .ok_or_else(|| Invalid("the access token names no subject (sub) and no client (client_id)".into()))?;
    let scopes: BTreeSet<String> = match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(scope)), _) => scope.split_whitespace().map(str::to_owned).collect(),
        (_, Some(Value::Array(scp))) => scp.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        (_, Some(Value::String(scp))) => scp.split_whitespace().map(str::to_owned).collect(),
        _ => BTreeSet::new(),
    };
    Ok(Principal::oauth(issuer, subject, client, scopes))
}

/// What is wrong with a token, as its refusal says.
fn describe(kind: &jsonwebtoken::errors::ErrorKind, resource: &str) -> String {
    use jsonwebtoken::errors::ErrorKind;
    match kind {
        ErrorKind::ExpiredSignature => "the access token has expired".into(),
        ErrorKind::ImmatureSignature => "the access token is not valid yet (nbf)".into(),
        ErrorKind::InvalidIssuer => "the access token was issued by another authorization server".into(),
        ErrorKind::InvalidAudience => {
            format!("the access token was not issued for this server (its audience must include {resource})")
        }
        ErrorKind::InvalidSignature => "the access token's signature does not verify".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("the access token has no {claim} claim"),
        ErrorKind::InvalidAlgorithm => "the access token's algorithm does not match its key".into(),
        other => format!("the access token is not valid ({other:?})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_inserts_the_well_known_prefix_before_the_path() {
        let url = |text| metadata_url_of(&Url::parse(text).unwrap());
        assert_eq!(
            url("https://mcp.example.com/mcp"),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            url("http://127.0.0.1:8080/"),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn settings_are_checked() {
        assert_eq!(algorithms(None).unwrap(), DEFAULT_ALGORITHMS);
        assert_eq!(
            algorithms(Some("PS256 EdDSA")).unwrap(),
            [Algorithm::PS256, Algorithm::EdDSA]
        );
        assert!(
            algorithms(Some("HS256"))
                .unwrap_err()
                .to_string()
                .contains("shared-secret")
        );
        assert!(algorithms(Some("none")).is_err());
        assert!(scope_list(Some("mcp notes:read"), "--auth-scopes").unwrap().len() == 2);
        assert!(scope_list(Some("bad\"scope"), "--auth-scopes").is_err());
    }

    #[test]
    fn remembered_tokens_serve_until_they_expire_and_the_cache_stays_bounded() {
        let accepted = Remembered::new();
        let alice = Principal::oauth("https://as", "alice", None, BTreeSet::new());
        accepted.insert("t", alice.clone(), 100, 50);
        assert_eq!(accepted.get("t", 100), Some(alice.clone()));
        assert_eq!(accepted.get("t", 101), None);
        assert_eq!(accepted.get("other", 50), None);
        for i in 0..Remembered::<Principal>::CAPACITY + 10 {
            accepted.insert(&format!("t{i}"), alice.clone(), 1000, 50);
        }
        assert!(accepted.0.lock().unwrap().len() <= Remembered::<Principal>::CAPACITY);
    }

    fn snapshot(age: Option<u64>, failure: Option<&str>) -> Snapshot {
        Snapshot {
            metadata: None,
            keys: Arc::default(),
            age: age.map(Duration::from_secs),
            failure: failure.map(str::to_owned),
            retry_after: 7,
        }
    }

    #[test]
    fn an_unknown_key_is_refused_for_what_the_last_fetch_found() {
        let not_published = unknown_key(Some("k9"), snapshot(Some(3), None));
        assert_eq!(
            not_published,
            Invalid("the access token is signed with key \"k9\", which the issuer does not publish (its keys as fetched 3 s ago)".into())
        );
        let Unavailable { why, retry_after } =
            unknown_key(Some("k9"), snapshot(Some(40), Some("GET jwks: connection refused")))
        else {
            panic!("the keys could not be fetched again: nothing is known of the key");
        };
        assert_eq!(retry_after, 7);
        assert!(
            why.contains("fetched 40 s ago")
                && why.ends_with("fetching them again failed: GET jwks: connection refused"),
            "{why}"
        );
        let Unavailable { why, .. } = unknown_key(None, snapshot(None, Some("no metadata"))) else {
            panic!("never read");
        };
        assert_eq!(why, "the authorization server's keys could not be read: no metadata");
    }

    #[test]
    fn claims_give_the_principal() {
        let claims = json!({ "sub": "alice", "client_id": "app", "scope": "notes:read mcp" });
        let alice = principal_of("https://as", &claims).unwrap();
        assert!(alice.has("notes:read") && alice.has("mcp") && !alice.has("notes:write"));
        let scp = json!({ "sub": "bob", "azp": "app", "scp": ["notes"] });
        assert!(principal_of("https://as", &scp).unwrap().has("notes:write"));
        assert!(principal_of("https://as", &json!({})).is_err());
        let machine = principal_of("https://as", &json!({ "client_id": "batch" })).unwrap();
        assert_eq!(machine.id, "oauth https://as batch batch");
        assert!(audience_has(Some(&json!(["x", "r"])), "r"));
        assert!(!audience_has(Some(&json!("x")), "r"));
        assert!(!audience_has(None, "r"));
    }
}
