//! `wasm-mcp check PLUGIN.wasm`: what a plugin offers, what it imports, what
//! its manifest grants, and where those disagree.
//!
//! It loads the plugin exactly as `serve` does (the same runtime, linker,
//! manifest and listing calls), and reads the component's imports from its
//! binary, so it can show them even when the plugin does not load.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;

use wasm_mcp::config::Settings;
use wasm_mcp::contract::bindings::tools;
use wasm_mcp::limits::Limits;
use wasm_mcp::manifest::{CacheScope, EnvValue, Manifest};
use wasm_mcp::plugin::Plugin;
use wasm_mcp::runtime::{PluginRuntime, plugin_name};

#[derive(Args)]
pub struct CheckArgs {
    /// The plugin component (`NAME.wasm`; its manifest `NAME.toml` is read from beside it).
    plugin: PathBuf,
}

/// `check`: the report on stdout; exits 1 with the reason on stderr when the plugin does not load.
pub async fn run(args: CheckArgs) -> Result<()> {
    let failure = match Inspection::run(&args.plugin).await {
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

/// What `check` found out about one plugin file.
pub struct Inspection {
    pub path: PathBuf,
    /// The manifest beside the file, if any, or why it is unusable.
    pub manifest: Result<(Manifest, Option<PathBuf>), String>,
    /// The component's top-level imports, or why they cannot be read.
    pub imports: Result<Vec<String>, String>,
    /// The plugin as the host loads it, or why it does not load.
    pub plugin: Result<std::sync::Arc<Plugin>, String>,
}

impl Inspection {
    /// Loads `path` as `serve` would, with the host's default limits.
    pub async fn run(path: &Path) -> Result<Inspection> {
        if !path.is_file() {
            bail!("{} does not exist or is not a file", path.display());
        }
        let runtime = PluginRuntime::new(&Settings::default(), None)?;
        let manifest = Manifest::for_plugin(path).map_err(|e| format!("{e:#}"));
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let imports = component_imports(&bytes);
        let plugin = runtime.load(path).await.map_err(|e| format!("{e:#}"));
        Ok(Inspection {
            path: path.to_owned(),
            manifest,
            imports,
            plugin,
        })
    }

    /// Why the plugin does not load as `serve` would load it, if it does not.
    pub fn failure(&self) -> Option<String> {
        match (&self.manifest, &self.plugin) {
            (Err(e), _) | (_, Err(e)) => Some(e.clone()),
            _ => None,
        }
    }

    /// The warnings: capabilities imported but not granted, grants not used,
    /// imports this host does not provide.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        let (Ok(imports), Ok((manifest, _))) = (&self.imports, &self.manifest) else {
            return warnings;
        };
        let imports_any = |prefix: &str| imports.iter().any(|i| i.starts_with(prefix));
        if imports_any("wasi:filesystem/preopens") && manifest.directories.is_empty() {
            warnings.push(
                "imports wasi:filesystem/preopens (files) but its manifest grants no [[directories]]: \
                 it will see no files at all"
                    .into(),
            );
        }
        if imports_any("wasi:sockets/") && manifest.network.allow.is_empty() {
            warnings.push(
                "imports wasi:sockets (network) but its manifest grants no [network] allow rules: \
                 every connection and name lookup will be refused"
                    .into(),
            );
        } else if imports_any("wasi:sockets/") && manifest.network.allow.iter().all(|r| r.tls_only) {
            warnings.push(
                "imports wasi:sockets (network) but its manifest's [network] allow rules are all https:// (TLS only), \
                 which grant wasi:http requests only: every socket connection and name lookup will be refused"
                    .into(),
            );
        }
        if imports_any("wasi:http/outgoing-handler") && manifest.network.allow.is_empty() {
            warnings.push(
                "imports wasi:http/outgoing-handler (HTTP requests) but its manifest grants no [network] allow rules: \
                 every request will be refused"
                    .into(),
            );
        }
        if !manifest.directories.is_empty() && !imports_any("wasi:filesystem/") {
            warnings.push(
                "its manifest grants [[directories]] but it imports no wasi:filesystem interface: the grant is unused"
                    .into(),
            );
        }
        if manifest.network.allow.iter().any(|r| r.tls_only)
            && imports_any("wasi:sockets/")
            && !imports_any("wasi:http/outgoing-handler")
        {
            warnings.push(
                "its manifest has https:// (TLS only) [network] rules, which grant wasi:http requests only, \
                 but it does not import wasi:http/outgoing-handler: those rules are unused"
                    .into(),
            );
        }
        if manifest.network.ca_file.is_some() && !imports_any("wasi:http/outgoing-handler") {
            warnings.push(
                "its manifest sets [network] ca_file, which only the host's https:// requests use, \
                 but it does not import wasi:http/outgoing-handler: the file is unused"
                    .into(),
            );
        }
        if !manifest.network.allow.is_empty()
            && !imports_any("wasi:sockets/")
            && !imports_any("wasi:http/outgoing-handler")
        {
            warnings.push(
                "its manifest grants [network] access but it imports no wasi:sockets or wasi:http/outgoing-handler \
                 interface: the grant is unused"
                    .into(),
            );
        }
        if !manifest.env.is_empty() && !imports_any("wasi:cli/environment") {
            warnings.push(
                "its manifest grants [env] variables but it does not import wasi:cli/environment: the grant is unused"
                    .into(),
            );
        }
        if let Ok(plugin) = &self.plugin {
            let listing = &plugin.listing;
            let unused = manifest.resources.keys().filter(|key| {
                !listing.resources.iter().any(|r| &r.uri == *key)
                    && !listing.templates.iter().any(|t| &t.uri_template == *key)
            });
            for key in unused {
                warnings.push(format!(
                    "its manifest sets [resources.\"{key}\"] but the plugin lists no resource or template with that URI: the setting is unused"
                ));
            }
        }
        for (name, value) in &manifest.env {
            if let EnvValue::FromHost { from_host } = value
                && std::env::var_os(from_host).is_none()
            {
                warnings.push(format!(
                    "env.{name} takes its value from the host variable {from_host}, which is not set here: the plugin will not see {name}"
                ));
            }
        }
        warnings
    }

    /// The human-readable report.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let name = plugin_name(&self.path);
        let _ = writeln!(out, "Plugin {name}");
        let _ = writeln!(out, "  file      {}", self.path.display());
        match &self.manifest {
            Ok((_, Some(path))) => {
                let _ = writeln!(out, "  manifest  {}", path.display());
            }
            Ok((_, None)) => {
                let _ = writeln!(
                    out,
                    "  manifest  none ({} not found): nothing is granted",
                    self.path.with_extension("toml").display()
                );
            }
            Err(e) => {
                let _ = writeln!(out, "  manifest  INVALID: {e}");
            }
        }
        match &self.plugin {
            Ok(_) => {
                let _ = writeln!(out, "  status    loads");
            }
            Err(e) => {
                let _ = writeln!(out, "  status    DOES NOT LOAD: {e}");
            }
        }

        if let Ok(plugin) = &self.plugin {
            render_exports(&mut out, plugin);
        }

        let _ = writeln!(out, "\nImports");
        match &self.imports {
            Ok(imports) if imports.is_empty() => {
                let _ = writeln!(out, "  none");
            }
            Ok(imports) => {
                let width = imports.iter().map(|i| i.len()).max().unwrap_or(0);
                for import in imports {
                    let _ = writeln!(out, "  {import:width$}  {}", describe_import(import));
                }
            }
            Err(e) => {
                let _ = writeln!(out, "  cannot read them: {e}");
            }
        }

        if let Ok((manifest, _)) = &self.manifest {
            render_grants(&mut out, manifest, self.plugin.as_ref().ok().map(|p| &p.limits));
        }

        let warnings = self.warnings();
        if !warnings.is_empty() {
            let _ = writeln!(out, "\nWarnings");
            for warning in warnings {
                let _ = writeln!(out, "  ! {warning}");
            }
        }
        out
    }
}

