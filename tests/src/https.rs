//! HTTPS servers the sandbox tests run on 127.0.0.1: a private certificate
//! authority made per test (rcgen), the server certificates it signs (valid,
//! expired, for some names only), served by rustls over HTTP/1.1 (see
//! [`crate::http2`] for HTTP/2). Nothing leaves the machine.

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::path::Path;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, date_time_ymd};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};

use crate::loopback::{TestServer, read_request_head};

/// A certificate authority no system trusts.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A server's certificate chain and private key.
pub struct ServerCert {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    /// The chain and the key, PEM-encoded, for servers that read files.
    chain_pem: String,
    key_pem: String,
}

impl ServerCert {
    /// Writes the chain and the key as PEM files (for a server that is not ours).
    pub fn write_pem(&self, chain: &Path, key: &Path) {
        std::fs::write(chain, &self.chain_pem).unwrap();
        std::fs::write(key, &self.key_pem).unwrap();
    }
}

impl Default for TestCa {
    fn default() -> Self {
        Self::new()
    }
}

impl TestCa {
    pub fn new() -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, "wasm-mcp test CA");
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        TestCa { issuer }
    }

    /// The CA's certificate, PEM-encoded (what a `ca_file` holds).
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A certificate for `names` (DNS names or IP addresses), valid now.
    pub fn server_cert(&self, names: &[&str]) -> ServerCert {
        self.sign(names, |_| {})
    }

    /// A certificate for `names` that expired years ago.
    pub fn expired_server_cert(&self, names: &[&str]) -> ServerCert {
        self.sign(names, |params| {
            params.not_before = date_time_ymd(2019, 1, 1);
            params.not_after = date_time_ymd(2020, 1, 1);
        })
    }

    fn sign(&self, names: &[&str], adjust: impl FnOnce(&mut CertificateParams)) -> ServerCert {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        adjust(&mut params);
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        ServerCert {
            chain: vec![cert.der().clone(), self.issuer.der().clone()],
            key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            chain_pem: format!("{}{}", cert.pem(), self.issuer.pem()),
            key_pem: key.serialize_pem(),
        }
    }
}

/// What an [`https`] server does with each request.
#[derive(Clone, Copy)]
pub enum Answer {
    /// 200 with this body, keeping the connection open for the next request.
    Body(&'static str),
    /// 200 with this body, then the connection closes, though the response
    /// says nothing of it (no `Connection: close`): as a server whose idle
    /// keep-alive connections time out does.
    Once(&'static str),
    /// Nothing, ever (the connection stays open).
    Never,
    /// The file at the request's path under this directory, read when asked
    /// for (404 when there is none), keeping the connection open.
    Files(&'static Path),
}

/// An HTTPS (HTTP/1.1) server on 127.0.0.1 presenting `cert`; it counts
/// connections (TCP accepts) and serves each on a thread of its own.
pub fn https(cert: ServerCert, answer: Answer) -> TestServer {
    serve_https(server_config(cert, &[b"http/1.1"], None), answer)
}

/// An HTTPS server whose handshake requires a client certificate issued by
/// `client_ca`, which the host never presents: the server ends it with an
/// alert (under TLS 1.3, once the client has sent its Finished and believes
/// the handshake done). It accepts the ALPN protocols `alpn`.
pub fn https_requiring_client_cert(cert: ServerCert, client_ca: &TestCa, alpn: &[&[u8]]) -> TestServer {
    serve_https(server_config(cert, alpn, Some(client_ca)), Answer::Body(""))
}

/// The rustls settings of a test server: `cert`, the ALPN protocols it
/// accepts (its preference first), and the CA a client certificate must
/// come from, if it requires one.
pub(crate) fn server_config(cert: ServerCert, alpn: &[&[u8]], client_ca: Option<&TestCa>) -> Arc<ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match client_ca {
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            roots.add(ca.issuer.der().clone()).unwrap();
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(cert.chain, cert.key).unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

fn serve_https(config: Arc<ServerConfig>, answer: Answer) -> TestServer {
    TestServer::serve(move |stream| {
        let (Ok(stream), config) = (stream.try_clone(), config.clone()) else {
            return;
        };
        std::thread::spawn(move || serve_connection(stream, config, answer));
    })
}

fn serve_connection(mut tcp: TcpStream, config: Arc<ServerConfig>, answer: Answer) {
    let Ok(mut conn) = rustls::ServerConnection::new(config) else {
        return;
    };
    let mut tls = rustls::Stream::new(&mut conn, &mut tcp);
    // A handshake the client refuses (or the server does) ends here, in the first read.
    while let Some(head) = read_request_head(&mut tls) {
        let (status, body) = match answer {
            Answer::Body(body) | Answer::Once(body) => ("200 OK", body.to_owned()),
            Answer::Never => {
                std::thread::park();
                continue;
            }
            Answer::Files(dir) => {
                let head = String::from_utf8_lossy(&head);
                let path = head.split_whitespace().nth(1).unwrap_or_default();
                let file = dir.join(path.trim_start_matches('/'));
                match std::fs::read_to_string(&file) {
                    Ok(body) if !path.contains("..") => ("200 OK", body),
                    _ => ("404 Not Found", String::new()),
                }
            }
        };
        let response = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let once = matches!(answer, Answer::Once(_));
        // Queued, then sent at once with the close if it follows: the close is
        // there before the client can send again, as from a server whose idle
        // timeout passed while the client held the connection.
        let queued = tls.conn.writer().write_all(response.as_bytes());
        if once {
            tls.conn.send_close_notify();
        }
        if queued.and_then(|()| tls.flush()).is_err() {
            return;
        }
        if once {
            let _ = tls.sock.shutdown(Shutdown::Write);
            break;
        }
    }
    // Closing with the client's bytes unread would reset the connection, and
    // the reset could overtake what was sent last (an alert, say): the server
    // closes once the client has.
    let _ = std::io::copy(&mut tcp, &mut std::io::sink());
}
