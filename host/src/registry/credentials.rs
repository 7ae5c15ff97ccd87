//! Credentials for a registry, found where container tools keep them: the
//! environment (`WASM_MCP_REGISTRY_USERNAME` and `WASM_MCP_REGISTRY_PASSWORD`,
//! for CI), then the auth files in the order podman reads them
//! (`REGISTRY_AUTH_FILE`, `$XDG_RUNTIME_DIR/containers/auth.json`,
//! `~/.config/containers/auth.json`), then Docker's (`$DOCKER_CONFIG/config.json`
//! or `~/.docker/config.json`). Every one of them has the same `auths` map,
//! and may name credential helpers instead (`credHelpers` for one registry,
//! `credsStore` for all): `docker-credential-NAME get` is run, as Docker and
//! podman run it, with the registry on its stdin. Secrets never reach a log:
//! [`Credentials`] prints only where they came from.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use base64::Engine;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;

/// The variables CI sets; both, or neither.
pub const USERNAME_VARIABLE: &str = "WASM_MCP_REGISTRY_USERNAME";
pub const PASSWORD_VARIABLE: &str = "WASM_MCP_REGISTRY_PASSWORD";

/// A user and password for one registry, and where they were found.
#[derive(Clone)]
pub struct Credentials {
    username: String,
    password: String,
    /// The variables or the file they came from, for messages.
    pub source: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "credentials of {} from {}", self.username, self.source)
    }
}

impl Credentials {
    /// What the client authenticates with.
    pub fn auth(credentials: &Option<Credentials>) -> RegistryAuth {
        match credentials {
            Some(c) => RegistryAuth::Basic(c.username.clone(), c.password.clone()),
            None => RegistryAuth::Anonymous,
        }
    }

    /// The credentials for `registry` (`host[:port]`), if any are configured,
    /// looked up on the blocking pool (files are read, helpers run).
    ///
    /// # Errors
    /// An auth file that cannot be read or parsed, or a credential helper
    /// that is missing, fails or answers nonsense.
    pub async fn find(registry: &str) -> Result<Option<Credentials>> {
        let registry = registry.to_owned();
        tokio::task::spawn_blocking(move || Self::find_now(&registry)).await?
    }

    fn find_now(registry: &str) -> Result<Option<Credentials>> {
        if let (Ok(username), Ok(password)) = (std::env::var(USERNAME_VARIABLE), std::env::var(PASSWORD_VARIABLE)) {
            return Ok(Some(Credentials {
                username,
                password,
                source: format!("the environment ({USERNAME_VARIABLE}, {PASSWORD_VARIABLE})"),
            }));
        }
        for file in auth_files() {
            let text = match std::fs::read_to_string(&file) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).with_context(|| format!("cannot read the auth file {}", file.display())),
            };
            let auths: AuthFile = serde_json::from_str(&text)
                .map_err(|e| anyhow::anyhow!("the auth file {} is not valid: {e}", file.display()))?;
            let helper = auths.cred_helpers.iter().find(|(key, _)| registry_of(key) == registry);
            if let Some((_, helper)) = helper {
                return from_helper(helper, registry, &file);
            }
            let entry = auths
                .auths
                .iter()
                .find(|(key, entry)| registry_of(key) == registry && !entry.is_placeholder());
            if let Some((_, entry)) = entry {
                let (username, password) = entry
                    .user_and_password()
                    .with_context(|| format!("the auth file {}: the entry of {registry}", file.display()))?;
                return Ok(Some(Credentials {
                    username,
                    password,
                    source: file.display().to_string(),
                }));
            }
            if let Some(store) = &auths.creds_store
                && let Some(credentials) = from_helper(store, registry, &file)?
            {
                return Ok(Some(credentials));
            }
        }
        Ok(None)
    }
}

/// How long a credential helper may take (one that prompts is waited for this long).
const HELPER_TIMEOUT: Duration = Duration::from_secs(30);

