//! A private Sigstore instance for the keyless-signature tests: a Fulcio
//! certificate authority, a certificate-transparency log and a Rekor log of
//! its own (keys made per test, never published), and the `trusted_root.json`
//! that names them. It issues what Fulcio would (a short-lived certificate
//! naming an identity and its OIDC issuer, with the CT log's embedded SCT),
//! logs the signature as Rekor would (a `hashedrekord` entry with its signed
//! entry timestamp and an inclusion proof under a signed checkpoint), and
//! hands back the Sigstore bundle. [`attach`] puts a bundle in a registry as
//! an OCI referrer of the artifact, where `cosign sign` puts it: the
//! referrer's manifest by digest, listed in the `sha256-HEX` referrers index
//! for a registry without the referrers API (Debian's `docker-registry`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, CustomExtension, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose, PublicKeyData, SanType, SigningKey,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::registry::{OCI_MANIFEST, OpenApi};

/// The media type of a Sigstore bundle (and the artifact type of its referrer).
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const OCI_EMPTY: &str = "application/vnd.oci.empty.v1+json";
/// Fulcio's extension naming the OIDC issuer (a DER UTF8String).
const FULCIO_ISSUER_OID: &[u64] = &[1, 3, 6, 1, 4, 1, 57264, 1, 8];
/// RFC 6962's extension holding the embedded SCTs.
const SCT_LIST_OID: &[u64] = &[1, 3, 6, 1, 4, 1, 11129, 2, 4, 2];
const ORIGIN: &str = "rekor.wasm-mcp.test - 1";

/// The instance: its three keys and the CA's certificate.
pub struct Sigstore {
    ca: CertifiedIssuer<'static, KeyPair>,
    ct_log: KeyPair,
    rekor: KeyPair,
}

/// How a certificate is issued (the tests' ways of getting it wrong).
#[derive(Clone, Copy, Default)]
pub struct Issue {
    /// The certificate's validity ended before the log took the signature.
    pub expired: bool,
}

impl Default for Sigstore {
    fn default() -> Self {
        Self::new()
    }
}

