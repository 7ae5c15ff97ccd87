//! The host's modules import one way: each top-level module uses only the
//! modules below it in [`LAYERS`] (the order `docs/architecture.md` draws),
//! and no two files of one folder import each other, directly or around a
//! loop. This reads the sources, so a change that adds a loop fails here with
//! the file and the path it used.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The host's top-level modules, top first. `cli` is the command line; the
/// binary (`main.rs`) calls it and counts as part of it.
const LAYERS: &[&str] = &[
    "cli",
    "transport",
    "auth",
    "reload",
    "registry",
    "trust",
    "session",
    "request",
    "server",
    "tasks",
    "state",
    "catalog",
    "runtime",
    "plugin",
    "skills",
    "call",
    "secrets",
    "sandbox",
    "manifest",
    "contract",
    "config",
    "telemetry",
    "metrics",
    "limits",
    "principal",
    "protocol",
    "settings",
];

/// One source file: the module path it is (`["session", "methods"]`) and its text without comments.
struct Source {
    file: PathBuf,
    module: Vec<String>,
    code: String,
}

fn sources(dir: &Path, module: &[String], out: &mut Vec<Source>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        if path.is_dir() {
            let mut inner = module.to_vec();
            inner.push(name);
            sources(&path, &inner, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut this = module.to_vec();
            match name.as_str() {
                "mod" | "lib" => {}
                // The binary's root: a shim over the `cli` layer.
                "main" => this.push("cli".into()),
                _ => this.push(name),
            }
            let text = std::fs::read_to_string(&path).unwrap();
            out.push(Source {
                file: path,
                module: this,
                code: without_comments(&text),
            });
        }
    }
}

fn without_comments(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module paths `code` names from the crate root (`crate::a::b`, or
/// `wasm_mcp::a::b` in the binary), and from its parent (`super::b`), as
/// absolute paths. Grouped imports (`crate::{a, b::c}`) name each member.
fn references(source: &Source) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let parent = &source.module[..source.module.len().saturating_sub(1)];
    let mut roots = vec![("crate::", &[][..]), ("super::", parent)];
    if source.file.ends_with("main.rs") {
        // The binary names the library by its crate name.
        roots.push(("wasm_mcp::", &[][..]));
    }
    for (root, base) in roots {
        let mut rest = source.code.as_str();
        while let Some(at) = rest.find(root) {
            // Part of a longer path (`exports::wasm_mcp::…`, `my_crate::…`): not a root.
            let inside_a_path = rest[..at]
                .chars()
                .last()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
            rest = &rest[at + root.len()..];
            if inside_a_path {
                continue;
            }
            for path in paths_at(rest) {
                let mut absolute = base.to_vec();
                absolute.extend(path);
                found.push(absolute);
            }
        }
    }
    found
}

/// The paths that start at `text`: `a::b::C` or a group `{a::b, c}`.
fn paths_at(text: &str) -> Vec<Vec<String>> {
    if let Some(group) = text.strip_prefix('{') {
        let mut depth = 0;
        let end = group
            .char_indices()
            .find(|(_, c)| {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => return true,
                    '}' => depth -= 1,
                    _ => {}
                }
                false
            })
            .map_or(group.len(), |(i, _)| i);
        return split_top_level(&group[..end])
            .into_iter()
            .flat_map(|member| paths_at(member.trim()))
            .collect();
    }
    let mut path = Vec::new();
    let mut rest = text;
    loop {
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if len == 0 {
            break;
        }
        path.push(rest[..len].to_owned());
        match rest[len..].strip_prefix("::") {
            Some(next) if next.starts_with('{') => {
                return paths_at(next)
                    .into_iter()
                    .map(|tail| path.iter().cloned().chain(tail).collect())
                    .collect();
            }
            Some(next) => rest = next,
            None => break,
        }
    }
    vec![path]
}

fn split_top_level(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn all_sources() -> Vec<Source> {
    let mut out = Vec::new();
    sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &[], &mut out);
    out
}

