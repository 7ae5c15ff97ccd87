//! The server as an OAuth 2.1 resource server of one authorization server
//! (`--auth-issuer`): its Protected Resource Metadata (RFC 9728), the
//! `WWW-Authenticate` challenges of its refusals, and the validation of
//! access tokens, locally as JWTs against the issuer's JWKS (RFC 9068) or
//! by the issuer's introspection endpoint (RFC 7662).
//!
//! A JWT is accepted only when signed with one of the configured
//! algorithms (asymmetric only) by a key of the issuer's JWKS, issued by
//! the issuer (`iss`), for this server (`aud` holds its canonical URI, RFC
//! 8707), and valid now (`exp`, `nbf`, with the leeway). The JWKS is
//! fetched on first use, again when a token names a key it lacks (at most
//! once per [`REFRESH_BACKOFF`]) and when older than [`KEYS_MAX_AGE`]; each
//! fetch tries [`ATTEMPTS`] times. A token once accepted is remembered until
//! it expires, so a client's next requests cost a lookup, not a signature
//! check. Tokens never go further than here.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Mutex;
use tokio::time::Instant;
use url::Url;

use crate::catalog::Catalog;
use crate::manifest::is_scope_token;
use crate::principal::Principal;
use crate::settings::AuthValues;

/// Where the Protected Resource Metadata is served: this path, and this
/// path followed by the endpoint's.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// How long one request to the authorization server may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Attempts of one fetch from the authorization server before giving up.
const ATTEMPTS: u32 = 3;
/// The least time between two JWKS fetches for a key the cache lacks.
const REFRESH_BACKOFF: Duration = Duration::from_secs(10);
/// Keys older than this are fetched again before use.
const KEYS_MAX_AGE: Duration = Duration::from_secs(600);
/// The largest document read from the authorization server.
const MAX_DOCUMENT_BYTES: usize = 1 << 20;
/// The algorithms accepted when the configuration names none.
const DEFAULT_ALGORITHMS: [Algorithm; 2] = [Algorithm::RS256, Algorithm::ES256];

/// What the authorization server's metadata says the server needs.
#[derive(Debug, Clone, Deserialize)]
struct ServerMetadata {
    issuer: String,
    jwks_uri: Option<String>,
    introspection_endpoint: Option<String>,
}

/// How tokens are checked.
enum Validator {
    /// Locally, as JWTs.
    Jwt { algorithms: Vec<Algorithm>, leeway: u64 },
    /// By the issuer's introspection endpoint, as this client.
    Introspection { client_id: String, secret: String },
}

/// The authorization server's metadata and keys, as last fetched.
#[derive(Default)]
struct Known {
    metadata: Option<ServerMetadata>,
    keys: JwkSet,
    /// When the keys were fetched (None: never).
    fetched: Option<Instant>,
    /// When they were last asked for, whether that worked or not.
    attempted: Option<Instant>,
}

/// Why a token is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The token is not good: a 401 `invalid_token` with this description.
    Invalid(String),
    /// The authorization server could not be read or asked (this says
    /// what failed): nothing is known of the token yet, a 503.
    Unavailable(String),
}

use Refused::{Invalid, Unavailable};

pub struct ResourceServer {
    issuer: String,
    /// The canonical URI of the MCP endpoint: the audience tokens must name.
    resource: String,
    /// Where the Protected Resource Metadata is (the path-inserted form).
    metadata_url: String,
    /// The scopes every token must grant.
    required: Vec<String>,
    validator: Validator,
    http: Http,
    known: Mutex<Known>,
    /// JWTs already validated, with when they expire (see [`Accepted`]).
    accepted: Accepted,
}

/// The JWTs validated lately and their principals, so that a client's
/// requests with the same token do not verify its signature each time. An
/// entry serves until the token's `exp` (with the leeway), as the token
/// itself would; at most [`Accepted::CAPACITY`] are kept.
#[derive(Default)]
struct Accepted(std::sync::Mutex<HashMap<String, (Principal, u64)>>);

impl Accepted {
    const CAPACITY: usize = 4096;

