//! `wasm-mcp new`: writes a ready-to-build plugin project in Rust, Python or
//! JavaScript from the templates embedded in the binary (`host/templates/<lang>/`).
//!
//! Every project gets one example tool (plus a resource and a prompt in Python and
//! JavaScript), the WIT contract, a Makefile (`build` → `dist/NAME.wasm`, `test`),
//! a README and a test of its own; with `--skill`, a skill too (`skills/NAME/SKILL.md`,
//! which `build` copies to `dist/NAME.skills/`, the skills folder beside the component). Templates replace `{{name}}` (the plugin's name)
//! and `{{crate}}` (the name with `_` for `-`, as Rust names its output).
//!
//! What a language needs beyond its template comes from the repository, so it is
//! never a second copy: the Python and JavaScript helper layers and their pinned
//! tool versions, and for Rust the SDK's source. The SDK is not on crates.io, and
//! a path into a wasm-mcp checkout would break when the project moves or the
//! checkout changes; so the project gets the SDK of exactly this binary's version
//! in `wasm-mcp-sdk/`, and builds offline from crates.io's usual dependencies only.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use include_dir::{Dir, include_dir};
use serde_json::Value;

static RUST: Dir = include_dir!("$CARGO_MANIFEST_DIR/templates/rust");
static PYTHON: Dir = include_dir!("$CARGO_MANIFEST_DIR/templates/python");
static JS: Dir = include_dir!("$CARGO_MANIFEST_DIR/templates/js");
static SDK_SOURCE: Dir = include_dir!("$CARGO_MANIFEST_DIR/../sdk-guest/src");
// The SDK's manifest names its examples, so they come along.
static SDK_EXAMPLES: Dir = include_dir!("$CARGO_MANIFEST_DIR/../sdk-guest/examples");
const SDK_MANIFEST: &str = include_str!("../../../sdk-guest/Cargo.toml");
/// The contract's WIT: the plugin worlds, the `stateful-plugin` world with the
/// `wasi:keyvalue` it imports, and `full-plugin` (skills and state), which the SDK builds
/// against.
const WIT: [(&str, &str); 6] = [
    ("wit/plugin.wit", include_str!("../../../wit/plugin.wit")),
    ("wit/state.wit", include_str!("../../../wit/state.wit")),
    (
        "wit/deps/keyvalue/world.wit",
        include_str!("../../../wit/deps/keyvalue/world.wit"),
    ),
    (
        "wit/deps/keyvalue/store.wit",
        include_str!("../../../wit/deps/keyvalue/store.wit"),
    ),
    (
        "wit/deps/keyvalue/atomics.wit",
        include_str!("../../../wit/deps/keyvalue/atomics.wit"),
    ),
    (
        "wit/deps/keyvalue/batch.wit",
        include_str!("../../../wit/deps/keyvalue/batch.wit"),
    ),
];
const PYTHON_HELPER: &str = include_str!("../../../plugins/python/wasm_mcp.py");
const PYTHON_REQUIREMENTS: &str = include_str!("../../../plugins/python/requirements.txt");
const JS_HELPER: &str = include_str!("../../../plugins/js/wasm-mcp.js");
const JS_PACKAGE: &str = include_str!("../../../plugins/js/package.json");
const JS_LOCK: &str = include_str!("../../../plugins/js/package-lock.json");

/// `wasm-mcp new NAME --lang rust|python|js [--skill] [--dir PARENT]`.
#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// The plugin's name: lowercase letters, digits and dashes (its file will be NAME.wasm).
    pub name: String,
    /// The language of the plugin.
    #[arg(long, value_enum)]
    pub lang: Lang,
    /// The directory to create the project in [default: the current directory].
    #[arg(long, value_name = "PARENT", default_value = ".", hide_default_value = true)]
    pub dir: PathBuf,
    /// Ship a skill too: skills/NAME/SKILL.md, built into dist/NAME.skills/ beside the component.
    #[arg(long)]
    pub skill: bool,
}

/// The skill `--skill` adds: its `SKILL.md`, named as the plugin.
const SKILL_MD: &str = "---
name: {{name}}
description: How to use the tools of {{name}} (edit this line, which clients show)
---

