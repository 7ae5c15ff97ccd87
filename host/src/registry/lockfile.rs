//! The lockfile, `plugins.lock` in the plugins directory: each plugin served
//! from a registry by name, with the reference it was added from and the
//! digest of the artifact it serves. Small (a ConfigMap holds it), written
//! by `wasm-mcp add`, `update` and `remove`, editable by hand; the server
//! follows it as it follows the folder.
//!
//! An entry also records the grants the operator approved and an update
//! held for approval (see [`crate::trust::grants`]). With `approve_files`,
//! the grants approved for loose `.wasm` files are recorded too, under
//! `[files.NAME.approved]`. Keys an entry has beyond
//! these (what later versions record) are kept as they are when the file is
//! rewritten, so an older host never drops them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::reference;
use crate::trust::Grants;

/// The lockfile's name in the plugins directory.
pub const LOCKFILE: &str = "plugins.lock";

/// The format this host writes and reads.
const VERSION: u32 = 1;

const HEADER: &str = "# Plugins served from OCI registries, each pinned by the digest of its artifact.\n\
# Written by `wasm-mcp add`, `wasm-mcp update` and `wasm-mcp remove`; the server follows\n\
# changes to this file as it follows the plugins directory.\n\n";

/// An update held for approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    /// The digest the tag names now.
    pub digest: String,
    /// What it asks for beyond what was approved, one line each.
    pub asks: Vec<String>,
}

/// The plugins of a lockfile, by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lockfile {
    pub version: u32,
    #[serde(default)]
    pub plugins: BTreeMap<String, Locked>,
    /// The grants approved for loose files of the directory, by plugin name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, ApprovedFile>,
}

/// A loose file's approval: the grants its manifest may ask for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovedFile {
    pub approved: Grants,
}

/// One plugin pinned in the lockfile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Locked {
    /// Where it was added from, as written then: a tag (which `update`
    /// follows) or a digest.
    pub reference: String,
    /// The digest of the artifact served (its OCI manifest): pulls are by this only.
    pub digest: String,
    /// The grants the operator approved (by `add` or `approve`): a version
    /// that asks for more is not loaded. None: not recorded (an entry
    /// written by hand or by an older host), no check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<Grants>,
    /// An update `update` found that asks for more than was approved,
    /// waiting for `wasm-mcp approve NAME`; `digest` keeps serving meanwhile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Pending>,
    /// Keys of later versions, kept as they are.
    #[serde(flatten)]
    pub other: toml::Table,
}

impl Lockfile {
    /// The path of the lockfile of the plugins directory `dir`.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(LOCKFILE)
    }

    /// The lockfile of `dir`; empty when there is none.
    pub fn read(dir: &Path) -> Result<Lockfile> {
        let path = Self::path(dir);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lockfile::default()),
            Err(e) => return Err(e).with_context(|| format!("cannot read the lockfile {}", path.display())),
        };
        Self::parse(&text).map_err(|e| anyhow::anyhow!("invalid lockfile {}: {e:#}", path.display()))
    }

    /// Parses and checks a lockfile's text.
    pub fn parse(text: &str) -> Result<Lockfile> {
        let lock: Lockfile = toml::from_str(text).map_err(|e| anyhow::anyhow!("{}", e.to_string().trim_end()))?;
        if lock.version != VERSION {
            bail!(
                "version {} is not one this host reads (it reads version {VERSION}); upgrade the host",
                lock.version
            );
        }
        for (name, locked) in &lock.plugins {
            check_name(name)?;
            reference::check(&locked.reference).map_err(|e| anyhow::anyhow!("plugins.{name}: {e:#}"))?;
            reference::check_digest(&locked.digest).map_err(|e| anyhow::anyhow!("plugins.{name}.digest: {e:#}"))?;
            if let Some(pinned) = reference::pinned_digest(&locked.reference)
                && pinned != locked.digest
            {
                bail!(
                    "plugins.{name}: its reference is pinned to {pinned} but its digest is {}; make them agree",
                    locked.digest
                );
            }
        }
        Ok(lock)
    }

    /// Writes the lockfile of `dir` whole (a temporary file renamed over it),
    /// so a server following it never reads half of it.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let path = Self::path(dir);
        let text = format!(
            "{HEADER}{}",
            toml::to_string(&Lockfile {
                version: VERSION,
                ..self.clone()
            })?
        );
        let temp = dir.join(format!(".{LOCKFILE}.{}.tmp", std::process::id()));
        std::fs::write(&temp, text).with_context(|| format!("cannot write {}", temp.display()))?;
        std::fs::rename(&temp, &path).with_context(|| format!("cannot move {} into place", temp.display()))
    }
}

/// Checks that `name` can name a plugin: what a `NAME.wasm` file could be called.
pub fn check_name(name: &str) -> Result<()> {
    if name.is_empty()
        || name.starts_with('.')
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        bail!(
            "{name:?} cannot name a plugin: use letters, digits, '_', '-' and '.', not first (pick one with --name NAME)"
        );
    }
    Ok(())
}

impl Default for Lockfile {
    fn default() -> Self {
        Self {
            version: VERSION,
            plugins: BTreeMap::new(),
            files: BTreeMap::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    #[test]
    fn keys_of_later_versions_are_kept_and_a_pin_must_agree_with_the_digest() {
        let text = format!(
            "version = 1\n[plugins.hello]\nreference = \"127.0.0.1:5000/hello:1\"\ndigest = \"{DIGEST}\"\n\
             [plugins.hello.later]\nnote = \"kept\"\n"
        );
        let lock = Lockfile::parse(&text).unwrap();
        let written = toml::to_string(&lock).unwrap();
        assert!(written.contains("[plugins.hello.later]"), "{written}");
        let other = format!("sha256:{}", "b".repeat(64));
        let pinned = format!(
            "version = 1\n[plugins.hello]\nreference = \"127.0.0.1:5000/hello@{other}\"\ndigest = \"{DIGEST}\"\n"
        );
        let err = Lockfile::parse(&pinned).unwrap_err().to_string();
        assert!(err.contains("make them agree"), "{err}");
        let err = Lockfile::parse("version = 2\n").unwrap_err().to_string();
        assert!(err.contains("upgrade the host"), "{err}");
        let hidden =
            format!("version = 1\n[plugins.\".x\"]\nreference = \"127.0.0.1:5000/hello:1\"\ndigest = \"{DIGEST}\"\n");
        let err = Lockfile::parse(&hidden).unwrap_err().to_string();
        assert!(err.contains("cannot name a plugin"), "{err}");
    }
}
