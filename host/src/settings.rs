//! Every setting of the host, declared once: its doc, its command-line flag,
//! its key and section in the config file, its default and the check its
//! values must pass. The flag parsers (clap), the config-file sections (serde),
//! the resolved values and the hint that tells a user how to change a setting
//! are all derived from these declarations.
//!
//! To add a setting, add one line to a section below; the flag, the key and
//! the `[default: …]` of `--help` follow. Then use the resolved value where it
//! is needed and add it to the README's tables (a test checks they list every
//! setting).

use std::path::PathBuf;

use anyhow::{Result, bail};

/// The longest timeout or ttl the host accepts: a year, in seconds. Anything
/// longer would overflow the clock it is added to.
pub const MAX_DURATION_SECS: u64 = 365 * 24 * 3600;

/// The most linear memory any call may be granted, in MiB.
pub const MAX_MEMORY_MIB: usize = 4096;

/// Where a setting is written: its flag, and its key under a section of the config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    pub flag: &'static str,
    pub section: &'static str,
    pub key: &'static str,
}

impl Setting {
    /// How a user changes it, e.g. "--max-tasks, or max_tasks under [server]
    /// in the config file"; the plugin's manifest can set `[limits]` too.
    pub fn hint(&self) -> String {
        let manifest = if self.section == "limits" {
            " or the plugin's manifest"
        } else {
            ""
        };
        format!(
            "--{}, or {} under [{}] in the config file{manifest}",
            self.flag, self.key, self.section
        )
    }

    /// The name an error about a value gives it: the key and the flag.
    pub(crate) fn name(&self) -> String {
        format!("{} (--{})", self.key, self.flag)
    }
}

// The checks a setting's values pass; each names the setting when it fails.

/// Any value.
fn any<T>(value: T, _: &Setting) -> Result<T> {
    Ok(value)
}

/// A count or a size: 0 is refused.
fn at_least_one<T: PartialEq + Default>(value: T, setting: &Setting) -> Result<T> {
    if value == T::default() {
        bail!("{} must be at least 1", setting.name());
    }
    Ok(value)
}

/// A positive number of seconds, at most [`MAX_DURATION_SECS`].
fn positive_secs(secs: f64, setting: &Setting) -> Result<f64> {
    if !(secs.is_finite() && secs > 0.0 && secs <= MAX_DURATION_SECS as f64) {
        bail!(
            "{} must be a positive number of seconds, at most {MAX_DURATION_SECS}",
            setting.name()
        );
    }
    Ok(secs)
}

/// A non-negative number of seconds, at most [`MAX_DURATION_SECS`].
fn non_negative_secs(secs: f64, setting: &Setting) -> Result<f64> {
    if !(secs.is_finite() && secs >= 0.0 && secs <= MAX_DURATION_SECS as f64) {
        bail!(
            "{} must be a non-negative number of seconds, at most {MAX_DURATION_SECS}",
            setting.name()
        );
    }
    Ok(secs)
}

/// Whole seconds, from 1 to [`MAX_DURATION_SECS`].
fn whole_secs(secs: u64, setting: &Setting) -> Result<u64> {
    if secs == 0 || secs > MAX_DURATION_SECS {
        bail!(
            "{} must be at least 1 second and at most {MAX_DURATION_SECS}",
            setting.name()
        );
    }
    Ok(secs)
}

/// Milliseconds, at most [`MAX_DURATION_SECS`] seconds' worth (0: at once).
fn millis(ms: u64, setting: &Setting) -> Result<u64> {
    if ms / 1000 > MAX_DURATION_SECS {
        bail!(
            "{} must be at most {MAX_DURATION_SECS} seconds' worth of milliseconds",
            setting.name()
        );
    }
    Ok(ms)
}

/// MiB of linear memory, from 1 to [`MAX_MEMORY_MIB`].
fn memory_mib(mib: usize, setting: &Setting) -> Result<usize> {
    if mib == 0 || mib > MAX_MEMORY_MIB {
        bail!("{} must be between 1 and {MAX_MEMORY_MIB}", setting.name());
    }
    Ok(mib)
}