# {{name}}

Tell the agent here when and how to use this plugin's tools. Put longer
references beside this file (e.g. `references/details.md`) and point to them.
";

/// What `--skill` adds to the project's Makefile: `build` copies `skills/`
/// to the skills folder beside the component.
const SKILL_MAKE: &str = "
# The skills the plugin ships: skills/ becomes dist/{{name}}.skills/, beside dist/{{name}}.wasm.
build: dist/{{name}}.skills

dist/{{name}}.skills: $(shell find skills -type f)
	rm -rf $@
	mkdir -p dist
	cp -R skills $@
";

/// Runs `wasm-mcp new`: creates the project and says what to do next.
pub fn run(args: &NewArgs) -> Result<()> {
    let project = create(&args.name, args.lang, args.skill, &args.dir)?;
    let skills = match args.skill {
        true => format!(" (and dist/{}.skills)", args.name),
        false => String::new(),
    };
    println!(
        "Created the {} plugin {} in {}.\nNext: cd {} && make test && make build, then copy dist/{}.wasm{skills} into the \
         folder `wasm-mcp serve --plugins DIR` watches.",
        args.lang,
        args.name,
        project.display(),
        project.display(),
        args.name
    );
    Ok(())
}

/// The longest plugin name accepted.
const MAX_NAME_LEN: usize = 64;

/// The language of a new plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Rust,
    Python,
    Js,
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Lang::Rust => "Rust",
            Lang::Python => "Python",
            Lang::Js => "JavaScript",
        })
    }
}

/// Checks `name` can name a plugin (its `.wasm` file, its tools' prefix when
/// renamed, a Rust crate, a Python or npm project): lowercase ASCII letters,
/// digits and single `-` between them, starting with a letter.
pub fn validate_name(name: &str) -> Result<()> {
    let well_formed = name.len() <= MAX_NAME_LEN
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && !name.contains("--")
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !well_formed {
        bail!(
            "invalid plugin name {name:?}: use lowercase letters, digits and single dashes, starting with a letter \
             and at most {MAX_NAME_LEN} characters (e.g. `my-tools`)"
        );
    }
    Ok(())
}

/// Writes the project `parent/name` for `lang` (with a skill when `skill`)
/// and returns its path. Refuses an invalid name or an existing path; a
/// failure part-way removes what it wrote.
pub fn create(name: &str, lang: Lang, skill: bool, parent: &Path) -> Result<PathBuf> {
    validate_name(name)?;
    let project = parent.join(name);
    if project.exists() {
        bail!(
            "{} already exists; choose another name, or another parent directory with --dir",
            project.display()
        );
    }
    let mut files = files(name, lang)?;
    if skill {
        add_skill(&mut files, name);
    }
    std::fs::create_dir_all(&project).with_context(|| format!("cannot create {}", project.display()))?;
    let written = files
        .iter()
        .try_for_each(|(path, contents)| write(&project.join(path), contents));
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&project);
        return Err(e);
    }
    Ok(project)
}

/// Every file of the project, by path relative to it.
fn files(name: &str, lang: Lang) -> Result<Vec<(PathBuf, String)>> {
    let template = match lang {
        Lang::Rust => &RUST,
        Lang::Python => &PYTHON,
        Lang::Js => &JS,
    };
    let mut files = Vec::new();
    collect(template, Path::new(""), &mut files, &|text| substitute(text, name));
    files.extend(WIT.iter().map(|(path, text)| (PathBuf::from(path), text.to_string())));
    match lang {
        Lang::Rust => {
            files.push(("wasm-mcp-sdk/Cargo.toml".into(), SDK_MANIFEST.to_owned()));
            collect(&SDK_SOURCE, Path::new("wasm-mcp-sdk/src"), &mut files, &str::to_owned);
            collect(
                &SDK_EXAMPLES,
                Path::new("wasm-mcp-sdk/examples"),
                &mut files,
                &str::to_owned,
            );
        }
        Lang::Python => {
            files.push(("wasm_mcp.py".into(), PYTHON_HELPER.to_owned()));
            files.push(("requirements.txt".into(), PYTHON_REQUIREMENTS.to_owned()));
        }
        Lang::Js => {
            files.push(("wasm-mcp.js".into(), JS_HELPER.to_owned()));
            files.push(("package.json".into(), renamed_npm(JS_PACKAGE, name, false)?));
            files.push(("package-lock.json".into(), renamed_npm(JS_LOCK, name, true)?));
        }
    }
    Ok(files)
}

