//! Skills the plugin makes as they are read (the skills extension's dynamic
//! skills): a path, the files the skill has now, and how each is made.
//! Skills whose files never change need no code: put them in the plugin's
//! skills folder (`NAME.skills/` beside `NAME.wasm`).

use crate::{Error, ResourceContents};

type FilesFn = Box<dyn Fn() -> Vec<String>>;
type ReadFn = Box<dyn Fn(&str) -> Option<String>>;

/// A skill whose files the plugin makes when they are read, served at
/// `skill://<path>/<file>` and listed with `"resources": "dynamic"`. Its
/// `SKILL.md` must begin with YAML frontmatter whose `name` is the last
/// segment of its path, with a `description`:
///
/// ```no_run
/// use wasm_mcp_sdk::{Plugin, Skill};
///
/// fn daily(file: &str) -> Option<String> {
///     match file {
///         "SKILL.md" => Some("---\nname: daily\ndescription: Today's report\n---\n\nRead `today.md`.\n".into()),
///         "today.md" => Some(format!("# Today\n\n{} open tickets\n", 3)),
///         _ => None,
///     }
/// }
///
/// fn plugin() -> Plugin {
///     Plugin::new().skill(Skill::new("reports/daily", || vec!["SKILL.md".into(), "today.md".into()], daily))
/// }
/// ```
pub struct Skill {
    pub(crate) path: String,
    files: FilesFn,
    read: ReadFn,
}

impl Skill {
    /// The skill at `path`: `files` says which files it has now (by path
    /// under its folder, `SKILL.md` among them), `read` makes one as text
    /// (`None` for a file it does not have).
    pub fn new(
        path: impl Into<String>,
        files: impl Fn() -> Vec<String> + 'static,
        read: impl Fn(&str) -> Option<String> + 'static,
    ) -> Self {
        Self {
            path: path.into(),
            files: Box::new(files),
            read: Box::new(read),
        }
    }

    /// The files it has now.
    pub(crate) fn files(&self) -> Vec<String> {
        (self.files)()
    }

    /// File `file`, as text with the mime type its extension says
    /// (`text/markdown` for `.md`, else `text/plain`).
    pub(crate) fn read(&self, file: &str) -> Result<ResourceContents, Error> {
        let text =
            (self.read)(file).ok_or_else(|| Error::NotFound(format!("skill {} has no file {file}", self.path)))?;
        let mime_type = if file.ends_with(".md") {
            "text/markdown"
        } else {
            "text/plain"
        };
        Ok(ResourceContents::text(
            format!("skill://{}/{file}", self.path),
            mime_type,
            text,
        ))
    }
}
