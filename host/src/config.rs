//! The settings the host runs with: the declared defaults (see
//! [`crate::settings`]), overridden by a config file (`--config FILE`),
//! overridden by command-line flags; and the resolved values in the units
//! the host counts in. The config file alone also holds the operator's
//! secrets and their bindings to plugins' outgoing requests (`[secrets.NAME]`,
//! `[bindings.NAME]`: where values come from, never the values; `crate::secrets`
//! checks and serves them).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Deserialize;

use crate::settings::{
    AuthSettings, AuthValues, HttpSettings, HttpValues, LimitSettings, Limits, RegistrySettings, RegistryValues,
    ServerSettings, ServerValues,
};

/// One layer of settings: what a config file says, or the flags. Every key is optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Limits of every plugin call; a plugin's manifest can override them.
    #[serde(default)]
    pub(crate) limits: LimitSettings,
    #[serde(default)]
    pub(crate) server: ServerSettings,
    #[serde(default)]
    pub(crate) http: HttpSettings,
    #[serde(default)]
    pub(crate) auth: AuthSettings,
    #[serde(default)]
    pub(crate) registry: RegistrySettings,
    /// Secrets the operator holds, by name: where each value is read from.
    #[serde(default)]
    pub(crate) secrets: BTreeMap<String, SecretSource>,
    /// Which plugin's requests to which target carry which secret, by name.
    #[serde(default)]
    pub(crate) bindings: BTreeMap<String, Binding>,
    /// The file it was read from, named in errors.
    #[serde(skip)]
    pub(crate) path: Option<PathBuf>,
}

/// `[secrets.NAME]`: where a secret's value is read from, one of the two.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SecretSource {
    /// An environment variable of the host, read at start.
    pub env: Option<String>,
    /// A file (a Kubernetes Secret volume's key file, say), read at start
    /// and again whenever it changes; relative to the config file's folder.
    pub file: Option<PathBuf>,
}

/// `[bindings.NAME]`: a header the host adds to a plugin's outgoing HTTP
/// requests to a target, from a secret or an upstream access token.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Binding {
    /// The plugin whose requests carry it.
    pub plugin: String,
    /// `https://HOST[:PORT][/PATH-PREFIX]`: the scheme, host, port and path prefix it is added for.
    pub target: String,
    /// The request methods it is added to [default: every method].
    #[serde(default)]
    pub methods: Vec<String>,
    /// The secret it carries (or `oauth`).
    pub secret: Option<String>,
    /// `bearer` (`Authorization: Bearer SECRET`, the default), `basic`
    /// (`Authorization: Basic` of `username:SECRET`) or `header` (`header`
    /// set to `template` with `{secret}` replaced).
    pub form: Option<String>,
    pub username: Option<String>,
    pub header: Option<String>,
    pub template: Option<String>,
    /// An access token the host obtains itself (client credentials), instead of `secret`.
    pub oauth: Option<UpstreamOauth>,
    /// Allow an `http://` target: the secret then crosses the network unencrypted.
    #[serde(default)]
    pub plain_http: bool,
}

/// `[bindings.NAME.oauth]`: the client the host is at an authorization
/// server, whose access tokens (client_credentials) it adds as bearer tokens.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UpstreamOauth {
    /// The authorization server's token endpoint.
    pub token_url: String,
    pub client_id: String,
    /// The name of the secret holding the client's secret.
    pub client_secret: String,
    /// The resource indicator (RFC 8707) the tokens are asked for [default: the binding's target].
    pub resource: Option<String>,
    /// The scopes asked for, space-separated [default: none].
    pub scope: Option<String>,
}

impl ConfigFile {
    /// The config file at `path`.
    pub(crate) fn load(path: &Path) -> Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read config file {}", path.display()))?;
        let file: ConfigFile = toml::from_str(&text)
            .map_err(|e| anyhow::anyhow!("invalid config file {}: {}", path.display(), e.to_string().trim_end()))?;
        Ok(ConfigFile {
            path: Some(path.to_owned()),
            ..file
        })
    }
}

/// Every setting, resolved.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    /// `[limits]`: the limits of every plugin call.
    pub limits: Limits,
    /// `[server]`: how the server treats its clients.
    pub server: ServerValues,
    /// `[http]`: the Streamable HTTP transport.
    pub http: HttpValues,
    /// `[auth]`: OAuth authorization of the HTTP transport.
    pub auth: AuthValues,
    /// `[registry]`: plugins pulled from OCI registries.
    pub registry: RegistryValues,
    /// `[secrets.NAME]`: where each secret's value is read from (from the config file only).
    pub secrets: BTreeMap<String, SecretSource>,
    /// `[bindings.NAME]`: which plugin's requests carry which secret (from the config file only).
    pub bindings: BTreeMap<String, Binding>,
}

impl Settings {
    /// The defaults, then the config file at `config` (if any), then `flags`.
    pub(crate) fn load(config: Option<&Path>, flags: &ConfigFile) -> Result<Self> {
        let file = match config {
            Some(path) => ConfigFile::load(path)?,
            None => ConfigFile::default(),
        };
        Self::resolve(&file, flags)
    }

