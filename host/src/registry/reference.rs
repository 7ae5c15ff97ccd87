//! A plugin's place in a registry, `host[:port]/repository(:tag|@sha256:…)`:
//! parsed, checked (the registry must be named; a tag or a digest too), and
//! the digests the store and the lockfile use.

use std::net::IpAddr;

use anyhow::{Result, bail};
use oci_client::Reference;

/// How a reference is written, for the errors that refuse one.
pub const REFERENCE_FORM: &str = "host[:port]/repository:tag or host[:port]/repository@sha256:DIGEST \
     (e.g. 127.0.0.1:5000/tools/hello:1.0)";

/// Parses `text` as a plugin's reference; the error says what is wrong with it.
pub fn parse(text: &str) -> Result<Reference> {
    let text = text.trim();
    check(text)?;
    text.parse()
        .map_err(|e| anyhow::anyhow!("{text:?} is not a registry reference ({e}); write it as {REFERENCE_FORM}"))
}

/// Checks the shape of a reference without the full grammar (whose regex
/// takes a while to build): it names a registry host, and a tag or a
/// well-formed digest. What a server reads from the lockfile is checked so.
pub fn check(text: &str) -> Result<()> {
    let Some((host, rest)) = text.split_once('/') else {
        bail!("{text:?} is not a registry reference: it names no registry; write it as {REFERENCE_FORM}");
    };
    if !(host.contains('.') || host.contains(':') || host == "localhost") {
        bail!(
            "{text:?} is not a registry reference: {host:?} is not a registry host (a host name with a dot, \
             host:port, or localhost); write it as {REFERENCE_FORM}"
        );
    }
    let last = rest.rsplit('/').next().unwrap_or(rest);
    if !last.contains(':') && !last.contains('@') {
        bail!("{text:?} names no tag or digest: add :TAG or @sha256:DIGEST ({REFERENCE_FORM})");
    }
    if let Some(digest) = pinned_digest(text) {
        check_digest(digest).map_err(|e| anyhow::anyhow!("{text:?}: {e}"))?;
    }
    Ok(())
}

/// The registry (`host[:port]`) a checked reference names.
pub fn registry_of(text: &str) -> &str {
    text.split('/').next().unwrap_or(text)
}

/// The digest a reference is pinned to (after `@`), if it is.
pub fn pinned_digest(text: &str) -> Option<&str> {
    text.split_once('@').map(|(_, digest)| digest)
}

/// `reference` pinned to `digest` (its tag kept for the reader).
pub fn pinned(reference: &Reference, digest: &str) -> Reference {
    Reference::with_digest(
        reference.registry().to_owned(),
        reference.repository().to_owned(),
        digest.to_owned(),
    )
}

/// Checks that `digest` is a SHA-256 digest as registries write it (`sha256:` and 64 hex digits).
pub fn check_digest(digest: &str) -> Result<()> {
    match digest.strip_prefix("sha256:") {
        Some(hex) if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) => Ok(()),
        Some(_) => bail!("{digest:?} is not a SHA-256 digest (sha256: and 64 lowercase hex digits)"),
        None => bail!("{digest:?} is not a SHA-256 digest: only sha256 digests are supported"),
    }
}

/// The SHA-256 digest of `bytes`, as registries write it.
pub fn digest_of(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// Whether `registry` (`host[:port]`) is on this machine: `localhost`, 127.0.0.0/8 or ::1.
pub fn is_loopback(registry: &str) -> bool {
    let host = match registry.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(rest),
        None => registry.rsplit_once(':').map_or(registry, |(host, _)| host),
    };
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The plugin name a reference suggests: the last part of its repository.
pub fn default_name(reference: &Reference) -> String {
    let repository = reference.repository();
    repository.rsplit('/').next().unwrap_or(repository).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_names_its_registry_and_a_tag_or_digest() {
        let r = parse("127.0.0.1:5000/tools/hello:1.0").unwrap();
        assert_eq!(
            (r.registry(), r.repository(), r.tag()),
            ("127.0.0.1:5000", "tools/hello", Some("1.0"))
        );
        let digest = format!("sha256:{}", "a".repeat(64));
        let r = parse(&format!("registry.example/hello@{digest}")).unwrap();
        assert_eq!(r.digest(), Some(digest.as_str()));
        for (bad, says) in [
            ("hello:1.0", "names no registry"),
            ("tools/hello:1.0", "is not a registry host"),
            ("127.0.0.1:5000/tools/hello", "names no tag or digest"),
            ("127.0.0.1:5000/Tools/hello:1.0", "is not a registry reference"),
            ("127.0.0.1:5000/hello@sha256:abc", "is not a SHA-256 digest"),
        ] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn loopback_registries_are_told_apart() {
        for (registry, loopback) in [
            ("127.0.0.1:5000", true),
            ("localhost:5000", true),
            ("[::1]:5000", true),
            ("127.0.0.2", true),
            ("registry.example:5000", false),
            ("10.0.0.1:5000", false),
        ] {
            assert_eq!(is_loopback(registry), loopback, "{registry}");
        }
    }
}
