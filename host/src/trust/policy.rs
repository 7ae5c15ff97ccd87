//! The trust policy: the operator's TOML file saying, for each registry and
//! repository (a glob over `host[:port]/repository`), which keys or keyless
//! identities must have signed what is served from it, or that it may serve
//! unsigned plugins (a development registry). Rules are read top to bottom
//! and the first that matches decides; a repository no rule matches is
//! refused: there is no default trust. Revoked digests and keys are refused
//! whatever the rules say. Files are named relative to the policy file.
//!
//! ```toml
//! require_signed_files = false        # true: loose .wasm files are refused too
//! trusted_root = "trusted_root.json"  # Sigstore's, for rules naming identities
//!
//! [[rule]]
//! pattern = "registry.example:5000/tools/*"
//! keys = ["keys/publisher.pub"]
//!
//! [[rule]]
//! pattern = "ghcr.io/acme/*"
//! identities = [{ subject = "https://github.com/acme/tools/.github/workflows/release.yml@refs/heads/main",
//!                 issuer = "https://token.actions.githubusercontent.com" }]
//!
//! [[rule]]
//! pattern = "127.0.0.1:5000/**"
//! allow_unsigned = true
//!
//! [revoked]
//! digests = ["sha256:…"]
//! keys = ["keys/leaked.pub"]
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use super::bundle::{Identity, TrustedRoot};
use super::signature::{PublicKey, read_payload, signature_tag};

/// One signature in cosign's key-based form found for an artifact: the
/// payload and its signature (base64).
#[derive(Debug, Clone)]
pub struct Signature {
    pub payload: Vec<u8>,
    pub signature: String,
}

/// What the registry keeps to vouch for one artifact.
#[derive(Debug, Clone, Default)]
pub struct Signatures {
    /// Signatures in cosign's key-based form.
    pub keyed: Vec<Signature>,
    /// Sigstore bundles (JSON).
    pub bundles: Vec<String>,
}

impl Signatures {
    /// Whether there is nothing.
    pub fn is_empty(&self) -> bool {
        self.keyed.is_empty() && self.bundles.is_empty()
    }
}

/// The policy, its keys read.
#[derive(Debug)]
pub struct Policy {
    /// The file it was read from.
    pub path: PathBuf,
    /// Whether loose `.wasm` files in the plugins directory are refused.
    pub require_signed_files: bool,
    trusted_root: Option<TrustedRoot>,
    rules: Vec<Rule>,
    revoked_digests: BTreeSet<String>,
    revoked_keys: Vec<PublicKey>,
}

/// A rule: the repositories it covers and what they need.
#[derive(Debug)]
pub struct Rule {
    pub pattern: String,
    keys: Vec<PublicKey>,
    identities: Vec<Identity>,
    allow_unsigned: bool,
}

/// Why an artifact may be served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Signed by `key` (a key file, or a keyless identity) as rule `pattern` asks.
    Signed { pattern: String, key: String },
    /// Rule `pattern` lets it be served unsigned.
    Unsigned { pattern: String },
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Signed { pattern, key } => write!(f, "signed by {key} (rule {pattern:?})"),
            Verdict::Unsigned { pattern } => write!(f, "unsigned, allowed by rule {pattern:?}"),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    #[serde(default)]
    require_signed_files: bool,
    trusted_root: Option<PathBuf>,
    #[serde(default, rename = "rule")]
    rules: Vec<RuleFile>,
    #[serde(default)]
    revoked: RevokedFile,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    pattern: String,
    #[serde(default)]
    keys: Vec<PathBuf>,
    #[serde(default)]
    identities: Vec<Identity>,
    #[serde(default)]
    allow_unsigned: bool,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RevokedFile {
    #[serde(default)]
    digests: Vec<String>,
    #[serde(default)]
    keys: Vec<PathBuf>,
}