/// Adds the skill of `--skill`: its `SKILL.md`, and the Makefile's rule that ships it.
fn add_skill(files: &mut Vec<(PathBuf, String)>, name: &str) {
    files.push((
        PathBuf::from(format!("skills/{name}/SKILL.md")),
        substitute(SKILL_MD, name),
    ));
    if let Some((_, makefile)) = files.iter_mut().find(|(path, _)| path == Path::new("Makefile")) {
        makefile.push_str(&substitute(SKILL_MAKE, name));
    }
}

/// The text files under `dir`, at `base`, each passed through `convert`;
/// `gitignore` becomes `.gitignore` (a dotfile in the source tree would be
/// taken for the repository's own).
fn collect(dir: &Dir, base: &Path, out: &mut Vec<(PathBuf, String)>, convert: &dyn Fn(&str) -> String) {
    for file in dir.files() {
        let text = file.contents_utf8().expect("templates are UTF-8 text");
        let path = file.path();
        let path = if path.file_name().is_some_and(|n| n == "gitignore") {
            path.with_file_name(".gitignore")
        } else {
            path.to_path_buf()
        };
        out.push((base.join(path), convert(text)));
    }
    for sub in dir.dirs() {
        collect(sub, base, out, convert);
    }
}

fn substitute(text: &str, name: &str) -> String {
    text.replace("{{name}}", name)
        .replace("{{crate}}", &name.replace('-', "_"))
}

/// The examples' npm `package.json` (or, with `lock`, its lock file) under the
/// project's name: the same pinned tools, so `npm ci` installs exactly those.
fn renamed_npm(json: &str, name: &str, lock: bool) -> Result<String> {
    let mut value: Value = serde_json::from_str(json).context("the embedded npm package file is not JSON")?;
    value["name"] = name.into();
    if lock {
        value["packages"][""]["name"] = name.into();
    } else {
        value["description"] = format!("The wasm-mcp plugin {name}").into();
    }
    Ok(serde_json::to_string_pretty(&value)? + "\n")
}

fn write(path: &Path, contents: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(path, contents).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        for good in ["a", "my-tools", "x2", "abc-1-d"] {
            assert!(validate_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "My",
            "1abc",
            "-a",
            "a-",
            "a--b",
            "a_b",
            "a b",
            "a/b",
            "..",
            &"a".repeat(65),
        ] {
            let error = validate_name(bad).expect_err(bad).to_string();
            assert!(error.contains("invalid plugin name"), "{error}");
        }
    }

    #[test]
    fn every_language_gets_a_makefile_a_readme_a_test_and_the_wit_with_the_name_filled_in() {
        for (lang, test_file) in [
            (Lang::Rust, "src/lib.rs"),
            (Lang::Python, "test_app.py"),
            (Lang::Js, "tools.test.js"),
        ] {
            let files = files("my-plugin", lang).unwrap();
            let paths: Vec<&Path> = files.iter().map(|(p, _)| p.as_path()).collect();
            for expected in ["Makefile", "README.md", "wit/plugin.wit", ".gitignore", test_file] {
                assert!(
                    paths.contains(&Path::new(expected)),
                    "{lang}: no {expected} in {paths:?}"
                );
            }
            for (path, text) in files.iter().filter(|(p, _)| !p.starts_with("wasm-mcp-sdk")) {
                assert!(!text.contains("{{"), "{lang}: {} keeps a placeholder", path.display());
            }
            let makefile = &files.iter().find(|(p, _)| p == Path::new("Makefile")).unwrap().1;
            assert!(makefile.contains("dist/my-plugin.wasm"), "{lang}: {makefile}");
        }
    }
}
