//! The `wasm-mcp` command line.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::{Args, Parser, Subcommand};
use tracing_subscriber::EnvFilter;

use wasm_mcp::plugins::{Limits, PluginRuntime};
use wasm_mcp::session::{Server, ServerConfig};
use wasm_mcp::{reload, transport};

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
enum Command {
    /// Serve the plugins in a directory over stdio (or Streamable HTTP with --http).
    Serve(ServeArgs),
}

#[derive(Args)]
struct ServeArgs {
    /// Directory of plugin components (`NAME.wasm`, with an optional `NAME.toml` manifest).
    #[arg(long, default_value = "plugins", env = "WASM_MCP_PLUGINS")]
    plugins: PathBuf,
    /// Serve Streamable HTTP on this address instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// Items per page in tools/list, resources/list, resources/templates/list and prompts/list.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    page_size: u32,
    /// Fuel (instructions) one plugin call may use.
    #[arg(long, default_value_t = Limits::default().fuel)]
    fuel: u64,
    /// Seconds of wall-clock time one plugin call may run.
    #[arg(long, default_value_t = Limits::default().deadline.as_secs_f64())]
    timeout: f64,
    /// MiB one plugin call's linear memory may grow to.
    #[arg(long, default_value_t = Limits::default().memory_bytes >> 20)]
    memory_mib: usize,
    /// Seconds a plugin waits for the client to answer sampling, elicitation or roots requests.
    #[arg(long, default_value_t = 300.0)]
    client_timeout: f64,
    /// Plugin calls that may run at the same moment.
    #[arg(long, default_value_t = 64)]
    max_concurrent_calls: u32,
    /// Directory for compiled plugins [default: the user's cache directory, e.g. ~/.cache/wasm-mcp].
    #[arg(long, value_name = "DIR", env = "WASM_MCP_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
    /// Do not watch the plugins directory (for fixed deployments).
    #[arg(long)]
    no_watch: bool,
    /// Compile plugins on every start instead of caching compiled code.
    #[arg(long, conflicts_with = "cache_dir")]
    no_cache: bool,
}

/// Creates `dir` if needed, readable and writable by this user only: compiled
/// code in it is loaded as native code.
fn private_dir(dir: &std::path::Path) -> Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| anyhow::anyhow!("cannot create the cache directory {}: {e}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| anyhow::anyhow!("cannot restrict the cache directory {}: {e}", dir.display()))
}

/// `$XDG_CACHE_HOME/wasm-mcp`, else `~/.cache/wasm-mcp`.
fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("wasm-mcp"))
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            EnvFilter::try_from_env("WASM_MCP_LOG").unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match cli.command {
        Command::Serve(args) => runtime.block_on(serve(args)),
    }
}

async fn serve(args: ServeArgs) -> Result<()> {
    if let Some(addr) = args.http {
        bail!(
            "the Streamable HTTP transport (--http {addr}) is not available in this build yet; serve over stdio by leaving out --http"
        );
    }
    let positive_secs = |secs: f64, flag: &str| {
        if secs.is_finite() && secs > 0.0 {
            Ok(Duration::from_secs_f64(secs))
        } else {
            bail!("--{flag} must be a positive number of seconds")
        }
    };
    let limits = Limits {
        fuel: args.fuel,
        deadline: positive_secs(args.timeout, "timeout")?,
        memory_bytes: args.memory_mib << 20,
        ..Limits::default()
    };
    let cache_dir = if args.no_cache {
        None
    } else {
        args.cache_dir.or_else(default_cache_dir)
    };
    if let Some(dir) = &cache_dir {
        private_dir(dir)?;
    }
    let runtime = Arc::new(PluginRuntime::new(
        limits,
        args.max_concurrent_calls,
        cache_dir,
    )?);
    let server = Server::new(ServerConfig {
        page_size: args.page_size as usize,
        client_request_timeout: positive_secs(args.client_timeout, "client-timeout")?,
        ..ServerConfig::default()
    });
    if !args.no_watch {
        reload::watch(server.clone(), runtime.clone(), args.plugins.clone())?;
    }
    tokio::spawn(reload::load_all(server.clone(), runtime, args.plugins));
    transport::stdio::serve(server).await
}
