//! What a plugin's `https://` requests trust, and how a TLS failure (in the
//! handshake or after it) is told to the guest.
//!
//! The roots are the platform's trust store (read once per process through
//! rustls-native-certs: the files operators already manage, and
//! `SSL_CERT_FILE` / `SSL_CERT_DIR` where set) plus the certificates of the
//! manifest's `[network] ca_file`. rustls (with the ring provider) verifies
//! the chain, the validity period and the name against the URL's host; no
//! setting turns verification off.

use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, LazyLock, OnceLock};
use std::task::{self, Poll};

use anyhow::{Context, Result, bail};
use rustls::pki_types::pem::{PemObject, SectionKind};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use wasmtime_wasi_http::Error;

/// The protocols offered in the handshake, preferred first.
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// The platform's trusted roots, read on first use.
static PLATFORM_ROOTS: LazyLock<RootCertStore> = LazyLock::new(|| {
    let found = rustls_native_certs::load_native_certs();
    for error in &found.errors {
        tracing::warn!("reading the platform trust store: {error}");
    }
    let mut roots = RootCertStore::empty();
    let (added, unusable) = roots.add_parsable_certificates(found.certs);
    if roots.is_empty() {
        tracing::warn!(
            "the platform trust store holds no root certificates: https:// requests trust only \
             a plugin's [network] ca_file; install the system's CA bundle (e.g. the ca-certificates \
             package) or point SSL_CERT_FILE at one"
        );
    } else {
        tracing::debug!(added, unusable, "trusted roots read from the platform trust store");
    }
    roots
});

/// The TLS client settings of one plugin, shared by all its calls. The
/// default trusts the platform's roots only.
#[derive(Debug, Default)]
pub struct TlsTrust {
    /// The certificates of the manifest's `ca_file`.
    extra: Option<RootCertStore>,
    /// Made on the plugin's first `https://` request.
    config: OnceLock<Arc<ClientConfig>>,
}

impl TlsTrust {
    /// Trust in the platform's roots and those of `ca_file` (a PEM file of
    /// one or more CA certificates, read now).
    pub fn with_ca_file(ca_file: &Path) -> Result<Self> {
        let extra = read_ca_file(ca_file).with_context(|| format!("[network] ca_file {}", ca_file.display()))?;
        Ok(Self {
            extra: Some(extra),
            config: OnceLock::new(),
        })
    }

    /// The rustls client configuration: the roots, and ALPN h2 then http/1.1.
    pub fn config(&self) -> Arc<ClientConfig> {
        self.config
            .get_or_init(|| {
                let mut roots = PLATFORM_ROOTS.clone();
                if let Some(extra) = &self.extra {
                    roots.roots.extend(extra.roots.iter().cloned());
                }
                let provider = Arc::new(rustls::crypto::ring::default_provider());
                let mut config = ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .expect("the ring provider supports rustls's default protocol versions")
                    .with_root_certificates(roots)
                    .with_no_client_auth();
                config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
                Arc::new(config)
            })
            .clone()
    }
}

/// The certificates of a `ca_file`: every PEM section must be a certificate
/// that parses as a trust anchor, and there must be at least one.
fn read_ca_file(path: &Path) -> Result<RootCertStore> {
    let pem = std::fs::read(path).context(
        "cannot read it; give the path of a PEM file of CA certificates (relative to the manifest's folder)",
    )?;
    let mut roots = RootCertStore::empty();
    for (i, der) in ca_certificates(&pem)?.into_iter().enumerate() {
        roots
            .add(der)
            .map_err(|e| anyhow::anyhow!("certificate {} cannot be trusted: {e}", i + 1))?;
    }
    Ok(roots)
}

/// The certificates of a PEM file of CA certificates: every section must be
/// a certificate, and there must be at least one.
pub fn ca_certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>> {
    let mut certificates = Vec::new();
    for (i, section) in <(SectionKind, Vec<u8>)>::pem_slice_iter(pem).enumerate() {
        let (kind, der) = section.map_err(|e| anyhow::anyhow!("is not valid PEM: {e}"))?;
        if kind != SectionKind::Certificate {
            bail!(
                "PEM section {} is a {kind:?}, not a CERTIFICATE: the file may hold only CA certificates \
                 (never a private key)",
                i + 1
            );
        }
        certificates.push(CertificateDer::from(der));
    }
    if certificates.is_empty() {
        bail!("holds no certificate: it must contain at least one -----BEGIN CERTIFICATE----- section");
    }
    Ok(certificates)
}

/// The name the server's certificate must carry: the URL's host (an IP
/// literal's address, without brackets).
pub fn server_name(host: &str) -> Result<ServerName<'static>, Error> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host)
        .map(|name| name.to_owned())
        .map_err(|_| Error::HttpRequestUriInvalid)
}

/// The `wasi:http` error code of a failed handshake, and why it failed, for the log.
pub fn handshake_error(error: &io::Error) -> (Error, String) {
    match error.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()) {
        Some(tls) => {
            let (code, why) = failure(tls);
            (code, format!("the TLS handshake failed: {why}"))
        }
        None => (
            Error::ConnectionTerminated,
            format!("the TLS handshake failed: {error}"),
        ),
    }
}

/// The `wasi:http` error code of a TLS failure, and why it failed, for the log.
pub fn failure(error: &rustls::Error) -> (Error, String) {
    let code = match error {
        rustls::Error::InvalidCertificate(cert) => {
            let hint = match cert {
                rustls::CertificateError::UnknownIssuer => {
                    ": its issuer is not trusted (add the issuing CA to the plugin's [network] ca_file \
                     if it is a private one)"
                }
                rustls::CertificateError::NotValidForName | rustls::CertificateError::NotValidForNameContext { .. } => {
                    ": it does not name the URL's host"
                }
                rustls::CertificateError::Expired | rustls::CertificateError::ExpiredContext { .. } => {
                    ": it has expired"
                }
                _ => "",
            };
            return (
                Error::TlsCertificateError,
                format!("the server's certificate is refused{hint} ({error})"),
            );
        }
        rustls::Error::AlertReceived(alert) => Error::TlsAlertReceived {
            alert_id: Some(u8::from(*alert)),
            alert_message: Some(format!("{alert:?}")),
        },
        _ => Error::TlsProtocolError,
    };
    (code, error.to_string())
}

/// The first TLS failure of a connection, once it has one.
pub type Failure = Arc<OnceLock<rustls::Error>>;

/// A connection's TLS stream that keeps its first failure. Some failures come
/// after the handshake (under TLS 1.3 a server refuses a client, one without
/// a certificate say, once the client has finished its part), and reach the
/// request as an I/O error of HTTP/2's, which keeps only its text: the code
/// (an alert, say) is read here instead.
pub struct Watched<S> {
    stream: S,
    failure: Failure,
}

impl<S> Watched<S> {
    pub fn new(stream: S, failure: Failure) -> Self {
        Self { stream, failure }
    }

    fn note<T>(&self, result: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if let Poll::Ready(Err(e)) = &result
            && let Some(tls) = e.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>())
        {
            let _ = self.failure.set(tls.clone());
        }
        result
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut task::Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.stream).poll_read(cx, buf);
        self.note(result)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut task::Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.note(result)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut task::Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.note(result)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut task::Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.stream).poll_flush(cx);
        self.note(result)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut task::Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.stream).poll_shutdown(cx);
        self.note(result)
    }
}
