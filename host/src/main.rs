//! The `wasm-mcp` command line.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Result, bail};
use clap::{Args, Parser, Subcommand};
use tracing_subscriber::EnvFilter;

use wasm_mcp::config::{ConfigFile, ServerSettings, Settings};
use wasm_mcp::manifest::LimitSettings;
use wasm_mcp::plugins::PluginRuntime;
use wasm_mcp::session::Server;
use wasm_mcp::{reload, transport};

mod http_args;

#[derive(Parser)]
#[command(
    name = "wasm-mcp",
    version,
    about = "An MCP server whose tools, resources and prompts are sandboxed WebAssembly components"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once; boxing buys nothing
enum Command {
    /// Serve the plugins in a directory over stdio (or Streamable HTTP with --http).
    Serve(ServeArgs),
    /// Show what a plugin exports and imports, what its manifest grants, and warnings.
    #[command(alias = "inspect")]
    Check(CheckArgs),
    /// Call one tool of one plugin (or read a resource, get a prompt) and print the result as JSON.
    Call(wasm_mcp::call::CallArgs),
    /// Create a ready-to-build plugin project (Rust, Python or JavaScript) in PARENT/NAME.
    New(wasm_mcp::scaffold::NewArgs),
}

#[derive(Args)]
struct CheckArgs {
    /// The plugin component (`NAME.wasm`; its manifest `NAME.toml` is read from beside it).
    plugin: PathBuf,
}

#[derive(Args)]
struct ServeArgs {
    /// Directory of plugin components (`NAME.wasm`, with an optional `NAME.toml` manifest).
    #[arg(long, default_value = "plugins", env = "WASM_MCP_PLUGINS")]
    plugins: PathBuf,
    #[command(flatten)]
    http: http_args::HttpArgs,
    /// A TOML file of host-wide settings ([limits] and [server]); flags override it.
    #[arg(long, value_name = "FILE", env = "WASM_MCP_CONFIG")]
    config: Option<PathBuf>,
    /// Items per page in tools/list, resources/list, resources/templates/list and prompts/list [default: 50].
    #[arg(long)]
    page_size: Option<usize>,
    /// Fuel (instructions) one plugin call may use [default: 20000000000].
    #[arg(long)]
    fuel: Option<u64>,
    /// Seconds of wall-clock time one plugin call may run [default: 30].
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,
    /// MiB one plugin call's linear memory may grow to [default: 256].
    #[arg(long, value_name = "MIB")]
    memory_mib: Option<usize>,
    /// KiB of output one plugin call may return [default: 8192].
    #[arg(long, value_name = "KIB")]
    max_output_kib: Option<usize>,
    /// Seconds a plugin waits for the client to answer sampling, elicitation or roots [default: 300].
    #[arg(long, value_name = "SECS")]
    client_timeout: Option<f64>,
    /// Plugin calls running at once across all plugins; more wait their turn [default: 64].
    #[arg(long)]
    max_concurrent_calls: Option<u32>,
    /// Ping the client every SECS seconds to check it still answers [default: never].
    #[arg(long, value_name = "SECS")]
    ping_interval: Option<f64>,
    /// The longest a task and its result are kept, whatever ttl the client asks for [default: 86400].
    #[arg(long, value_name = "SECS")]
    max_task_ttl: Option<u64>,
    /// Calls of one plugin running at once; more wait their turn [default: 16].
    #[arg(long)]
    max_calls_per_plugin: Option<u32>,
    /// Directory for compiled plugins [default: $XDG_CACHE_HOME/wasm-mcp or ~/.cache/wasm-mcp].
    #[arg(long, value_name = "DIR", env = "WASM_MCP_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
    /// Compile plugins on every start instead of caching compiled code.
    #[arg(long, conflicts_with = "cache_dir")]
    no_cache: bool,
    /// Do not watch the plugins directory (for fixed deployments).
    #[arg(long)]
    no_watch: bool,
    /// Largest client message in bytes: a stdio line or an HTTP request body [default: 4194304].
    #[arg(long, value_name = "BYTES", alias = "max-body-bytes")]
    max_message_bytes: Option<usize>,
    /// Requests one session may have in flight at once; more are refused [default: 256].
    #[arg(long)]
    max_pending_requests: Option<usize>,
    /// Tasks one session may hold at once, finished ones included until they expire [default: 1000].
    #[arg(long)]
    max_tasks: Option<usize>,
    /// Log messages one plugin may send a session per second; the excess is dropped and counted [default: 100].
    #[arg(long, value_name = "PER_SEC")]
    max_log_rate: Option<u32>,
    /// Seconds running calls get to finish when the server shuts down; then they are stopped [default: 10].
    #[arg(long, value_name = "SECS")]
    shutdown_grace: Option<f64>,
    /// Resource subscriptions one session may hold; more are refused [default: 1000].
    #[arg(long)]
    max_subscriptions: Option<usize>,
}

