//! The authorization server as this server knows it: its metadata (RFC
//! 8414) and JWKS as last fetched, and how the last fetch went. Nothing
//! here is held while the network is waited on: a fetch runs as a task of
//! its own, one at a time per issuer (a caller asking while one is under
//! way joins it), at most one starting per [`REFRESH_BACKOFF`] after the
//! last one ended, and whoever needs its outcome waits for it only as long
//! as it chooses to.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use futures_util::FutureExt as _;
use futures_util::future::{BoxFuture, Shared};
use http_body_util::Full;
use hyper::body::Bytes;
use jsonwebtoken::jwk::JwkSet;
use serde::Deserialize;
use tokio::time::Instant;
use url::Url;

use crate::sandbox::HostClient;
use crate::sandbox::checked_url;

/// How long one request to the authorization server may take in a fetch.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Attempts of one fetch from the authorization server before giving up.
const ATTEMPTS: u32 = 3;
/// The least time between the end of one fetch and the start of the next
/// (but for the check at start).
pub(super) const REFRESH_BACKOFF: Duration = Duration::from_secs(10);
/// Keys older than this are fetched again (in the background: they serve meanwhile).
pub(super) const KEYS_MAX_AGE: Duration = Duration::from_secs(600);

/// What the authorization server's metadata says the server needs.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct ServerMetadata {
    pub issuer: String,
    pub jwks_uri: Option<String>,
    pub introspection_endpoint: Option<String>,
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

/// A fetch under way: every caller that needs its outcome awaits a clone.
type Fetch = Shared<BoxFuture<'static, ()>>;

/// What is known, behind a lock that is never held across an await.
#[derive(Default)]
struct Known {
    metadata: Option<ServerMetadata>,
    keys: Arc<JwkSet>,
    /// When the keys (or, without JWTs, the metadata) were last fetched.
    fetched: Option<Instant>,
    /// When the last fetch ended, and its error if it failed.
    last: Option<(Instant, Option<String>)>,
    /// The fetch under way, if any.
    running: Option<Fetch>,
}

/// What is known now: a snapshot, taken without waiting.
pub(super) struct Snapshot {
    pub metadata: Option<ServerMetadata>,
    pub keys: Arc<JwkSet>,
    /// How long ago the keys were fetched (None: never).
    pub age: Option<Duration>,
    /// The error of the last fetch, if it failed.
    pub failure: Option<String>,
    /// Seconds until a fetch may start again (at least 1), for `Retry-After`.
    pub retry_after: u64,
}

/// The authorization server `issuer`, as read over `http`.
pub(super) struct Issuer {
    issuer: String,
    /// Whether its JWKS is needed (tokens are JWTs), or only its metadata.
    needs_keys: bool,
    http: HostClient,
    known: Mutex<Known>,
}

impl Issuer {
    pub fn new(issuer: &str, needs_keys: bool) -> Self {
        Self {
            issuer: issuer.to_owned(),
            needs_keys,
            http: HostClient::default(),
            known: Mutex::new(Known::default()),
        }
    }

    /// The issuer identifier.
    pub fn id(&self) -> &str {
        &self.issuer
    }

    /// What is known now.
    pub fn snapshot(&self) -> Snapshot {
        let known = self.known.lock().unwrap();
        let since_last = known.last.as_ref().map(|(at, _)| at.elapsed());
        let retry_after = match since_last {
            Some(elapsed) if known.running.is_none() => REFRESH_BACKOFF.saturating_sub(elapsed).as_secs_f64().ceil(),
            _ => REFRESH_BACKOFF.as_secs_f64(),
        };
        Snapshot {
            metadata: known.metadata.clone(),
            keys: known.keys.clone(),
            age: known.fetched.map(|at| at.elapsed()),
            failure: known.last.as_ref().and_then(|(_, error)| error.clone()),
            retry_after: (retry_after as u64).max(1),
        }
    }

    /// The fetch under way, or a new one when none is and one may start
    /// (`force`, the check at start, ignores [`REFRESH_BACKOFF`]). `None`:
    /// a fetch ended too lately for another; what is known stands.
    pub fn refresh(self: &Arc<Self>, force: bool) -> Option<Fetch> {
        let mut known = self.known.lock().unwrap();
        if let Some(running) = &known.running {
            return Some(running.clone());
        }
        let backing_off = known
            .last
            .as_ref()
            .is_some_and(|(at, _)| at.elapsed() < REFRESH_BACKOFF);
        if backing_off && !force {
            return None;
        }
        let issuer = self.clone();
        let task = tokio::spawn(async move {
            let outcome = issuer.fetch().await;
            issuer.finish(outcome);
        });
        let fetch = task.map(|_| ()).boxed().shared();
        known.running = Some(fetch.clone());
        Some(fetch)
    }