fn render_exports(out: &mut String, plugin: &Plugin) {
    let listing = &plugin.listing;
    let _ = writeln!(out, "\nExports");
    let _ = writeln!(out, "  tools ({})", listing.tools.len());
    for tool in &listing.tools {
        let _ = writeln!(out, "    {}{}", tool.name, about(&tool.title, &tool.description));
        let _ = writeln!(out, "      input schema   {}", compact_json(&tool.input_schema));
        if let Some(schema) = &tool.output_schema {
            let _ = writeln!(out, "      output schema  {}", compact_json(schema));
        }
        let task = match plugin.task_support(tool) {
            tools::TaskSupport::Forbidden => "forbidden",
            tools::TaskSupport::Optional => "optional",
            tools::TaskSupport::Required => "required",
        };
        let _ = write!(out, "      task support   {task}");
        let limits = describe_limits(plugin.tool_limits(&tool.name));
        if limits != describe_limits(&plugin.limits) {
            let _ = write!(out, "; own limits: {limits}");
        }
        let _ = writeln!(out);
        if let Some(a) = &tool.annotations {
            let hints: Vec<&str> = [
                (a.read_only_hint, "read-only"),
                (a.destructive_hint, "destructive"),
                (a.idempotent_hint, "idempotent"),
                (a.open_world_hint, "open-world"),
            ]
            .into_iter()
            .filter_map(|(hint, name)| (hint == Some(true)).then_some(name))
            .collect();
            if !hints.is_empty() {
                let _ = writeln!(out, "      hints          {}", hints.join(", "));
            }
        }
    }
    let _ = writeln!(out, "  resources ({})", listing.resources.len());
    for r in &listing.resources {
        let mime = r.mime_type.as_deref().map(|m| format!(" [{m}]")).unwrap_or_default();
        let _ = writeln!(
            out,
            "    {}  {}{mime}{}",
            r.uri,
            r.name,
            about(&r.title, &r.description)
        );
        render_cache(out, &plugin.manifest, &r.uri);
    }
    let _ = writeln!(out, "  resource templates ({})", listing.templates.len());
    for t in &listing.templates {
        let mime = t.mime_type.as_deref().map(|m| format!(" [{m}]")).unwrap_or_default();
        let _ = writeln!(
            out,
            "    {}  {}{mime}{}",
            t.uri_template,
            t.name,
            about(&t.title, &t.description)
        );
        render_cache(out, &plugin.manifest, &t.uri_template);
    }
    let _ = writeln!(out, "  prompts ({})", listing.prompts.len());
    for p in &listing.prompts {
        let _ = writeln!(out, "    {}{}", p.name, about(&p.title, &p.description));
        for arg in &p.arguments {
            let required = if arg.required { "required" } else { "optional" };
            let _ = writeln!(
                out,
                "      argument {} ({required}){}",
                arg.name,
                about(&arg.title, &arg.description)
            );
        }
    }
    let _ = writeln!(
        out,
        "  completion  {}",
        if plugin.has_completion() { "yes" } else { "no" }
    );
}

