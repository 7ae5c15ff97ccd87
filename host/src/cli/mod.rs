//! The `wasm-mcp` command line: `serve`, `check`, `call` and `new`; `push`,
//! `pull`, `add`, `update`, `remove` and `approve` for plugins from OCI
//! registries; `keygen`, `sign`, `verify` and `revoke` for trusting them; and
//! what they share (logging to stderr, the compiled-code cache directory).
//! The binary (`src/main.rs`) calls [`main`] and nothing else.

mod call;
mod check;
mod http_args;
mod lock;
mod new;
mod publish;
mod registry_args;
mod revoke;
mod serve;
mod signing;

use std::fs;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

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
    Serve(serve::ServeArgs),
    /// Show what a plugin exports and imports, what its manifest grants, and warnings.
    #[command(alias = "inspect")]
    Check(check::CheckArgs),
    /// Call one tool of one plugin (or read a resource, get a prompt) and print the result as JSON.
    Call(call::CallArgs),
    /// Create a ready-to-build plugin project (Rust, Python or JavaScript) in PARENT/NAME.
    New(new::NewArgs),
    /// Publish a plugin (PLUGIN.wasm, with PLUGIN.toml beside it if any) to an OCI registry as a wasm artifact.
    Push(publish::PushArgs),
    /// Fetch a plugin from an OCI registry into FILE (and its manifest into FILE.toml).
    Pull(publish::PullArgs),
    /// Serve a plugin from an OCI registry: resolve REF to its digest, pull, check it loads, and pin it in plugins.lock.
    Add(lock::AddArgs),
    /// Resolve the tags of the lockfile's plugins again; show, check and pin what changed.
    Update(lock::UpdateArgs),
    /// Stop serving a plugin of the lockfile: remove its entry.
    Remove(lock::RemoveArgs),
    /// Accept the update of a plugin held because it asks for more grants than were approved, or approve the grants of a loose file (--approve-files).
    Approve(lock::ApproveArgs),
    /// Make a key pair for signing plugins: PREFIX.key (private) and PREFIX.pub.
    Keygen(signing::KeygenArgs),
    /// Sign the artifact REF names with a private key, and push the signature beside it (cosign's form).
    Sign(signing::SignArgs),
    /// Show who signed the artifact REF names, checked with the keys given or the trust policy.
    Verify(signing::VerifyArgs),
    /// Stop every replica sharing the state store from serving a plugin digest, at once (--lift: serve it again).
    Revoke(revoke::RevokeArgs),
}

/// Runs the command the process's arguments name; when it fails, says why on
/// stderr and exits with a failure status.
pub fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            report(&error);
            ExitCode::FAILURE
        }
    }
}

/// Runs the command the arguments name.
fn run() -> Result<()> {
    let cli = Cli::parse();
    // Every reqwest client in the process (the registry client's, the trace
    // exporter's) takes its TLS crypto from the process's rustls provider:
    // ring, as everywhere else in the host.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // A server says what it loads and serves; a one-shot command only what
    // went wrong, so its own output stands alone.
    let default_level = match cli.command {
        Command::Serve(_) => "info",
        _ => "warn",
    };
    let filter = EnvFilter::try_from_env("WASM_MCP_LOG").unwrap_or_else(|_| EnvFilter::new(default_level));
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_filter(filter);
    // Traces only for a server with an OTLP endpoint; kept (and flushed at
    // the end) for as long as it serves.
    let _exporting = match &cli.command {
        Command::Serve(args) => crate::telemetry::exporter(args.otlp_endpoint())?,
        _ => None,
    };
    tracing_subscriber::registry().with(log).init();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = match cli.command {
        Command::Serve(args) => runtime.block_on(serve::run(args)),
        Command::Check(args) => runtime.block_on(check::run(args)),
        Command::Call(args) => std::process::exit(runtime.block_on(call::run(args))),
        Command::New(args) => new::run(&args),
        Command::Push(args) => runtime.block_on(publish::push(args)),
        Command::Pull(args) => runtime.block_on(publish::pull(args)),
        Command::Add(args) => runtime.block_on(lock::add(args)),
        Command::Update(args) => runtime.block_on(lock::update(args)),
        Command::Remove(args) => lock::remove(args),
        Command::Approve(args) => runtime.block_on(lock::approve(args)),
        Command::Keygen(args) => signing::keygen(&args),
        Command::Sign(args) => runtime.block_on(signing::sign(args)),
        Command::Verify(args) => runtime.block_on(signing::verify(args)),
        Command::Revoke(args) => runtime.block_on(revoke::run(args)),
    };
    // A read of stdin may still be blocked in a worker thread (after a
    // signal): do not wait for it.
    runtime.shutdown_background();
    result
}

/// Says on stderr why the command failed: the chain of reasons on one line,
/// or, when `WASM_MCP_LOG` asks for debug (or trace) output, with where it
/// happened (a backtrace, when `RUST_BACKTRACE` is set).
fn report(error: &anyhow::Error) {
    let debug = std::env::var("WASM_MCP_LOG").is_ok_and(|filter| filter.contains("debug") || filter.contains("trace"));
    if debug {
        eprintln!("wasm-mcp: {error:?}");
    } else {
        eprintln!("wasm-mcp: {error:#}");
    }
}

/// The directory of compiled plugins: `configured`, else
/// `$XDG_CACHE_HOME/wasm-mcp` or `~/.cache/wasm-mcp`; none when `disabled`.
/// It is created if needed, readable and writable by this user only:
/// compiled code in it is loaded as native code.
fn cache_directory(configured: Option<PathBuf>, disabled: bool) -> Result<Option<PathBuf>> {
    if disabled {
        return Ok(None);
    }
    let Some(dir) = configured.or_else(default_cache_directory) else {
        return Ok(None);
    };
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .with_context(|| format!("cannot create the cache directory {}", dir.display()))?;
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))
        .with_context(|| format!("cannot restrict the cache directory {}", dir.display()))?;
    Ok(Some(dir))
}

fn default_cache_directory() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("wasm-mcp"))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use clap::CommandFactory;

    use super::Cli;

    /// Every flag of every command has a name and an id of its own: settings
    /// are flattened into several commands from one declaration, and two
    /// arguments sharing an id would share one value. (clap's own
    /// `debug_assert` runs only in debug builds; the tests run in release.)
    #[test]
    fn no_two_flags_of_a_command_share_a_name() {
        for command in Cli::command().get_subcommands() {
            let (mut ids, mut longs) = (HashSet::new(), HashSet::new());
            for arg in command.get_arguments() {
                assert!(
                    ids.insert(arg.get_id().as_str()),
                    "{}: id {} twice",
                    command.get_name(),
                    arg.get_id()
                );
                if let Some(long) = arg.get_long() {
                    assert!(longs.insert(long), "{}: --{long} twice", command.get_name());
                }
            }
        }
    }
}
