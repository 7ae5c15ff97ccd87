//! Talking to registries, through `oci-client` (the distribution protocol,
//! basic auth and the bearer-token handshake): HTTPS with the platform's
//! roots plus the operator's CA file; plain HTTP only for the registries the
//! operator lists, or for a registry on loopback whose HTTPS cannot be
//! reached. Each operation is tried again with growing waits while the
//! registry cannot be reached (or answers 5xx or 429), and its failure is
//! said in words: which registry, which reference, and what to do.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use futures_util::StreamExt;
use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::{Reference, RegistryOperation};

use super::artifact::{ACCEPTED_MANIFESTS, Artifact, OCI_MANIFEST_MEDIA_TYPE, Publication};
use super::credentials::{Credentials, PASSWORD_VARIABLE, USERNAME_VARIABLE};
use super::reference::{digest_of, is_loopback, pinned};
use super::store::Store;
use crate::settings::{RegistryValues, registry};
use crate::trust::bundle::BUNDLE_ARTIFACT_TYPE;
use crate::trust::signature::{SIGNATURE_ANNOTATION, SIGNATURE_LAYER_MEDIA_TYPE, signature_tag};
use crate::trust::{Signature, Signatures};

/// The largest OCI manifest accepted: a plugin's has two to four entries.
const MAX_MANIFEST_BYTES: u64 = 1 << 20;
/// The largest signature payload accepted (cosign's are a few hundred bytes).
const MAX_PAYLOAD_BYTES: i64 = 64 << 10;
/// The largest Sigstore bundle accepted (a certificate chain and a proof: a few KiB).
const MAX_BUNDLE_BYTES: i64 = 256 << 10;
/// The most bundles read for one artifact.
const MAX_BUNDLES: usize = 16;
/// The first wait before a retry; each next one doubles, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(4);

/// A client of every registry, with the operator's settings.
pub struct RegistryClient {
    settings: RegistryValues,
    /// HTTPS, except for the registries listed as plain HTTP.
    secure: oci_client::Client,
    /// Plain HTTP, for loopback registries whose HTTPS cannot be reached.
    plain: oci_client::Client,
    /// Loopback registries found to speak plain HTTP.
    plain_loopback: Mutex<HashSet<String>>,
}

/// A registry that gave no answer (rather than one that answered no).
#[derive(Debug)]
pub struct Unreachable(String);

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unreachable {}

impl Unreachable {
    /// Whether `error` says a registry could not be reached.
    pub fn caused(error: &anyhow::Error) -> bool {
        error.chain().any(|cause| cause.is::<Unreachable>())
    }
}

/// How an operation failed: a registry's answer or the transport, kept
/// whole to be told apart (retried or not) and said in words.
enum Failure {
    Registry(OciDistributionError),
    Other(anyhow::Error),
}

impl From<OciDistributionError> for Failure {
    fn from(e: OciDistributionError) -> Self {
        Failure::Registry(e)
    }
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Other(e)
    }
}

impl RegistryClient {
    /// A client with `settings` (its CA file read now).
    pub fn new(settings: &RegistryValues) -> Result<Self> {
        let extra_roots = match &settings.ca_file {
            Some(path) => {
                let pem = std::fs::read(path).with_context(|| {
                    format!(
                        "cannot read the registry CA file {} ({})",
                        path.display(),
                        registry::ca_file.hint()
                    )
                })?;
                crate::sandbox::ca_certificates(&pem)
                    .with_context(|| format!("the registry CA file {}", path.display()))?
                    .into_iter()
                    .map(|der| Certificate {
                        encoding: CertificateEncoding::Der,
                        data: der.to_vec(),
                    })
                    .collect()
            }
            None => Vec::new(),
        };
        let listed: Vec<String> = settings
            .plain_http
            .as_deref()
            .unwrap_or_default()
            .split([' ', ','])
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        let config = |protocol| ClientConfig {
            protocol,
            extra_root_certificates: extra_roots.clone(),
            // An index (an artifact per platform) is refused, not resolved.
            platform_resolver: None,
            connect_timeout: Some(Duration::from_secs(10)),
            read_timeout: Some(Duration::from_secs(60)),
            user_agent: concat!("wasm-mcp/", env!("CARGO_PKG_VERSION")),
            ..ClientConfig::default()
        };
        let client =
            |protocol| oci_client::Client::try_from(config(protocol)).context("cannot set up the registry client");
        Ok(Self {
            settings: settings.clone(),
            secure: client(ClientProtocol::HttpsExcept(listed))?,
            plain: client(ClientProtocol::Http)?,
            plain_loopback: Mutex::new(HashSet::new()),
        })
    }