/// The caching hint the manifest sets for the resource or template `key`, if any.
fn render_cache(out: &mut String, manifest: &Manifest, key: &str) {
    if let Some(settings) = manifest.resources.get(key) {
        let scope = match settings.cache_scope {
            CacheScope::Public => "public",
            CacheScope::Private => "private",
        };
        let _ = writeln!(out, "      cached  {} ms, {scope}", settings.ttl_ms);
    }
}

fn render_grants(out: &mut String, manifest: &Manifest, limits: Option<&Limits>) {
    let _ = writeln!(out, "\nGrants");
    if manifest.directories.is_empty() {
        let _ = writeln!(out, "  directories  none");
    }
    for (i, dir) in manifest.directories.iter().enumerate() {
        let label = if i == 0 { "directories" } else { "" };
        let mode = if dir.writable { "read-write" } else { "read-only" };
        let _ = writeln!(out, "  {label:11}  {} -> {} ({mode})", dir.host.display(), dir.guest);
    }
    if manifest.env.is_empty() {
        let _ = writeln!(out, "  env          none");
    }
    for (i, (name, value)) in manifest.env.iter().enumerate() {
        let label = if i == 0 { "env" } else { "" };
        let source = match value {
            EnvValue::Literal(_) => "a literal value".to_string(),
            EnvValue::FromHost { from_host } => format!("from the host's ${from_host}"),
        };
        let _ = writeln!(out, "  {label:11}  {name} ({source})");
    }
    if manifest.network.allow.is_empty() {
        let _ = writeln!(out, "  network      none");
    } else {
        let rules: Vec<String> = manifest
            .network
            .allow
            .iter()
            .map(|r| match r.tls_only {
                true => format!("{} (TLS only)", r.text),
                false => r.text.clone(),
            })
            .collect();
        let _ = writeln!(out, "  network      {}", rules.join(", "));
    }
    if let Some(ca_file) = &manifest.network.ca_file {
        let _ = writeln!(
            out,
            "  ca_file      {} (CA certificates https:// requests trust besides the platform's)",
            ca_file.display()
        );
    }
    if let Some(limits) = limits {
        let mut line = describe_limits(limits);
        if let Some(n) = manifest.limits.max_concurrent_calls {
            let _ = write!(line, ", {n} calls at once");
        }
        let _ = writeln!(out, "  limits       {line}");
    }
    if let Some(prefix) = &manifest.prefix {
        let _ = writeln!(out, "  prefix       {prefix} (names are exposed as {prefix}_<name>)");
    }
}