impl Policy {
    /// The policy in the file `path`, its keys read.
    ///
    /// # Errors
    /// A file that cannot be read or parsed, a rule with neither keys nor
    /// `allow_unsigned` (or both), or a key file that holds no public key.
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the trust policy {}", path.display()))?;
        let file: PolicyFile = toml::from_str(&text)
            .map_err(|e| anyhow::anyhow!("the trust policy {} is not valid: {e}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let keys = |files: &[PathBuf]| -> Result<Vec<PublicKey>> {
            files
                .iter()
                .map(|file| PublicKey::read(&base.join(file)))
                .collect::<Result<_>>()
                .with_context(|| format!("the trust policy {}", path.display()))
        };
        let trusted_root = file
            .trusted_root
            .map(|root| TrustedRoot::read(&base.join(root)))
            .transpose()
            .with_context(|| format!("the trust policy {}", path.display()))?;
        let mut rules = Vec::new();
        for rule in file.rules {
            let signers = !rule.keys.is_empty() || !rule.identities.is_empty();
            if signers == rule.allow_unsigned {
                bail!(
                    "the trust policy {}: rule {:?} must name the keys (keys = [\"publisher.pub\"]) or keyless identities \
                     (identities = [{{ subject = \"…\", issuer = \"…\" }}]) that sign what it covers, \
                     or allow unsigned plugins (allow_unsigned = true), not both or neither",
                    path.display(),
                    rule.pattern
                );
            }
            if !rule.identities.is_empty() && trusted_root.is_none() {
                bail!(
                    "the trust policy {}: rule {:?} names keyless identities, which are checked against a Sigstore \
                     trusted root: name its file (trusted_root = \"trusted_root.json\")",
                    path.display(),
                    rule.pattern
                );
            }
            rules.push(Rule {
                keys: keys(&rule.keys)?,
                identities: rule.identities,
                pattern: rule.pattern,
                allow_unsigned: rule.allow_unsigned,
            });
        }
        Ok(Self {
            path: path.to_owned(),
            require_signed_files: file.require_signed_files,
            trusted_root,
            rules,
            revoked_digests: file.revoked.digests.into_iter().collect(),
            revoked_keys: keys(&file.revoked.keys)?,
        })
    }

    /// Whether deciding on the artifact `digest` of `repository` needs its
    /// signatures (no: it is revoked, no rule covers it, or its rule allows
    /// unsigned plugins).
    pub fn needs_signatures(&self, repository: &str, digest: &str) -> bool {
        !self.revoked_digests.contains(digest)
            && self
                .rules
                .iter()
                .find(|rule| matches(&rule.pattern, repository))
                .is_some_and(|rule| !rule.allow_unsigned)
    }

    /// Whether the artifact `digest` of `repository` may be served, given
    /// the signatures and bundles found for it.
    ///
    /// # Errors
    /// Each refusal, saying which rule asked for what and what failed.
    pub fn verify(&self, repository: &str, digest: &str, signatures: &Signatures) -> Result<Verdict> {
        let refused = |why: String| {
            anyhow::anyhow!(
                "{repository}@{digest} is refused by the trust policy {}: {why}",
                self.path.display()
            )
        };
        if self.revoked_digests.contains(digest) {
            return Err(refused("its digest is revoked".into()));
        }
        let Some(rule) = self.rules.iter().find(|rule| matches(&rule.pattern, repository)) else {
            return Err(refused(format!(
                "no rule covers {repository}; add a rule naming the keys that sign it (or allow_unsigned for a development registry)"
            )));
        };
        if rule.allow_unsigned {
            return Ok(Verdict::Unsigned {
                pattern: rule.pattern.clone(),
            });
        }
        let wanted = {
            let signers: Vec<String> = (rule.keys.iter().map(|k| k.name.clone()))
                .chain(rule.identities.iter().map(Identity::to_string))
                .collect();
            format!("rule {:?} wants a signature by {}", rule.pattern, signers.join(" or "))
        };
        if signatures.is_empty() {
            return Err(refused(format!(
                "{wanted}; it is unsigned (the registry has no {} and no Sigstore bundle refers to it)",
                signature_tag(digest)
            )));
        }
        let mut failures = Vec::new();
        for (n, found) in signatures.keyed.iter().enumerate() {
            match self.keyed_signer(rule, found, digest) {
                Ok(key) => {
                    return Ok(Verdict::Signed {
                        pattern: rule.pattern.clone(),
                        key,
                    });
                }
                Err(failure) => failures.push(format!("signature {}: {failure}", n + 1)),
            }
        }
        for (n, bundle) in signatures.bundles.iter().enumerate() {
            match self.bundle_signer(rule, bundle, digest) {
                Ok(identity) => {
                    return Ok(Verdict::Signed {
                        pattern: rule.pattern.clone(),
                        key: identity.to_string(),
                    });
                }
                Err(failure) => failures.push(format!("Sigstore bundle {}: {failure}", n + 1)),
            }
        }
        Err(refused(format!("{wanted}; {}", failures.join("; "))))
    }