    /// The most bytes one plugin may take.
    pub fn max_plugin_bytes(&self) -> u64 {
        self.settings.max_plugin_mib.saturating_mul(1 << 20)
    }

    /// The digest `reference`'s tag (or digest) names now, with the artifact's
    /// manifest (stored), checked to be a plugin.
    pub async fn resolve(&self, reference: &Reference, store: &Store) -> Result<(String, Artifact)> {
        let credentials = &Credentials::find(reference.resolve_registry()).await?;
        let (json, digest) = self
            .retrying(reference, credentials, "read", |client| async move {
                self.manifest(client, reference, credentials).await
            })
            .await?;
        if let Some(expected) = reference.digest()
            && expected != digest
        {
            bail!(
                "{reference}: the registry sent a manifest whose digest is {digest}, not the {expected} asked for; it is not used"
            );
        }
        let artifact = Artifact::read(&json).map_err(|e| anyhow::anyhow!("{reference} is not a plugin: {e:#}"))?;
        store.write(&digest, &json)?;
        Ok((digest, artifact))
    }

    /// Makes sure the store holds the artifact `reference` pinned at `digest`
    /// names, pulling what it lacks by digest, each piece checked against its
    /// digest and within the size bound; its artifact.
    pub async fn fetch(&self, reference: &Reference, digest: &str, store: &Store) -> Result<Artifact> {
        let pinned = pinned(reference, digest);
        let artifact = match store.read(digest)? {
            Some(json) => Artifact::read(&json).map_err(|e| anyhow::anyhow!("{pinned} is not a plugin: {e:#}"))?,
            None => self.resolve(&pinned, store).await?.1,
        };
        let limit = self.max_plugin_bytes();
        if artifact.declared_size() > limit {
            bail!(
                "{pinned} is {} bytes, more than the {} MiB a plugin may take ({}); it is not pulled",
                artifact.declared_size(),
                self.settings.max_plugin_mib,
                registry::max_plugin_mib.hint()
            );
        }
        let missing = artifact.layers().filter(|layer| !store.contains(&layer.digest));
        let pinned = &pinned;
        for layer in missing {
            let credentials = &Credentials::find(reference.resolve_registry()).await?;
            self.retrying(pinned, credentials, "pull", |client| async move {
                let mut stream = client.pull_blob_stream(pinned, layer).await?;
                let mut entry = store.entry(&layer.digest, layer.size.max(0) as u64)?;
                while let Some(chunk) = stream.next().await {
                    let chunk = chunk.map_err(|e| {
                        match e
                            .get_ref()
                            .and_then(|e| e.downcast_ref::<oci_client::errors::DigestError>())
                        {
                            Some(_) => anyhow::anyhow!(
                                "the content received does not match its digest {}; it is not used",
                                layer.digest
                            ),
                            None => anyhow::Error::from(e).context("the connection broke while receiving it"),
                        }
                    })?;
                    entry.write(&chunk)?;
                }
                entry.finish()?;
                Ok(())
            })
            .await
            .with_context(|| format!("the {} layer of {pinned}", layer.media_type))?;
        }
        Ok(artifact)
    }

    /// Publishes `publication` at `reference`; the digest of what was pushed.
    pub async fn push(&self, reference: &Reference, publication: &Publication) -> Result<String> {
        let credentials = &Credentials::find(reference.resolve_registry()).await?;
        self.retrying(reference, credentials, "push", |client| async move {
            client
                .auth(reference, &Credentials::auth(credentials), RegistryOperation::Push)
                .await?;
            for layer in &publication.layers {
                client
                    .push_blob(reference, layer.data.clone(), &digest_of(&layer.data))
                    .await?;
            }
            let config = &publication.config;
            client
                .push_blob(reference, config.data.clone(), &digest_of(&config.data))
                .await?;
            let content_type = http::HeaderValue::from_static(OCI_MANIFEST_MEDIA_TYPE);
            client
                .push_manifest_raw(reference, publication.manifest.clone(), content_type)
                .await?;
            Ok(())
        })
        .await?;
        Ok(digest_of(&publication.manifest))
    }