    /// Keeps what a fetch brought, or its error.
    fn finish(&self, outcome: Result<(ServerMetadata, Option<JwkSet>)>) {
        let mut known = self.known.lock().unwrap();
        known.running = None;
        match outcome {
            Ok((metadata, keys)) => {
                known.metadata = Some(metadata);
                if let Some(keys) = keys {
                    known.keys = Arc::new(keys);
                }
                known.fetched = Some(Instant::now());
                known.last = Some((Instant::now(), None));
            }
            Err(error) => {
                tracing::warn!(issuer = %self.issuer, "the authorization server cannot be read: {error:#}");
                known.last = Some((Instant::now(), Some(format!("{error:#}"))));
            }
        }
    }

    /// The metadata (discovered once) and, when tokens are JWTs, the keys.
    async fn fetch(&self) -> Result<(ServerMetadata, Option<JwkSet>)> {
        let metadata = self.known.lock().unwrap().metadata.clone();
        let metadata = match metadata {
            Some(metadata) => metadata,
            None => self.discover().await?,
        };
        if !self.needs_keys {
            return Ok((metadata, None));
        }
        let jwks_uri = metadata
            .jwks_uri
            .as_deref()
            .context("the issuer's metadata has no jwks_uri")?;
        let keys = self.fetch_json(checked_url(jwks_uri, "jwks_uri")?).await?;
        Ok((metadata, Some(keys)))
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

    /// Sends `request`: its status and body, within `timeout`.
    pub async fn send(
        &self,
        request: http::Request<Full<Bytes>>,
        timeout: Duration,
    ) -> Result<(http::StatusCode, Bytes)> {
        self.http.send(request, timeout).await
    }

    /// The JSON document at `url`, trying [`ATTEMPTS`] times while the
    /// server cannot be reached.
    async fn fetch_json<T: serde::de::DeserializeOwned>(&self, url: Url) -> Result<T> {
        let mut attempt = 1;
        loop {
            let request = http::Request::get(url.as_str())
                .header(http::header::ACCEPT, "application/json")
                .body(Full::default())?;
            match self.send(request, FETCH_TIMEOUT).await {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_where_rfc_8414_and_oidc_put_it() {
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

    impl Issuer {
        fn fetching(&self) -> bool {
            self.known.lock().unwrap().running.is_some()
        }
    }

    /// An issuer on a port that accepts connections and never answers.
    fn hung() -> (Arc<Issuer>, std::net::TcpListener) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        (Arc::new(Issuer::new(&url, true)), listener)
    }

    #[tokio::test]
    async fn one_fetch_at_a_time_and_none_held_while_it_hangs() {
        let (issuer, _listener) = hung();
        let first = issuer.refresh(false).expect("the first fetch starts");
        let joined = issuer.refresh(false).expect("a second caller joins it");
        assert!(issuer.fetching());
        // Neither the snapshot nor a bounded wait is held up by the hung fetch.
        let waited = tokio::time::timeout(Duration::from_millis(50), joined).await;
        assert!(waited.is_err(), "the issuer never answers");
        let snapshot = issuer.snapshot();
        assert!(issuer.fetching() && snapshot.age.is_none() && snapshot.failure.is_none());
        drop(first);
    }

    #[tokio::test]
    async fn a_failed_fetch_is_remembered_and_not_retried_at_once() {
        // Nothing listens on the port any more: every attempt is refused.
        let (issuer, listener) = hung();
        drop(listener);
        issuer.refresh(false).unwrap().await;
        let snapshot = issuer.snapshot();
        assert!(!issuer.fetching() && snapshot.age.is_none());
        let failure = snapshot.failure.expect("the error is kept");
        assert!(failure.contains("no authorization server metadata found"), "{failure}");
        assert!(snapshot.retry_after >= 1 && snapshot.retry_after <= REFRESH_BACKOFF.as_secs());
        assert!(issuer.refresh(false).is_none(), "the next fetch waits for the backoff");
        assert!(issuer.refresh(true).is_some(), "but for the check at start");
    }
}
