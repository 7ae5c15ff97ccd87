//! Credentials for a registry, found where container tools keep them: the
//! environment (`WASM_MCP_REGISTRY_USERNAME` and `WASM_MCP_REGISTRY_PASSWORD`,
//! for CI), then the auth files in the order podman reads them
//! (`REGISTRY_AUTH_FILE`, `$XDG_RUNTIME_DIR/containers/auth.json`,
//! `~/.config/containers/auth.json`), then Docker's (`$DOCKER_CONFIG/config.json`
//! or `~/.docker/config.json`). Every one of them has the same `auths` map.
//! Secrets never reach a log: [`Credentials`] prints only where they came from.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result};
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

    /// The credentials for `registry` (`host[:port]`), if any are configured.
    pub fn find(registry: &str) -> Result<Option<Credentials>> {
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
            let entry = auths.auths.iter().find(|(key, _)| registry_of(key) == registry);
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
        }
        Ok(None)
    }
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
