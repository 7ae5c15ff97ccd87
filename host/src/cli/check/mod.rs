//! `wasm-mcp check PLUGIN.wasm`: what a plugin offers, what it imports, what
//! its manifest grants, and where those disagree.
//!
//! It loads the plugin exactly as `serve` does (the same runtime, linker,
//! manifest and listing calls), and reads the component's imports from its
//! binary ([`component`]), so it can show them even when the plugin does not
//! load. Given a directory, it checks every plugin in it and shows the names
//! serving it would give them ([`directory`]). With `--strict`, a warning
//! fails it too. With `--network-policy`, it prints instead the Kubernetes
//! NetworkPolicy the plugins' grants make ([`network_policy`]).

pub mod component;
mod directory;
mod network_policy;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::Value;

use crate::config::Settings;
use crate::contract::bindings::tools;
use crate::limits::Limits;
use crate::manifest::{CacheScope, EntryKind, EnvValue, Manifest};
use crate::plugin::Plugin;
use crate::registry::Pulled;
use crate::registry::artifact::MANIFEST_MEDIA_TYPE;
use crate::registry::lockfile::Locked;
use crate::registry::reference;
use crate::runtime::{PluginRuntime, plugin_name};
use crate::state::StateStore;

use super::registry_args::RegistryArgs;
use component::{Component, describe_import};

#[derive(Args)]
pub struct CheckArgs {
    /// The plugin component (`NAME.wasm`; its manifest `NAME.toml` is read from beside it),
    /// or a plugins directory: every plugin in it, and the names serving it gives them.
    plugin: PathBuf,
    /// Fail (exit status 2) on any warning too, not only when a plugin does not load.
    #[arg(long)]
    strict: bool,
    /// Print, instead of the report, a Kubernetes NetworkPolicy (YAML) that lets the server's pods
    /// reach what the plugins' manifests grant (and their registries, and DNS); fails when a plugin does not load.
    #[arg(long)]
    network_policy: bool,
    /// Where a directory's locked plugins come from (read from the store, pulled when it lacks them).
    #[command(flatten)]
    registry: RegistryArgs,
}

/// `check`: the report on stdout; exits 1 with the reason on stderr when a
/// plugin does not load or an entry of one is refused, and with `--strict` 2
/// when there are warnings.
pub async fn run(args: CheckArgs) -> Result<()> {
    // Loading lists each plugin: nothing it writes is kept.
    let runtime = PluginRuntime::new(&Settings::default(), None, StateStore::in_memory())?;
    let (inspections, failures, directory) = if args.plugin.is_dir() {
        let (_, registry, _) = args.registry.open()?;
        let mut found = directory::inspect(&runtime, &registry, &args.plugin).await?;
        let inspections = std::mem::take(&mut found.inspections);
        let failures = std::mem::take(&mut found.failures);
        (inspections, failures, Some(found))
    } else {
        match Inspection::run(&runtime, &args.plugin).await {
            Ok(inspection) => (vec![inspection], Vec::new(), None),
            Err(e) => (Vec::new(), vec![(args.plugin.clone(), format!("{e:#}"))], None),
        }
    };
    let mut outcome = Outcome {
        failures,
        ..Outcome::default()
    };
    if args.network_policy {
        for inspection in &inspections {
            outcome.add(Outcome::of(inspection));
        }
        if !outcome.failures.is_empty() {
            for (path, why) in &outcome.failures {
                eprintln!("wasm-mcp check: {} does not load: {why}", path.display());
            }
            eprintln!(
                "wasm-mcp check: no NetworkPolicy printed: it would leave out what the plugins that do not load are granted; fix them first"
            );
            std::process::exit(1);
        }
        print!("{}", network_policy::render(&args.plugin, &inspections));
        return Ok(());
    }
    for inspection in &inspections {
        print!("{}", inspection.render());
        if directory.is_some() {
            println!();
        }
        outcome.add(Outcome::of(inspection));
    }
    if let Some(mut directory) = directory {
        directory.inspections = inspections;
        let (summary, renames) = directory.summary(&args.plugin);
        print!("{summary}");
        outcome.warnings += renames;
    }
    for (path, why) in &outcome.failures {
        eprintln!("wasm-mcp check: {} does not load: {why}", path.display());
    }
    if outcome.errors > 0 {
        eprintln!(
            "wasm-mcp check: {} entr(ies) refused (see Errors above); the rest of each plugin would serve",
            outcome.errors
        );
    }
    if !outcome.failures.is_empty() || outcome.errors > 0 {
        std::process::exit(1);
    }
    if args.strict && outcome.warnings > 0 {
        eprintln!(
            "wasm-mcp check: {} warning(s), and --strict fails on any; fix them or leave out --strict",
            outcome.warnings
        );
        std::process::exit(2);
    }
    Ok(())
}

