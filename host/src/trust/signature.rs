//! Signatures in cosign's key-based form, so that an artifact signed with
//! `cosign sign --key` verifies here and one signed here verifies with
//! `cosign verify --key`: an ECDSA P-256 signature (SHA-256, ASN.1 DER,
//! base64) over a simple-signing payload that names the artifact's digest,
//! kept in the registry as a layer of the artifact tagged `sha256-HEX.sig`
//! in the same repository, the signature in the layer's annotation.
//!
//! Keys are PEM: a public key is SubjectPublicKeyInfo (`PUBLIC KEY`, what
//! `cosign public-key` prints); a private key is unencrypted PKCS#8
//! (`PRIVATE KEY`; `cosign import-key-pair` takes it).

use std::path::Path;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use p256::ecdsa::signature::{Signer, Verifier};
use p256::ecdsa::{DerSignature, SigningKey, VerifyingKey};
use p256::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey, LineEnding};
use serde::Deserialize;
use serde_json::json;

/// The media type of a signature layer (its content is the payload).
pub const SIGNATURE_LAYER_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The annotation of a signature layer that holds the signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The `type` every payload states.
const PAYLOAD_TYPE: &str = "cosign container image signature";

/// The tag a signature of `digest` (`sha256:HEX`) is kept under.
pub fn signature_tag(digest: &str) -> String {
    digest.replacen(':', "-", 1) + ".sig"
}

/// The payload that, signed, says the artifact `digest` of the repository
/// `repository` (`host[:port]/path`) is what its signer published.
pub fn payload(repository: &str, digest: &str) -> Vec<u8> {
    json!({
        "critical": {
            "identity": { "docker-reference": repository },
            "image": { "docker-manifest-digest": digest },
            "type": PAYLOAD_TYPE,
        },
        "optional": null,
    })
    .to_string()
    .into_bytes()
}

/// What a payload claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The repository it was signed for.
    pub repository: String,
    /// The artifact digest it vouches for.
    pub digest: String,
}

/// What a payload says, once its signature has verified.
///
/// # Errors
/// A payload that is not a cosign simple-signing document.
pub fn read_payload(payload: &[u8]) -> Result<Claim> {
    #[derive(Deserialize)]
    struct Payload {
        critical: Critical,
    }
    #[derive(Deserialize)]
    struct Critical {
        identity: Identity,
        image: Image,
        #[serde(rename = "type")]
        kind: String,
    }
    #[derive(Deserialize)]
    struct Identity {
        #[serde(rename = "docker-reference")]
        reference: String,
    }
    #[derive(Deserialize)]
    struct Image {
        #[serde(rename = "docker-manifest-digest")]
        digest: String,
    }
    let payload: Payload =
        serde_json::from_slice(payload).context("its payload is not a cosign simple-signing document")?;
    if payload.critical.kind != PAYLOAD_TYPE {
        bail!(
            "its payload is of type {:?}, not {PAYLOAD_TYPE:?}",
            payload.critical.kind
        );
    }
    Ok(Claim {
        repository: payload.critical.identity.reference,
        digest: payload.critical.image.digest,
    })
}

/// A key that verifies signatures, and what it is called in messages.
#[derive(Clone)]
pub struct PublicKey {
    key: VerifyingKey,
    /// Where it came from (its file).
    pub name: String,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name)
    }
}

impl PublicKey {
    /// The public key in the PEM file `path`.
    ///
    /// # Errors
    /// A file that cannot be read or holds no P-256 public key.
    pub fn read(path: &Path) -> Result<Self> {
        let pem = std::fs::read_to_string(path).with_context(|| format!("cannot read the key {}", path.display()))?;
        let key = VerifyingKey::from_public_key_pem(&pem).map_err(|e| {
            anyhow::anyhow!(
                "{} is not an ECDSA P-256 public key in PEM (\"BEGIN PUBLIC KEY\", as `wasm-mcp keygen` and `cosign public-key` write): {e}",
                path.display()
            )
        })?;
        Ok(Self {
            key,
            name: path.display().to_string(),
        })
    }

