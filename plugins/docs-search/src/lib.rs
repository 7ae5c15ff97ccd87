//! Searches and reads the Markdown files of one directory: the read-only
//! grant of its manifest (`docs-search.toml`), which it sees as `/docs`.
//!
//! Without that grant the plugin still loads, lists nothing, and its tools
//! say what is missing. With it, the plugin sees that folder and nothing
//! else: a path that leaves it (`..`, an absolute path elsewhere, a symlink
//! pointing out) is refused by the host's sandbox, whatever the tool
//! arguments say, and it cannot change a file in it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wasm_mcp_sdk::{Plugin, Resource, ResourceContents, Structured, Tool};

/// Where the manifest's grant appears inside the sandbox.
const ROOT: &str = "/docs";
/// How deep the search descends into subfolders.
const MAX_DEPTH: usize = 8;

/// Every Markdown file under `/docs`, as paths relative to it, sorted.
fn markdown_files() -> Result<Vec<String>, String> {
    let mut files = Vec::new();
    walk(ROOT, "", 0, &mut files)
        .map_err(|e| format!("cannot read {ROOT}: {e} (grant a folder as {ROOT} in docs-search.toml)"))?;
    files.sort();
    Ok(files)
}

fn walk(dir: &str, prefix: &str, depth: usize, files: &mut Vec<String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let relative = format!("{prefix}{name}");
        let kind = entry.file_type()?;
        if kind.is_dir() && depth < MAX_DEPTH {
            walk(&format!("{dir}/{name}"), &format!("{relative}/"), depth + 1, files)?;
        } else if kind.is_file() && name.ends_with(".md") {
            files.push(relative);
        }
    }
    Ok(())
}

/// A path relative to `/docs`, checked to stay inside it. (The sandbox
/// refuses escapes anyway; this gives the model a clearer message.)
fn doc_path(relative: &str) -> Result<String, String> {
    let relative = relative.trim_start_matches("docs://").trim_start_matches('/');
    if relative.is_empty() || relative.split('/').any(|part| part == ".." || part.is_empty()) {
        return Err(format!(
            "{relative:?} is not a document path: use a path relative to the docs folder, as search_docs returns it"
        ));
    }
    Ok(format!("{ROOT}/{relative}"))
}

/// What to look for.
#[derive(Deserialize, JsonSchema)]
struct SearchArgs {
    /// Words to look for (case-insensitive); a line matches when it contains all of them.
    query: String,
    /// The most matching lines to return (default 20).
    #[serde(default)]
    limit: Option<usize>,
}

/// One matching line.
#[derive(Serialize, JsonSchema)]
struct Match {
    /// The document, relative to the docs folder (pass it to `read_doc`).
    path: String,
    /// The 1-based line number.
    line: usize,
    /// The line's text.
    text: String,
}

/// What a search found.
#[derive(Serialize, JsonSchema)]
struct SearchResults {
    /// Matching lines, in document order.
    matches: Vec<Match>,
    /// Documents searched.
    documents: usize,
    /// Whether more lines matched than were returned.
    truncated: bool,
}

fn search_docs(args: SearchArgs) -> Result<Structured<SearchResults>, String> {
    let words: Vec<String> = args.query.split_whitespace().map(str::to_lowercase).collect();
    if words.is_empty() {
        return Err("the query is empty: give one or more words".into());
    }
    let limit = args.limit.unwrap_or(20).clamp(1, 200);
    let files = markdown_files()?;
    let mut matches = Vec::new();
    let mut truncated = false;
    'files: for path in &files {
        let text = std::fs::read_to_string(format!("{ROOT}/{path}")).map_err(|e| format!("cannot read {path}: {e}"))?;
        for (index, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            if words.iter().all(|w| lower.contains(w.as_str())) {
                if matches.len() == limit {
                    truncated = true;
                    break 'files;
                }
                matches.push(Match {
                    path: path.clone(),
                    line: index + 1,
                    text: line.trim().to_string(),
                });
            }
        }
    }
    Ok(Structured(SearchResults {
        matches,
        documents: files.len(),
        truncated,
    }))
}

/// Which document to read.
#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    /// The document's path relative to the docs folder, e.g. `guides/manifest.md`.
    path: String,
}

fn read_doc(args: ReadArgs) -> Result<String, String> {
    let path = doc_path(&args.path)?;
    std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", args.path))
}

fn plugin() -> Plugin {
    let mut plugin = Plugin::new()
        .tool(
            Tool::new("search_docs", search_docs)
                .title("Search the docs")
                .description("Finds the lines of the Markdown docs that contain every word of the query")
                .read_only_hint(true),
        )
        .tool(
            Tool::new("read_doc", read_doc)
                .title("Read a doc")
                .description("Returns one Markdown document, by the path search_docs gives")
                .read_only_hint(true),
        );
    // Each document is a resource too (the list is empty without the grant).
    for path in markdown_files().unwrap_or_default() {
        let uri = format!("docs:///{path}");
        plugin = plugin.resource(
            Resource::new(uri, path.clone(), move |uri| {
                let text = std::fs::read_to_string(format!("{ROOT}/{path}"))
                    .map_err(|e| wasm_mcp_sdk::Error::NotFound(format!("{uri}: {e}")))?;
                Ok(vec![ResourceContents::text(uri, "text/markdown", text)])
            })
            .mime_type("text/markdown"),
        );
    }
    plugin
}

wasm_mcp_sdk::export!(plugin);