#[test]
fn every_top_level_module_is_a_layer() {
    let modules: BTreeSet<String> = all_sources().iter().filter_map(|s| s.module.first().cloned()).collect();
    let layers: BTreeSet<String> = LAYERS.iter().map(|l| l.to_string()).collect();
    assert_eq!(
        modules, layers,
        "add a new top-level module to LAYERS (and to docs/architecture.md)"
    );
}

#[test]
fn top_level_modules_import_only_the_layers_below_them() {
    let rank = |module: &str| LAYERS.iter().position(|l| *l == module);
    let mut violations = Vec::new();
    for source in all_sources() {
        let Some(own) = source.module.first() else { continue };
        for path in references(&source) {
            let Some(target) = path.first() else { continue };
            if target == own {
                continue;
            }
            if let (Some(from), Some(to)) = (rank(own), rank(target))
                && from >= to
            {
                violations.push(format!("{} ({own}) uses {}", source.file.display(), path.join("::")));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "imports must point down the layers {LAYERS:?}:\n{}",
        violations.join("\n")
    );
}

/// What the transports may use: the protocol they speak, authorization,
/// the request layer (a 2026-07-28 request over HTTP is served by a peer of
/// its own), the process (`server`: the hub they are handed, its status
/// snapshot) — and, genuinely theirs to reach, the 2025-11-25 sessions they
/// deliver messages to, the settings whose hints their errors name and the
/// metrics they serve. Catalog, manifests, plugins, the sandbox: never.
const TRANSPORT_USES: &[&str] = &[
    "auth", "protocol", "request", "server", "session", "settings", "metrics",
];

#[test]
fn transport_only_moves_messages() {
    let mut violations = Vec::new();
    for source in all_sources() {
        if source.module.first().is_none_or(|m| m != "transport") {
            continue;
        }
        for path in references(&source) {
            let Some(target) = path.first() else { continue };
            if target != "transport" && !TRANSPORT_USES.contains(&target.as_str()) {
                violations.push(format!("{} uses {}", source.file.display(), path.join("::")));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "transport/ may use only {TRANSPORT_USES:?}:\n{}",
        violations.join("\n")
    );
}

#[test]
fn no_two_files_of_a_folder_import_each_other() {
    let sources = all_sources();
    // Edges between sibling files (a folder's `mod.rs` is the folder itself, not a sibling).
    let files: BTreeSet<Vec<String>> = sources
        .iter()
        .filter(|s| !s.file.ends_with("mod.rs") && !s.file.ends_with("lib.rs"))
        .map(|s| s.module.clone())
        .collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for source in sources.iter().filter(|s| files.contains(&s.module)) {
        let parent = &source.module[..source.module.len() - 1];
        for path in references(source) {
            if path.len() <= parent.len() || path[..parent.len()] != *parent {
                continue;
            }
            let sibling = path[..=parent.len()].to_vec();
            if sibling != source.module && files.contains(&sibling) {
                edges.entry(source.module.clone()).or_default().insert(sibling);
            }
        }
    }
    for start in edges.keys() {
        let mut stack = vec![(start.clone(), vec![start.join("::")])];
        let mut seen = BTreeSet::new();
        while let Some((at, trail)) = stack.pop() {
            for next in edges.get(&at).into_iter().flatten() {
                let mut trail = trail.clone();
                trail.push(next.join("::"));
                assert!(
                    next != start,
                    "files of one folder import each other: {}",
                    trail.join(" -> ")
                );
                if seen.insert(next.clone()) {
                    stack.push((next.clone(), trail));
                }
            }
        }
    }
}

#[test]
fn the_checker_reads_grouped_and_nested_imports() {
    let source = Source {
        file: PathBuf::from("x.rs"),
        module: vec!["session".into(), "methods".into()],
        code: "use crate::{call::{CallScope, scope::Link}, limits};\nuse super::client::X;\nlet y = crate::protocol::jsonrpc::f();".into(),
    };
    let found: Vec<String> = references(&source).iter().map(|p| p.join("::")).collect();
    assert_eq!(
        found,
        [
            "call::CallScope",
            "call::scope::Link",
            "limits",
            "protocol::jsonrpc::f",
            "session::client::X"
        ]
    );
}