    /// The principal of `token` if it was accepted and has not expired by `now` (seconds).
    fn get(&self, token: &str, now: u64) -> Option<Principal> {
        let cache = self.0.lock().unwrap();
        let (principal, until) = cache.get(token)?;
        (now <= *until).then(|| principal.clone())
    }

    /// Remembers `token` as `principal`'s until `until` (seconds); when
    /// full, the expired entries go, or all if none has.
    fn insert(&self, token: &str, principal: &Principal, until: u64, now: u64) {
        let mut cache = self.0.lock().unwrap();
        if cache.len() >= Self::CAPACITY {
            cache.retain(|_, (_, until)| now <= *until);
            if cache.len() >= Self::CAPACITY {
                cache.clear();
            }
        }
        cache.insert(token.to_owned(), (principal.clone(), until));
    }
}

/// Seconds since the Unix epoch.
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
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

/// A URL given in a setting: absolute http(s), plain http only to this machine.
fn checked_url(url: &str, setting: &str) -> Result<Url> {
    let parsed = Url::parse(url).with_context(|| format!("{setting}: {url:?} is not a URL"))?;
    let local = matches!(parsed.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if local => Ok(parsed),
        "http" => bail!("{setting}: {url} must be https:// (plain http:// only for localhost)"),
        _ => bail!("{setting}: {url} must be an https:// URL"),
    }
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

/// The places RFC 8414 and OpenID Connect Discovery put an issuer's metadata.
fn metadata_candidates(issuer: &Url) -> Vec<String> {
    let origin = issuer.origin().ascii_serialization();
    let path = issuer.path().trim_end_matches('/');
    let mut candidates = vec![format!("{origin}/.well-known/oauth-authorization-server{path}")];
    if path.is_empty() {
        candidates.push(format!("{origin}/.well-known/openid-configuration"));
    } else {
        candidates.push(format!("{origin}/.well-known/openid-configuration{path}"));
        candidates.push(format!("{origin}{path}/.well-known/openid-configuration"));
    }
    candidates
}

/// The HTTP client of requests to the authorization server.
type Http = HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A client for the authorization server: the platform's roots, HTTP/1.1,
/// no redirects followed.
fn http_client() -> Http {
    let mut tls = (*crate::sandbox::TlsTrust::default().config()).clone();
    // The connector offers the protocols it speaks itself.
    tls.alpn_protocols.clear();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .build();
    HyperClient::builder(TokioExecutor::new()).build(connector)
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
            },
            None => Validator::Jwt {
                algorithms: algorithms(settings.algorithms.as_deref())?,
                leeway: settings.leeway_secs,
            },
        };
        Ok(Some(Self {
            issuer: issuer.clone(),
            metadata_url: metadata_url_of(&resource_url),
            resource,
            required: scope_list(settings.scopes.as_deref(), "--auth-scopes")?,
            validator,
            http: http_client(),
            known: Mutex::new(Known::default()),
            accepted: Accepted::default(),
        }))
    }

    /// The issuer whose tokens are accepted.
    pub fn issuer(&self) -> &str {
        &self.issuer
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
            "authorization_servers": [self.issuer],
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

    /// Checks the metadata and keys once at start, to say early what is wrong.
    pub async fn warm_up(self: Arc<Self>) {
        match self.refresh(true).await {
            Ok(()) => tracing::info!(issuer = %self.issuer, resource = %self.resource, "accepting OAuth access tokens"),
            Err(error) => tracing::warn!(
                issuer = %self.issuer,
                "the authorization server cannot be read yet ({error:#}); tokens are refused until it can"
            ),
        }
    }

    /// The principal `token` was issued for, or why it is refused.
    ///
    /// # Errors
    ///
    /// [`Refused::Invalid`] for a token that is not good, and
    /// [`Refused::Unavailable`] while the authorization server cannot be
    /// read or asked.
    pub async fn validate(&self, token: &str) -> Result<Principal, Refused> {
        match &self.validator {
            Validator::Jwt { algorithms, leeway } => self.validate_jwt(token, algorithms, *leeway).await,
            Validator::Introspection { client_id, secret } => self.introspect(token, client_id, secret).await,
        }
    }

    async fn validate_jwt(&self, token: &str, algorithms: &[Algorithm], leeway: u64) -> Result<Principal, Refused> {
        let now = unix_now();
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
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.resource]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let claims = jsonwebtoken::decode::<Value>(token, &key, &validation)
            .map_err(|error| Invalid(describe(error.kind(), &self.resource)))?
            .claims;
        let principal = principal_of(&self.issuer, &claims)?;
        if let Some(exp) = claims.get("exp").and_then(Value::as_u64) {
            self.accepted.insert(token, &principal, exp.saturating_add(leeway), now);
        }
        Ok(principal)
    }

    /// The key `kid` of the issuer's JWKS for `algorithm`, fetching the
    /// keys again when they lack it (or are old).
    async fn key(&self, kid: Option<&str>, algorithm: Algorithm) -> Result<DecodingKey, Refused> {
        let stale = {
            let known = self.known.lock().await;
            known.fetched.is_none_or(|at| at.elapsed() > KEYS_MAX_AGE)
        };
        if stale && let Err(error) = self.refresh(false).await {
            tracing::warn!(issuer = %self.issuer, "the issuer's keys cannot be fetched: {error:#}");
        }
        if let Some(key) = self.find_key(kid, algorithm).await? {
            return Ok(key);
        }
        if let Err(error) = self.refresh(false).await {
            tracing::warn!(issuer = %self.issuer, "the issuer's keys cannot be fetched: {error:#}");
        }
        if self.known.lock().await.fetched.is_none() {
            return Err(Unavailable(
                "the authorization server's keys could not be read (the server's log says why)".into(),
            ));
        }
        self.find_key(kid, algorithm).await?.ok_or_else(|| {
            Invalid(match kid {
                Some(kid) => format!("the access token is signed with key {kid:?}, which the issuer does not publish"),
                None => "the access token names no key (kid) and the issuer publishes more than one".into(),
            })
        })
    }

    async fn find_key(&self, kid: Option<&str>, algorithm: Algorithm) -> Result<Option<DecodingKey>, Refused> {
        let known = self.known.lock().await;
        let jwk = match kid {
            Some(kid) => known.keys.find(kid),
            None if known.keys.keys.len() == 1 => known.keys.keys.first(),
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

    /// Fetches the issuer's metadata (once) and keys; `force` ignores the
    /// backoff between fetches.
    async fn refresh(&self, force: bool) -> Result<()> {
        let mut known = self.known.lock().await;
        if !force && known.attempted.is_some_and(|at| at.elapsed() < REFRESH_BACKOFF) {
            return Ok(());
        }
        known.attempted = Some(Instant::now());
        let metadata = match &known.metadata {
            Some(metadata) => metadata.clone(),
            None => {
                let metadata = self.discover().await?;
                known.metadata = Some(metadata.clone());
                metadata
            }
        };
        if let Validator::Jwt { .. } = self.validator {
            let jwks_uri = metadata
                .jwks_uri
                .as_deref()
                .context("the issuer's metadata has no jwks_uri")?;
            let keys: JwkSet = self.fetch_json(checked_url(jwks_uri, "jwks_uri")?).await?;
            known.keys = keys;
        }
        known.fetched = Some(Instant::now());
        Ok(())
    }

    /// The issuer's metadata, from the first well-known place that has it;
    /// its `issuer` must be the configured one, character for character.
    async fn discover(&self) -> Result<ServerMetadata> {
        let issuer = checked_url(&self.issuer, "--auth-issuer")?;
        let mut tried = Vec::new();
        for candidate in metadata_candidates(&issuer) {
            match self.fetch_json::<ServerMetadata>(Url::parse(&candidate)?).await {
                Ok(metadata) if metadata.issuer == self.issuer => return Ok(metadata),
                Ok(metadata) => bail!(
                    "{candidate} names the issuer {:?}, not {:?}: refusing it (RFC 8414 §3.3)",
                    metadata.issuer,
                    self.issuer
                ),
                Err(error) => tried.push(format!("{candidate}: {error:#}")),
            }
        }
        bail!("no authorization server metadata found ({})", tried.join("; "))
    }

    /// Sends `request`: its status and body, within [`FETCH_TIMEOUT`] and
    /// [`MAX_DOCUMENT_BYTES`].
    async fn send(&self, request: http::Request<Full<Bytes>>) -> Result<(http::StatusCode, Bytes)> {
        let exchange = async {
            let response = self.http.request(request).await?;
            let status = response.status();
            let body = Limited::new(response.into_body(), MAX_DOCUMENT_BYTES)
                .collect()
                .await
                .map_err(|error| anyhow::anyhow!("reading the answer: {error}"))?
                .to_bytes();
            anyhow::Ok((status, body))
        };
        tokio::time::timeout(FETCH_TIMEOUT, exchange)
            .await
            .map_err(|_| anyhow::anyhow!("no answer within {FETCH_TIMEOUT:?}"))?
    }

    /// The JSON document at `url`, trying [`ATTEMPTS`] times while the
    /// server cannot be reached.
    async fn fetch_json<T: serde::de::DeserializeOwned>(&self, url: Url) -> Result<T> {
        let mut attempt = 1;
        loop {
            let request = http::Request::get(url.as_str())
                .header(http::header::ACCEPT, "application/json")
                .body(Full::default())?;
            match self.send(request).await {
                Ok((status, body)) if status.is_success() => {
                    return serde_json::from_slice(&body)
                        .with_context(|| format!("GET {url}: the answer is not the JSON document expected"));
                }
                Ok((status, _)) => bail!("GET {url}: {status}"),
                Err(_) if attempt < ATTEMPTS => {
                    tokio::time::sleep(Duration::from_millis(200 << attempt)).await;
                    attempt += 1;
                }
                Err(error) => return Err(error.context(format!("GET {url}"))),
            }
        }
    }

    /// RFC 7662: asks the issuer whether `token` is active, as `client_id`.
    async fn introspect(&self, token: &str, client_id: &str, secret: &str) -> Result<Principal, Refused> {
        let unavailable = |why: String| {
            tracing::warn!(issuer = %self.issuer, "token introspection failed: {why}");
            Unavailable(
                "the authorization server could not be asked about the token (the server's log says why)".into(),
            )
        };
        let endpoint = {
            if self.known.lock().await.metadata.is_none() {
                self.refresh(true).await.map_err(|e| unavailable(format!("{e:#}")))?;
            }
            let known = self.known.lock().await;
            known.metadata.as_ref().and_then(|m| m.introspection_endpoint.clone())
        };
        let endpoint =
            endpoint.ok_or_else(|| unavailable("the issuer's metadata has no introspection_endpoint".into()))?;
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
            .body(Full::from(form(&[
                ("token", token),
                ("token_type_hint", "access_token"),
            ])))
            .map_err(|e| unavailable(e.to_string()))?;
        let (status, body) = self.send(request).await.map_err(|e| unavailable(format!("{e:#}")))?;
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
        if claims.get("iss").is_some_and(|iss| iss.as_str() != Some(&self.issuer)) {
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
        principal_of(&self.issuer, &claims)
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
        let issuer = Url::parse("https://as.example.com/tenant1").unwrap();
        assert_eq!(
            metadata_candidates(&issuer),
            [
                "https://as.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://as.example.com/.well-known/openid-configuration/tenant1",
                "https://as.example.com/tenant1/.well-known/openid-configuration",
            ]
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
        assert!(checked_url("http://as.example.com", "--auth-issuer").is_err());
        assert!(checked_url("http://127.0.0.1:9000", "--auth-issuer").is_ok());
        assert!(scope_list(Some("mcp notes:read"), "--auth-scopes").unwrap().len() == 2);
        assert!(scope_list(Some("bad\"scope"), "--auth-scopes").is_err());
    }

    #[test]
    fn accepted_tokens_serve_until_they_expire_and_the_cache_stays_bounded() {
        let accepted = Accepted::default();
        let alice = Principal::oauth("https://as", "alice", None, BTreeSet::new());
        accepted.insert("t", &alice, 100, 50);
        assert_eq!(accepted.get("t", 100), Some(alice.clone()));
        assert_eq!(accepted.get("t", 101), None);
        assert_eq!(accepted.get("other", 50), None);
        for i in 0..Accepted::CAPACITY + 10 {
            accepted.insert(&format!("t{i}"), &alice, 1000, 50);
        }
        assert!(accepted.0.lock().unwrap().len() <= Accepted::CAPACITY);
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