    /// The signatures the registry keeps for the artifact `digest` of
    /// `reference`'s repository, under cosign's tag (`sha256-HEX.sig`):
    /// `None` when it keeps none. Each payload is checked against its digest.
    pub async fn signatures(&self, reference: &Reference, digest: &str) -> Result<Option<Vec<Signature>>> {
        let tagged = signature_reference(reference, digest);
        let tagged = &tagged;
        let credentials = &Credentials::find(reference.resolve_registry()).await?;
        self.retrying(tagged, credentials, "read the signatures", |client| async move {
            let json = match self.manifest(client, tagged, credentials).await {
                Ok((json, _)) => json,
                Err(Failure::Registry(e)) if is_missing(&e) => return Ok(None),
                Err(e) => return Err(e),
            };
            let manifest: OciImageManifest = serde_json::from_slice(&json)
                .map_err(|e| anyhow::anyhow!("{tagged} is not an OCI image manifest: {e}"))?;
            let mut found = Vec::new();
            for layer in manifest
                .layers
                .iter()
                .filter(|l| l.media_type == SIGNATURE_LAYER_MEDIA_TYPE)
            {
                let Some(signature) = layer.annotations.as_ref().and_then(|a| a.get(SIGNATURE_ANNOTATION)) else {
                    continue;
                };
                if layer.size > MAX_PAYLOAD_BYTES {
                    return Err(anyhow::anyhow!(
                        "a signature payload of {tagged} is larger than {MAX_PAYLOAD_BYTES} bytes"
                    )
                    .into());
                }
                let mut payload = Vec::new();
                match client.pull_blob(tagged, layer, &mut payload).await {
                    Err(OciDistributionError::DigestError(_)) => payload.clear(),
                    other => other?,
                }
                if digest_of(&payload) != layer.digest {
                    return Err(anyhow::anyhow!(
                        "a signature payload of {tagged} does not match its digest {}",
                        layer.digest
                    )
                    .into());
                }
                found.push(Signature {
                    payload,
                    signature: signature.clone(),
                });
            }
            Ok(Some(found))
        })
        .await
    }

    /// The Sigstore bundles that refer to the artifact `digest` of
    /// `reference`'s repository: the OCI referrers of artifact type
    /// [`BUNDLE_ARTIFACT_TYPE`] (through the registry's referrers API, or the
    /// `sha256-HEX` tag of registries without one), each bundle the
    /// referrer's layer of that media type.
    pub async fn bundles(&self, reference: &Reference, digest: &str) -> Result<Vec<String>> {
        let subject = &pinned(reference, digest);
        let credentials = &Credentials::find(reference.resolve_registry()).await?;
        self.retrying(
            subject,
            credentials,
            "read the Sigstore bundles of",
            |client| async move {
                let auth = Credentials::auth(credentials);
                client.auth(subject, &auth, RegistryOperation::Pull).await?;
                let index = client.pull_referrers(subject, Some(BUNDLE_ARTIFACT_TYPE)).await?;
                let mut bundles = Vec::new();
                for referrer in index.manifests.iter().take(MAX_BUNDLES) {
                    let at = pinned(subject, &referrer.digest);
                    let (json, _) = self.manifest(client, &at, credentials).await?;
                    let manifest: OciImageManifest = serde_json::from_slice(&json)
                        .map_err(|e| anyhow::anyhow!("the referrer {at} is not an OCI image manifest: {e}"))?;
                    for layer in manifest.layers.iter().filter(|l| l.media_type == BUNDLE_ARTIFACT_TYPE) {
                        if layer.size > MAX_BUNDLE_BYTES {
                            return Err(anyhow::anyhow!(
                                "the Sigstore bundle {at} is larger than {MAX_BUNDLE_BYTES} bytes"
                            )
                            .into());
                        }
                        let mut bundle = Vec::new();
                        client.pull_blob(&at, layer, &mut bundle).await?;
                        let bundle = String::from_utf8(bundle)
                            .map_err(|_| anyhow::anyhow!("the Sigstore bundle {at} is not UTF-8 text"))?;
                        bundles.push(bundle);
                    }
                }
                Ok(bundles)
            },
        )
        .await
    }

