//! A small, built-in collection of notes about wasm-mcp, served the way a
//! real docs plugin would be: each note is a resource, a template addresses
//! notes by slug (with completion), prompts embed notes for the model, and
//! tools search them and announce updates.
//!
//! Every call runs in a fresh instance, so the collection is static; a
//! "change" is an announcement through `resource_updated`.

use schemars::JsonSchema;
use serde::Deserialize;
use wasm_mcp_sdk::host;
use wasm_mcp_sdk::{
    Annotations, Arguments, ContentBlock, Error, Plugin, Prompt, PromptMessage, Resource, ResourceContents,
    ResourceLink, ResourceTemplate, Role, Tool, completion,
};

struct Note {
    slug: &'static str,
    title: &'static str,
    summary: &'static str,
    tags: &'static [&'static str],
    body: &'static str,
}

const NOTES: &[Note] = &[
    Note {
        slug: "getting-started",
        title: "Getting started",
        summary: "Build the host and the plugins, then serve them over stdio.",
        tags: &["guide"],
        body: "# Getting started\n\n\
            Run `make run`: it builds the `wasm-mcp` binary and the example plugins, then serves\n\
            `plugins/dist` over stdio. Point an MCP client at `wasm-mcp serve --plugins DIR`.\n",
    },
    Note {
        slug: "writing-plugins",
        title: "Writing a plugin in Rust",
        summary: "Plain Rust functions over serde types, one export line.",
        tags: &["guide", "sdk"],
        body: "# Writing a plugin in Rust\n\n\
            Depend on `wasm-mcp-sdk`, write each tool as a function from a `Deserialize +\n\
            JsonSchema` struct to a `String`, content blocks or `Structured<T>`, build a `Plugin`\n\
            and call `wasm_mcp_sdk::export!(plugin)`. Build for `wasm32-wasip2`.\n",
    },
    Note {
        slug: "sandbox",
        title: "The sandbox",
        summary: "Plugins get nothing unless a manifest grants it.",
        tags: &["security"],
        body: "# The sandbox\n\n\
            A plugin sees no files, no environment and no network unless `NAME.toml` beside\n\
            `NAME.wasm` grants them. Its stdout and stderr become log messages.\n",
    },
    Note {
        slug: "limits",
        title: "Limits on every call",
        summary: "Fuel, a deadline and a memory cap bound each call.",
        tags: &["security", "operations"],
        body: "# Limits on every call\n\n\
            Each call runs in a fresh instance with fuel, a wall-clock deadline and a memory cap.\n\
            Hitting one ends that call with an error naming the limit; the host goes on.\n",
    },
    Note {
        slug: "hot-reload",
        title: "Hot reload",
        summary: "Replace a .wasm file and the host swaps it in.",
        tags: &["operations"],
        body: "# Hot reload\n\n\
            The host watches the plugins directory, compiles a changed component off the request\n\
            path and swaps it in; calls already running finish on the old version.\n",
    },
];

const INDEX_URI: &str = "notes://index";
const MARKDOWN: &str = "text/markdown";

fn note_uri(slug: &str) -> String {
    format!("notes://note/{slug}")
}

fn find(slug: &str) -> Option<&'static Note> {
    NOTES.iter().find(|note| note.slug == slug)
}

/// The note `slug`, or an error that lists the known slugs.
fn require(slug: &str) -> Result<&'static Note, String> {
    find(slug).ok_or_else(|| {
        let known: Vec<_> = NOTES.iter().map(|n| n.slug).collect();
        format!("unknown note `{slug}`; known notes: {}", known.join(", "))
    })
}

/// [`require`] for prompts, whose arguments are invalid when the note is unknown.
fn require_arg(slug: &str) -> Result<&'static Note, Error> {
    require(slug).map_err(Error::InvalidParams)
}

fn contents(note: &Note) -> ResourceContents {
    ResourceContents::text(note_uri(note.slug), MARKDOWN, note.body)
}

fn index() -> String {
    let mut text = String::from("# Notes\n\n");
    for note in NOTES {
        let uri = note_uri(note.slug);
        text += &format!("- [{}]({uri}): {}\n", note.title, note.summary);
    }
    text
}

/// The slugs that start with `prefix`.
fn complete_slug(prefix: &str, _: &Arguments) -> Vec<String> {
    completion::starting_with(NOTES.iter().map(|n| n.slug), prefix)
}

// --- resources -------------------------------------------------------------

fn resources(plugin: Plugin) -> Plugin {
    let index = Resource::text(INDEX_URI, "index", MARKDOWN, index())
        .title("Notes index")
        .description("Every note, with a link and a one-line summary")
        .annotations(Annotations {
            audience: Some(vec![Role::User, Role::Assistant]),
            priority: Some(1.0),
            last_modified: None,
        });
    let notes = NOTES.iter().map(|note| {
        Resource::text(note_uri(note.slug), note.slug, MARKDOWN, note.body)
            .title(note.title)
            .description(note.summary)
    });
    let template = ResourceTemplate::new("notes://note/{slug}", "note", |_, vars| {
        let slug = vars.get("slug").unwrap_or_default();
        let note = find(slug).ok_or_else(|| Error::NotFound(note_uri(slug)))?;
        Ok(vec![contents(note)])
    })
    .title("Note by slug")
    .description("One note, addressed by its slug")
    .mime_type(MARKDOWN)
    .complete("slug", complete_slug);
    notes
        .fold(plugin.resource(index), Plugin::resource)
        .resource_template(template)
}

