//! The skills the catalog serves (the `io.modelcontextprotocol/skills`
//! extension): each plugin's skills the operator lets through (`[allow]` and
//! `[deny]` skills, by path) with the scopes `[scopes] skills` gives them,
//! their entries rendered once per catalog, the files of the skills from
//! folders by URI, and the directories those files are in
//! (`resources/directory/read`); a URI of a skill the plugin makes leads to
//! that skill and the file's path in it (the plugin reads and lists them).
//!
//! A skill's `SKILL.md` is also listed among the resources (named and
//! described by its frontmatter); its other files are read by URI.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use serde_json::{Value, json};

use super::pagination::Listed;
use super::{Catalog, Naming, ResourceEntry, hidden};
use crate::manifest::EntryKind;
use crate::plugin::Plugin;
use crate::principal::{Principal, may_use};
use crate::protocol::modern::CacheHint;
use crate::skills::{DIRECTORY_MIME_TYPE, SCHEME, SKILL_MD, Skill, SkillFile, file_uri};

/// A skill as `skills/list` and `skills/get` give it.
pub struct SkillEntry {
    pub plugin: Arc<Plugin>,
    /// Its path (`acme/billing/refunds`).
    pub path: String,
    /// Whether the plugin makes its files as they are read.
    pub made: bool,
    /// Its `Skill` entry.
    pub listed: Value,
    /// The OAuth scopes a caller needs to see it and read its files.
    pub scopes: Vec<String>,
}

/// A file of a served skill.
pub struct SkillFileEntry {
    pub plugin: Arc<Plugin>,
    /// Its path under the plugin's skills folder.
    path: String,
    /// The scopes of the innermost served skill that holds it.
    pub scopes: Vec<String>,
}

impl SkillFileEntry {
    pub fn file(&self) -> &SkillFile {
        &self.plugin.skills.files[&self.path]
    }
}

/// A direct child of a directory resource, as `resources/directory/read` lists it.
pub struct Child {
    listed: Value,
    scopes: Vec<String>,
}

impl Listed for SkillEntry {
    fn listed(&self) -> &Value {
        &self.listed
    }

    fn scopes(&self) -> &[String] {
        &self.scopes
    }
}

impl Listed for Child {
    fn listed(&self) -> &Value {
        &self.listed
    }

    fn scopes(&self) -> &[String] {
        &self.scopes
    }
}

/// How long a client may keep what a skill serves: its files change only
/// when its plugin is loaded again.
pub const SKILL_CACHE: CacheHint = CacheHint {
    ttl_ms: 300_000,
    public: true,
};

impl Catalog {
    /// Adds the skills of `plugin` the operator serves, with their files
    /// and their `SKILL.md` among the resources.
    pub(super) fn add_skills(&mut self, plugin: &Arc<Plugin>, naming: &mut Naming) {
        for skill in &plugin.skills.skills {
            let uri = skill.uri();
            if hidden(plugin, EntryKind::Skill, &skill.path) || !naming.resources.take(plugin, &uri) {
                continue;
            }
            let scopes = plugin.manifest.required_scopes(EntryKind::Skill, &skill.path);
            for path in skill.files.iter().flatten() {
                // Outer skills come first; an inner one's scopes take its files.
                self.skill_files.insert(
                    file_uri(path),
                    SkillFileEntry {
                        plugin: plugin.clone(),
                        path: path.clone(),
                        scopes: scopes.clone(),
                    },
                );
            }
            self.resources.insert(
                uri.clone(),
                ResourceEntry {
                    plugin: plugin.clone(),
                    listed: skill_md_resource(skill, &uri),
                    cache: SKILL_CACHE,
                    scopes: scopes.clone(),
                },
            );
            self.skills.insert(
                uri,
                SkillEntry {
                    plugin: plugin.clone(),
                    path: skill.path.clone(),
                    made: skill.files.is_none(),
                    listed: skill.entry(&plugin.skills),
                    scopes,
                },
            );
        }
    }

    /// The skill the plugin makes that `uri` is in (its folder, or a file
    /// or folder under it), and the path under the skill's folder (empty
    /// for the folder itself); the innermost when skills nest.
    pub fn made_skill(&self, uri: &str) -> Option<(&SkillEntry, String)> {
        let path = uri.strip_prefix(SCHEME)?;
        let mut root = path;
        loop {
            let entry = self.skills.get(&format!("{SCHEME}{root}/{SKILL_MD}"));
            if let Some(entry) = entry.filter(|entry| entry.made) {
                let rest = path[root.len()..].trim_start_matches('/');
                return Some((entry, rest.to_owned()));
            }
            root = &root[..root.rfind('/')?];
        }
    }

    /// The direct children of the directory resource `uri` (a folder of a
    /// skill from a folder, or a folder above skills) that `principal` may
    /// see, by URI; `None` when `uri` is no such directory for it.
    pub fn directory(&self, uri: &str, principal: Option<&Principal>) -> Option<BTreeMap<String, Child>> {
        if !uri.starts_with(SCHEME) || uri.ends_with('/') {
            return None;
        }
        let prefix = format!("{uri}/");
        let after = (Bound::Included(prefix.as_str()), Bound::Unbounded);
        let files = self
            .skill_files
            .range::<str, _>(after)
            .take_while(|(file, _)| file.starts_with(&prefix))
            .map(|(file, entry)| {
                let file_of = entry.file();
                let listed = json!({ "uri": file, "mimeType": file_of.mime_type, "size": file_of.bytes.len() });
                (file.as_str(), listed, entry.scopes.clone())
            });
        children(&prefix, files, principal)
    }
}

/// The direct children of the folder whose URIs start with `prefix`, of
/// the `files` under it (URI, listing, scopes) that `principal` may read:
/// those files in it, and a directory resource for each folder in it that
/// holds one, needing the scopes of the files it holds (so that a listing
/// that shows it is the caller's own). Nothing of a folder whose files the
/// caller may not read is shown, not even its name.
pub fn children<'a>(
    prefix: &str,
    files: impl IntoIterator<Item = (&'a str, Value, Vec<String>)>,
    principal: Option<&Principal>,
) -> Option<BTreeMap<String, Child>> {
    let mut children: BTreeMap<String, Child> = BTreeMap::new();
    for (file, mut listed, scopes) in files {
        let Some(rest) = file.strip_prefix(prefix) else {
            continue;
        };
        if !may_use(principal, &scopes) {
            continue;
        }
        match rest.split_once('/') {
            None => {
                listed["name"] = json!(rest);
                children.entry(file.to_owned()).or_insert(Child { listed, scopes });
            }
            Some((folder, _)) => {
                let uri = format!("{prefix}{folder}");
                let child = children.entry(uri.clone()).or_insert_with(|| Child {
                    listed: json!({ "uri": uri, "name": folder, "mimeType": DIRECTORY_MIME_TYPE }),
                    scopes: Vec::new(),
                });
                for scope in scopes {
                    if !child.scopes.contains(&scope) {
                        child.scopes.push(scope);
                    }
                }
            }
        }
    }
    (!children.is_empty()).then_some(children)
}

/// The `Resource` a skill's `SKILL.md` is listed as: named and described by its frontmatter.
fn skill_md_resource(skill: &Skill, uri: &str) -> Value {
    json!({
        "uri": uri,
        "name": skill.name(),
        "description": skill.description(),
        "mimeType": "text/markdown",
    })
}
