//! The plugin manifest, `NAME.toml` beside `NAME.wasm`: what the operator
//! grants the plugin (directories, environment, network, key-value buckets), the limits its calls
//! run under, and how its names are exposed. No manifest grants nothing.
//!
//! Parsing is strict: an unknown key or an invalid value is an error that
//! names the key and the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::limits::Limits;
pub use crate::settings::LimitSettings;

mod exposure;
mod keyvalue;
mod network;
mod scopes;
pub use exposure::{EntryKind, Patterns};
pub use keyvalue::{BucketGrant, BucketScope, KeyValueSettings, default_bucket_bound};
pub use network::{HostPattern, IpNet, NetRule, NetworkSettings, PortRange, path_under};
pub use scopes::{ScopeRules, is_scope_token};

/// `base` with what `layer` sets, each value checked; the error names `origin` and the key.
fn apply_limits(base: &Limits, layer: &LimitSettings, origin: &str) -> Result<Limits> {
    base.apply(layer).map_err(|e| anyhow::anyhow!("{origin}: {e}"))
}

/// Whether a tool may, or must, be called as a task.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupportSetting {
    Forbidden,
    Optional,
    Required,
}

/// Settings for one tool, by the plugin's own tool name.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ToolSettings {
    /// Overrides the task support the plugin declares.
    pub task_support: Option<TaskSupportSetting>,
    /// Limits for calls of this tool, over the plugin's.
    #[serde(default)]
    pub(crate) limits: LimitSettings,
}

/// Who may keep a cached copy of a result: any client (`public`) or only the
/// one that asked (`private`).
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    Public,
    #[default]
    Private,
}

/// Settings for one resource or resource template, by its URI (or URI template).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ResourceSettings {
    /// How long a client may reuse a `resources/read` result (2026-07-28 `ttlMs`); 0 by default.
    #[serde(default)]
    pub ttl_ms: u64,
    /// Who may reuse it (`cacheScope`); `private` by default.
    #[serde(default)]
    pub cache_scope: CacheScope,
}

/// A host directory the plugin may see.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DirectoryGrant {
    /// The host path; relative paths are relative to the manifest's folder.
    pub host: PathBuf,
    /// Where the plugin sees it, e.g. "/docs".
    pub guest: String,
    /// Whether the plugin may create, change and delete files in it.
    #[serde(default)]
    pub writable: bool,
}

/// An environment variable's value: literal, or copied from the host's environment.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum EnvValue {
    Literal(String),
    FromHost { from_host: String },
}

/// Everything `NAME.toml` can say.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Exposes every tool and prompt of the plugin as `<prefix>_<name>`.
    pub(crate) prefix: Option<String>,
    /// Limits for every call of this plugin.
    #[serde(default)]
    pub(crate) limits: LimitSettings,
    /// Per-tool settings, by the plugin's own tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolSettings>,
    /// Per-resource settings, by the URI of a resource or the URI template of a template.
    #[serde(default)]
    pub(crate) resources: BTreeMap<String, ResourceSettings>,
    /// Host directories the plugin may read (and write, where `writable`).
    #[serde(default)]
    pub(crate) directories: Vec<DirectoryGrant>,
    /// Environment variables the plugin sees.
    #[serde(default)]
    pub(crate) env: BTreeMap<String, EnvValue>,
    /// Addresses the plugin may connect to.
    #[serde(default)]
    pub(crate) network: NetworkSettings,
    /// The `wasi:keyvalue` buckets the plugin may open.
    #[serde(default)]
    pub(crate) keyvalue: KeyValueSettings,
    /// When a list is present, only the entries it matches are served.
    #[serde(default)]
    pub(crate) allow: Patterns,
    /// Entries never served, whatever `allow` says.
    #[serde(default)]
    pub(crate) deny: Patterns,
    /// The OAuth scopes a caller needs for each entry (with `--auth-issuer`).
    #[serde(default)]
    pub scopes: ScopeRules,
}

impl Manifest {
    /// Reads the manifest beside `wasm` (`NAME.toml`); none means no grants.
    pub(crate) fn for_plugin(wasm: &Path) -> Result<(Manifest, Option<PathBuf>)> {
        let path = wasm.with_extension("toml");
        if !path.exists() {
            return Ok((Manifest::default(), None));
        }
        let manifest = Manifest::load(&path)?;
        Ok((manifest, Some(path)))
    }