    /// The key-based signatures and the Sigstore bundles of the artifact
    /// `digest` of `reference`'s repository.
    pub async fn signatures_and_bundles(&self, reference: &Reference, digest: &str) -> Result<Signatures> {
        let (keyed, bundles) = tokio::try_join!(self.signatures(reference, digest), self.bundles(reference, digest))?;
        Ok(Signatures {
            keyed: keyed.unwrap_or_default(),
            bundles,
        })
    }

    /// Adds a signature (`payload` signed, `signature` in base64) to those
    /// the registry keeps for the artifact `digest` of `reference`'s
    /// repository, as `cosign sign` does; one already there is not added twice.
    pub async fn push_signature(&self, reference: &Reference, digest: &str, signature: Signature) -> Result<()> {
        let tagged = signature_reference(reference, digest);
        let tagged = &tagged;
        let existing = &self.signatures(reference, digest).await?.unwrap_or_default();
        if existing
            .iter()
            .any(|s| s.payload == signature.payload && s.signature == signature.signature)
        {
            return Ok(());
        }
        let credentials = &Credentials::find(reference.resolve_registry()).await?;
        let signature = &signature;
        self.retrying(tagged, credentials, "push a signature to", |client| async move {
            let auth = Credentials::auth(credentials);
            client.auth(tagged, &auth, RegistryOperation::Push).await?;
            let mut layers = Vec::new();
            for found in existing.iter().chain(std::iter::once(signature)) {
                let payload_digest = digest_of(&found.payload);
                if std::ptr::eq(found, signature) {
                    client.push_blob(tagged, found.payload.clone(), &payload_digest).await?;
                }
                layers.push(OciDescriptor {
                    media_type: SIGNATURE_LAYER_MEDIA_TYPE.to_owned(),
                    digest: payload_digest,
                    size: found.payload.len() as i64,
                    annotations: Some([(SIGNATURE_ANNOTATION.to_owned(), found.signature.clone())].into()),
                    ..OciDescriptor::default()
                });
            }
            let diff_ids: Vec<&str> = layers.iter().map(|l| l.digest.as_str()).collect();
            let config = serde_json::to_vec(&serde_json::json!({
                "architecture": "", "os": "", "config": {},
                "rootfs": { "type": "layers", "diff_ids": diff_ids },
            }))
            .expect("JSON");
            let config_digest = digest_of(&config);
            client.push_blob(tagged, config.clone(), &config_digest).await?;
            let manifest = OciImageManifest {
                schema_version: 2,
                media_type: Some(OCI_MANIFEST_MEDIA_TYPE.to_owned()),
                config: OciDescriptor {
                    media_type: "application/vnd.oci.image.config.v1+json".to_owned(),
                    digest: config_digest,
                    size: config.len() as i64,
                    ..OciDescriptor::default()
                },
                layers,
                ..OciImageManifest::default()
            };
            let json = serde_json::to_vec(&manifest).expect("JSON");
            let content_type = http::HeaderValue::from_static(OCI_MANIFEST_MEDIA_TYPE);
            client.push_manifest_raw(tagged, json, content_type).await?;
            Ok(())
        })
        .await
    }

    /// The manifest `reference` names and its digest (computed from the bytes).
    async fn manifest(
        &self,
        client: &oci_client::Client,
        reference: &Reference,
        credentials: &Option<Credentials>,
    ) -> Result<(Vec<u8>, String), Failure> {
        let auth = Credentials::auth(credentials);
        client.auth(reference, &auth, RegistryOperation::Pull).await?;
        let (json, _) = client.pull_manifest_raw(reference, &auth, ACCEPTED_MANIFESTS).await?;
        if json.len() as u64 > MAX_MANIFEST_BYTES {
            return Err(
                anyhow::anyhow!("its manifest is larger than {MAX_MANIFEST_BYTES} bytes: not a plugin's").into(),
            );
        }
        let digest = digest_of(&json);
        Ok((json.to_vec(), digest))
    }

