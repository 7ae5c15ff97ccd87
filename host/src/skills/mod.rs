//! Skills a plugin ships (the `io.modelcontextprotocol/skills` extension):
//! the static skills read from the folder beside its component
//! (`NAME.skills/`), each a directory holding a `SKILL.md` whose frontmatter
//! names it, with every file's bytes, SHA-256 digest and size taken once per
//! load; the skills the plugin makes itself (its `skills` export), whose
//! `SKILL.md` is held to the same rules and whose files have no digests;
//! the limits a skill is held to (512 files, 16 MiB) and a plugin's skills
//! (4 096 files, 64 MiB); and the entry a skill is listed as (`skills/list`,
//! `skills/get`). A folder travels to registries packed as one archive
//! ([`archive`]), read back under the same rules.
//!
//! A skill's path is its directory's path under the skills folder
//! (`git-workflow`, `acme/billing/refunds`); its files are served as
//! `skill://<path>/<file>`. A skill may hold others (nested skills); their
//! files are the enclosing skill's too, as the extension says.

pub mod archive;
mod frontmatter;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

pub use frontmatter::check_skill_md;

/// The extension's identifier, as capabilities and `_meta` name it.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";
/// The URI scheme skills are served under.
pub const SCHEME: &str = "skill://";
/// The file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";
/// The mime type of a directory resource.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";
/// Most files one skill may hold, `SKILL.md` included (the extension's limit).
pub const MAX_FILES_PER_SKILL: usize = 512;
/// Most bytes one skill's files may hold together (the extension's limit).
pub const MAX_BYTES_PER_SKILL: u64 = 16 * 1024 * 1024;
/// Most skills a plugin may make (its `skills` export).
pub const MAX_MADE_SKILLS: usize = 256;
/// Most files a plugin's skills folder may hold, nested skills' counted once.
const MAX_FILES_PER_FOLDER: usize = 8 * MAX_FILES_PER_SKILL;
/// Most bytes a plugin's skills folder may hold.
const MAX_BYTES_PER_FOLDER: u64 = 4 * MAX_BYTES_PER_SKILL;

/// One file of a plugin's skills folder.
pub struct SkillFile {
    pub bytes: Arc<[u8]>,
    /// `sha256:` and 64 lowercase hex digits.
    pub digest: String,
    pub mime_type: String,
}

impl SkillFile {
    fn new(path: &str, bytes: Vec<u8>) -> Self {
        let digest = format!("sha256:{}", hex(&Sha256::digest(&bytes)));
        Self {
            mime_type: mime_type(path),
            bytes: bytes.into(),
            digest,
        }
    }

    /// The `contents` item of a `resources/read` of it at `uri`: text when
    /// it is UTF-8, else base64.
    pub fn contents(&self, uri: &str) -> Value {
        use base64::Engine as _;
        match std::str::from_utf8(&self.bytes) {
            Ok(text) => json!({ "uri": uri, "mimeType": self.mime_type, "text": text }),
            Err(_) => json!({
                "uri": uri,
                "mimeType": self.mime_type,
                "blob": base64::engine::general_purpose::STANDARD.encode(&self.bytes),
            }),
        }
    }
}

/// One skill of a plugin.
pub struct Skill {
    /// Its directory under the skills folder, `/`-separated; its last
    /// segment is its name.
    pub path: String,
    /// Its `SKILL.md` frontmatter, as written.
    pub frontmatter: Map<String, Value>,
    /// Its files, by path under the skills folder (its `SKILL.md` first);
    /// `None` for a skill the plugin makes as it is read.
    pub files: Option<Vec<String>>,
}