/// What one run of `check` found: the plugins that do not load, and how
/// many entries were refused and warnings it gave.
#[derive(Default)]
struct Outcome {
    failures: Vec<(PathBuf, String)>,
    errors: usize,
    warnings: usize,
}

impl Outcome {
    fn of(inspection: &Inspection) -> Outcome {
        Outcome {
            failures: inspection
                .failure()
                .map(|why| (inspection.path.clone(), why))
                .into_iter()
                .collect(),
            errors: inspection.errors().len(),
            warnings: inspection.warnings().len(),
        }
    }

    fn add(&mut self, other: Outcome) {
        self.failures.extend(other.failures);
        self.errors += other.errors;
        self.warnings += other.warnings;
    }
}

/// What `check` found out about one plugin file.
pub struct Inspection {
    /// The plugin's name: its file's stem, or its lockfile entry's name.
    pub name: String,
    /// Its component: the file, or where the store holds it.
    pub path: PathBuf,
    /// Its lockfile entry, when it comes from a registry.
    pub locked: Option<Locked>,
    /// Whether its artifact carries a manifest (for a plugin from a registry).
    manifest_published: bool,
    /// The manifest beside the file, if any, or why it is unusable.
    pub manifest: Result<(Manifest, Option<PathBuf>), String>,
    /// The component's imports, or why they cannot be read.
    pub component: Result<Component, String>,
    /// The plugin as the host loads it, or why it does not load.
    pub plugin: Result<std::sync::Arc<Plugin>, String>,
}

impl Inspection {
    /// Loads `path` as `serve` would, with `runtime` (the host's default limits).
    pub async fn run(runtime: &PluginRuntime, path: &Path) -> Result<Inspection> {
        if !path.is_file() {
            bail!("{} does not exist or is not a file or a directory", path.display());
        }
        let manifest = Manifest::for_plugin(path).map_err(|e| format!("{e:#}"));
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let component = Component::read(&bytes);
        let plugin = runtime.load(path).await.map_err(|e| format!("{e:#}"));
        Ok(Inspection {
            name: plugin_name(path),
            path: path.to_owned(),
            locked: None,
            manifest_published: false,
            manifest,
            component,
            plugin,
        })
    }

    /// Loads the plugin `name` that the lockfile of `dir` pins (`locked`),
    /// pulled into the store, as `serve` would.
    pub async fn run_pulled(
        runtime: &PluginRuntime,
        dir: &Path,
        name: &str,
        locked: &Locked,
        pulled: Pulled,
    ) -> Inspection {
        let manifest = pulled
            .parsed_manifest(name, dir, &locked.reference)
            .map(|m| (m, None))
            .map_err(|e| format!("{e:#}"));
        let component = Component::read(&pulled.wasm);
        let manifest_published = pulled.manifest.is_some();
        let plugin = match &manifest {
            Ok((manifest, _)) => runtime
                .load_component(name, &pulled.wasm_path, pulled.wasm, manifest.clone(), pulled.skills)
                .await
                .map_err(|e| format!("{e:#}")),
            Err(e) => Err(e.clone()),
        };
        Inspection {
            name: name.to_owned(),
            path: pulled.wasm_path,
            locked: Some(locked.clone()),
            manifest_published,
            manifest,
            component,
            plugin,
        }
    }

    /// Why the plugin does not load as `serve` would load it, if it does not.
    pub fn failure(&self) -> Option<String> {
        match (&self.manifest, &self.plugin) {
            (Err(e), _) | (_, Err(e)) => Some(e.clone()),
            _ => None,
        }
    }

    /// The errors: entries the plugin lists that are refused (it serves the rest).
    pub fn errors(&self) -> Vec<String> {
        match &self.plugin {
            Ok(plugin) => plugin.listing.refused.clone(),
            Err(_) => Vec::new(),
        }
    }