    /// Runs `operation` against the registry of `reference`, over HTTPS (or
    /// plain HTTP where allowed), again after growing waits while the
    /// registry cannot be reached; its failure said in words.
    async fn retrying<'c, T, Attempt>(
        &'c self,
        reference: &Reference,
        credentials: &Option<Credentials>,
        what: &str,
        operation: impl Fn(&'c oci_client::Client) -> Attempt,
    ) -> Result<T>
    where
        Attempt: Future<Output = Result<T, Failure>>,
    {
        let mut wait = FIRST_BACKOFF;
        let mut attempt = 0;
        loop {
            let outcome = self.over_allowed_protocols(reference, &operation).await;
            match outcome {
                Ok(value) => return Ok(value),
                Err(failure) if attempt < self.settings.pull_retries && transient(&failure) => {
                    attempt += 1;
                    tracing::info!(%reference, attempt, "the registry cannot be reached; trying again in {wait:?}");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(MAX_BACKOFF);
                }
                Err(failure) => return Err(describe(failure, reference, credentials, what)),
            }
        }
    }

    /// One try over HTTPS; for a loopback registry whose HTTPS cannot be
    /// reached, over plain HTTP too (remembered once it answers).
    async fn over_allowed_protocols<'c, T, Attempt>(
        &'c self,
        reference: &Reference,
        operation: &impl Fn(&'c oci_client::Client) -> Attempt,
    ) -> Result<T, Failure>
    where
        Attempt: Future<Output = Result<T, Failure>>,
    {
        let registry = reference.resolve_registry();
        let known_plain = self.plain_loopback.lock().expect("not poisoned").contains(registry);
        if known_plain {
            return operation(&self.plain).await;
        }
        let secure = operation(&self.secure).await;
        match secure {
            Err(failure) if is_loopback(registry) && unreachable(&failure) && !refused_certificate(&failure) => {
                match operation(&self.plain).await {
                    Ok(value) => {
                        tracing::debug!(registry, "the loopback registry speaks plain HTTP");
                        self.plain_loopback
                            .lock()
                            .expect("not poisoned")
                            .insert(registry.to_owned());
                        Ok(value)
                    }
                    Err(plain) if unreachable(&plain) => Err(failure),
                    Err(plain) => Err(plain),
                }
            }
            other => other,
        }
    }
}

/// The reference of the signatures of the artifact `digest` in `reference`'s repository.
fn signature_reference(reference: &Reference, digest: &str) -> Reference {
    Reference::with_tag(
        reference.registry().to_owned(),
        reference.repository().to_owned(),
        signature_tag(digest),
    )
}

/// Whether the registry said it has no such manifest or repository.
fn is_missing(error: &OciDistributionError) -> bool {
    let codes: &[oci_client::errors::OciError] = match error {
        OciDistributionError::RegistryError { envelope, .. } => &envelope.errors,
        _ => &[],
    };
    matches!(error, OciDistributionError::ImageManifestNotFoundError(_))
        || matches!(error, OciDistributionError::ServerError { code: 404, .. })
        || codes.iter().any(|c| {
            matches!(
                c.code,
                OciErrorCode::ManifestUnknown | OciErrorCode::NotFound | OciErrorCode::NameUnknown
            )
        })
}

/// Whether `failure` is the transport's (no answer came), not the registry's.
fn unreachable(failure: &Failure) -> bool {
    matches!(failure, Failure::Registry(OciDistributionError::RequestError(e)) if e.is_connect() || e.is_timeout())
}

/// Whether the registry spoke TLS and its certificate was refused (then it
/// is no plain HTTP server, and that refusal is the answer).
fn refused_certificate(failure: &Failure) -> bool {
    match failure {
        Failure::Registry(e) => mentions_certificate(e),
        Failure::Other(_) => false,
    }
}