    /// The key (its name) of `rule` that made the key-based signature
    /// `found` of `digest`, or why none did.
    fn keyed_signer(&self, rule: &Rule, found: &Signature, digest: &str) -> std::result::Result<String, String> {
        let key = rule
            .keys
            .iter()
            .chain(&self.revoked_keys)
            .find_map(|key| match key.verifies(&found.payload, &found.signature) {
                Ok(true) => Some(Ok(key)),
                Ok(false) => None,
                Err(e) => Some(Err(format!("it is malformed: {e:#}"))),
            })
            .unwrap_or_else(|| {
                Err("it does not verify with those keys (signed by another key, or its payload was altered)".to_owned())
            })?;
        if self
            .revoked_keys
            .iter()
            .any(|revoked| revoked.fingerprint() == key.fingerprint())
        {
            return Err(format!("it is by the revoked key {}", key.name));
        }
        match read_payload(&found.payload) {
            Ok(claim) if claim.digest == digest => Ok(key.name.clone()),
            Ok(claim) => Err(format!(
                "it is by {} but is for another artifact, {}",
                key.name, claim.digest
            )),
            Err(e) => Err(format!("it is by {}: {e:#}", key.name)),
        }
    }

    /// The identity of `rule` that made the Sigstore bundle `json` over
    /// `digest`, or why none did.
    fn bundle_signer(&self, rule: &Rule, json: &str, digest: &str) -> std::result::Result<Identity, String> {
        let Some(root) = self.trusted_root.as_ref().filter(|_| !rule.identities.is_empty()) else {
            return Err("the rule names no keyless identities".to_owned());
        };
        let signer = root
            .signer(json.as_bytes(), digest)
            .map_err(|e| format!("it does not verify against the trusted root {}: {e:#}", root.name))?;
        if rule.identities.contains(&signer) {
            Ok(signer)
        } else {
            Err(format!("it is signed by {signer}, whom the rule does not name"))
        }
    }
}

/// Whether `repository` matches the glob `pattern`: `*` stands for any run
/// of characters within one path segment, `**` for any run at all.
fn matches(pattern: &str, repository: &str) -> bool {
    fn go(p: &[u8], s: &[u8]) -> bool {
        match p {
            [] => s.is_empty(),
            [b'*', b'*', rest @ ..] => (0..=s.len()).any(|i| go(rest, &s[i..])),
            [b'*', rest @ ..] => (0..=s.len())
                .take_while(|&i| i == 0 || s[i - 1] != b'/')
                .any(|i| go(rest, &s[i..])),
            [c, rest @ ..] => s.first() == Some(c) && go(rest, &s[1..]),
        }
    }
    go(pattern.as_bytes(), repository.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_stop_at_slashes_unless_doubled() {
        assert!(matches("reg:5000/tools/*", "reg:5000/tools/echo"));
        assert!(!matches("reg:5000/tools/*", "reg:5000/tools/team/echo"));
        assert!(matches("reg:5000/**", "reg:5000/tools/team/echo"));
        assert!(matches("reg:5000/tools/echo", "reg:5000/tools/echo"));
        assert!(!matches("reg:5000/tools/echo", "reg:5000/tools/echo2"));
        assert!(matches("*/tools/e*o", "reg:5000/tools/echo"));
        assert!(!matches("other:5000/**", "reg:5000/tools/echo"));
    }
}
