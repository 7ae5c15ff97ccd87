//! A real OCI registry for the tests and the benchmarks: Debian's
//! `docker-registry` (distribution 2.8, `make registry-deps` installs it)
//! on a free loopback port, serving HTTPS with a certificate of a test CA
//! and asking for a password (htpasswd, bcrypt by `htpasswd` of
//! apache2-utils). Its storage is a temporary directory the tests may reach
//! into (to tamper with a blob). It is stopped when dropped. A second kind
//! asks for bearer tokens from a token server of the tests' own
//! ([`crate::registry_token`]) instead of passwords. [`OpenApi`] writes
//! to an open one by hand.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::https::TestCa;
use crate::registry_token::{self, TokenServer};
use crate::wait::{poll, timeout};

/// The user the registry lets in, and its password.
pub const USER: &str = "tester";
pub const PASSWORD: &str = "s3cret-for-tests";

/// A running registry; stopped when dropped.
pub struct TestRegistry {
    /// `127.0.0.1:PORT`.
    pub addr: String,
    dir: tempfile::TempDir,
    process: Option<Child>,
    token_server: Option<TokenServer>,
}

/// How a registry lets clients in.
#[derive(PartialEq)]
enum Access {
    /// Plain HTTP, anyone.
    Open,
    /// HTTPS, Basic auth with [`USER`] and [`PASSWORD`].
    Password,
    /// HTTPS, bearer tokens from a token server that takes [`USER`] and [`PASSWORD`].
    Token,
}

impl TestRegistry {
    /// Starts a registry on a free loopback port, over HTTPS and asking
    /// for a password, ready to answer.
    pub fn start() -> Self {
        Self::start_with(Access::Password)
    }

    /// Starts a registry on a free loopback port over plain HTTP, open to anyone.
    pub fn start_plain() -> Self {
        Self::start_with(Access::Open)
    }

    /// Starts a registry over HTTPS that admits bearer tokens only, issued
    /// by a token server (running as long as the registry) for the
    /// registry's password.
    pub fn start_with_token_auth() -> Self {
        Self::start_with(Access::Token)
    }

