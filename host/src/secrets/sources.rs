//! Where a named secret's value comes from: an environment variable of the
//! host (read once, at start) or a file (read at start, and again when it
//! changes). A file is looked at (its metadata, through its links) each time
//! the secret is used, so a Kubernetes Secret volume's key file (a link
//! through `..data`, which the kubelet swaps to a new directory on an
//! update) or a file replaced by an operator serves its new value from the
//! next request on, without a restart or a watcher. Values are held as
//! [`SecretString`]s, which neither `Debug` nor `Display` print.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use anyhow::{Result, anyhow, bail};
use secrecy::SecretString;

use crate::config::SecretSource;

/// One of the operator's secrets.
pub struct Secret {
    name: String,
    origin: Origin,
}

enum Origin {
    Env(SecretString),
    File { path: PathBuf, read: Mutex<Read> },
}

/// A file's value as last read, and what the file was then.
struct Read {
    stamp: Stamp,
    value: SecretString,
}

/// What tells one version of a file from the next: the inode it resolves
/// to, its size and its modification time.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Stamp {
    device: u64,
    inode: u64,
    len: u64,
    modified: Option<SystemTime>,
}

impl Stamp {
    fn of(path: &Path) -> std::io::Result<Stamp> {
        let meta = std::fs::metadata(path)?;
        Ok(Stamp {
            device: meta.dev(),
            inode: meta.ino(),
            len: meta.len(),
            modified: meta.modified().ok(),
        })
    }
}

impl Secret {
    /// The secret `name` from `source`, read now; an error names the secret.
    pub fn load(name: &str, source: &SecretSource) -> Result<Secret> {
        let origin = match (&source.env, &source.file) {
            (Some(var), None) => {
                let value = std::env::var(var).map_err(|_| {
                    anyhow!("secret {name:?}: the environment variable {var} is not set (or is not UTF-8)")
                })?;
                if value.is_empty() {
                    bail!("secret {name:?}: the environment variable {var} is empty");
                }
                Origin::Env(value.into())
            }
            (None, Some(path)) => {
                let (stamp, value) = read_file(path).map_err(|why| anyhow!("secret {name:?}: {why}"))?;
                Origin::File {
                    path: path.clone(),
                    read: Mutex::new(Read { stamp, value }),
                }
            }
            _ => bail!("secret {name:?}: set one of env = \"VARIABLE\" or file = \"PATH\""),
        };
        Ok(Secret {
            name: name.to_owned(),
            origin,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The value now: a file that changed since it was last read is read
    /// again; one that cannot be read keeps its last value (and says so).
    pub fn value(&self) -> SecretString {
        let (path, read) = match &self.origin {
            Origin::Env(value) => return value.clone(),
            Origin::File { path, read } => (path, read),
        };
        let mut last = read.lock().unwrap();
        match Stamp::of(path) {
            Ok(stamp) if stamp == last.stamp => {}
            _ => match read_file(path) {
                Ok((stamp, value)) => {
                    tracing::info!(secret = %self.name, file = %path.display(), "secret read again: its file changed");
                    *last = Read { stamp, value };
                }
                Err(why) => {
                    tracing::warn!(secret = %self.name, "secret kept at its last value: {why}");
                }
            },
        }
        last.value.clone()
    }
}

/// The value in the file at `path` (without a final line break), and its stamp.
fn read_file(path: &Path) -> Result<(Stamp, SecretString), String> {
    let stamp = Stamp::of(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let value = text.strip_suffix('\n').unwrap_or(&text);
    let value = value.strip_suffix('\r').unwrap_or(value);
    if value.is_empty() {
        return Err(format!("{} is empty", path.display()));
    }
    Ok((stamp, value.to_owned().into()))
}
