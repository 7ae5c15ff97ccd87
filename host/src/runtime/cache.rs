//! Compiled plugins, cached on disk so a restart compiles nothing.
//!
//! An entry is keyed by the SHA-256 of the component and a hash of the
//! engine's configuration (wasmtime version, target, settings), so a changed
//! plugin or a changed engine never reuses old code. Each entry starts with a
//! seal, the SHA-256 of the component's hash and the compiled code together,
//! checked before it is loaded: a truncated, corrupt or misfiled entry (code
//! compiled from another component) is detected, removed and rebuilt, never
//! loaded blindly. Entries are private to the user (files 0600; the command
//! line creates the directory 0700).
//!
//! An entry is written to a temporary file named after the writing process,
//! synced, then renamed into place, so a reader sees a whole entry or none;
//! a process killed mid-write leaves only its temporary file, which the next
//! start removes.

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

const DIGEST_LEN: usize = 32;

/// How many plugins were compiled and how many came from the cache, since start.
#[derive(Debug, Default)]
pub struct CompileCounts {
    pub compiled: AtomicU64,
    pub from_cache: AtomicU64,
}

pub struct CompileCache {
    dir: Option<PathBuf>,
    engine_key: String,
    pub counts: CompileCounts,
}

/// Feeds a `Hash` value into SHA-256, so the engine's configuration hash is
/// stable across runs of the same binary.
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        unreachable!("only the digest is read")
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl CompileCache {
    /// A cache in `dir`, or none (compile every time).
    pub fn new(engine: &Engine, dir: Option<PathBuf>) -> Self {
        if let Some(dir) = &dir {
            remove_abandoned_writes(dir);
        }
        let mut hasher = ShaHasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_key = hex(&hasher.0.finalize()[..8]);
        Self {
            dir,
            engine_key,
            counts: CompileCounts::default(),
        }
    }

    /// The compiled form of `bytes` (the component at `path`), from the cache
    /// when a sound entry exists, else compiled (on a blocking thread) and
    /// stored; and the SHA-256 of `bytes` in hex, which names this version.
    pub async fn component(&self, engine: &Engine, path: &Path, bytes: Vec<u8>) -> Result<(Component, String)> {
        let source: [u8; DIGEST_LEN] = Sha256::digest(&bytes).into();
        let sha256 = hex(&source);
        let entry = self
            .dir
            .as_ref()
            .map(|dir| dir.join(format!("{}-{}.cwasm", hex(&source), self.engine_key)));
        if let Some(entry) = &entry
            && let Some(component) = self.load(engine, entry, &source, path)
        {
            self.counts.from_cache.fetch_add(1, Ordering::Relaxed);
            tracing::info!(path = %path.display(), "loaded compiled plugin from cache");
            return Ok((component, sha256));
        }
        let compiling = engine.clone();
        let component = tokio::task::spawn_blocking(move || {
            let compiled = Component::new(&compiling, &bytes);
            release_freed_memory();
            compiled
        })
        .await?
        .map_err(|e| anyhow::anyhow!("cannot compile {}: {e}", path.display()))?;
        self.counts.compiled.fetch_add(1, Ordering::Relaxed);
        tracing::info!(path = %path.display(), "compiled plugin");
        if let Some(entry) = &entry
            && let Err(e) = store(&component, &source, entry)
        {
            tracing::warn!(entry = %entry.display(), "cannot write the compiled-plugin cache: {e:#}");
        }
        Ok((component, sha256))
    }

    /// A verified entry, or `None` (missing, or unsound and removed).
    fn load(&self, engine: &Engine, entry: &Path, source: &[u8; DIGEST_LEN], path: &Path) -> Option<Component> {
        let data = fs::read(entry).ok()?;
        let sound = data.len() > DIGEST_LEN && seal(source, &data[DIGEST_LEN..])[..] == data[..DIGEST_LEN];
        // SAFETY: the artifact was written by `store` from `Component::serialize`
        // of this same engine configuration (the key says so), compiled from
        // this very component, and its seal matches, so it is exactly what
        // wasmtime produced.
        let component = if sound {
            unsafe { Component::deserialize(engine, &data[DIGEST_LEN..]) }.ok()
        } else {
            None
        };
        if component.is_none() {
            tracing::warn!(entry = %entry.display(), plugin = %path.display(), "stale or corrupt compiled-plugin cache entry; recompiling");
            let _ = fs::remove_file(entry);
        }
        component
    }
}

/// Hands back to the system the memory a compile used and freed. Cranelift's
/// working memory is freed when a compile ends, but glibc keeps freed blocks
/// in its arenas (one per thread that compiled), so a server that compiled
/// its plugins at start would hold tens of MiB it no longer uses.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release_freed_memory() {
    // SAFETY: malloc_trim only returns free memory of the allocator's own
    // arenas to the system, under their locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_freed_memory() {}

/// What an entry starts with: binds the compiled code to the component it came from.
fn seal(source: &[u8; DIGEST_LEN], artifact: &[u8]) -> [u8; DIGEST_LEN] {
    Sha256::new()
        .chain_update(source)
        .chain_update(artifact)
        .finalize()
        .into()
}

/// The extension of an entry being written: `tmp<pid>-<n>`.
const TEMP_PREFIX: &str = "tmp";

/// Removes the temporary files of writes whose process is gone (killed mid-write).
fn remove_abandoned_writes(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        let writer = path.extension().and_then(|ext| {
            ext.to_str()?
                .strip_prefix(TEMP_PREFIX)?
                .split('-')
                .next()?
                .parse::<u32>()
                .ok()
        });
        if let Some(pid) = writer
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            tracing::info!(file = %path.display(), "removing an abandoned compiled-plugin cache write");
            let _ = fs::remove_file(&path);
        }
    }
}

/// Writes `component` to `entry` atomically (temp file, then rename), readable by this user only.
fn store(component: &Component, source: &[u8; DIGEST_LEN], entry: &Path) -> Result<()> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let artifact = component.serialize()?;
    let write = WRITES.fetch_add(1, Ordering::Relaxed);
    let temp = entry.with_extension(format!("{TEMP_PREFIX}{}-{write}", std::process::id()));
    let written = (|| {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
            .with_context(|| format!("cannot create {}", temp.display()))?;
        file.write_all(&seal(source, &artifact))?;
        file.write_all(&artifact)?;
        file.sync_all()?;
        fs::rename(&temp, entry).with_context(|| format!("cannot move {} into place", temp.display()))
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
}