/// KiB that fit the address space in bytes.
fn kib(kib: usize, setting: &Setting) -> Result<usize> {
    if kib == 0 || kib > usize::MAX >> 10 {
        bail!(
            "{} must be greater than 0, at most {}",
            setting.name(),
            usize::MAX >> 10
        );
    }
    Ok(kib)
}

/// The help text of a flag: its doc, and its default when it has one.
fn help(doc: &str, default: Option<String>) -> String {
    let doc = doc.trim().trim_end_matches('.');
    match default {
        Some(default) => format!("{doc} [default: {default}]"),
        None => doc.to_owned(),
    }
}

/// The resolved type of a setting: optional when it has no default.
macro_rules! resolved_type {
    ($ty:ty, none) => { Option<$ty> };
    ($ty:ty, $default:tt) => { $ty };
}

/// The default a setting resolves to.
macro_rules! default_value {
    ($ty:ty, none) => {
        None
    };
    ($ty:ty, $default:tt) => {{
        let default: $ty = $default;
        default
    }};
}

/// The default `--help` shows.
macro_rules! default_text {
    ($ty:ty, none) => {
        None
    };
    ($ty:ty, $default:tt) => {
        Some(default_value!($ty, $default).to_string())
    };
}

/// A value given in a layer, checked, as the resolved type.
macro_rules! checked {
    ($value:expr, $check:path, $setting:expr, none) => {
        Some($check($value, $setting)?)
    };
    ($value:expr, $check:path, $setting:expr, $default:tt) => {
        $check($value, $setting)?
    };
}

/// Runs a setting's check on its default (for the test that every default passes).
#[cfg(test)]
macro_rules! check_default {
    ($ty:ty, $check:path, $setting:expr, none) => {};
    ($ty:ty, $check:path, $setting:expr, $default:tt) => {
        $check(default_value!($ty, $default), $setting)?;
    };
}

