//! Host-wide settings: built-in defaults, overridden by a config file
//! (`--config FILE`), overridden by command-line flags.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::manifest::{LimitSettings, MAX_DURATION_SECS, positive_secs};
use crate::plugins::Limits;
use crate::session::ServerConfig;
use crate::tasks::TaskSettings;

/// What a config file can say. Every key is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Default limits of every plugin call (a manifest can override them);
    /// `max_concurrent_calls` here is per plugin.
    #[serde(default)]
    pub limits: LimitSettings,
    #[serde(default)]
    pub server: ServerSettings,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    pub page_size: Option<usize>,
    pub client_timeout_secs: Option<f64>,
    /// Plugin calls running at once across all plugins.
    pub max_concurrent_calls: Option<u32>,
    /// The longest a task and its result are kept, whatever ttl the client asks for.
    pub max_task_ttl_secs: Option<u64>,
    /// How often to ping the client to check it still answers.
    pub ping_interval_secs: Option<f64>,
    pub cache_dir: Option<PathBuf>,
    /// Largest client message: a stdio line or an HTTP request body, in bytes.
    pub max_message_bytes: Option<usize>,
    /// Requests one session may have in flight at once.
    pub max_pending_requests: Option<usize>,
    /// Tasks one session may hold at once (finished ones count until purged).
    pub max_tasks: Option<usize>,
    /// Log messages one plugin may send one session per second; the excess is dropped and counted.
    pub max_log_rate: Option<u32>,
    /// Seconds running calls get to finish when the server shuts down.
    pub shutdown_grace_secs: Option<f64>,
    /// Resource subscriptions one session may hold.
    pub max_subscriptions: Option<usize>,
}

fn task_settings(max_ttl_secs: Option<u64>, max_tasks: Option<usize>) -> Result<TaskSettings> {
    let defaults = TaskSettings::default();
    let max_tasks = at_least_one(max_tasks, defaults.max_tasks, "max_tasks")?;
    let Some(secs) = max_ttl_secs else {
        return Ok(TaskSettings { max_tasks, ..defaults });
    };
    if secs == 0 || secs > MAX_DURATION_SECS {
        bail!("max task ttl must be at least 1 second and at most {MAX_DURATION_SECS}");
    }
    let max_ttl = Duration::from_secs(secs);
    Ok(TaskSettings {
        max_ttl,
        default_ttl: defaults.default_ttl.min(max_ttl),
        max_tasks,
        ..defaults
    })
}

/// `value` (or `default` when unset), refusing 0.
fn at_least_one<T: Copy + PartialEq + Default>(value: Option<T>, default: T, what: &str) -> Result<T> {
    let value = value.unwrap_or(default);
    if value == T::default() {
        bail!("{what} must be at least 1");
    }
    Ok(value)
}

/// A non-negative number of seconds, at most [`MAX_DURATION_SECS`], or an error naming `what`.
fn non_negative_secs(secs: f64, what: &str) -> Result<Duration> {
    if !(secs.is_finite() && secs >= 0.0 && secs <= MAX_DURATION_SECS as f64) {
        bail!("{what} must be a non-negative number of seconds, at most {MAX_DURATION_SECS}");
    }
    Ok(Duration::from_secs_f64(secs))
}

impl ConfigFile {
    pub fn load(path: &Path) -> Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read config file {}", path.display()))?;
        toml::from_str(&text)
            .map_err(|e| anyhow::anyhow!("invalid config file {}: {}", path.display(), e.to_string().trim_end()))
    }
}

/// The settings the host runs with, all sources merged.
#[derive(Debug, Clone)]
pub struct Settings {
    pub limits: Limits,
    pub max_calls_per_plugin: u32,
    pub max_calls: u32,
    pub server: ServerConfig,
    pub cache_dir: Option<PathBuf>,
}

impl Settings {
    /// Merges `file` and then `flags` (both layered as [`ConfigFile`]) over the defaults.
    pub fn resolve(file: &ConfigFile, flags: &ConfigFile) -> Result<Self> {
        let defaults = Limits::default();
        let limits = flags
            .limits
            .apply(&file.limits.apply(&defaults, "config [limits]")?, "flags")?;
        let pick = |flag: Option<u32>, file: Option<u32>, default: u32, what: &str| -> Result<u32> {
            let value = flag.or(file).unwrap_or(default);
            if value == 0 {
                bail!("{what} must be at least 1");
            }
            Ok(value)
        };
        let client_timeout = flags
            .server
            .client_timeout_secs
            .or(file.server.client_timeout_secs)
            .unwrap_or(300.0);
        let client_timeout = positive_secs(client_timeout, "client timeout")?;
        let defaults_server = ServerConfig::default();
        let page_size = flags
            .server
            .page_size
            .or(file.server.page_size)
            .unwrap_or(defaults_server.page_size);
        if page_size == 0 {
            bail!("page size must be at least 1");
        }
        Ok(Self {
            limits,
            max_calls_per_plugin: pick(
                flags.limits.max_concurrent_calls,
                file.limits.max_concurrent_calls,
                16,
                "max_concurrent_calls per plugin",
            )?,
            max_calls: pick(
                flags.server.max_concurrent_calls,
                file.server.max_concurrent_calls,
                64,
                "max_concurrent_calls overall",
            )?,
            server: ServerConfig {
                page_size,
                client_request_timeout: client_timeout,
                tasks: task_settings(
                    flags.server.max_task_ttl_secs.or(file.server.max_task_ttl_secs),
                    flags.server.max_tasks.or(file.server.max_tasks),
                )?,
                max_message_bytes: at_least_one(
                    flags.server.max_message_bytes.or(file.server.max_message_bytes),
                    defaults_server.max_message_bytes,
                    "max_message_bytes",
                )?,
                max_pending_requests: at_least_one(
                    flags.server.max_pending_requests.or(file.server.max_pending_requests),
                    defaults_server.max_pending_requests,
                    "max_pending_requests",
                )?,
                max_subscriptions: at_least_one(
                    flags.server.max_subscriptions.or(file.server.max_subscriptions),
                    defaults_server.max_subscriptions,
                    "max_subscriptions",
                )?,
                max_log_rate: at_least_one(
                    flags.server.max_log_rate.or(file.server.max_log_rate),
                    defaults_server.max_log_rate,
                    "max_log_rate",
                )?,
                shutdown_grace: match flags.server.shutdown_grace_secs.or(file.server.shutdown_grace_secs) {
                    Some(secs) => non_negative_secs(secs, "shutdown grace")?,
                    None => defaults_server.shutdown_grace,
                },
                ping_interval: flags
                    .server
                    .ping_interval_secs
                    .or(file.server.ping_interval_secs)
                    .map(|secs| positive_secs(secs, "ping interval"))
                    .transpose()?,
                ..defaults_server
            },
            cache_dir: flags.server.cache_dir.clone().or_else(|| file.server.cache_dir.clone()),
        })
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
            ("[server]\nclient_timeout_secs = 1e30", "client timeout"),
            ("[server]\nping_interval_secs = 1e300", "ping interval"),
            ("[server]\nmax_task_ttl_secs = 18446744073709551615", "max task ttl"),
            ("[limits]\ntimeout_secs = 1e20", "timeout_secs"),
        ] {
            let file: ConfigFile = toml::from_str(text).unwrap();
            let err = Settings::resolve(&file, &ConfigFile::default())
                .unwrap_err()
                .to_string();
            assert!(err.contains(what) && err.contains("at most"), "{text}: {err}");
        }
    }
}