    fn start_with(access: Access) -> Self {
        let dir = tempfile::Builder::new().prefix("wasm-mcp-registry-").tempdir().unwrap();
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr = format!("127.0.0.1:{port}");
        let ca = TestCa::new();
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
        ca.server_cert(&["127.0.0.1", "localhost"])
            .write_pem(&dir.path().join("server.pem"), &dir.path().join("server.key"));
        let htpasswd = Command::new("htpasswd")
            .args(["-Bbn", USER, PASSWORD])
            .output()
            .expect("htpasswd (apache2-utils) is installed: run `make registry-deps`");
        assert!(
            htpasswd.status.success(),
            "htpasswd: {}",
            String::from_utf8_lossy(&htpasswd.stderr)
        );
        std::fs::write(dir.path().join("htpasswd"), &htpasswd.stdout).unwrap();
        let d = dir.path().display();
        let mut config = format!(
            "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\n\
             storage:\n  filesystem:\n    rootdirectory: {d}/data\n  delete:\n    enabled: true\n\
             http:\n  addr: {addr}\n  secret: not-a-secret\n"
        );
        if access != Access::Open {
            config.push_str(&format!(
                "  tls:\n    certificate: {d}/server.pem\n    key: {d}/server.key\n"
            ));
        }
        let mut token_server = None;
        match access {
            Access::Open => {}
            Access::Password => config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: wasm-mcp-tests\n    path: {d}/htpasswd\n"
            )),
            Access::Token => {
                let server = TokenServer::start(USER, PASSWORD, &dir.path().join("token-signer.pem"));
                config.push_str(&format!(
                    "auth:\n  token:\n    realm: {}\n    service: {}\n    issuer: {}\n    \
                     rootcertbundle: {d}/token-signer.pem\n",
                    server.realm(),
                    registry_token::SERVICE,
                    registry_token::ISSUER
                ));
                token_server = Some(server);
            }
        }
        std::fs::write(dir.path().join("config.yml"), config).unwrap();
        // The credentials, as `docker login` writes them.
        let auth = format!(r#"{{"auths": {{"{addr}": {{"username": "{USER}", "password": "{PASSWORD}"}}}}}}"#);
        std::fs::write(dir.path().join("auth.json"), auth).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        let mut registry = TestRegistry {
            addr,
            dir,
            process: None,
            token_server,
        };
        registry.run();
        registry
    }

    /// Starts the registry process (again, after [`TestRegistry::stop`]) and
    /// waits until it accepts connections.
    pub fn run(&mut self) {
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(self.dir.path().join("config.yml"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("docker-registry is installed: run `make registry-deps`");
        self.process = Some(child);
        let up = poll(timeout(), || TcpStream::connect(&self.addr).ok().map(|_| ()));
        assert!(up.is_some(), "the registry did not start listening on {}", self.addr);
    }

    /// Stops the registry (its storage stays).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.process.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        // Until the port is closed.
        poll(Duration::from_secs(10), || {
            TcpStream::connect(&self.addr).err().map(|_| ())
        });
    }

    /// The token server of a registry started with
    /// [`TestRegistry::start_with_token_auth`].
    pub fn token_server(&self) -> &TokenServer {
        self.token_server.as_ref().expect("a registry asking for tokens")
    }

    /// `127.0.0.1:PORT/PATH` (a repository and a tag or digest).
    pub fn reference(&self, path: &str) -> String {
        format!("{}/{path}", self.addr)
    }

    /// The CA certificate the registry's HTTPS is signed by.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// An auth file (containers' auth.json format) with the registry's credentials.
    pub fn auth_file(&self) -> PathBuf {
        self.dir.path().join("auth.json")
    }

    /// Where the registry keeps the blob `digest` (`sha256:…`).
    pub fn blob_path(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.dir
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// `wasm-mcp ARGS…` set up for this registry: its CA and credentials,
    /// and nothing from this machine's own auth files (HOME is a directory
    /// of its own).
    pub fn wasm_mcp(&self, cache: &Path) -> Command {
        let mut command = Command::new(crate::paths::binary());
        self.configure(&mut command, cache);
        command
    }

    /// Sets up `command` (a `wasm-mcp` command) for this registry, with the
    /// store and compiled code in `cache`.
    pub fn configure(&self, command: &mut Command, cache: &Path) {
        let home = self.dir.path().join("home");
        command
            .env("WASM_MCP_REGISTRY_CA_FILE", self.ca_file())
            .env("REGISTRY_AUTH_FILE", self.auth_file())
            .env("WASM_MCP_CACHE_DIR", cache)
            .env("HOME", &home)
            .env("DOCKER_CONFIG", home.join(".docker"))
            .env_remove("XDG_RUNTIME_DIR")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("WASM_MCP_REGISTRY_USERNAME")
            .env_remove("WASM_MCP_REGISTRY_PASSWORD");
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        if let Some(mut child) = self.process.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The distribution API of a registry open to anyone over plain HTTP (one
/// started with [`TestRegistry::start_plain`]), for what `wasm-mcp push`
/// would never publish: blobs and manifests put as given, whatever they hold.
pub struct OpenApi {
    addr: String,
    repository: String,
    client: reqwest::blocking::Client,
}

/// The media type of an OCI image manifest.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

impl OpenApi {
    /// The API of `repository` in the registry at `http://addr`.
    pub fn new(addr: &str, repository: &str) -> Self {
        crate::tls_provider();
        Self {
            addr: addr.to_owned(),
            repository: repository.to_owned(),
            client: reqwest::blocking::Client::new(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}/v2/{}/{path}", self.addr, self.repository)
    }

    /// Uploads `bytes` as a blob (monolithically); its digest.
    pub fn blob(&self, bytes: &[u8]) -> String {
        let digest = format!("sha256:{:x}", Sha256::digest(bytes));
        let started = self.client.post(self.url("blobs/uploads/")).send().unwrap();
        assert!(started.status().is_success(), "blob upload: {}", started.status());
        let location = started.headers()["location"].to_str().unwrap().to_owned();
        let location = if location.starts_with("http") {
            location
        } else {
            format!("http://{}{location}", self.addr)
        };
        let separator = if location.contains('?') { '&' } else { '?' };
        let response = self
            .client
            .put(format!("{location}{separator}digest={digest}"))
            .header("Content-Type", "application/octet-stream")
            .body(bytes.to_vec())
            .send()
            .unwrap();
        assert!(response.status().is_success(), "blob upload: {}", response.status());
        digest
    }

    /// Puts `body` (of `media_type`) as the manifest `reference` (a tag or digest) names.
    pub fn put_manifest(&self, reference: &str, media_type: &str, body: &[u8]) {
        let response = self
            .client
            .put(self.url(&format!("manifests/{reference}")))
            .header("Content-Type", media_type)
            .body(body.to_vec())
            .send()
            .unwrap();
        assert!(
            response.status().is_success(),
            "manifest {reference}: {} {}",
            response.status(),
            response.text().unwrap_or_default()
        );
    }

    /// The manifest `reference` names, as `accept`, if the registry has it.
    pub fn manifest(&self, reference: &str, accept: &str) -> Option<Vec<u8>> {
        let response = self
            .client
            .get(self.url(&format!("manifests/{reference}")))
            .header("Accept", accept)
            .send()
            .ok()
            .filter(|r| r.status().is_success())?;
        Some(response.bytes().ok()?.to_vec())
    }

    /// Publishes, under `tag`, an OCI image manifest of the config
    /// `config` (of `config_type`) and `layers` (media type, bytes), each
    /// uploaded; the manifest's digest.
    pub fn artifact(&self, tag: &str, config_type: &str, config: &[u8], layers: &[(&str, &[u8])]) -> String {
        let descriptor = |media_type: &str, bytes: &[u8]| serde_json::json!({ "mediaType": media_type, "digest": self.blob(bytes), "size": bytes.len() });
        let manifest = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": descriptor(config_type, config),
            "layers": layers.iter().map(|(media_type, bytes)| descriptor(media_type, bytes)).collect::<Vec<_>>(),
        }))
        .unwrap();
        self.put_manifest(tag, OCI_MANIFEST, &manifest);
        format!("sha256:{:x}", Sha256::digest(&manifest))
    }
}