    /// The warnings: capabilities imported but not granted (unless only the
    /// language runtime imports them, see [`Inspection::notes`]), grants not
    /// used, manifest settings for entries the plugin does not list.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        let (Ok(component), Ok((manifest, _))) = (&self.component, &self.manifest) else {
            return warnings;
        };
        let imports_any = |prefix: &str| component.imports_any(prefix);
        // What the runtime always imports is no sign the plugin's code uses it.
        let uses = |prefix: &str| imports_any(prefix) && !component.carried_by_runtime(prefix);
        if uses("wasi:filesystem/") && imports_any("wasi:filesystem/preopens") && manifest.directories.is_empty() {
            warnings.push(
                "imports wasi:filesystem/preopens (files) but its manifest grants no [[directories]]: \
                 it will see no files at all"
                    .into(),
            );
        }
        if uses("wasi:sockets/") && manifest.network.allow.is_empty() {
            warnings.push(
                "imports wasi:sockets (network) but its manifest grants no [network] allow rules: \
                 every connection and name lookup will be refused"
                    .into(),
            );
        } else if uses("wasi:sockets/") && manifest.network.allow.iter().all(|r| r.http_only()) {
            warnings.push(
                "imports wasi:sockets (network) but its manifest's [network] allow rules are all https:// (TLS only) \
                 or limited to methods or paths, which grant wasi:http requests only: every socket connection and \
                 name lookup will be refused"
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
        if imports_any("wasi:keyvalue/store") && manifest.keyvalue.buckets.is_empty() {
            warnings.push(
                "imports wasi:keyvalue/store (plugin state) but its manifest grants no [keyvalue] buckets: \
                 every bucket it opens will be refused"
                    .into(),
            );
        }
        if !manifest.keyvalue.buckets.is_empty() && !imports_any("wasi:keyvalue/store") {
            warnings.push(
                "its manifest grants [keyvalue] buckets but it does not import wasi:keyvalue/store: the grant is unused"
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
            for tool in manifest.tools.keys() {
                if !listing.tools.iter().any(|t| &t.name == tool) {
                    let tools: Vec<&str> = listing.tools.iter().map(|t| t.name.as_str()).collect();
                    warnings.push(format!(
                        "its manifest sets [tools.{tool}] but the plugin lists no tool {tool} (its tools: {}): \
                         the settings are unused; use one of those names",
                        if tools.is_empty() {
                            "none".to_owned()
                        } else {
                            tools.join(", ")
                        }
                    ));
                }
            }
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

    /// What the report cannot tell: imports a language runtime always has,
    /// which may or may not be used by the plugin's code.
    pub fn notes(&self) -> Vec<String> {
        let Ok(component) = &self.component else {
            return Vec::new();
        };
        let Some(runtime) = component.runtime() else {
            return Vec::new();
        };
        let carried: Vec<&str> = runtime
            .carries
            .iter()
            .filter(|prefix| component.imports_any(prefix))
            .map(|prefix| prefix.trim_end_matches('/'))
            .collect();
        if carried.is_empty() {
            return Vec::new();
        }
        vec![format!(
            "built with {} (the {} runtime), which imports {} whatever the plugin's code does: check cannot \
             tell whether this plugin uses them. Grant them in its manifest only if its code reads files or \
             opens connections; ungranted, they find nothing and every connection is refused",
            runtime.tool,
            runtime.language,
            carried.join(" and ")
        )]
    }

    /// The human-readable report.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "Plugin {}", self.name);
        let _ = writeln!(out, "  file      {}", self.path.display());
        match (&self.locked, &self.plugin) {
            (Some(locked), _) => {
                let _ = writeln!(out, "  source    {} (plugins.lock)", locked.reference);
                let _ = writeln!(out, "  registry  {}", reference::registry_of(&locked.reference));
                let _ = writeln!(out, "  digest    {}", locked.digest);
                if let Some(pending) = &locked.pending {
                    let _ = writeln!(
                        out,
                        "  held      update to {}, waiting for `wasm-mcp approve {}`; it asks for more:",
                        pending.digest, self.name
                    );
                    for line in &pending.asks {
                        let _ = writeln!(out, "              {line}");
                    }
                }
            }
            (None, Ok(plugin)) => {
                let _ = writeln!(out, "  source    file");
                let _ = writeln!(out, "  digest    sha256:{}", plugin.sha256);
            }
            (None, Err(_)) => {
                let _ = writeln!(out, "  source    file");
            }
        }
        match &self.manifest {
            Ok(_) if self.locked.is_some() && self.manifest_published => {
                let _ = writeln!(
                    out,
                    "  manifest  published with the artifact (its {MANIFEST_MEDIA_TYPE} layer)"
                );
            }
            Ok(_) if self.locked.is_some() => {
                let _ = writeln!(out, "  manifest  none published with the artifact: nothing is granted");
            }
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
        match (&self.plugin, &self.manifest) {
            (Ok(_), _) => {
                let _ = writeln!(out, "  status    loads");
            }
            (Err(_), Err(_)) => {
                let _ = writeln!(out, "  status    DOES NOT LOAD: its manifest is invalid (above)");
            }
            (Err(e), Ok(_)) => {
                let _ = writeln!(out, "  status    DOES NOT LOAD: {e}");
            }
        }

        if let Ok(plugin) = &self.plugin {
            render_exports(&mut out, plugin);
        }

        let _ = writeln!(out, "\nImports");
        match &self.component {
            Ok(component) if component.imports.is_empty() => {
                let _ = writeln!(out, "  none");
            }
            Ok(component) => {
                let width = component.imports.iter().map(|i| i.len()).max().unwrap_or(0);
                for import in &component.imports {
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

        render_section(&mut out, "Errors", "x", &self.errors());
        render_section(&mut out, "Notes", "-", &self.notes());
        render_section(&mut out, "Warnings", "!", &self.warnings());
        out
    }
}

/// A titled list, `mark` before each item; nothing when `items` is empty.
fn render_section(out: &mut String, title: &str, mark: &str, items: &[String]) {
    if !items.is_empty() {
        let _ = writeln!(out, "\n{title}");
        for item in items {
            let _ = writeln!(out, "  {mark} {item}");
        }
    }
}

fn render_exports(out: &mut String, plugin: &Plugin) {
    let listing = &plugin.listing;
    let _ = writeln!(out, "\nExports");
    let _ = writeln!(out, "  tools ({})", listing.tools.len());
    for tool in &listing.tools {
        let _ = writeln!(out, "    {}{}", tool.name, about(&tool.title, &tool.description));
        render_exposure(out, plugin, EntryKind::Tool, &tool.name);
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
        let about = about(&r.title, &r.description);
        render_resource(out, plugin, &r.uri, &r.name, r.mime_type.as_deref(), &about);
    }
    let _ = writeln!(out, "  resource templates ({})", listing.templates.len());
    for t in &listing.templates {
        let about = about(&t.title, &t.description);
        render_resource(out, plugin, &t.uri_template, &t.name, t.mime_type.as_deref(), &about);
    }
    let _ = writeln!(out, "  prompts ({})", listing.prompts.len());
    for p in &listing.prompts {
        let _ = writeln!(out, "    {}{}", p.name, about(&p.title, &p.description));
        render_exposure(out, plugin, EntryKind::Prompt, &p.name);
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
    let _ = writeln!(out, "  skills ({})", plugin.skills.skills.len());
    for skill in &plugin.skills.skills {
        let files = match &skill.files {
            Some(files) => format!("{} files", files.len()),
            None => "made by the plugin as it is read".to_owned(),
        };
        let description = skill.frontmatter.get("description").and_then(Value::as_str);
        let description = description.map(|d| format!(": {d}")).unwrap_or_default();
        let _ = writeln!(out, "    {}  {files}{description}", skill.uri());
        render_exposure(out, plugin, EntryKind::Skill, &skill.path);
    }
    let _ = writeln!(
        out,
        "  completion  {}",
        if plugin.has_completion() { "yes" } else { "no" }
    );
}

/// One resource or template (`key`, its URI or URI template), with its caching hint.
fn render_resource(out: &mut String, plugin: &Plugin, key: &str, name: &str, mime: Option<&str>, about: &str) {
    let mime = mime.map(|m| format!(" [{m}]")).unwrap_or_default();
    let _ = writeln!(out, "    {key}  {name}{mime}{about}");
    render_exposure(out, plugin, EntryKind::Resource, key);
    render_cache(out, &plugin.manifest, key);
}

/// Says so when the manifest keeps the entry from being served, and why;
/// else the OAuth scopes a caller needs for it, if any.
fn render_exposure(out: &mut String, plugin: &Plugin, kind: EntryKind, name: &str) {
    if let Some(why) = plugin.manifest.hides(kind, name) {
        let _ = writeln!(out, "      NOT SERVED     the manifest's {why}");
        return;
    }
    let scopes = plugin.manifest.required_scopes(kind, name);
    if !scopes.is_empty() {
        let _ = writeln!(out, "      scopes         {} (with --auth-issuer)", scopes.join(" "));
    }
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

pub fn render_grants(out: &mut String, manifest: &Manifest, limits: Option<&Limits>) {
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
                true => format!("{r} (TLS only)"),
                false => r.to_string(),
            })
            .collect();
        let _ = writeln!(out, "  network      {}", rules.join(", "));
    }
    let buckets = manifest.keyvalue.grants();
    if buckets.is_empty() {
        let _ = writeln!(out, "  keyvalue     none");
    }
    for (i, bucket) in buckets.iter().enumerate() {
        let label = if i == 0 { "keyvalue" } else { "" };
        let _ = writeln!(out, "  {label:11}  {bucket}");
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