impl ServeArgs {
    /// The flags, as a layer over the config file.
    fn as_layer(&self) -> ConfigFile {
        ConfigFile {
            limits: LimitSettings {
                fuel: self.fuel,
                timeout_secs: self.timeout,
                memory_mib: self.memory_mib,
                max_output_kib: self.max_output_kib,
                max_concurrent_calls: self.max_calls_per_plugin,
            },
            server: ServerSettings {
                page_size: self.page_size,
                client_timeout_secs: self.client_timeout,
                max_concurrent_calls: self.max_concurrent_calls,
                max_task_ttl_secs: self.max_task_ttl,
                ping_interval_secs: self.ping_interval,
                cache_dir: self.cache_dir.clone(),
                max_message_bytes: self.max_message_bytes,
                max_pending_requests: self.max_pending_requests,
                max_tasks: self.max_tasks,
                max_log_rate: self.max_log_rate,
                shutdown_grace_secs: self.shutdown_grace,
                max_subscriptions: self.max_subscriptions,
            },
        }
    }
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(EnvFilter::try_from_env("WASM_MCP_LOG").unwrap_or_else(|_| EnvFilter::new("info")))
        .init();
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = match cli.command {
        Command::Serve(args) => runtime.block_on(serve(args)),
        Command::Check(args) => runtime.block_on(check(args)),
        Command::Call(args) => std::process::exit(runtime.block_on(wasm_mcp::call::command(args))),
        Command::New(args) => wasm_mcp::scaffold::run(&args),
    };
    // A read of stdin may still be blocked in a worker thread (after a
    // signal): do not wait for it.
    runtime.shutdown_background();
    result
}

/// `check`: the report on stdout; exits 1 with the reason on stderr when the plugin does not load.
async fn check(args: CheckArgs) -> Result<()> {
    let failure = match wasm_mcp::inspect::Inspection::run(&args.plugin).await {
        Ok(inspection) => {
            print!("{}", inspection.render());
            inspection.failure()
        }
        Err(e) => Some(format!("{e:#}")),
    };
    if let Some(why) = failure {
        eprintln!("wasm-mcp check: {} does not load: {why}", args.plugin.display());
        std::process::exit(1);
    }
    Ok(())
}

async fn serve(args: ServeArgs) -> Result<()> {
    let http = args.http.config()?;
    let file = match &args.config {
        Some(path) => ConfigFile::load(path)?,
        None => ConfigFile::default(),
    };
    let settings = Settings::resolve(&file, &args.as_layer())?;
    let cache_dir = wasm_mcp::plugins::cache::directory(settings.cache_dir.clone(), args.no_cache)?;
    if !args.plugins.is_dir() {
        bail!(
            "the plugins directory {} does not exist; create it or pass --plugins DIR",
            args.plugins.display()
        );
    }
    let runtime = Arc::new(PluginRuntime::new(
        settings.limits,
        settings.max_calls,
        settings.max_calls_per_plugin,
        cache_dir,
    )?);
    let server = Server::new(settings.server);
    if !args.no_watch {
        reload::watch(server.clone(), runtime.clone(), args.plugins.clone())?;
    }
    // `runtime` stays alive for the whole serve: it owns the engine and the
    // linker the plugins are loaded with. (With --no-watch, nothing else
    // holds it once the start-up load is done.)
    tokio::spawn(reload::load_all(server.clone(), runtime.clone(), args.plugins));
    let served = match http {
        Some(config) => transport::http::serve(server, config).await,
        None => transport::stdio::serve(server).await,
    };
    drop(runtime);
    served
}