impl Sigstore {
    pub fn new() -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::OrganizationName, "wasm-mcp tests");
        params
            .distinguished_name
            .push(DnType::CommonName, "fulcio.wasm-mcp.test");
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2099, 1, 1);
        Self {
            ca: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap(),
            ct_log: KeyPair::generate().unwrap(),
            rekor: KeyPair::generate().unwrap(),
        }
    }

    /// An instance with this one's logs but a certificate authority of its
    /// own, which this one's trusted root does not name.
    pub fn other_authority(&self) -> Self {
        let copy = |key: &KeyPair| KeyPair::try_from(key.serialize_der()).unwrap();
        Self {
            ct_log: copy(&self.ct_log),
            rekor: copy(&self.rekor),
            ..Self::new()
        }
    }

    /// The `trusted_root.json` naming this instance's CA and logs.
    pub fn trusted_root(&self) -> String {
        let log = |key: &KeyPair, url: &str| {
            json!({
                "baseUrl": url,
                "hashAlgorithm": "SHA2_256",
                "publicKey": {
                    "rawBytes": BASE64.encode(key.subject_public_key_info()),
                    "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                    "validFor": { "start": "2020-01-01T00:00:00Z" },
                },
                "logId": { "keyId": BASE64.encode(log_id(key)) },
            })
        };
        json!({
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [log(&self.rekor, "https://rekor.wasm-mcp.test")],
            "certificateAuthorities": [{
                "subject": { "organization": "wasm-mcp tests", "commonName": "fulcio.wasm-mcp.test" },
                "uri": "https://fulcio.wasm-mcp.test",
                "certChain": { "certificates": [{ "rawBytes": BASE64.encode(self.ca.der()) }] },
                "validFor": { "start": "2020-01-01T00:00:00Z" },
            }],
            "ctlogs": [log(&self.ct_log, "https://ctfe.wasm-mcp.test")],
            "timestampAuthorities": [],
        })
        .to_string()
    }

    /// A bundle: `subject` (an email or a URI), vouched for by `issuer`,
    /// signed the artifact whose manifest is `manifest`.
    pub fn sign(&self, manifest: &[u8], subject: &str, issuer: &str, how: Issue) -> String {
        let signer = KeyPair::generate().unwrap();
        let certificate = self.certificate(&signer, subject, issuer, how);
        let signature = signer.sign(manifest).unwrap();
        let digest = Sha256::digest(manifest);
        let body = serde_json::to_vec(&json!({
            "apiVersion": "0.0.1",
            "kind": "hashedrekord",
            "spec": {
                "data": { "hash": { "algorithm": "sha256", "value": hex(&digest) } },
                "signature": {
                    "content": BASE64.encode(&signature),
                    "publicKey": { "content": BASE64.encode(pem("CERTIFICATE", &certificate)) },
                },
            },
        }))
        .unwrap();
        let body = canonical(&body);
        let integrated_time = now() - 5;
        // The signed entry timestamp: Rekor's signature over the entry's canonical JSON.
        let promise = canonical(
            &serde_json::to_vec(&json!({
                "body": BASE64.encode(&body),
                "integratedTime": integrated_time,
                "logID": hex(&log_id(&self.rekor)),
                "logIndex": 0,
            }))
            .unwrap(),
        );
        let set = self.rekor.sign(&promise).unwrap();
        // A tree of one entry: its root is the entry's leaf hash.
        let root: Vec<u8> = Sha256::new()
            .chain_update([0u8])
            .chain_update(&body)
            .finalize()
            .to_vec();
        let note = format!("{ORIGIN}\n1\n{}\n", BASE64.encode(&root));
        let mut hint_and_signature = log_id(&self.rekor)[..4].to_vec();
        hint_and_signature.extend(self.rekor.sign(note.as_bytes()).unwrap());
        let checkpoint = format!(
            "{note}\n\u{2014} rekor.wasm-mcp.test {}\n",
            BASE64.encode(&hint_and_signature)
        );
        json!({
            "mediaType": BUNDLE_MEDIA_TYPE,
            "verificationMaterial": {
                "certificate": { "rawBytes": BASE64.encode(&certificate) },
                "tlogEntries": [{
                    "logIndex": "0",
                    "logId": { "keyId": BASE64.encode(log_id(&self.rekor)) },
                    "kindVersion": { "kind": "hashedrekord", "version": "0.0.1" },
                    "integratedTime": integrated_time.to_string(),
                    "inclusionPromise": { "signedEntryTimestamp": BASE64.encode(&set) },
                    "inclusionProof": {
                        "logIndex": "0",
                        "rootHash": BASE64.encode(&root),
                        "treeSize": "1",
                        "hashes": [],
                        "checkpoint": { "envelope": checkpoint },
                    },
                    "canonicalizedBody": BASE64.encode(&body),
                }],
            },
            "messageSignature": {
                "messageDigest": { "algorithm": "SHA2_256", "digest": BASE64.encode(digest) },
                "signature": BASE64.encode(&signature),
            },
        })
        .to_string()
    }

    /// The signing certificate Fulcio would issue to `subject` for `signer`,
    /// with the SCT the CT log would embed (over the certificate without it).
    fn certificate(&self, signer: &KeyPair, subject: &str, issuer: &str, how: Issue) -> Vec<u8> {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = DistinguishedName::new();
        let san = subject.try_into().unwrap();
        params.subject_alt_names = vec![if subject.contains('@') && !subject.contains("://") {
            SanType::Rfc822Name(san)
        } else {
            SanType::URI(san)
        }];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
        let (start, end) = if how.expired {
            (now() - 3600, now() - 3000)
        } else {
            (now() - 60, now() + 600)
        };
        params.not_before = (UNIX_EPOCH + Duration::from_secs(start)).into();
        params.not_after = (UNIX_EPOCH + Duration::from_secs(end)).into();
        params.custom_extensions = vec![CustomExtension::from_oid_content(
            FULCIO_ISSUER_OID,
            der(0x0c, issuer.as_bytes()),
        )];
        let precertificate = params.signed_by(signer, &self.ca).unwrap();
        let sct = self.sct(tbs(precertificate.der()));
        params.custom_extensions.push(CustomExtension::from_oid_content(
            SCT_LIST_OID,
            der(0x04, &sct_list(&sct)),
        ));
        params.signed_by(signer, &self.ca).unwrap().der().to_vec()
    }

    /// The CT log's SCT (RFC 6962, v1) for a precertificate whose TBS is `tbs`.
    fn sct(&self, tbs: &[u8]) -> Vec<u8> {
        let timestamp = (now() - 30) * 1000;
        let issuer_key_hash = Sha256::digest(self.ca.key().subject_public_key_info());
        let mut signed = vec![0u8, 0u8]; // v1, certificate_timestamp
        signed.extend(timestamp.to_be_bytes());
        signed.extend(1u16.to_be_bytes()); // precert_entry
        signed.extend(issuer_key_hash);
        signed.extend(&(tbs.len() as u32).to_be_bytes()[1..]);
        signed.extend(tbs);
        signed.extend(0u16.to_be_bytes()); // no extensions
        let signature = self.ct_log.sign(&signed).unwrap();
        let mut sct = vec![0u8]; // v1
        sct.extend(log_id(&self.ct_log));
        sct.extend(timestamp.to_be_bytes());
        sct.extend(0u16.to_be_bytes());
        sct.extend([4u8, 3u8]); // SHA-256, ECDSA
        sct.extend((signature.len() as u16).to_be_bytes());
        sct.extend(signature);
        sct
    }
}