// --- prompts ---------------------------------------------------------------

#[derive(Deserialize, JsonSchema)]
struct SummarizeArgs {
    /// The slug of the note to summarize
    slug: String,
}

fn summarize_note(args: SummarizeArgs) -> Result<Vec<PromptMessage>, Error> {
    let note = require_arg(&args.slug)?;
    Ok(vec![
        PromptMessage::user(ContentBlock::resource(contents(note))),
        PromptMessage::user(ContentBlock::text(
            "Summarize the note above in three short bullet points.",
        )),
    ])
}

#[derive(Deserialize, JsonSchema)]
struct CompareArgs {
    /// The slug of the first note
    first: String,
    /// The slug of the second note
    second: String,
}

fn compare_notes(args: CompareArgs) -> Result<Vec<PromptMessage>, Error> {
    let (first, second) = (require_arg(&args.first)?, require_arg(&args.second)?);
    Ok(vec![
        PromptMessage::user(ContentBlock::resource(contents(first))),
        PromptMessage::user(ContentBlock::resource(contents(second))),
        PromptMessage::user(ContentBlock::text(
            "Compare the two notes above: what do they agree on, and where do they differ?",
        )),
    ])
}

/// Slugs for `second`, leaving out the one already chosen as `first`.
fn complete_second(prefix: &str, context: &Arguments) -> Vec<String> {
    let first = context.get("first");
    let mut slugs = complete_slug(prefix, context);
    slugs.retain(|slug| Some(slug.as_str()) != first);
    slugs
}

fn prompts(plugin: Plugin) -> Plugin {
    plugin
        .prompt(
            Prompt::new("summarize_note", summarize_note)
                .title("Summarize a note")
                .description("Asks the model to summarize one note, embedded as a resource")
                .complete("slug", complete_slug),
        )
        .prompt(
            Prompt::new("compare_notes", compare_notes)
                .title("Compare two notes")
                .description("Asks the model to compare two notes, both embedded as resources")
                .complete("first", complete_slug)
                .complete("second", complete_second),
        )
}

// --- tools -----------------------------------------------------------------

#[derive(Deserialize, JsonSchema)]
struct SearchArgs {
    /// Words to look for in titles, tags and text (case-insensitive); empty
    /// lists every note
    query: String,
}

fn search_notes(args: SearchArgs) -> Vec<ContentBlock> {
    let query = args.query.trim().to_lowercase();
    let matches: Vec<_> = NOTES
        .iter()
        .filter(|note| {
            let haystack = format!("{} {} {}", note.title, note.tags.join(" "), note.body);
            haystack.to_lowercase().contains(&query)
        })
        .collect();
    let summary = match matches.len() {
        0 => format!("No note matches \"{}\".", args.query),
        1 => format!("1 note matches \"{}\":", args.query),
        n => format!("{n} notes match \"{}\":", args.query),
    };
    let links = matches.into_iter().map(|note| {
        ContentBlock::resource_link(ResourceLink {
            title: Some(note.title.into()),
            description: Some(note.summary.into()),
            mime_type: Some(MARKDOWN.into()),
            size: Some(note.body.len() as u64),
            ..ResourceLink::new(note_uri(note.slug), note.slug)
        })
    });
    std::iter::once(ContentBlock::text(summary)).chain(links).collect()
}

#[derive(Deserialize, JsonSchema)]
struct TouchArgs {
    /// The slug of the note
    slug: String,
}

fn touch_note(args: TouchArgs) -> Result<String, String> {
    let note = require(&args.slug)?;
    let uri = note_uri(note.slug);
    host::resource_updated(&uri);
    Ok(format!("Announced an update of {uri}"))
}

fn tools(plugin: Plugin) -> Plugin {
    plugin
        .tool(
            Tool::new("search_notes", search_notes)
                .title("Search notes")
                .description(
                    "Finds the notes whose title, tags or text contain the query; returns links \
                     to them.",
                )
                .read_only_hint(true)
                .idempotent_hint(true)
                .open_world_hint(false),
        )
        .tool(
            Tool::new("touch_note", touch_note)
                .title("Touch a note")
                .description("Marks a note as updated: subscribers of its resource are notified.")
                .read_only_hint(false)
                .destructive_hint(false)
                .idempotent_hint(true)
                .open_world_hint(false),
        )
}

fn plugin() -> Plugin {
    prompts(resources(tools(Plugin::new())))
}

wasm_mcp_sdk::export!(plugin);