    /// Whether `signature` (base64 of DER) is this key's over `payload`.
    ///
    /// # Errors
    /// A signature that is not base64 of an ASN.1 DER ECDSA signature.
    pub fn verifies(&self, payload: &[u8], signature: &str) -> Result<bool> {
        let der = BASE64.decode(signature.trim()).context("the signature is not base64")?;
        let signature = DerSignature::try_from(der.as_slice())
            .map_err(|_| anyhow::anyhow!("the signature is not an ASN.1 DER ECDSA signature"))?;
        Ok(self.key.verify(payload, &signature).is_ok())
    }

    /// The key's fingerprint: `sha256:` of its DER form (how revoked keys are named).
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let der = self.key.to_public_key_der().expect("a P-256 key encodes");
        format!("sha256:{:x}", Sha256::digest(der.as_bytes()))
    }
}

/// A key that signs.
pub struct PrivateKey {
    key: SigningKey,
}

impl PrivateKey {
    /// A new key pair.
    pub fn generate() -> Self {
        use p256::elliptic_curve::Generate as _;
        Self {
            key: SigningKey::generate(),
        }
    }

    /// The private key in the PEM file `path`.
    ///
    /// # Errors
    /// A file that cannot be read or holds no unencrypted P-256 PKCS#8 key.
    pub fn read(path: &Path) -> Result<Self> {
        let pem = std::fs::read_to_string(path).with_context(|| format!("cannot read the key {}", path.display()))?;
        let key = SigningKey::from_pkcs8_pem(&pem).map_err(|e| {
            anyhow::anyhow!(
                "{} is not an unencrypted ECDSA P-256 private key in PKCS#8 PEM (\"BEGIN PRIVATE KEY\", as `wasm-mcp keygen` writes): {e}",
                path.display()
            )
        })?;
        Ok(Self { key })
    }

    /// The private key, PEM.
    pub fn to_pem(&self) -> String {
        self.key
            .to_pkcs8_pem(LineEnding::LF)
            .expect("a P-256 key encodes")
            .to_string()
    }

    /// The public key, PEM.
    pub fn public_pem(&self) -> String {
        self.key
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .expect("a P-256 key encodes")
    }

    /// The signature (base64 of DER) of `payload`.
    pub fn sign(&self, payload: &[u8]) -> String {
        let signature: DerSignature = self.key.sign(payload);
        BASE64.encode(signature.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_with_its_key_only_and_over_its_payload_only() {
        let signer = PrivateKey::generate();
        let dir = std::env::temp_dir().join(format!("wasm-mcp-signature-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let public = dir.join("k.pub");
        std::fs::write(&public, signer.public_pem()).unwrap();
        let key = PublicKey::read(&public).unwrap();
        let digest = "sha256:".to_owned() + &"a".repeat(64);
        let payload = payload("127.0.0.1:5000/tools/echo", &digest);
        let signature = signer.sign(&payload);
        assert!(key.verifies(&payload, &signature).unwrap());
        let mut altered = payload.clone();
        altered[10] ^= 1;
        assert!(!key.verifies(&altered, &signature).unwrap());
        let other = PrivateKey::generate();
        assert!(!key.verifies(&payload, &other.sign(&payload)).unwrap());
        assert!(key.verifies(&payload, "not base64!").is_err());
        assert!(key.verifies(&payload, "AAAA").is_err());
        assert_eq!(
            read_payload(&payload).unwrap(),
            Claim {
                repository: "127.0.0.1:5000/tools/echo".into(),
                digest
            }
        );
        assert_eq!(signature_tag("sha256:abc"), "sha256-abc.sig");
        let private = dir.join("k.key");
        std::fs::write(&private, signer.to_pem()).unwrap();
        let reread = PrivateKey::read(&private).unwrap();
        assert!(key.verifies(&payload, &reread.sign(&payload)).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