    /// The defaults, then `file`, then `flags`; an invalid value is an error
    /// naming the setting and where it was given.
    ///
    /// # Errors
    ///
    /// When a value breaks its setting's rule; the error names the setting
    /// and the layer (the config file or the command line) that gave it.
    pub fn resolve(file: &ConfigFile, flags: &ConfigFile) -> Result<Self> {
        let mut settings = Self::default();
        let file_origin = match &file.path {
            Some(path) => format!("the config file {}", path.display()),
            None => "the config file".to_owned(),
        };
        for (layer, origin) in [(file, file_origin.as_str()), (flags, "the command line")] {
            settings = settings
                .apply(layer)
                .map_err(|e| anyhow::anyhow!("{e} (in {origin})"))?;
        }
        // A secret's file is relative to the config file's folder.
        let folder = file.path.as_deref().and_then(Path::parent).unwrap_or(Path::new(""));
        settings.secrets = file
            .secrets
            .iter()
            .map(|(name, source)| {
                let file = source.file.as_ref().map(|path| folder.join(path));
                (name.clone(), SecretSource { file, ..source.clone() })
            })
            .collect();
        settings.bindings = file.bindings.clone();
        Ok(settings)
    }

    fn apply(&self, layer: &ConfigFile) -> Result<Self> {
        Ok(Self {
            limits: self.limits.apply(&layer.limits)?,
            server: self.server.apply(&layer.server)?,
            http: self.http.apply(&layer.http)?,
            auth: self.auth.apply(&layer.auth)?,
            registry: self.registry.apply(&layer.registry)?,
            ..self.clone()
        })
    }
}

impl ServerValues {
    /// How long a plugin waits for the client to answer sampling, elicitation or roots.
    pub fn client_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.client_timeout_secs)
    }

    /// How long running calls may take to finish when the server shuts down.
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs_f64(self.shutdown_grace_secs)
    }

    /// How often the client is pinged to check it still answers; `None`: never.
    pub fn ping_interval(&self) -> Option<Duration> {
        self.ping_interval_secs.map(Duration::from_secs_f64)
    }

    /// The longest a task and its result are kept.
    pub fn max_task_ttl(&self) -> Duration {
        Duration::from_secs(self.max_task_ttl_secs)
    }
}

impl HttpValues {
    /// Sessions with no connection and no request for this long end.
    pub fn session_idle_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.session_idle_timeout_secs)
    }

    /// Close a request's stream (not the request) after this long, so the
    /// client polls for the rest with `Last-Event-ID`.
    pub fn sse_poll_after(&self) -> Option<Duration> {
        self.sse_poll_after_ms.map(Duration::from_millis)
    }

    /// The reconnection delay sent to clients in the `retry` field.
    pub fn sse_retry(&self) -> Duration {
        Duration::from_millis(self.sse_retry_ms)
    }

    /// How long a connection may take to send a request head (also its idle keep-alive bound).
    pub fn header_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.header_timeout_secs)
    }

    /// How long a request body may take to arrive.
    pub fn body_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.body_timeout_secs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (manifest_toml fuzz target, which also reads config files):
    /// durations too long for the clock panicked at start or on first use.
    #[test]
    fn durations_beyond_what_the_host_can_count_are_refused() {
        for (text, what) in [
            ("[server]\nclient_timeout_secs = 1e30", "client_timeout_secs"),
            ("[server]\nping_interval_secs = 1e300", "ping_interval_secs"),
            (
                "[server]\nmax_task_ttl_secs = 18446744073709551615",
                "max_task_ttl_secs",
            ),
            ("[limits]\ntimeout_secs = 1e20", "timeout_secs"),
            ("[http]\nsse_retry_ms = 18446744073709551615", "sse_retry_ms"),
        ] {
            let file: ConfigFile = toml::from_str(text).unwrap();
            let err = Settings::resolve(&file, &ConfigFile::default())
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(what) && err.contains("at most") && err.contains("the config file"),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn flags_override_the_file_which_overrides_the_defaults() {
        let file: ConfigFile = toml::from_str("[server]\npage_size = 7\nmax_tasks = 9\n[limits]\nfuel = 5").unwrap();
        let flags = ConfigFile {
            server: ServerSettings {
                page_size: Some(3),
                ..ServerSettings::default()
            },
            ..ConfigFile::default()
        };
        let settings = Settings::resolve(&file, &flags).unwrap();
        assert_eq!(settings.server.page_size, 3);
        assert_eq!(settings.server.max_tasks, 9);
        assert_eq!(settings.limits.fuel, 5);
        assert_eq!(
            settings.server.max_pending_requests,
            ServerValues::default().max_pending_requests
        );
    }

    #[test]
    fn a_secret_file_is_relative_to_the_config_file() {
        let mut file: ConfigFile = toml::from_str(
            "[secrets.a]\nfile = \"keys/a\"\n[secrets.b]\nfile = \"/run/b\"\n[secrets.c]\nenv = \"C\"\n",
        )
        .unwrap();
        file.path = Some(PathBuf::from("/etc/wasm-mcp/host.toml"));
        let settings = Settings::resolve(&file, &ConfigFile::default()).unwrap();
        let file_of = |name: &str| settings.secrets[name].file.clone();
        assert_eq!(file_of("a"), Some(PathBuf::from("/etc/wasm-mcp/keys/a")));
        assert_eq!(file_of("b"), Some(PathBuf::from("/run/b")));
        assert_eq!(file_of("c"), None);
    }

    #[test]
    fn zero_counts_are_refused_naming_the_flag() {
        let flags = ConfigFile {
            server: ServerSettings {
                max_tasks: Some(0),
                ..ServerSettings::default()
            },
            ..ConfigFile::default()
        };
        let err = Settings::resolve(&ConfigFile::default(), &flags)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "max_tasks (--max-tasks) must be at least 1 (in the command line)");
    }
}