/// What the credential helper `docker-credential-NAME` (named in `file`)
/// holds for `registry`: none when it says it has nothing for it.
fn from_helper(name: &str, registry: &str, file: &Path) -> Result<Option<Credentials>> {
    let program = format!("docker-credential-{name}");
    let named = || format!("the credential helper {program} (named in {})", file.display());
    let mut child = Command::new(&program)
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {}: is it installed and on PATH?", named()))?;
    // The registry is one short line: it fits the pipe, so writing cannot block.
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(registry.as_bytes())
        .with_context(|| format!("cannot ask {}", named()))?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > HELPER_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            bail!("{} did not answer within {} s", named(), HELPER_TIMEOUT.as_secs());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    child
        .stdout
        .take()
        .expect("stdout is piped")
        .read_to_string(&mut stdout)?;
    child
        .stderr
        .take()
        .expect("stderr is piped")
        .read_to_string(&mut stderr)?;
    if !status.success() {
        // The helpers' own words for "nothing stored for it".
        if stdout.contains("credentials not found") || stderr.contains("credentials not found") {
            return Ok(None);
        }
        bail!("{} failed for {registry} ({status}): {}", named(), stderr.trim());
    }
    let answer: HelperAnswer = serde_json::from_str(&stdout).map_err(|_| {
        anyhow::anyhow!(
            "{} did not answer {registry} with {{\"Username\", \"Secret\"}}",
            named()
        )
    })?;
    Ok(Some(Credentials {
        username: answer.username,
        password: answer.secret,
        source: named(),
    }))
}

/// What `docker-credential-NAME get` prints.
#[derive(Deserialize)]
struct HelperAnswer {
    #[serde(rename = "Username")]
    username: String,
    #[serde(rename = "Secret")]
    secret: String,
}

/// Where credentials may be, in the order they are read.
fn auth_files() -> Vec<PathBuf> {
    let var = |name: &str| std::env::var_os(name).map(PathBuf::from);
    let home = var("HOME");
    let mut files = Vec::new();
    files.extend(var("REGISTRY_AUTH_FILE"));
    files.extend(var("XDG_RUNTIME_DIR").map(|dir| dir.join("containers/auth.json")));
    files.extend(
        var("XDG_CONFIG_HOME")
            .or_else(|| home.as_ref().map(|home| home.join(".config")))
            .map(|dir| dir.join("containers/auth.json")),
    );
    files.extend(
        var("DOCKER_CONFIG")
            .or_else(|| home.as_ref().map(|home| home.join(".docker")))
            .map(|dir| dir.join("config.json")),
    );
    files
}

/// The registry an `auths` key names: Docker writes `https://host/v1/` for
/// some, `host` for others.
fn registry_of(key: &str) -> &str {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    key.split('/').next().unwrap_or(key)
}

#[derive(Deserialize)]
struct AuthFile {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
    /// The credential helper of each registry.
    #[serde(default, rename = "credHelpers")]
    cred_helpers: BTreeMap<String, String>,
    /// The credential helper of every registry the file has no entry for.
    #[serde(default, rename = "credsStore")]
    creds_store: Option<String>,
}

#[derive(Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

impl AuthEntry {
    /// An entry `docker login` leaves empty when a helper holds the secret.
    fn is_placeholder(&self) -> bool {
        self.auth.as_deref().is_none_or(str::is_empty) && self.username.is_none()
    }

    fn user_and_password(&self) -> Result<(String, String)> {
        if let (Some(username), Some(password)) = (&self.username, &self.password) {
            return Ok((username.clone(), password.clone()));
        }
        let encoded = self
            .auth
            .as_deref()
            .context("it has neither \"auth\" nor \"username\" and \"password\"")?;
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .context("its \"auth\" is not base64 of user:password")?;
        let (username, password) = decoded
            .split_once(':')
            .context("its \"auth\" is not base64 of user:password")?;
        Ok((username.to_owned(), password.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_auths_entry_gives_its_user_and_password() {
        let file: AuthFile = serde_json::from_str(
            r#"{"auths": {"https://127.0.0.1:5000/v1/": {"auth": "dXNlcjpzZWNyZXQ6d2l0aC1jb2xvbg=="}}}"#,
        )
        .unwrap();
        let (key, entry) = file.auths.iter().next().unwrap();
        assert_eq!(registry_of(key), "127.0.0.1:5000");
        assert_eq!(
            entry.user_and_password().unwrap(),
            ("user".to_owned(), "secret:with-colon".to_owned())
        );
    }
}
