//! Text utilities: count words, change case, reverse, slugify, and base64.
//! The first example plugin built with `wasm-mcp-sdk`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wasm_mcp_sdk::{Icon, Plugin, Structured, Tool};

/// A text to work on.
#[derive(Deserialize, JsonSchema)]
struct TextArgs {
    /// The input text.
    text: String,
}

/// How long a text is.
#[derive(Serialize, JsonSchema)]
struct Counts {
    /// Runs of non-whitespace characters.
    words: usize,
    /// Lines, as separated by `\n` (a final newline does not start a new one).
    lines: usize,
    /// Unicode scalar values.
    characters: usize,
}

fn word_count(args: TextArgs) -> Structured<Counts> {
    Structured(Counts {
        words: args.text.split_whitespace().count(),
        lines: args.text.lines().count(),
        characters: args.text.chars().count(),
    })
}

/// A target case.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Case {
    Upper,
    Lower,
    Title,
    Snake,
    Kebab,
}

/// A text and the case to put it in.
#[derive(Deserialize, JsonSchema)]
struct ChangeCaseArgs {
    /// The input text.
    text: String,
    /// The case to convert to: `upper` (HELLO WORLD), `lower` (hello world),
    /// `title` (Hello World, words separated by single spaces), `snake`
    /// (hello_world) or `kebab` (hello-world).
    to: Case,
}

fn change_case(args: ChangeCaseArgs) -> String {
    let text = &args.text;
    match args.to {
        Case::Upper => text.to_uppercase(),
        Case::Lower => text.to_lowercase(),
        Case::Title => text.split_whitespace().map(capitalize).collect::<Vec<_>>().join(" "),
        Case::Snake => words(text).join("_").to_lowercase(),
        Case::Kebab => words(text).join("-").to_lowercase(),
    }
}

/// The words of `text`: runs of alphanumeric characters, also split where a
/// lowercase letter or digit is followed by an uppercase one (`camelCase`).
fn words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut previous: Option<char> = None;
    for c in text.chars() {
        let camel_break = c.is_uppercase() && previous.is_some_and(|p| p.is_lowercase() || p.is_numeric());
        if (!c.is_alphanumeric() || camel_break) && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        if c.is_alphanumeric() {
            current.push(c);
        }
        previous = Some(c);
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars.flat_map(char::to_lowercase)).collect(),
        None => String::new(),
    }
}

fn reverse(args: TextArgs) -> String {
    args.text.chars().rev().collect()
}

fn slugify(args: TextArgs) -> String {
    let lower = args.text.to_lowercase();
    lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// Base64 to decode.
#[derive(Deserialize, JsonSchema)]
struct DecodeArgs {
    /// Standard base64 (RFC 4648 alphabet with `=` padding) of UTF-8 text;
    /// whitespace is ignored.
    data: String,
}

fn base64_decode(args: DecodeArgs) -> Result<String, String> {
    let compact: String = args.data.split_whitespace().collect();
    let bytes = STANDARD.decode(&compact).map_err(|e| {
        format!(
            "`data` is not valid base64 ({e}); expected the standard alphabet \
             (A-Z, a-z, 0-9, '+', '/') with '=' padding to a multiple of 4 characters"
        )
    })?;
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "the decoded data ({} bytes) is not UTF-8 text ({}); this tool only returns text",
            e.as_bytes().len(),
            e.utf8_error()
        )
    })
}

fn base64_encode(args: TextArgs) -> String {
    STANDARD.encode(args.text)
}

/// A small "Aa" icon: an SVG as a base64 data URI (a URI may not hold its spaces).
const ICON: &str = "data:image/svg+xml;base64,PHN2ZyB4bWxucz0naHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmcnIHZpZXdCb3g9JzAgMCAyNCAyNCc+PHJlY3Qgd2lkdGg9JzI0JyBoZWlnaHQ9JzI0JyByeD0nNCcgZmlsbD0nIzJiNmNiMCcvPjx0ZXh0IHg9JzEyJyB5PScxNycgZm9udC1zaXplPScxMicgdGV4dC1hbmNob3I9J21pZGRsZScgZmlsbD0nd2hpdGUnIGZvbnQtZmFtaWx5PSdzYW5zLXNlcmlmJz5BYTwvdGV4dD48L3N2Zz4=";

/// Every tool here only reads its arguments.
fn pure(tool: Tool) -> Tool {
    tool.read_only_hint(true).idempotent_hint(true).open_world_hint(false)
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool(pure(
            Tool::new("word_count", word_count)
                .title("Word count")
                .description("Counts the words, lines and characters of a text.")
                .icon(Icon {
                    mime_type: Some("image/svg+xml".into()),
                    sizes: Some(vec!["any".into()]),
                    ..Icon::new(ICON)
                }),
        ))
        .tool(pure(
            Tool::new("change_case", change_case).title("Change case").description(
                "Converts a text to upper, lower or title case, or to a snake_case or \
                     kebab-case identifier.",
            ),
        ))
        .tool(pure(
            Tool::new("reverse", reverse)
                .title("Reverse")
                .description("Reverses a text, character by character."),
        ))
        .tool(pure(Tool::new("slugify", slugify).title("Slugify").description(
            "Turns a text into a URL slug: lowercase ASCII letters and digits joined by '-'.",
        )))
        .tool(pure(
            Tool::new("base64_encode", base64_encode)
                .title("Base64 encode")
                .description("Encodes a text's UTF-8 bytes as standard base64."),
        ))
        .tool(pure(
            Tool::new("base64_decode", base64_decode)
                .title("Base64 decode")
                .description("Decodes standard base64 into UTF-8 text."),
        ))
}

wasm_mcp_sdk::export!(plugin);

#[cfg(test)]
mod tests {
    use super::*;

    fn case(text: &str, to: Case) -> String {
        change_case(ChangeCaseArgs { text: text.into(), to })
    }

    #[test]
    fn cases() {
        assert_eq!(case("helloWorld foo-bar", Case::Snake), "hello_world_foo_bar");
        assert_eq!(case("Hello World", Case::Kebab), "hello-world");
        assert_eq!(case("hello wORLD", Case::Title), "Hello World");
        assert_eq!(case("abc", Case::Upper), "ABC");
    }

    #[test]
    fn slugs() {
        let slug = slugify(TextArgs {
            text: "  Hello, World! 2024 ".into(),
        });
        assert_eq!(slug, "hello-world-2024");
    }

    #[test]
    fn decode_errors_are_helpful() {
        let err = base64_decode(DecodeArgs {
            data: "not base64!".into(),
        })
        .unwrap_err();
        assert!(err.contains("not valid base64"), "{err}");
        let ok = base64_decode(DecodeArgs {
            data: "aGVs bG8=".into(),
        });
        assert_eq!(ok.unwrap(), "hello");
    }
}