/// Attaches `bundle` to the artifact `digest` (its manifest `size` bytes) of
/// `repository` in the registry at `http://addr`, as its OCI referrer.
pub fn attach(addr: &str, repository: &str, digest: &str, size: usize, bundle: &str) {
    let api = OpenApi::new(addr, repository);
    let config = api.blob(b"{}");
    let layer = api.blob(bundle.as_bytes());
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": BUNDLE_MEDIA_TYPE,
        "config": { "mediaType": OCI_EMPTY, "digest": config, "size": 2 },
        "layers": [{ "mediaType": BUNDLE_MEDIA_TYPE, "digest": layer, "size": bundle.len() }],
        "subject": { "mediaType": OCI_MANIFEST, "digest": digest, "size": size },
    }))
    .unwrap();
    let manifest_digest = format!("sha256:{}", hex(&Sha256::digest(&manifest)));
    api.put_manifest(&manifest_digest, OCI_MANIFEST, &manifest);
    // The referrers index of a registry without the referrers API: its
    // tag is the subject's digest, and it lists every referrer so far.
    let tag = digest.replacen(':', "-", 1);
    let mut referrers: Vec<Value> = api
        .manifest(&tag, OCI_INDEX)
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .and_then(|index| index["manifests"].as_array().cloned())
        .unwrap_or_default();
    referrers.push(json!({
        "mediaType": OCI_MANIFEST,
        "digest": manifest_digest,
        "size": manifest.len(),
        "artifactType": BUNDLE_MEDIA_TYPE,
    }));
    let index = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": referrers,
    }))
    .unwrap();
    api.put_manifest(&tag, OCI_INDEX, &index);
}

/// A log's ID: the SHA-256 of its public key (DER).
fn log_id(key: &KeyPair) -> Vec<u8> {
    Sha256::digest(key.subject_public_key_info()).to_vec()
}

/// The TBSCertificate of the certificate `der` (its first element).
fn tbs(der: &[u8]) -> &[u8] {
    let (_, certificate) = element(der);
    let (tbs, _) = element(certificate);
    tbs
}

/// The first DER element of `bytes` (whole, header included) and the content of
/// that element when `bytes` is one element: (first element, its content).
fn element(bytes: &[u8]) -> (&[u8], &[u8]) {
    let (header, length) = match bytes[1] {
        n if n < 0x80 => (2, n as usize),
        n => {
            let octets = (n & 0x7f) as usize;
            let length = bytes[2..2 + octets]
                .iter()
                .fold(0usize, |acc, b| acc << 8 | *b as usize);
            (2 + octets, length)
        }
    };
    (&bytes[..header + length], &bytes[header..header + length])
}

/// A DER element of `tag` holding `content`.
fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    match content.len() {
        n if n < 0x80 => out.push(n as u8),
        n if n < 0x100 => out.extend([0x81, n as u8]),
        n => out.extend([0x82, (n >> 8) as u8, n as u8]),
    }
    out.extend(content);
    out
}

/// The TLS-encoded SignedCertificateTimestampList holding `sct`.
fn sct_list(sct: &[u8]) -> Vec<u8> {
    let mut list = ((sct.len() + 2) as u16).to_be_bytes().to_vec();
    list.extend((sct.len() as u16).to_be_bytes());
    list.extend(sct);
    list
}

/// `bytes` (JSON) in canonical form: keys sorted, no spaces.
fn canonical(bytes: &[u8]) -> Vec<u8> {
    fn sorted(value: Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(String, Value)> = map.into_iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
            }
            Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
            other => other,
        }
    }
    serde_json::to_vec(&sorted(serde_json::from_slice(bytes).unwrap())).unwrap()
}

fn pem(label: &str, der: &[u8]) -> String {
    let body = BASE64.encode(der);
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!("-----BEGIN {label}-----\n{}\n-----END {label}-----\n", lines.join("\n"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}
