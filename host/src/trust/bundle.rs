//! Keyless signatures: Sigstore bundles. A bundle holds a short-lived
//! certificate from a Fulcio certificate authority naming the publisher's
//! identity (an email or a workflow URI) and the OIDC issuer that vouched
//! for it, the signature over the artifact's manifest digest, and the
//! transparency log's proof that it was logged while the certificate was
//! valid. It is verified offline, with `sigstore-verify`, against the
//! trusted root the operator names (Fulcio's certificates, the log's and the
//! certificate-transparency logs' keys); nothing is fetched.
//!
//! Bundles are kept in the registry as OCI referrers of the artifact, of
//! artifact type [`BUNDLE_ARTIFACT_TYPE`] (where `cosign sign` puts them
//! since cosign 3), the bundle the referrer's one layer.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;
use sigstore_verify::types::{Artifact, Bundle, Sha256Hash};
use sigstore_verify::{VerificationPolicy, Verifier};

/// The artifact type (and layer media type) of a referrer holding a bundle.
pub const BUNDLE_ARTIFACT_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

/// A publisher's identity: the subject its certificate names and the OIDC
/// issuer that vouched for it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    pub subject: String,
    pub issuer: String,
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (issuer {})", self.subject, self.issuer)
    }
}

/// The trusted root bundles are verified against, ready to verify.
pub struct TrustedRoot {
    verifier: Verifier,
    /// Where it came from (its file).
    pub name: String,
}

impl std::fmt::Debug for TrustedRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name)
    }
}

impl TrustedRoot {
    /// The trusted root in the JSON file `path` (Sigstore's
    /// `trusted_root.json`, as `cosign trusted-root create` writes it or
    /// Sigstore's TUF repository serves it).
    ///
    /// # Errors
    /// A file that cannot be read, or that is not a usable trusted root.
    pub fn read(path: &Path) -> Result<Self> {
        let json = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the Sigstore trusted root {}", path.display()))?;
        let root = sigstore_verify::trust_root::TrustedRoot::from_json(&json)
            .map_err(|e| anyhow::anyhow!("{} is not a Sigstore trusted root: {e}", path.display()))?;
        let verifier = Verifier::new(&root)
            .map_err(|e| anyhow::anyhow!("the Sigstore trusted root {} cannot be used: {e}", path.display()))?;
        Ok(Self {
            verifier,
            name: path.display().to_string(),
        })
    }

    /// Who signed the artifact `digest` (`sha256:HEX`) with the bundle
    /// `json`: every check but the identity made (the certificate chains to
    /// the root and was valid when the log took the signature, its SCT, the
    /// log's proof, the signature over `digest`).
    ///
    /// # Errors
    /// The first check that failed, or a bundle that is not one.
    pub fn signer(&self, json: &[u8], digest: &str) -> Result<Identity> {
        let json = std::str::from_utf8(json).context("the bundle is not UTF-8 text")?;
        let bundle = Bundle::from_json(json).map_err(|e| anyhow::anyhow!("it is not a Sigstore bundle: {e}"))?;
        let hex = digest
            .strip_prefix("sha256:")
            .with_context(|| format!("{digest} is not a sha256 digest"))?;
        let digest = Sha256Hash::from_hex(hex).map_err(|e| anyhow::anyhow!("{digest} is not a sha256 digest: {e}"))?;
        let verified = self
            .verifier
            .verify(
                Artifact::from_digest(digest),
                &bundle,
                &VerificationPolicy::any_identity(),
            )
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let subject = verified
            .identity()
            .context("its certificate names no identity (no email or URI)")?;
        let issuer = verified.issuer().context("its certificate names no OIDC issuer")?;
        Ok(Identity {
            subject: subject.as_str().to_owned(),
            issuer: issuer.to_owned(),
        })
    }
}