impl Skill {
    /// The skill's name (its frontmatter's `name`, the last segment of its path).
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }

    /// The URI of its `SKILL.md`.
    pub fn uri(&self) -> String {
        format!("{SCHEME}{}/{SKILL_MD}", self.path)
    }

    /// The frontmatter's `description`.
    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The skill at `path` that the plugin makes, whose `SKILL.md` it made
    /// as `skill_md`; the error says which rule it breaks.
    pub fn made(path: &str, skill_md: &[u8]) -> Result<Skill, String> {
        if path.is_empty() || path.split('/').any(str::is_empty) || !usable_path(path) {
            return Err(format!(
                "{path:?} is not a skill path: segments of letters, digits and - . _ ~, separated by /"
            ));
        }
        let frontmatter = check_skill_md(skill_md, path.rsplit('/').next().unwrap_or(path))?;
        Ok(Skill {
            path: path.to_owned(),
            frontmatter,
            files: None,
        })
    }

    /// Its entry (`Skill` of `skills/list` and `skills/get`): the URI, the
    /// frontmatter, and every file with its digest and size (`"dynamic"`
    /// for a skill the plugin makes).
    pub fn entry(&self, set: &SkillSet) -> Value {
        let resources = match &self.files {
            None => json!("dynamic"),
            Some(files) => files
                .iter()
                .filter_map(|path| {
                    let file = set.files.get(path)?;
                    Some(json!({ "uri": file_uri(path), "digest": file.digest, "size": file.bytes.len() }))
                })
                .collect(),
        };
        json!({ "uri": self.uri(), "frontmatter": self.frontmatter, "resources": resources })
    }
}

/// A plugin's skills and their files.
#[derive(Default)]
pub struct SkillSet {
    /// By path, in path order.
    pub skills: Vec<Skill>,
    /// Every file of the skills folder, by path under it.
    pub files: BTreeMap<String, SkillFile>,
    /// Why each skill refused at load was left out.
    pub refused: Vec<String>,
}

/// The URI a file of the skills folder is served at.
pub fn file_uri(path: &str) -> String {
    format!("{SCHEME}{path}")
}

/// The skills folder of the plugin whose component is `wasm`: `NAME.skills/` beside it.
pub fn folder_of(wasm: &Path) -> PathBuf {
    wasm.with_extension("skills")
}

impl SkillSet {
    /// Reads the skills folder `dir` (none there: no skills). A skill that
    /// breaks a rule (frontmatter, name, limits) is refused and said why in
    /// [`SkillSet::refused`]; a folder that cannot be read, or holds more
    /// than a plugin's skills may, is an error.
    pub fn read(dir: &Path) -> anyhow::Result<SkillSet> {
        if !dir.is_dir() {
            return Ok(SkillSet::default());
        }
        Ok(Self::of_files(read_files(dir)?, &format!("in {}", dir.display())))
    }

    /// The skills of the folder packed in `archive` (see [`archive`]), read
    /// as [`SkillSet::read`] reads a folder; `origin` says where the archive
    /// comes from in what is refused. The error says why the archive is
    /// refused whole.
    pub fn unpack(archive: &[u8], origin: &str) -> Result<SkillSet, String> {
        Ok(Self::of_files(archive::unpack(archive)?, origin))
    }

    /// The skills of a folder's `files`; `origin` (`in DIR`) says where
    /// they are in what is refused.
    fn of_files(files: BTreeMap<String, SkillFile>, origin: &str) -> SkillSet {
        let mut set = SkillSet {
            files,
            ..SkillSet::default()
        };
        let skill_dirs: Vec<String> = set
            .files
            .keys()
            .filter_map(|path| path.strip_suffix(&format!("/{SKILL_MD}")))
            .map(str::to_owned)
            .collect();
        for path in skill_dirs {
            match set.skill_at(&path) {
                Ok(skill) => set.skills.push(skill),
                Err(why) => set
                    .refused
                    .push(format!("the skill {} {origin} is refused: {why}", file_uri(&path))),
            }
        }
        if set.skills.is_empty() && !set.files.is_empty() && set.refused.is_empty() {
            set.refused.push(format!(
                "no skill {origin}: a skill is a folder with a {SKILL_MD} in it"
            ));
        }
        set
    }

    /// Adds the skills the plugin makes (each checked, or why it is
    /// refused); one at a path the skills folder has is refused.
    pub fn add_made(&mut self, made: Vec<Result<Skill, String>>, plugin: &str) {
        for skill in made {
            match skill {
                Ok(skill) if self.skills.iter().any(|s| s.path == skill.path) => self.refused.push(format!(
                    "the skill {} that plugin {plugin} makes is refused: its skills folder has one at that path",
                    skill.uri()
                )),
                Ok(skill) => self.skills.push(skill),
                Err(why) => self
                    .refused
                    .push(format!("a skill that plugin {plugin} makes is refused: {why}")),
            }
        }
        self.skills.sort_by(|a, b| a.path.cmp(&b.path));
    }

