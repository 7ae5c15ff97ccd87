//! Access tokens the host obtains for a binding from an authorization
//! server: OAuth 2.0 client credentials (RFC 6749 §4.4) with a resource
//! indicator (RFC 8707), the client authenticated with HTTP Basic. A token
//! is asked for on first use, kept, and asked for again once most of its
//! lifetime has passed; one request at a time (callers meanwhile wait for
//! its outcome). While the authorization server cannot give a new one, the
//! kept token serves until it expires; then the request is refused saying
//! why. The plugin sees neither the client's secret nor the token.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use base64::Engine as _;
use http_body_util::Full;
use hyper::body::Bytes;
use secrecy::{ExposeSecret as _, SecretString};
use serde::Deserialize;
use tokio::time::Instant;
use url::Url;
use url::form_urlencoded;

use super::sources::Secret;
use crate::config::UpstreamOauth;
use crate::sandbox::{HostClient, checked_url};

/// How long one token request may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The lifetime assumed for a token whose answer gives none.
const DEFAULT_LIFETIME: Duration = Duration::from_secs(300);
/// A token is asked for again this long before it expires, or once a
/// quarter of its lifetime is left if that is sooner.
const REFRESH_AHEAD: Duration = Duration::from_secs(60);

/// The tokens of one binding.
pub struct UpstreamToken {
    token_url: Url,
    client_id: String,
    client_secret: Arc<Secret>,
    resource: String,
    scope: Option<String>,
    client: HostClient,
    kept: tokio::sync::Mutex<Option<Kept>>,
}

/// A token, when to ask for the next one, and when it expires.
struct Kept {
    token: SecretString,
    refresh_at: Instant,
    expires_at: Instant,
}

/// The token endpoint's answer (RFC 6749 §5.1).
#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    token_type: Option<String>,
    expires_in: Option<u64>,
}

/// The token endpoint's refusal (RFC 6749 §5.2).
#[derive(Deserialize)]
struct TokenError {
    error: String,
    error_description: Option<String>,
}

impl UpstreamToken {
    /// The tokens of `config`, for requests to `target` (the default
    /// resource), the client's secret in `client_secret`.
    pub fn new(config: &UpstreamOauth, target: &str, client_secret: Arc<Secret>) -> Result<Self> {
        let token_url = checked_url(&config.token_url, "oauth.token_url")?;
        if config.client_id.is_empty() {
            bail!("oauth.client_id is empty: name the client the host is at the authorization server");
        }
        let resource = config.resource.clone().unwrap_or_else(|| target.to_owned());
        let parsed = Url::parse(&resource).map_err(|e| anyhow!("oauth.resource {resource:?} is not a URL ({e})"))?;
        if parsed.fragment().is_some() {
            bail!("oauth.resource {resource:?} may hold no fragment (RFC 8707)");
        }
        Ok(Self {
            token_url,
            client_id: config.client_id.clone(),
            client_secret,
            resource,
            scope: config.scope.clone(),
            client: HostClient::default(),
            kept: tokio::sync::Mutex::new(None),
        })
    }

    /// The name of the secret that holds the client's secret.
    pub fn client_secret(&self) -> &str {
        self.client_secret.name()
    }

    /// A token that has not expired: the kept one while it is fresh, else a
    /// new one; the kept one still, while it lasts, if none can be had.
    pub async fn token(&self) -> Result<SecretString, String> {
        let mut kept = self.kept.lock().await;
        let now = Instant::now();
        if let Some(fresh) = kept.as_ref().filter(|k| now < k.refresh_at) {
            return Ok(fresh.token.clone());
        }
        match self.fetch().await {
            Ok(new) => {
                let token = new.token.clone();
                *kept = Some(new);
                Ok(token)
            }
            Err(why) => match kept.as_ref().filter(|k| Instant::now() < k.expires_at) {
                Some(old) => {
                    tracing::warn!(
                        token_url = %self.token_url, client = %self.client_id,
                        "the kept upstream access token serves until it expires: no new one ({why})"
                    );
                    Ok(old.token.clone())
                }
                None => Err(format!(
                    "the authorization server at {} gave the host no access token for client {}: {why}",
                    self.token_url, self.client_id
                )),
            },
        }
    }

    /// The token request: the grant, the resource and the scope, the client
    /// authenticated with HTTP Basic.
    fn token_request(&self) -> Result<http::Request<Full<Bytes>>, String> {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", "client_credentials");
        form.append_pair("resource", &self.resource);
        if let Some(scope) = &self.scope {
            form.append_pair("scope", scope);
        }
        // RFC 6749 §2.3.1: the id and the secret are form-encoded before Basic.
        let encode = |text: &str| form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
        let secret = self.client_secret.value();
        let basic = base64::engine::general_purpose::STANDARD.encode(format!(
            "{}:{}",
            encode(&self.client_id),
            encode(secret.expose_secret())
        ));
        let mut authorization = http::HeaderValue::from_str(&format!("Basic {basic}"))
            .map_err(|_| "the client's secret does not make a valid Authorization header".to_owned())?;
        authorization.set_sensitive(true);
        http::Request::post(self.token_url.as_str())
            .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(http::header::ACCEPT, "application/json")
            .header(http::header::AUTHORIZATION, authorization)
            .body(Full::new(Bytes::from(form.finish())))
            .map_err(|e| e.to_string())
    }

    /// Asks the token endpoint for a token.
    async fn fetch(&self) -> Result<Kept, String> {
        let request = self.token_request()?;
        let asked = Instant::now();
        let (status, body) = self
            .client
            .send(request, FETCH_TIMEOUT)
            .await
            .map_err(|e| format!("{e:#}"))?;
        if !status.is_success() {
            return Err(match serde_json::from_slice::<TokenError>(&body) {
                Ok(refusal) => format!(
                    "{status}: {}{}",
                    refusal.error,
                    refusal.error_description.map(|d| format!(" ({d})")).unwrap_or_default()
                ),
                Err(_) => format!("{status}"),
            });
        }
        let answer: TokenAnswer = serde_json::from_slice(&body)
            .map_err(|_| "the answer is not a token response (RFC 6749 §5.1)".to_owned())?;
        if let Some(kind) = answer
            .token_type
            .as_deref()
            .filter(|kind| !kind.eq_ignore_ascii_case("bearer"))
        {
            return Err(format!("the token is of type {kind:?}, not a bearer token"));
        }
        let lifetime = answer
            .expires_in
            .map(Duration::from_secs)
            .unwrap_or(DEFAULT_LIFETIME)
            .max(Duration::from_secs(1));
        tracing::info!(
            token_url = %self.token_url, client = %self.client_id, resource = %self.resource,
            "upstream access token obtained, valid for {}s", lifetime.as_secs()
        );
        Ok(Kept {
            token: answer.access_token.into(),
            refresh_at: asked + lifetime - REFRESH_AHEAD.min(lifetime / 4),
            expires_at: asked + lifetime,
        })
    }
}
