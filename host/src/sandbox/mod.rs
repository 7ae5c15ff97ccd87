//! Turns a plugin's grants into the WASI context its calls run with.
//!
//! Deny by default: no files, no environment, no network, no arguments, and
//! stdio that never reaches the protocol stream (stdin is empty; stdout and
//! stderr are captured into bounded buffers). A manifest can grant directories
//! (through cap-std preopens, so no path escapes them) and environment variables.

use anyhow::{Result, bail};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtx};

use crate::manifest::{DirectoryGrant, Manifest};

/// Bytes of guest stdout or stderr kept per call; writes beyond fail in the guest.
pub const CAPTURED_OUTPUT_BYTES: usize = 64 << 10;

/// The captured stdout and stderr of one call.
pub struct CapturedOutput {
    pub stdout: MemoryOutputPipe,
    pub stderr: MemoryOutputPipe,
}

/// What a plugin is granted, resolved when it loads.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    directories: Vec<DirectoryGrant>,
    env: Vec<(String, String)>,
}

impl Grants {
    /// The grants of `manifest`; granted directories must exist.
    pub fn from_manifest(manifest: &Manifest) -> Result<Self> {
        for dir in &manifest.directories {
            if !dir.host.is_dir() {
                bail!(
                    "granted directory {} (for guest path {}) does not exist or is not a directory",
                    dir.host.display(),
                    dir.guest
                );
            }
        }
        Ok(Self {
            directories: manifest.directories.clone(),
            env: manifest.resolved_env(),
        })
    }

    /// A WASI context with exactly these grants, and the buffers its stdio writes to.
    pub fn wasi_context(&self) -> Result<(WasiCtx, CapturedOutput)> {
        let output = CapturedOutput {
            stdout: MemoryOutputPipe::new(CAPTURED_OUTPUT_BYTES),
            stderr: MemoryOutputPipe::new(CAPTURED_OUTPUT_BYTES),
        };
        let mut builder = WasiCtx::builder();
        builder.stdout(output.stdout.clone()).stderr(output.stderr.clone());
        for (name, value) in &self.env {
            builder.env(name, value);
        }
        for dir in &self.directories {
            let perms = if dir.writable {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            builder.preopened_dir(&dir.host, &dir.guest, perms)?;
        }
        Ok((builder.build(), output))
    }
}