    /// The skill whose directory is `path`, checked.
    fn skill_at(&self, path: &str) -> Result<Skill, String> {
        let md = &self.files[&format!("{path}/{SKILL_MD}")];
        let frontmatter = check_skill_md(&md.bytes, path.rsplit('/').next().unwrap_or(path))?;
        let prefix = format!("{path}/");
        let skill_md = format!("{prefix}{SKILL_MD}");
        let others = self
            .files
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .map(|(p, _)| p.clone())
            .filter(|p| *p != skill_md);
        let files: Vec<String> = std::iter::once(skill_md.clone()).chain(others).collect();
        if files.len() > MAX_FILES_PER_SKILL {
            return Err(format!(
                "it holds {} files, more than the {MAX_FILES_PER_SKILL} a skill may (SKILL.md included); split it into smaller skills",
                files.len()
            ));
        }
        let bytes: u64 = files.iter().map(|p| self.files[p].bytes.len() as u64).sum();
        if bytes > MAX_BYTES_PER_SKILL {
            return Err(format!(
                "its files hold {bytes} bytes, more than the {MAX_BYTES_PER_SKILL} (16 MiB) a skill may; move large files out of it"
            ));
        }
        Ok(Skill {
            path: path.to_owned(),
            frontmatter,
            files: Some(files),
        })
    }
}

/// Every regular file under `dir`, by its `/`-separated path under it,
/// within the folder's bounds. Symbolic links and names that are not UTF-8
/// or not usable in a URI are refused with the folder.
fn read_files(dir: &Path) -> anyhow::Result<BTreeMap<String, SkillFile>> {
    let mut files = BTreeMap::new();
    let mut tally = Tally::default();
    for entry in walkdir::WalkDir::new(dir).min_depth(1).sort_by_file_name() {
        let entry = entry.map_err(|e| anyhow::anyhow!("cannot read the skills folder {}: {e}", dir.display()))?;
        let shown = entry.path().display();
        if entry.file_type().is_symlink() {
            anyhow::bail!("{shown} is a symbolic link; a skills folder holds only files and folders");
        }
        if !entry.file_type().is_file() {
            continue;
        }
        let relative = entry.path().strip_prefix(dir).expect("walked under dir");
        let path = relative
            .to_str()
            .filter(|p| usable_path(p))
            .ok_or_else(|| anyhow::anyhow!("{shown}: {PATH_RULE}"))?
            .replace(std::path::MAIN_SEPARATOR, "/");
        let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
        tally
            .add(size)
            .map_err(|why| anyhow::anyhow!("the skills folder {} holds {why}", dir.display()))?;
        let bytes = std::fs::read(entry.path()).map_err(|e| anyhow::anyhow!("cannot read {shown}: {e}"))?;
        files.insert(path.clone(), SkillFile::new(&path, bytes));
    }
    Ok(files)
}

/// The files of a plugin's skills folder counted so far, against the
/// folder's limits.
#[derive(Default)]
struct Tally {
    files: usize,
    bytes: u64,
}

impl Tally {
    /// Counts one more file of `size` bytes; the error says the limits are passed.
    fn add(&mut self, size: u64) -> Result<(), String> {
        self.files += 1;
        self.bytes = self.bytes.saturating_add(size);
        if self.files > MAX_FILES_PER_FOLDER || self.bytes > MAX_BYTES_PER_FOLDER {
            return Err(format!(
                "more than {MAX_FILES_PER_FOLDER} files or {MAX_BYTES_PER_FOLDER} bytes; a plugin's skills may hold no more"
            ));
        }
        Ok(())
    }
}

/// What a skill file's path may hold.
const PATH_RULE: &str = "a skill file's path may hold only letters, digits and - . _ ~ / (it is part of a URI)";

/// Whether `path` is one a skill file may have (see [`PATH_RULE`]).
fn usable_path(path: &str) -> bool {
    path.chars().all(uri_path_char)
}

