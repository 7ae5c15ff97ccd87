//! The token server of the distribution spec's bearer-token handshake, for a
//! registry that asks for tokens rather than passwords
//! ([`crate::registry::TestRegistry::start_with_token_auth`]). The registry
//! answers an anonymous request 401 with `WWW-Authenticate: Bearer
//! realm=…,service=…,scope=…`; the client asks the realm here for a token
//! with its password (Basic); this server checks the password and answers a
//! JWT the registry verifies: ES256, signed by a key whose self-signed
//! certificate the registry trusts (`rootcertbundle`) and that rides in the
//! token's `x5c` header, granting every action asked on the repositories
//! named in `scope`. It serves loopback HTTP and remembers what it was asked.

use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rcgen::{CertificateParams, DnType, KeyPair};
use serde_json::{Value, json};

use crate::loopback::{TestServer, read_request_head};

/// The token issuer the registry is configured to trust.
pub const ISSUER: &str = "wasm-mcp-tests-token-issuer";
/// The service the registry names itself as (the tokens' audience).
pub const SERVICE: &str = "wasm-mcp-tests-registry";

/// One request for a token: the scopes asked and whether the password was right.
#[derive(Clone, Debug)]
pub struct TokenRequest {
    pub scopes: Vec<String>,
    pub admitted: bool,
}

/// A running token server.
pub struct TokenServer {
    server: TestServer,
    requests: Arc<Mutex<Vec<TokenRequest>>>,
}

impl TokenServer {
    /// Starts a token server admitting `user` with `password`, and writes the
    /// certificate of its signing key to `certificate` (the registry's
    /// `rootcertbundle`).
    pub fn start(user: &str, password: &str, certificate: &Path) -> Self {
        let key = KeyPair::generate().expect("an ECDSA P-256 key");
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "wasm-mcp test token signer");
        let cert = params.self_signed(&key).unwrap();
        std::fs::write(certificate, cert.pem()).unwrap();
        let signer = Signer {
            key: EncodingKey::from_ec_pem(key.serialize_pem().as_bytes()).expect("the signing key"),
            x5c: BASE64.encode(cert.der()),
        };
        let expected = format!("Basic {}", BASE64.encode(format!("{user}:{password}")));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let server = TestServer::serve(move |stream| {
            let Some(head) = read_request_head(stream) else { return };
            let head = String::from_utf8_lossy(&head);
            let target = head.split_whitespace().nth(1).unwrap_or("");
            let query = target.split_once('?').map_or("", |(_, query)| query);
            let scopes: Vec<String> = url::form_urlencoded::parse(query.as_bytes())
                .filter(|(name, _)| name == "scope")
                .map(|(_, scope)| scope.into_owned())
                .collect();
            let admitted = head.lines().any(|line| {
                line.split_once(':')
                    .is_some_and(|(name, value)| name.eq_ignore_ascii_case("authorization") && value.trim() == expected)
            });
            seen.lock().unwrap().push(TokenRequest {
                scopes: scopes.clone(),
                admitted,
            });
            if admitted {
                let token = signer.token(&scopes);
                let body = json!({ "token": token, "access_token": token, "expires_in": 300 }).to_string();
                answer(stream, "200 OK", &body);
            } else {
                answer(stream, "401 Unauthorized", r#"{"errors":[{"code":"UNAUTHORIZED"}]}"#);
            }
        });
        TokenServer { server, requests }
    }

    /// The realm the registry sends clients to.
    pub fn realm(&self) -> String {
        format!("http://127.0.0.1:{}/token", self.server.port)
    }

    /// Every request for a token so far.
    pub fn requests(&self) -> Vec<TokenRequest> {
        self.requests.lock().unwrap().clone()
    }
}

struct Signer {
    key: EncodingKey,
    /// The signing certificate, DER in standard base64 (the `x5c` header).
    x5c: String,
}

impl Signer {
    /// A token granting the actions of each `repository:NAME:ACTIONS` scope.
    fn token(&self, scopes: &[String]) -> String {
        let access: Vec<Value> = scopes
            .iter()
            .filter_map(|scope| {
                let (kind, rest) = scope.split_once(':')?;
                let (name, actions) = rest.rsplit_once(':')?;
                Some(json!({ "type": kind, "name": name, "actions": actions.split(',').collect::<Vec<_>>() }))
            })
            .collect();
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        let claims = json!({
            "iss": ISSUER, "sub": "tester", "aud": SERVICE,
            "iat": now, "nbf": now - 5, "exp": now + 300, "jti": format!("{now}-{}", fastrand::u64(..)),
            "access": access,
        });
        let mut header = Header::new(Algorithm::ES256);
        header.x5c = Some(vec![self.x5c.clone()]);
        jsonwebtoken::encode(&header, &claims, &self.key).expect("a signed token")
    }
}

fn answer(stream: &mut TcpStream, status: &str, body: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}
