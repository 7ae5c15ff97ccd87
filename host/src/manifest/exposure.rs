//! Which of a plugin's tools, prompts and resources the operator serves:
//! `[allow]` lists (when present, only what matches one of its patterns is
//! served) and `[deny]` lists (what matches is never served), by the
//! plugin's own names, by resource URI or URI template, and by skill path
//! (its folder under the skills folder), with `*`, `?` and `[…]` globs.

use serde::Deserialize;

/// One list of patterns per kind of entry.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Patterns {
    pub tools: Option<Vec<String>>,
    pub prompts: Option<Vec<String>>,
    /// Resource URIs and URI templates.
    pub resources: Option<Vec<String>>,
    /// Skill paths (`git-workflow`, `acme/billing/refunds`).
    pub skills: Option<Vec<String>>,
}

/// What kind of entry a name belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Tool,
    Prompt,
    Resource,
    /// A skill, by its path.
    Skill,
}

impl EntryKind {
    fn key(self) -> &'static str {
        match self {
            EntryKind::Tool => "tools",
            EntryKind::Prompt => "prompts",
            EntryKind::Resource => "resources",
            EntryKind::Skill => "skills",
        }
    }
}

impl Patterns {
    fn of(&self, kind: EntryKind) -> Option<&[String]> {
        match kind {
            EntryKind::Tool => self.tools.as_deref(),
            EntryKind::Prompt => self.prompts.as_deref(),
            EntryKind::Resource => self.resources.as_deref(),
            EntryKind::Skill => self.skills.as_deref(),
        }
    }

    /// The first pattern of `kind` that matches `name`.
    fn matching(&self, kind: EntryKind, name: &str) -> Option<&str> {
        self.of(kind)?
            .iter()
            .find(|pattern| glob::Pattern::new(pattern).is_ok_and(|glob| glob.matches(name)))
            .map(String::as_str)
    }

    /// Every pattern, with the key it is under, for validation.
    pub(super) fn all(&self) -> impl Iterator<Item = (&'static str, &String)> {
        [
            EntryKind::Tool,
            EntryKind::Prompt,
            EntryKind::Resource,
            EntryKind::Skill,
        ]
        .into_iter()
        .flat_map(move |kind| self.of(kind).unwrap_or_default().iter().map(move |p| (kind.key(), p)))
    }
}

/// Why `name` (of `kind`) is not served under `allow` and `deny`, if it is not.
pub fn hidden_by(allow: &Patterns, deny: &Patterns, kind: EntryKind, name: &str) -> Option<String> {
    if let Some(pattern) = deny.matching(kind, name) {
        return Some(format!("[deny] {} has {pattern:?}", kind.key()));
    }
    if allow.of(kind).is_some() && allow.matching(kind, name).is_none() {
        return Some(format!("[allow] {} does not list it", kind.key()));
    }
    None
}

/// The error for a pattern that is not a glob.
pub(super) fn check(pattern: &str) -> Result<(), String> {
    glob::Pattern::new(pattern)
        .map(|_| ())
        .map_err(|error| format!("{pattern:?} is not a glob pattern ({error}); use *, ? and [...]"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patterns(tools: &[&str]) -> Patterns {
        Patterns {
            tools: Some(tools.iter().map(|t| t.to_string()).collect()),
            ..Patterns::default()
        }
    }

    #[test]
    fn deny_wins_over_allow_and_an_absent_allow_list_allows_everything() {
        let none = Patterns::default();
        assert_eq!(hidden_by(&none, &none, EntryKind::Tool, "anything"), None);
        let allow = patterns(&["search_*", "read"]);
        let deny = patterns(&["search_secret*"]);
        assert_eq!(hidden_by(&allow, &deny, EntryKind::Tool, "search_notes"), None);
        assert_eq!(hidden_by(&allow, &deny, EntryKind::Tool, "read"), None);
        assert_eq!(
            hidden_by(&allow, &deny, EntryKind::Tool, "search_secrets").as_deref(),
            Some("[deny] tools has \"search_secret*\"")
        );
        assert_eq!(
            hidden_by(&allow, &deny, EntryKind::Tool, "delete").as_deref(),
            Some("[allow] tools does not list it")
        );
        assert_eq!(
            hidden_by(&allow, &deny, EntryKind::Prompt, "delete"),
            None,
            "another kind"
        );
    }

    #[test]
    fn a_bad_glob_is_refused() {
        assert!(check("[unclosed").is_err());
        assert!(check("notes://note/*").is_ok());
    }
}
