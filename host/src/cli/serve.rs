//! `wasm-mcp serve`: the plugins of a directory, served over stdio or
//! Streamable HTTP, reloaded as the directory changes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::Args;
use sha2::{Digest, Sha256};

use super::http_args::HttpArgs;
use crate::config::{ConfigFile, Settings};
use crate::registry::Registry;
use crate::reload::Reloader;
use crate::runtime::PluginRuntime;
use crate::server::Hub;
use crate::settings::{LimitSettings, RegistrySettings, ServerSettings, ServerValues};
use crate::state::{Location, StateStore};
use crate::transport;

#[derive(Args)]
pub struct ServeArgs {
    /// Directory of plugin components (`NAME.wasm`, with an optional `NAME.toml` manifest), and of the lockfile `plugins.lock` of plugins from registries.
    #[arg(long, default_value = "plugins", env = "WASM_MCP_PLUGINS")]
    plugins: PathBuf,
    #[command(flatten)]
    http: HttpArgs,
    /// A TOML file of host-wide settings ([limits], [server], [http] and [auth]); flags override it.
    #[arg(long, value_name = "FILE", env = "WASM_MCP_CONFIG")]
    config: Option<PathBuf>,
    #[command(flatten)]
    limits: LimitSettings,
    #[command(flatten)]
    server: ServerSettings,
    #[command(flatten)]
    registry: RegistrySettings,
    /// Compile plugins on every start instead of caching compiled code.
    #[arg(long, conflicts_with = "cache-dir")]
    no_cache: bool,
    /// Do not watch the plugins directory (for fixed deployments).
    #[arg(long)]
    no_watch: bool,
    /// Export traces to this OpenTelemetry collector (its OTLP/HTTP base URL, e.g. http://127.0.0.1:4318) [default: none, or the standard OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT]
    #[arg(long, value_name = "URL")]
    otlp_endpoint: Option<String>,
}

impl ServeArgs {
    /// Where traces go, if the command line says.
    pub fn otlp_endpoint(&self) -> Option<&str> {
        self.otlp_endpoint.as_deref()
    }
}

pub async fn run(args: ServeArgs) -> Result<()> {
    let flags = ConfigFile {
        limits: args.limits.clone(),
        server: args.server.clone(),
        http: args.http.settings.clone(),
        auth: args.http.auth.clone(),
        registry: args.registry.clone(),
        ..ConfigFile::default()
    };
    let settings = Settings::load(args.config.as_deref(), &flags)?;
    let http = args.http.config(&settings.http, &settings.auth)?;
    let cache_dir = super::cache_directory(settings.server.cache_dir.clone(), args.no_cache)?;
    if !args.plugins.is_dir() {
        bail!(
            "the plugins directory {} does not exist; create it or pass --plugins DIR",
            args.plugins.display()
        );
    }
    // The store of pulled plugins is kept whether or not compiled code is.
    let store_dir = super::cache_directory(settings.server.cache_dir.clone(), false)?;
    let registry = Registry::new(&settings.registry, store_dir)?;
    let lease = Duration::from_secs_f64(settings.server.task_lease_secs);
    let store = StateStore::open(&state_location(&settings.server, &args.plugins), lease)?;
    let operator = (settings.server.metrics.clone(), settings.server.status.clone());
    let hub = Hub::new(settings.server.clone(), store.clone())?;
    tokio::spawn(hub.clone().follow_replicas());
    tokio::spawn(crate::request::keep_tasks(hub.clone(), lease));
    // The plugins' side (the engine, its pools and linker, then the plugins)
    // is made while the transport already answers: `initialize` needs none of
    // it, and lists wait for the plugins present at start.
    let plugins = PluginsStart {
        settings,
        cache_dir,
        store,
        dir: args.plugins,
        registry,
        watch: !args.no_watch,
    };
    let mut starting = tokio::spawn(plugins.start(hub.clone()));
    transport::operations::serve(&hub, operator.0.as_deref(), operator.1.as_deref()).await?;
    let serving = async move {
        match http {
            Some(config) => transport::http::serve(hub, config).await,
            None => transport::stdio::serve(hub).await,
        }
    };
    tokio::pin!(serving);
    // A start that fails ends the serve with its error, even when the
    // transport was done first (stdin closed at once).
    let reloader = tokio::select! {
        started = &mut starting => started??,
        served = &mut serving => {
            starting.await??;
            return served;
        }
    };
    let served = serving.await;
    // The reloader (and the runtime it holds: the engine and the linker the
    // plugins run on) lives until the end of the serve.
    drop(reloader);
    served
}

/// What the plugins' side of a serve is made from.
struct PluginsStart {
    settings: Settings,
    cache_dir: Option<PathBuf>,
    store: Arc<StateStore>,
    dir: PathBuf,
    registry: Registry,
    watch: bool,
}

impl PluginsStart {
    /// Makes the runtime and the reloader, follows the directory, and starts
    /// loading every plugin; the reloader is returned once the load started.
    async fn start(self, hub: Arc<Hub>) -> Result<Arc<Reloader>> {
        // Building the engine's pools and the linker is a few milliseconds
        // of CPU: off the runtime's workers, which are answering meanwhile.
        let (settings, cache_dir, store) = (self.settings, self.cache_dir, self.store);
        let runtime = tokio::task::spawn_blocking(move || PluginRuntime::new(&settings, cache_dir, store)).await??;
        let runtime = Arc::new(runtime);
        let reloader = Reloader::new(hub, runtime, self.dir, self.registry);
        if self.watch {
            reloader.watch()?;
        }
        reloader.relist_on_request();
        reloader.follow_revocations().await;
        tokio::spawn(reloader.clone().load_all());
        Ok(reloader)
    }
}

/// Where the server keeps its tasks: `--state`, else a file of its own in
/// the data directory (`$XDG_DATA_HOME/wasm-mcp/state` or
/// `~/.local/share/wasm-mcp/state`), named after the plugins directory so
/// that servers of different directories keep apart and a restarted one
/// finds its tasks.
fn state_location(server: &ServerValues, plugins: &Path) -> Location {
    if let Some(state) = &server.state {
        return Location::parse(state);
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/share")));
    let Some(data) = data else { return Location::Memory };
    let plugins = plugins.canonicalize().unwrap_or_else(|_| plugins.to_path_buf());
    let digest = Sha256::digest(plugins.as_os_str().as_encoded_bytes());
    let name: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    Location::File(data.join("wasm-mcp/state").join(format!("{name}.redb")))
}
