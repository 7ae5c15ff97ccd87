//! The least of an OAuth authorization server a resource server needs: its
//! metadata (RFC 8414) naming its JWKS, the JWKS with one fixed RS256 key
//! (`tests/fixtures/oauth-signing-key.*`, made for this and nothing else),
//! and access tokens signed with that key. [`Issuer`] serves it on a
//! loopback port over HTTP for the benchmarks and the hung-issuer test (it
//! can be told to hang: accept connections and never answer); the HTTPS
//! test serves the same documents itself. The other OAuth tests use a real
//! authorization server (`oidc-provider`, in `tests/node/oauth.test.mjs`).

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;

use crate::loopback::{TestServer, read_request_head};

const KEY_ID: &str = "bench-key";
const PRIVATE_KEY: &str = include_str!("../fixtures/oauth-signing-key.pem");
/// The issuer's JWKS: the fixture key's public half.
pub const JWKS: &str = include_str!("../fixtures/oauth-signing-key.jwk.json");

/// The metadata document of the issuer `issuer` whose JWKS is at
/// `{issuer}/jwks` (and its introspection endpoint, which answers nothing
/// but a hang, at `{issuer}/introspect`).
pub fn metadata(issuer: &str) -> String {
    json!({
        "issuer": issuer,
        "jwks_uri": format!("{issuer}/jwks"),
        "introspection_endpoint": format!("{issuer}/introspect"),
    })
    .to_string()
}

/// An access token of `issuer` (signed with the fixture key) for `subject`
/// and the resource `audience` with `scope` (space-separated), valid for `lifetime`.
pub fn token(issuer: &str, subject: &str, audience: &str, scope: &str, lifetime: Duration) -> String {
    token_naming_key(issuer, KEY_ID, subject, audience, scope, lifetime)
}

/// [`token`], its header naming the key `kid` (signed with the fixture key
/// all the same): a key the issuer does not publish, unless `kid` is its own.
pub fn token_naming_key(
    issuer: &str,
    kid: &str,
    subject: &str,
    audience: &str,
    scope: &str,
    lifetime: Duration,
) -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let claims = json!({
        "iss": issuer, "sub": subject, "aud": audience, "scope": scope, "client_id": subject,
        "iat": now, "exp": now + lifetime.as_secs(),
    });
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_owned());
    let key = EncodingKey::from_rsa_pem(PRIVATE_KEY.as_bytes()).expect("the fixture key");
    jsonwebtoken::encode(&header, &claims, &key).expect("a signed token")
}

/// A token for `audience` whose header names the key `kid`, signed by no
/// key at all: what a client forging tokens by the thousand sends (cheap
/// to make; refused for its key before its signature is looked at).
pub fn forged_token(issuer: &str, kid: &str, audience: &str) -> String {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let header = json!({ "alg": "RS256", "typ": "at+jwt", "kid": kid });
    let claims = json!({ "iss": issuer, "sub": "mallory", "aud": audience, "iat": now, "exp": now + 600 });
    let part = |value: serde_json::Value| URL_SAFE_NO_PAD.encode(value.to_string());
    format!(
        "{}.{}.{}",
        part(header),
        part(claims),
        URL_SAFE_NO_PAD.encode(b"no signature")
    )
}

/// The issuer; it serves until the process ends, or hangs once told to.
pub struct Issuer {
    /// Its issuer identifier, e.g. `http://127.0.0.1:41234`.
    pub url: String,
    /// Whether it has been told to hang.
    hung: Arc<AtomicBool>,
    server: TestServer,
}

impl Issuer {
    pub fn start() -> Issuer {
        let port = std::sync::Arc::new(std::sync::OnceLock::<u16>::new());
        let known = port.clone();
        let hung = Arc::new(AtomicBool::new(false));
        let hanging = hung.clone();
        let held: Mutex<Vec<TcpStream>> = Mutex::new(Vec::new());
        let server = TestServer::serve(move |stream| {
            if hanging.load(Ordering::SeqCst) {
                // Accepted, and never answered: the connection stays open.
                if let Ok(kept) = stream.try_clone() {
                    held.lock().unwrap().push(kept);
                }
                return;
            }
            let Some(head) = read_request_head(stream) else { return };
            let head = String::from_utf8_lossy(&head);
            let path = head.split_whitespace().nth(1).unwrap_or_default();
            let issuer = format!("http://127.0.0.1:{}", known.get().copied().unwrap_or_default());
            let body = match path {
                "/.well-known/oauth-authorization-server" => metadata(&issuer),
                "/jwks" => JWKS.to_owned(),
                _ => {
                    let _ =
                        stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                    return;
                }
            };
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes());
        });
        port.set(server.port).expect("set once");
        Issuer {
            url: format!("http://127.0.0.1:{}", server.port),
            hung,
            server,
        }
    }

    /// From now on, every connection is accepted and never answered.
    pub fn hang(&self) {
        self.hung.store(true, Ordering::SeqCst);
    }

    /// The connections it has accepted so far.
    pub fn connections(&self) -> usize {
        self.server.connections()
    }

    /// An access token of this issuer; see [`token`].
    pub fn token(&self, subject: &str, audience: &str, scope: &str, lifetime: Duration) -> String {
        token(&self.url, subject, audience, scope, lifetime)
    }
}