/// A character a skill file's path may hold: RFC 3986's unreserved ones and `/`.
fn uri_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~' | '/')
}

/// The mime type of a skill file, by its extension; Markdown for `.md`.
pub fn mime_type(path: &str) -> String {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("md") => "text/markdown".to_owned(),
        _ => mime_guess::from_path(path).first_or_text_plain().to_string(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(files: &[(&str, &str)]) -> tempdir::Dir {
        let dir = tempdir::Dir::new();
        for (path, text) in files {
            let path = dir.0.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    mod tempdir {
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn new() -> Self {
                static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
                let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let dir = std::env::temp_dir().join(format!("wasm-mcp-skills-{}-{n}", std::process::id()));
                let _ = std::fs::remove_dir_all(&dir);
                std::fs::create_dir_all(&dir).unwrap();
                Dir(dir)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    const MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\n# PDF processing\n\nChoose the matching template from `templates/`.\n";

    #[test]
    fn the_extensions_example_skill_has_its_digests_and_sizes() {
        let dir = folder(&[
            ("pdf-processing/SKILL.md", MD),
            (
                "pdf-processing/templates/invoice.md",
                "# Invoice\n\nCustomer:\nAmount:\n",
            ),
        ]);
        let set = SkillSet::read(&dir.0).unwrap();
        assert!(set.refused.is_empty(), "{:?}", set.refused);
        let entry = set.skills[0].entry(&set);
        assert_eq!(entry["uri"], "skill://pdf-processing/SKILL.md");
        assert_eq!(
            entry["resources"][0]["digest"],
            "sha256:99b737495721155ece826d57521e2d66141ebdc1344a400487481ea2642ab19e"
        );
        assert_eq!(entry["resources"][0]["size"], 151);
        assert_eq!(
            entry["resources"][1]["digest"],
            "sha256:61f4ea6d2c75fde1b4977219e7e3107d491c3c26aefb6686e84d6281c088d9ee"
        );
        assert_eq!(
            entry["frontmatter"]["description"],
            "Extract, fill, and assemble PDF documents"
        );
    }

    #[test]
    fn a_skill_whose_name_is_not_its_folders_is_refused_and_the_others_served() {
        let dir = folder(&[
            ("pdf-processing/SKILL.md", MD),
            ("renamed/SKILL.md", MD),
            ("bare/SKILL.md", "# no frontmatter\n"),
        ]);
        let set = SkillSet::read(&dir.0).unwrap();
        assert_eq!(set.skills.len(), 1);
        let refused = set.refused.join("\n");
        assert!(
            refused.contains("skill://renamed") && refused.contains("\"pdf-processing\""),
            "{refused}"
        );
        assert!(
            refused.contains("skill://bare") && refused.contains("frontmatter"),
            "{refused}"
        );
    }

    #[test]
    fn a_skill_over_the_file_limit_is_refused() {
        let mut files = vec![(
            "big/SKILL.md".to_owned(),
            "---\nname: big\ndescription: d\n---\n".to_owned(),
        )];
        files.extend((0..MAX_FILES_PER_SKILL).map(|i| (format!("big/f{i}.txt"), String::new())));
        let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
        let set = SkillSet::read(&folder(&files).0).unwrap();
        assert!(set.skills.is_empty());
        assert!(set.refused[0].contains("513 files"), "{:?}", set.refused);
    }

    #[test]
    fn nested_skills_are_skills_and_files_of_the_enclosing_one() {
        let dir = folder(&[
            ("outer/SKILL.md", "---\nname: outer\ndescription: o\n---\n"),
            ("outer/inner/SKILL.md", "---\nname: inner\ndescription: i\n---\n"),
        ]);
        let set = SkillSet::read(&dir.0).unwrap();
        let paths: Vec<&str> = set.skills.iter().map(|s| s.path.as_str()).collect();
        assert_eq!(paths, ["outer", "outer/inner"]);
        assert_eq!(
            set.skills[0].files.as_deref(),
            Some(&["outer/SKILL.md".to_owned(), "outer/inner/SKILL.md".to_owned()][..])
        );
    }
}