    /// Reads and validates the manifest at `path`.
    pub(crate) fn load(path: &Path) -> Result<Manifest> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read manifest {}", path.display()))?;
        Self::parse(&text, path)
    }

    /// Parses and validates the text of the manifest at `path` (named in
    /// errors; relative grant directories are taken from beside it).
    ///
    /// # Errors
    ///
    /// When it is not TOML of the manifest's shape, or a section breaks its
    /// rules (a pattern, a scope, a bucket, a prefix, a limit, a directory, an
    /// environment variable); the error names the file and what to fix.
    pub fn parse(text: &str, path: &Path) -> Result<Manifest> {
        let mut manifest: Manifest = toml::from_str(text)
            .map_err(|e| anyhow::anyhow!("invalid manifest {}: {}", path.display(), e.to_string().trim_end()))?;
        manifest.validate(path)?;
        let base = path.parent().unwrap_or(Path::new("."));
        for dir in &mut manifest.directories {
            if dir.host.is_relative() {
                dir.host = base.join(&dir.host);
            }
        }
        if let Some(ca_file) = &mut manifest.network.ca_file
            && ca_file.is_relative()
        {
            *ca_file = base.join(&*ca_file);
        }
        Ok(manifest)
    }

    fn validate(&self, path: &Path) -> Result<()> {
        let file = path.display();
        for (section, patterns) in [("allow", &self.allow), ("deny", &self.deny)] {
            for (key, pattern) in patterns.all() {
                if let Err(why) = exposure::check(pattern) {
                    bail!("invalid manifest {file}: [{section}] {key}: {why}");
                }
            }
        }
        if let Err(why) = self.scopes.check() {
            bail!("invalid manifest {file}: {why}");
        }
        if let Err(why) = self.keyvalue.check() {
            bail!("invalid manifest {file}: {why}");
        }
        if let Some(prefix) = &self.prefix
            && (prefix.is_empty() || !prefix.chars().all(crate::protocol::name_char))
        {
            bail!("invalid manifest {file}: prefix {prefix:?} may only contain letters, digits, '_', '-' and '.'");
        }
        if self.limits.max_concurrent_calls == Some(0) {
            bail!("invalid manifest {file}: limits.max_concurrent_calls must be at least 1");
        }
        if let Some((tool, _)) = self.tools.iter().find(|(_, t)| t.limits.max_concurrent_calls.is_some()) {
            bail!(
                "invalid manifest {file}: tools.{tool}.limits.max_concurrent_calls: set max_concurrent_calls for the whole plugin, in [limits]"
            );
        }
        for dir in &self.directories {
            if !dir.guest.starts_with('/') {
                bail!(
                    "invalid manifest {file}: directories.guest {:?} must be an absolute guest path such as \"/data\"",
                    dir.guest
                );
            }
        }
        for (name, value) in &self.env {
            if name.is_empty() || name.contains('=') {
                bail!("invalid manifest {file}: env key {name:?} is not a valid variable name");
            }
            if let EnvValue::FromHost { from_host } = value
                && from_host.is_empty()
            {
                bail!("invalid manifest {file}: env.{name}.from_host must name a host variable");
            }
        }
        Ok(())
    }

    /// Why the operator does not serve the plugin's `name` (of `kind`), if
    /// they do not: `[deny]` matches it, or `[allow]` lists that kind and
    /// does not match it.
    pub(crate) fn hides(&self, kind: EntryKind, name: &str) -> Option<String> {
        exposure::hidden_by(&self.allow, &self.deny, kind, name)
    }

    /// The scopes a caller needs for the plugin's entry `name` of `kind`.
    pub(crate) fn required_scopes(&self, kind: EntryKind, name: &str) -> Vec<String> {
        self.scopes.required(kind, name)
    }

    /// The limits of every call of this plugin, over the host's defaults.
    ///
    /// # Errors
    ///
    /// When a value of its `[limits]` breaks the setting's rule.
    pub fn plugin_limits(&self, defaults: &Limits) -> Result<Limits> {
        apply_limits(defaults, &self.limits, "[limits]")
    }

    /// The limits of calls to `tool`, over the plugin's.
    ///
    /// # Errors
    ///
    /// When a value of its `[tools.TOOL.limits]` breaks the setting's rule.
    pub fn tool_limits(&self, tool: &str, plugin: &Limits) -> Result<Limits> {
        match self.tools.get(tool) {
            Some(settings) => apply_limits(plugin, &settings.limits, &format!("[tools.{tool}.limits]")),
            None => Ok(plugin.clone()),
        }
    }

    /// The environment the plugin sees, resolved now from literals and the host.
    pub(crate) fn resolved_env(&self) -> Vec<(String, String)> {
        self.env
            .iter()
            .filter_map(|(name, value)| match value {
                EnvValue::Literal(v) => Some((name.clone(), v.clone())),
                EnvValue::FromHost { from_host } => match std::env::var(from_host) {
                    Ok(v) => Some((name.clone(), v)),
                    Err(_) => {
                        tracing::warn!(variable = %from_host, "env.{name} takes its value from a host variable that is not set; leaving it out");
                        None
                    }
                },
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::settings::MAX_DURATION_SECS;

    fn parse(text: &str) -> Result<Manifest> {
        let dir = std::env::temp_dir().join(format!("wasm-mcp-manifest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("p{}.toml", text.len()));
        std::fs::write(&path, text).unwrap();
        Manifest::load(&path)
    }

    #[test]
    fn a_full_manifest_parses() {
        let m = parse(
            r#"
            prefix = "docs"
            [limits]
            fuel = 1000
            timeout_secs = 2.5
            memory_mib = 64
            max_concurrent_calls = 2
            [tools.slow]
            task_support = "required"
            limits = { timeout_secs = 600 }
            [resources."docs://index"]
            ttl_ms = 60000
            cache_scope = "public"
            [resources."docs://{path}"]
            ttl_ms = 5000
            [[directories]]
            host = "data"
            guest = "/data"
            [env]
            LANG = "C"
            TOKEN = { from_host = "HOME" }
            [network]
            allow = ["api.example.com:443", "127.0.0.1:8080", "[::1]:*", "10.0.0.0/8:80-90", "https://api.github.com"]
            ca_file = "certs/ca.pem"
            "#,
        )
        .unwrap();
        assert_eq!(m.prefix.as_deref(), Some("docs"));
        assert_eq!(m.network.allow.len(), 5);
        assert!(m.network.allow[4].tls_only && !m.network.allow[0].tls_only);
        let ca_file = m.network.ca_file.as_ref().unwrap();
        assert!(
            ca_file.is_absolute() && ca_file.ends_with("certs/ca.pem"),
            "{ca_file:?}"
        );
        assert_eq!(
            m.network.allow[1].ports,
            PortRange {
                first: 8080,
                last: 8080
            }
        );
        assert_eq!(m.tools["slow"].task_support, Some(TaskSupportSetting::Required));
        assert_eq!(
            m.resources["docs://index"],
            ResourceSettings {
                ttl_ms: 60000,
                cache_scope: CacheScope::Public
            }
        );
        assert_eq!(m.resources["docs://{path}"].cache_scope, CacheScope::Private);
        assert!(m.directories[0].host.is_absolute());
        let limits = m.plugin_limits(&Limits::default()).unwrap();
        assert_eq!(limits.fuel, 1000);
        assert_eq!(limits.memory_bytes(), 64 << 20);
        assert_eq!(
            m.tool_limits("slow", &limits).unwrap().deadline(),
            Duration::from_secs(600)
        );
        assert_eq!(m.tool_limits("slow", &limits).unwrap().fuel, 1000);
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let err = parse("[limits]\nfuell = 3\n").unwrap_err().to_string();
        assert!(err.contains("fuell") && err.contains(".toml"), "{err}");
        let err = parse("[[directories]]\nhost = \"/x\"\nguest = \"rel\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("guest"), "{err}");
        let err = parse("[network]\nallow = [\"example.com\"]\n").unwrap_err().to_string();
        assert!(
            err.contains("network.allow") && err.contains("example.com") && err.contains(".toml"),
            "{err}"
        );
        let err = parse("[resources.\"a://b\"]\ncache_scope = \"shared\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("shared") && err.contains("public"), "{err}");
        let err = parse("[network]\nalow = []\n").unwrap_err().to_string();
        assert!(err.contains("alow") && err.contains(".toml"), "{err}");
        let err = parse("[limits]\ntimeout_secs = -1\n")
            .unwrap()
            .plugin_limits(&Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("timeout_secs"), "{err}");
    }

    /// Regression (manifest_toml fuzz target): a timeout too long for a
    /// `Duration` panicked, and one too long for the clock a deadline is added
    /// to was accepted and panicked on every call; an output limit beyond the
    /// address space wrapped around.
    #[test]
    fn limits_beyond_what_the_host_can_count_are_refused() {
        for (text, key) in [
            ("timeout_secs = 1e30", "timeout_secs"),
            ("timeout_secs = 1e15", "timeout_secs"),
            ("max_output_kib = 18014398509481984", "max_output_kib"),
        ] {
            let err = parse(&format!("[limits]\n{text}\n"))
                .unwrap()
                .plugin_limits(&Limits::default())
                .unwrap_err()
                .to_string();
            assert!(err.contains(key) && err.contains("at most"), "{text}: {err}");
        }
        let year = parse("[limits]\ntimeout_secs = 31536000\n")
            .unwrap()
            .plugin_limits(&Limits::default())
            .unwrap();
        assert_eq!(year.deadline(), Duration::from_secs(MAX_DURATION_SECS));
    }
}