macro_rules! settings {
    ($(
        $(#[doc = $section_doc:literal])*
        [$section:ident] $Layer:ident => $Values:ident {
            $(
                #[doc = $doc:literal]
                $key:ident: $ty:ty = $default:tt, $check:ident, flag $flag:literal $(, $arg:ident = $arg_value:expr)*;
            )*
        }
    )*) => {$(
        $(#[doc = $section_doc])*
        ///
        /// As a config-file section or as flags: every setting optional (unset inherits).
        #[derive(Debug, Clone, Default, PartialEq, serde::Deserialize, clap::Args)]
        #[serde(deny_unknown_fields)]
        pub struct $Layer {
            $(
                #[arg(id = $flag, long = $flag, help = help($doc, default_text!($ty, $default)) $(, $arg = $arg_value)*)]
                pub $key: Option<$ty>,
            )*
        }

        $(#[doc = $section_doc])*
        ///
        /// Resolved: every setting with its value.
        #[derive(Debug, Clone, PartialEq)]
        pub struct $Values {
            $(
                #[doc = $doc]
                pub $key: resolved_type!($ty, $default),
            )*
        }

        impl Default for $Values {
            fn default() -> Self {
                Self { $($key: default_value!($ty, $default),)* }
            }
        }

        impl $Values {
            /// These values with what `layer` sets, each checked.
            ///
            /// # Errors
            ///
            /// When a value `layer` sets breaks its setting's rule; the error
            /// names the setting.
            pub fn apply(&self, layer: &$Layer) -> Result<Self> {
                let mut values = self.clone();
                $(
                    if let Some(value) = layer.$key.clone() {
                        values.$key = checked!(value, $check, &$section::$key, $default);
                    }
                )*
                Ok(values)
            }

            /// Runs every setting's check on its default.
            ///
            /// # Errors
            ///
            /// The first default that fails its own check.
            #[cfg(test)]
            pub fn check_defaults() -> Result<()> {
                $( check_default!($ty, $check, &$section::$key, $default); )*
                Ok(())
            }
        }

        /// Where each setting of the section is written (for hints).
        #[allow(non_upper_case_globals)]
        pub mod $section {
            use super::Setting;
            $(
                #[doc = $doc]
                pub const $key: Setting = Setting { flag: $flag, section: stringify!($section), key: stringify!($key) };
            )*
            /// Every setting of the section (for the test that the README shows them).
            #[cfg(test)]
            pub const ALL: &[Setting] = &[$($key),*];
        }
    )*};
}

settings! {
    /// The limits of every plugin call; a plugin's manifest can set its own
    /// (`[limits]`, and `[tools.NAME.limits]` for one tool).
    [limits] LimitSettings => Limits {
        /// Fuel (instructions) one plugin call may use.
        fuel: u64 = 20_000_000_000, at_least_one, flag "fuel", value_name = "N";
        /// Seconds of wall-clock time one plugin call may run; time waiting on the client is not counted.
        timeout_secs: f64 = 30.0, positive_secs, flag "timeout", value_name = "SECS";
        /// MiB one plugin call's linear memory may grow to.
        memory_mib: usize = 256, memory_mib, flag "memory-mib", value_name = "MIB";
        /// KiB of output one plugin call may return.
        max_output_kib: usize = 8192, kib, flag "max-output-kib", value_name = "KIB";
        /// Calls of one plugin running at once; more wait their turn.
        max_concurrent_calls: u32 = 16, at_least_one, flag "max-calls-per-plugin", value_name = "N";
    }

    /// How the server treats its clients, across all plugins.
    [server] ServerSettings => ServerValues {
        /// Items per page in tools/list, resources/list, resources/templates/list, prompts/list and tasks/list.
        page_size: usize = 50, at_least_one, flag "page-size", value_name = "N";
        /// Seconds a plugin waits for the client to answer sampling, elicitation or roots.
        client_timeout_secs: f64 = 300.0, positive_secs, flag "client-timeout", value_name = "SECS";
        /// Plugin calls running at once across all plugins; more wait their turn.
        max_concurrent_calls: u32 = 64, at_least_one, flag "max-concurrent-calls", value_name = "N";
        /// MiB of linear memory all plugin calls running at once may hold; a call that needs more waits for others to finish, one that alone needs more fails [default: half the machine's memory]
        max_total_memory_mib: usize = none, at_least_one, flag "max-total-memory-mib", value_name = "MIB";
        /// The longest a task and its result are kept, whatever ttl the client asks for, in seconds.
        max_task_ttl_secs: u64 = 86_400, whole_secs, flag "max-task-ttl", value_name = "SECS";
        /// Ping the client every SECS seconds to check it still answers [default: never]
        ping_interval_secs: f64 = none, positive_secs, flag "ping-interval", value_name = "SECS";
        /// Directory for compiled plugins [default: $XDG_CACHE_HOME/wasm-mcp or ~/.cache/wasm-mcp]
        cache_dir: PathBuf = none, any, flag "cache-dir", value_name = "DIR", env = "WASM_MCP_CACHE_DIR";
        /// Largest client message in bytes: a stdio line or an HTTP request body.
        max_message_bytes: usize = 4_194_304, at_least_one, flag "max-message-bytes", value_name = "BYTES", alias = "max-body-bytes";
        /// Requests one session may have in flight at once; more are refused.
        max_pending_requests: usize = 256, at_least_one, flag "max-pending-requests", value_name = "N";
        /// Tasks one session may hold at once, finished ones included until their ttl runs out.
        max_tasks: usize = 1000, at_least_one, flag "max-tasks", value_name = "N";
        /// Log messages one plugin may send a session per second; the excess is dropped and counted.
        max_log_rate: u32 = 100, at_least_one, flag "max-log-rate", value_name = "PER_SEC";
        /// Seconds running calls get to finish when the server shuts down; then they are stopped.
        shutdown_grace_secs: f64 = 10.0, non_negative_secs, flag "shutdown-grace", value_name = "SECS";
        /// Bytes of notifications a plugin causes (log messages, progress, resource updates, list changes) that one session may hold for a client that has not read them; past it a plugin's log call waits for the client, progress and announcements are coalesced.
        max_outbound_bytes: usize = 1_048_576, at_least_one, flag "max-outbound-bytes", value_name = "BYTES";
        /// Bytes of one log message from a plugin (log, log-json, a captured output line); a longer one is truncated with a marker.
        max_log_message_bytes: usize = 65_536, at_least_one, flag "max-log-message-bytes", value_name = "BYTES";
        /// Bytes of one progress message from a plugin; a longer one is truncated with a marker.
        max_progress_message_bytes: usize = 4096, at_least_one, flag "max-progress-message-bytes", value_name = "BYTES";
        /// Bytes of notifications one plugin call may send in all (log messages and progress); past it its log messages are dropped and counted, and only its latest progress is delivered, before its response.
        max_call_notification_bytes: usize = 8_388_608, at_least_one, flag "max-call-notification-bytes", value_name = "BYTES";
        /// Progress notifications one call may send a second (in bursts of as many); the values in between are coalesced into the latest, and the final one always arrives before the response.
        max_progress_rate: u32 = 100, at_least_one, flag "max-progress-rate", value_name = "PER_SEC";
        /// Resource subscriptions one session may hold; more are refused.
        max_subscriptions: usize = 1000, at_least_one, flag "max-subscriptions", value_name = "N";
        /// Milliseconds a 2026-07-28 client may cache a list of tools, prompts, resources or templates (0 while plugins change).
        list_cache_ttl_ms: u64 = 10_000, millis, flag "list-cache-ttl", value_name = "MS";
        /// 2026-07-28 calls held suspended while their client answers an InputRequiredResult; beyond it the oldest is dropped (its retry replays it).
        max_suspended_calls: usize = 32, at_least_one, flag "max-suspended-calls", value_name = "N";
        /// Seconds a suspended call waits for its client's retry; then it is dropped (a later retry replays it).
        suspend_secs: f64 = 60.0, positive_secs, flag "suspend-for", value_name = "SECS";
        /// Milliseconds a 2026-07-28 call of a task-supporting tool runs before it becomes a task, for a client that negotiated the tasks extension (a plugin can ask sooner with host::run-as-task).
        task_after_ms: u64 = 1000, millis, flag "task-after", value_name = "MS";
        /// Seconds a requestState stays valid after it is issued.
        request_state_ttl_secs: u64 = 3600, whole_secs, flag "request-state-ttl", value_name = "SECS";
        /// Seconds the last loaded plugins keep serving after the plugins directory disappears; then none are served until it comes back.
        plugins_grace_secs: f64 = 30.0, non_negative_secs, flag "plugins-grace", value_name = "SECS";
        /// File whose contents are the key that seals requestState; give replicas the same file [default: a random key per process]
        request_state_key: PathBuf = none, any, flag "request-state-key", value_name = "FILE";
        /// Where the tasks of the 2026-07-28 extension and the plugins' key-value buckets are kept: redis://HOST:PORT for a Redis every replica shares, or a file [default: a file per plugins directory under $XDG_DATA_HOME/wasm-mcp/state or ~/.local/share/wasm-mcp/state]
        state: String = none, any, flag "state", value_name = "redis://HOST:PORT|FILE", env = "WASM_MCP_STATE";
        /// Seconds a replica's lease on its running tasks lasts unrenewed (renewed every third of it); a replica silent that long is taken for stopped and its tasks end as failed.
        task_lease_secs: f64 = 10.0, positive_secs, flag "task-lease", value_name = "SECS";
        /// Also serve /metrics (Prometheus text format) on ADDR (host:port), without a token: for a stdio server, or to scrape apart from the MCP endpoint (with --http, /metrics is also served there, behind its token).
        metrics: String = none, any, flag "metrics", value_name = "ADDR", env = "WASM_MCP_METRICS";
        /// Also serve the status page (/status, its data at /status.json) on ADDR (host:port), without a token: for a stdio server, or apart from the MCP endpoint (with --http, /status is also served there, its data behind the token).
        status: String = none, any, flag "status", value_name = "ADDR", env = "WASM_MCP_STATUS";
    }

    /// The Streamable HTTP transport (with `--http`).
    [http] HttpSettings => HttpValues {
        /// Seconds after which a session with no open stream and no request ends.
        session_idle_timeout_secs: f64 = 1800.0, positive_secs, flag "session-idle-timeout", value_name = "SECS", requires = "http";
        /// Sessions open at once; more initialize requests get 503.
        max_sessions: usize = 10_000, at_least_one, flag "max-sessions", value_name = "N", requires = "http";
        /// Close a request's SSE stream that has not ended after MS milliseconds; the client resumes it with Last-Event-ID [default: never].
        sse_poll_after_ms: u64 = none, millis, flag "sse-poll-after", value_name = "MS", requires = "http";
        /// Milliseconds a client should wait before reconnecting a closed SSE stream (the `retry` field).
        sse_retry_ms: u64 = 1000, millis, flag "sse-retry", value_name = "MS", requires = "http";
        /// Seconds a connection may take to send a complete request head, counted from its opening or from the end of its previous response (so also how long a kept-alive connection may sit idle); then it is closed.
        header_timeout_secs: f64 = 30.0, positive_secs, flag "header-timeout", value_name = "SECS", requires = "http";
        /// Seconds a request body may take to arrive in full once its head has; a slower one gets 408 and the connection is closed.
        body_timeout_secs: f64 = 60.0, positive_secs, flag "body-timeout", value_name = "SECS", requires = "http";
        /// Connections open at once, open SSE streams included; more get 503 at once.
        max_connections: usize = 512, at_least_one, flag "max-connections", value_name = "N", requires = "http";
        /// Publish a Server Card (SEP-2127, a draft) at <endpoint>/server-card naming the server NAME (reverse-DNS, e.g. io.example/tools) [default: none published]
        server_card: String = none, any, flag "server-card", value_name = "NAME", requires = "http";
    }

    /// Plugins pulled from OCI registries (the lockfile `plugins.lock`): how
    /// registries are reached and how much they may send.
    [registry] RegistrySettings => RegistryValues {
        /// MiB one plugin pulled from a registry may take (its component and its manifest together); a larger one is refused before it is stored.
        max_plugin_mib: u64 = 256, at_least_one, flag "max-plugin-mib", value_name = "MIB";
        /// Pulls from registries at once (at start, and when the lockfile changes).
        concurrent_pulls: usize = 4, at_least_one, flag "concurrent-pulls", value_name = "N";
        /// Times a pull is tried again, with growing waits, when the registry cannot be reached or answers 5xx or 429.
        pull_retries: u32 = 3, any, flag "pull-retries", value_name = "N";
        /// PEM file of CA certificates registries' HTTPS is trusted with besides the platform's [default: the platform's only]
        ca_file: PathBuf = none, any, flag "registry-ca-file", value_name = "FILE", env = "WASM_MCP_REGISTRY_CA_FILE";
        /// Registries (host:port, space-separated) spoken to over plain HTTP; a registry on loopback falls back to plain HTTP by itself when HTTPS fails [default: none]
        plain_http: String = none, any, flag "registry-plain-http", value_name = "HOSTS";
        /// TOML file of the trust policy: the keys that must have signed the plugins pulled from each registry and repository [default: none: pulled plugins are checked against their digests only]
        trust_policy: PathBuf = none, any, flag "trust-policy", value_name = "FILE", env = "WASM_MCP_TRUST_POLICY";
        /// Serve signed plugins only: loose `.wasm` files in the plugins directory are refused too, and a trust policy must be set (`--require-signed` alone means true).
        require_signed: bool = false, any, flag "require-signed", value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", env = "WASM_MCP_REQUIRE_SIGNED";
        /// Hold loose `.wasm` files to the grants approved for them in plugins.lock (`wasm-mcp approve NAME`): one not approved, or whose manifest asks for more, is not loaded (`--approve-files` alone means true).
        approve_files: bool = false, any, flag "approve-files", value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", env = "WASM_MCP_APPROVE_FILES";
    }

    /// OAuth 2.1 authorization of the HTTP transport (with `--http`): the
    /// server is a resource server of one authorization server.
    [auth] AuthSettings => AuthValues {
        /// Accept only access tokens of the OAuth authorization server whose issuer is URL (its metadata gives the JWKS and the introspection endpoint).
        issuer: String = none, any, flag "auth-issuer", value_name = "URL", requires = "http";
        /// This server's canonical URI, the audience its tokens must name [default: http://ADDR/mcp of --http].
        resource: String = none, any, flag "auth-resource", value_name = "URL", requires = "http";
        /// Scopes every token must grant, space-separated; they are asked for in the 401 challenge [default: none].
        scopes: String = none, any, flag "auth-scopes", value_name = "SCOPES", requires = "http";
        /// The JWT signature algorithms accepted, space-separated [default: RS256 ES256].
        algorithms: String = none, any, flag "auth-algorithms", value_name = "ALGS", requires = "http";
        /// Seconds of clock skew allowed on a token's exp and nbf.
        leeway_secs: u64 = 30, any, flag "auth-leeway", value_name = "SECS", requires = "http";
        /// Validate tokens by RFC 7662 introspection as this client (its secret in WASM_MCP_AUTH_CLIENT_SECRET) instead of as JWTs [default: JWTs].
        introspection_client: String = none, any, flag "auth-introspection-client", value_name = "CLIENT_ID", requires = "http";
        /// Seconds a request may wait on the authorization server (for its keys, when a token names a key not yet known; for an introspection); past it the request gets 503 with Retry-After.
        issuer_wait_secs: f64 = 3.0, positive_secs, flag "auth-issuer-wait", value_name = "SECS", requires = "http";
        /// Seconds an introspection's answer about a token, active or not, is reused for the same token (never past its exp); 0: every request asks.
        introspection_cache_secs: f64 = 10.0, non_negative_secs, flag "auth-introspection-cache", value_name = "SECS", requires = "http";
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_passes_its_own_check() {
        Limits::check_defaults().unwrap();
        ServerValues::check_defaults().unwrap();
        HttpValues::check_defaults().unwrap();
        AuthValues::check_defaults().unwrap();
        RegistryValues::check_defaults().unwrap();
    }

    /// The README documents every setting: its flag in a table and its key
    /// in the example config file.
    #[test]
    fn the_readme_names_every_flag_and_config_key() {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
        let missing: Vec<String> = [limits::ALL, server::ALL, http::ALL, auth::ALL, registry::ALL]
            .concat()
            .iter()
            .flat_map(|setting: &Setting| {
                let flag = format!("`--{}", setting.flag);
                let key = format!("\n{} = ", setting.key);
                [
                    (!readme.contains(&flag)).then(|| format!("the flag {flag}` (in a table)")),
                    (!readme.contains(&key)).then(|| {
                        format!(
                            "the key {} under [{}] (in the example config)",
                            setting.key, setting.section
                        )
                    }),
                ]
            })
            .flatten()
            .collect();
        assert!(missing.is_empty(), "README.md does not show:\n{}", missing.join("\n"));
    }

    #[test]
    fn a_hint_names_the_flag_and_the_key() {
        assert_eq!(
            server::max_tasks.hint(),
            "--max-tasks, or max_tasks under [server] in the config file"
        );
        assert_eq!(
            limits::max_concurrent_calls.hint(),
            "--max-calls-per-plugin, or max_concurrent_calls under [limits] in the config file or the plugin's manifest"
        );
    }
}
