//! Turns a plugin's grants into the WASI context its calls run with.
//!
//! Deny by default: no files, no environment, no network, no arguments, and
//! stdio that never reaches the protocol stream (stdin is empty; stdout and
//! stderr are captured into bounded buffers). A manifest can grant directories
//! (through cap-std preopens, so no path escapes them), environment variables
//! and outgoing network access ([`NetworkPolicy`]: checked on every resolved
//! address, with name lookups limited to granted names by [`dns`]; `wasi:http`
//! requests through [`http`], over TLS the host verifies with [`TlsTrust`],
//! carrying the operator's [`Credentials`] where bound).

mod credentials;
pub mod dns;
mod host_client;
pub mod http;
mod network;
mod pool;
mod tls;

use std::sync::Arc;

use anyhow::{Result, bail};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiView};

use crate::manifest::{DirectoryGrant, Manifest};
pub use credentials::{Added, Credential, Credentials, Destination};
pub use host_client::{HostClient, checked_url};
pub use network::{Channel, NetworkPolicy};
pub use tls::{TlsTrust, ca_certificates};

/// What the sandbox needs of the state of the store a call runs in: its WASI
/// context, and the network policy of the plugin it runs.
pub trait NetworkView: WasiView + Send {
    fn network_policy(&self) -> &Arc<NetworkPolicy>;
}

/// Bytes of guest stdout or stderr kept per call; writes beyond fail in the guest.
pub const CAPTURED_OUTPUT_BYTES: usize = 64 << 10;

/// The captured stdout and stderr of one call.
pub struct CapturedOutput {
    pub stdout: MemoryOutputPipe,
    pub stderr: MemoryOutputPipe,
}

/// What a plugin is granted, resolved when it loads.
#[derive(Debug, Clone)]
pub struct Grants {
    directories: Vec<DirectoryGrant>,
    env: Vec<(String, String)>,
    network: Arc<NetworkPolicy>,
    tls: Arc<TlsTrust>,
    /// What the operator adds to its outgoing HTTP requests (none: nothing).
    credentials: Option<Arc<dyn Credentials>>,
}

impl Default for Grants {
    fn default() -> Self {
        Self {
            directories: Vec::new(),
            env: Vec::new(),
            network: Arc::new(NetworkPolicy::new("", Vec::new())),
            tls: Arc::default(),
            credentials: None,
        }
    }
}

impl Grants {
    /// The grants of `plugin`'s `manifest`; granted directories must exist,
    /// and a `ca_file` must hold CA certificates.
    ///
    /// # Errors
    ///
    /// When a granted directory does not exist, or the `ca_file` cannot be
    /// read or holds no usable certificate.
    pub fn from_manifest(plugin: &str, manifest: &Manifest) -> Result<Self> {
        for dir in &manifest.directories {
            if !dir.host.is_dir() {
                bail!(
                    "granted directory {} (for guest path {}) does not exist or is not a directory",
                    dir.host.display(),
                    dir.guest
                );
            }
        }
        let tls = match &manifest.network.ca_file {
            Some(ca_file) => TlsTrust::with_ca_file(ca_file)?,
            None => TlsTrust::default(),
        };
        Ok(Self {
            directories: manifest.directories.clone(),
            env: manifest.resolved_env(),
            network: Arc::new(NetworkPolicy::new(plugin, manifest.network.allow.clone())),
            tls: Arc::new(tls),
            credentials: None,
        })
    }

    /// These grants, with `credentials` added by the host to the plugin's
    /// outgoing HTTP requests they are bound to.
    pub(crate) fn with_credentials(self, credentials: Option<Arc<dyn Credentials>>) -> Self {
        Self { credentials, ..self }
    }

    /// What the host adds to the plugin's outgoing HTTP requests, if anything.
    pub(crate) fn credentials(&self) -> Option<Arc<dyn Credentials>> {
        self.credentials.clone()
    }

    /// The network policy every call of the plugin shares.
    pub fn network(&self) -> Arc<NetworkPolicy> {
        self.network.clone()
    }

    /// What the plugin's `https://` requests trust.
    pub(crate) fn tls(&self) -> Arc<TlsTrust> {
        self.tls.clone()
    }

    /// A WASI context with exactly these grants, and the buffers its stdio writes to.
    pub(crate) fn wasi_context(&self) -> Result<(WasiCtx, CapturedOutput)> {
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
        // Sockets stay off (wasmtime-wasi's default) unless a rule that is not
        // TLS-only grants some address; then every address a socket uses is checked.
        if self.network.grants_sockets() {
            let policy = self.network.clone();
            builder
                .allow_tcp(true)
                .allow_udp(true)
                .allow_ip_name_lookup(true)
                .socket_addr_check(move |addr, usage| {
                    let policy = policy.clone();
                    Box::pin(async move { policy.check(addr, usage).await })
                });
        }
        Ok((builder.build(), output))
    }
}
