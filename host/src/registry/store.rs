//! The store: what was pulled from registries, kept content-addressed in the
//! cache directory (`registry/sha256/HEX`, private to the user). Content goes
//! in only once its bytes match its digest, and is checked again each time it
//! is read: an entry that no longer matches is removed and pulled again, never
//! used. A start with the registry down serves from here.
//!
//! An entry is written to a temporary file, synced, and renamed into place,
//! so a reader (another replica sharing the directory included) sees a whole
//! entry or none.
//!
//! The signatures and Sigstore bundles last found for an artifact are kept
//! too, for a start with the registry down: as a content-addressed entry
//! (their JSON) that `registry/signatures/HEX` (the artifact's digest)
//! points to.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

use super::reference::{check_digest, digest_of};
use crate::trust::{Signature, Signatures};

/// A signature as the store keeps it.
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredSignature {
    /// The payload, base64.
    payload: String,
    signature: String,
}

/// What the store keeps of an artifact's signatures.
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredSignatures {
    keyed: Vec<StoredSignature>,
    bundles: Vec<String>,
}

/// The store in a directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// The store under the cache directory `cache`.
    pub fn in_cache(cache: &Path) -> Self {
        Self {
            dir: cache.join("registry").join("sha256"),
        }
    }

    /// Where the entry of `digest` is (whether or not it is there).
    pub fn path(&self, digest: &str) -> PathBuf {
        self.dir.join(digest.trim_start_matches("sha256:"))
    }

    /// Whether an entry of `digest` is present (not checked).
    pub fn contains(&self, digest: &str) -> bool {
        self.path(digest).is_file()
    }

    /// The content of `digest`, checked against it; `None` when it is not
    /// stored, or no longer matches (then it is removed).
    pub fn read(&self, digest: &str) -> Result<Option<Vec<u8>>> {
        check_digest(digest)?;
        let path = self.path(digest);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot read the stored {digest} at {}", path.display())),
        };
        if super::reference::digest_of(&bytes) != digest {
            tracing::warn!(path = %path.display(), digest, "a stored entry does not match its digest; removed, it is pulled again");
            let _ = fs::remove_file(&path);
            return Ok(None);
        }
        Ok(Some(bytes))
    }

    /// Where the pointer to the signatures of `digest` is.
    fn signatures_pointer(&self, digest: &str) -> PathBuf {
        let registry = self.dir.parent().unwrap_or(&self.dir);
        registry.join("signatures").join(digest.trim_start_matches("sha256:"))
    }

    /// Keeps `signatures` as those last found for the artifact `digest`.
    pub fn write_signatures(&self, digest: &str, signatures: &Signatures) -> Result<()> {
        use base64::Engine as _;
        check_digest(digest)?;
        let stored = StoredSignatures {
            keyed: signatures
                .keyed
                .iter()
                .map(|s| StoredSignature {
                    payload: base64::engine::general_purpose::STANDARD.encode(&s.payload),
                    signature: s.signature.clone(),
                })
                .collect(),
            bundles: signatures.bundles.clone(),
        };
        let json = serde_json::to_vec(&stored)?;
        let json_digest = digest_of(&json);
        self.write(&json_digest, &json)?;
        let pointer = self.signatures_pointer(digest);
        let dir = pointer.parent().expect("the pointer is in a directory");
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let temp = pointer.with_extension(format!("tmp{}", std::process::id()));
        fs::write(&temp, &json_digest).with_context(|| format!("cannot write {}", temp.display()))?;
        fs::rename(&temp, &pointer).with_context(|| format!("cannot move {} into place", temp.display()))
    }

    /// The signatures last found for the artifact `digest`; `None` when
    /// none were ever looked up (or what was kept no longer matches).
    pub fn read_signatures(&self, digest: &str) -> Result<Option<Signatures>> {
        use base64::Engine as _;
        check_digest(digest)?;
        let json_digest = match fs::read_to_string(self.signatures_pointer(digest)) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).context("cannot read the signatures kept in the registry store"),
        };
        let Ok(Some(json)) = self.read(json_digest.trim()) else {
            return Ok(None);
        };
        let stored: StoredSignatures =
            serde_json::from_slice(&json).context("the signatures kept in the registry store are not valid")?;
        let keyed = stored
            .keyed
            .into_iter()
            .map(|s| {
                Ok(Signature {
                    payload: base64::engine::general_purpose::STANDARD
                        .decode(&s.payload)
                        .context("a signature kept in the registry store is not valid")?,
                    signature: s.signature,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Some(Signatures {
            keyed,
            bundles: stored.bundles,
        }))
    }

    /// Stores `bytes` as the content of `digest`, once they match it.
    pub fn write(&self, digest: &str, bytes: &[u8]) -> Result<PathBuf> {
        let mut entry = self.entry(digest, bytes.len() as u64)?;
        entry.write(bytes)?;
        entry.finish()
    }

    /// An entry of `digest` to write in pieces, at most `limit` bytes.
    pub fn entry(&self, digest: &str, limit: u64) -> Result<Entry> {
        check_digest(digest)?;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .with_context(|| format!("cannot create the registry store {}", self.dir.display()))?;
        static WRITES: AtomicU64 = AtomicU64::new(0);
        let write = WRITES.fetch_add(1, Ordering::Relaxed);
        let path = self.path(digest);
        let temp = path.with_extension(format!("tmp{}-{write}", std::process::id()));
        let file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
            .with_context(|| format!("cannot create {}", temp.display()))?;
        Ok(Entry {
            digest: digest.to_owned(),
            path,
            temp,
            file: Some(file),
            hasher: Sha256::new(),
            written: 0,
            limit,
        })
    }
}

/// An entry being written: hashed and bounded as it comes; in place only
/// once [`Entry::finish`] found it whole and matching. Dropped unfinished,
/// it leaves nothing behind.
pub struct Entry {
    digest: String,
    path: PathBuf,
    temp: PathBuf,
    file: Option<fs::File>,
    hasher: Sha256,
    written: u64,
    limit: u64,
}

impl Entry {
    /// Appends `bytes`; refused past the entry's limit.
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.written += bytes.len() as u64;
        if self.written > self.limit {
            bail!("{} is larger than the {} bytes allowed", self.digest, self.limit);
        }
        self.hasher.update(bytes);
        let file = self.file.as_mut().expect("an unfinished entry has its file");
        file.write_all(bytes)
            .with_context(|| format!("cannot write {}", self.temp.display()))
    }

    /// Checks the content against the digest and puts the entry in place.
    pub fn finish(mut self) -> Result<PathBuf> {
        let actual = format!("sha256:{:x}", std::mem::take(&mut self.hasher).finalize());
        if actual != self.digest {
            bail!(
                "the content received does not match its digest: expected {}, got {actual}; it is not used",
                self.digest
            );
        }
        let file = self.file.take().expect("an unfinished entry has its file");
        file.sync_all()
            .with_context(|| format!("cannot write {}", self.temp.display()))?;
        fs::rename(&self.temp, &self.path)
            .with_context(|| format!("cannot move {} into place", self.temp.display()))?;
        Ok(self.path.clone())
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        if self.file.is_some() || !self.path.exists() {
            let _ = fs::remove_file(&self.temp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_enters_only_when_it_matches_its_digest_and_is_checked_when_read() {
        let dir = std::env::temp_dir().join(format!("wasm-mcp-store-test-{}", std::process::id()));
        let store = Store::in_cache(&dir);
        let digest = digest_of(b"hello");
        let err = store.write(&digest, b"jello").unwrap_err().to_string();
        assert!(err.contains("does not match its digest"), "{err}");
        assert!(!store.contains(&digest));
        store.write(&digest, b"hello").unwrap();
        assert_eq!(store.read(&digest).unwrap().as_deref(), Some(&b"hello"[..]));
        fs::write(store.path(&digest), b"tampered").unwrap();
        assert_eq!(store.read(&digest).unwrap(), None);
        assert!(!store.contains(&digest), "a tampered entry is removed");
        let mut entry = store.entry(&digest, 3).unwrap();
        let err = entry.write(b"hello").unwrap_err().to_string();
        assert!(err.contains("larger than the 3 bytes allowed"), "{err}");
        drop(entry);
        let leftovers = fs::read_dir(dir.join("registry/sha256")).unwrap().count();
        assert_eq!(leftovers, 0, "an unfinished entry leaves nothing behind");
        fs::remove_dir_all(&dir).unwrap();
    }
}