/// Whether `error` or one of its causes is about a certificate.
fn mentions_certificate(error: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(error), |e| e.source()).any(|cause| cause.to_string().contains("certificate"))
}

/// Whether trying again may help: no answer, a broken connection, or 5xx / 429.
fn transient(failure: &Failure) -> bool {
    match failure {
        Failure::Registry(OciDistributionError::RequestError(e)) => {
            e.is_connect() || e.is_timeout() || e.is_request() || e.is_body()
        }
        Failure::Registry(OciDistributionError::ServerError { code, .. }) => *code >= 500 || *code == 429,
        Failure::Registry(OciDistributionError::RegistryError { envelope, .. }) => envelope
            .errors
            .iter()
            .any(|e| matches!(e.code, OciErrorCode::Toomanyrequests)),
        Failure::Other(e) => e
            .chain()
            .any(|cause| cause.to_string().contains("the connection broke")),
        _ => false,
    }
}

/// `failure` in words: what was refused or missing, and what to do.
fn describe(failure: Failure, reference: &Reference, credentials: &Option<Credentials>, what: &str) -> anyhow::Error {
    let registry = reference.resolve_registry();
    let error = match failure {
        Failure::Other(e) => return e.context(format!("cannot {what} {reference}")),
        Failure::Registry(e) => e,
    };
    let codes: Vec<&OciErrorCode> = match &error {
        OciDistributionError::RegistryError { envelope, .. } => envelope.errors.iter().map(|e| &e.code).collect(),
        _ => Vec::new(),
    };
    let status = match &error {
        OciDistributionError::ServerError { code, .. } => Some(*code),
        _ => None,
    };
    let refused = matches!(
        error,
        OciDistributionError::UnauthorizedError { .. } | OciDistributionError::AuthenticationFailure(_)
    ) || codes
        .iter()
        .any(|c| matches!(c, OciErrorCode::Unauthorized | OciErrorCode::Denied))
        || matches!(status, Some(401 | 403));
    if refused {
        return match credentials {
            Some(credentials) => anyhow::anyhow!(
                "the registry {registry} refused the credentials from {} to {what} {reference}; correct them \
                 (`docker login {registry}` or `podman login {registry}` rewrite the auth file)",
                credentials.source
            ),
            None => anyhow::anyhow!(
                "the registry {registry} wants credentials to {what} {reference} and none are set for it: \
                 log in with `docker login {registry}` or `podman login {registry}`, point REGISTRY_AUTH_FILE \
                 at an auth file, or set {USERNAME_VARIABLE} and {PASSWORD_VARIABLE}"
            ),
        };
    }
    let missing = is_missing(&error);
    if codes.iter().any(|c| matches!(c, OciErrorCode::NameUnknown)) {
        return anyhow::anyhow!(
            "the registry {registry} has no repository {}; check the reference {reference}",
            reference.repository()
        );
    }
    if missing {
        return match (reference.digest(), reference.tag()) {
            (Some(digest), _) => anyhow::anyhow!(
                "the registry {registry} has no artifact {digest} in {}; was it deleted? `wasm-mcp update` pins what its tag names now",
                reference.repository()
            ),
            (None, Some(tag)) => anyhow::anyhow!(
                "the registry {registry} has no tag {tag} in {}; publish it (`wasm-mcp push PLUGIN.wasm {reference}`) or name a tag it has",
                reference.repository()
            ),
            (None, None) => anyhow::anyhow!("the registry {registry} has no {reference}"),
        };
    }
    if let OciDistributionError::RequestError(e) = &error
        && (e.is_connect() || e.is_timeout())
    {
        let certificate = mentions_certificate(e);
        let chain = anyhow::Error::from(error);
        let hint = if certificate {
            format!(
                "; if the registry's certificate comes from a private CA, give that CA's certificate ({})",
                registry::ca_file.hint()
            )
        } else {
            String::new()
        };
        return Unreachable(format!(
            "cannot reach the registry {registry} to {what} {reference}: {chain:#}{hint}"
        ))
        .into();
    }
    anyhow::Error::from(error).context(format!("cannot {what} {reference}"))
}