fn describe_limits(limits: &Limits) -> String {
    format!(
        "fuel {}, timeout {} s, memory {} MiB, output {} KiB",
        limits.fuel, limits.timeout_secs, limits.memory_mib, limits.max_output_kib
    )
}

fn about(title: &Option<String>, description: &Option<String>) -> String {
    let mut text = String::new();
    if let Some(title) = title {
        let _ = write!(text, " \"{title}\"");
    }
    if let Some(description) = description {
        let first = description.lines().next().unwrap_or_default();
        let _ = write!(text, ": {first}");
    }
    text
}

fn compact_json(text: &str) -> String {
    serde_json::from_str::<serde_json::Value>(text)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| text.to_owned())
}

/// What an imported interface gives the plugin, and whether a grant governs it.
fn describe_import(import: &str) -> &'static str {
    let interface = import.split('@').next().unwrap_or(import);
    match interface {
        "wasm-mcp:plugin/host" => "the host API (logging, progress, sampling, elicitation, roots)",
        "wasm-mcp:plugin/types" => "the contract's types",
        "wasi:filesystem/preopens" => "files: the directories granted by [[directories]]",
        "wasi:filesystem/types" => "files: operations on granted directories",
        "wasi:cli/environment" => "environment variables granted by [env] (arguments are always empty)",
        "wasi:cli/stdin" => "stdin (always empty)",
        "wasi:cli/stdout" | "wasi:cli/stderr" => "captured and forwarded as log messages, never the protocol stream",
        "wasi:cli/exit" => "exit (ends the call with an error)",
        "wasi:sockets/network" | "wasi:sockets/instance-network" => "network: addresses granted by [network]",
        "wasi:sockets/tcp" | "wasi:sockets/tcp-create-socket" => "TCP: connections to addresses granted by [network]",
        "wasi:sockets/udp" | "wasi:sockets/udp-create-socket" => "UDP: datagrams to addresses granted by [network]",
        "wasi:sockets/ip-name-lookup" => "DNS: only names granted by [network]",
        "wasi:clocks/wall-clock" | "wasi:clocks/monotonic-clock" => "clocks (always available)",
        "wasi:random/random" | "wasi:random/insecure" | "wasi:random/insecure-seed" => {
            "random numbers (always available)"
        }
        "wasi:io/error" | "wasi:io/poll" | "wasi:io/streams" => "I/O plumbing (always available)",
        i if i.starts_with("wasi:cli/terminal") => "terminal queries (never a terminal)",
        "wasi:http/outgoing-handler" => {
            "HTTP requests: plain http:// to hosts and ports granted by [network] (not by https:// rules); \
             https:// to any of them, TLS verified by the host"
        }
        "wasi:http/types" => "HTTP requests and responses (plumbing for outgoing-handler)",
        i if i.starts_with("wasi:http/") => "NOT PROVIDED by this host",
        _ => "",
    }
}

/// The names of a component's top-level imports (`wasi:cli/environment@0.2.6`, ...).
pub fn component_imports(bytes: &[u8]) -> Result<Vec<String>, String> {
    use wasmparser::{Parser, Payload};
    let mut imports = Vec::new();
    let mut depth = 0usize;
    let mut is_component = false;
    if !bytes.starts_with(b"\0asm") {
        return Err("not a WebAssembly binary (no \\0asm header)".into());
    }
    for payload in Parser::new(0).parse_all(bytes) {
        let payload =
            payload.map_err(|e| format!("not a valid component: {} (at offset {:#x})", e.message(), e.offset()))?;
        match payload {
            Payload::Version { encoding, .. } => {
                if depth == 0 {
                    is_component = encoding == wasmparser::Encoding::Component;
                }
                depth += 1;
            }
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 1 => {
                for import in reader {
                    let import = import.map_err(|e| format!("a malformed import: {}", e.message()))?;
                    imports.push(import.name.name.to_string());
                }
            }
            _ => {}
        }
    }
    if !is_component {
        return Err("a core WebAssembly module, not a component".into());
    }
    imports.sort();
    imports.dedup();
    Ok(imports)
}
