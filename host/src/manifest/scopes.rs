//! The OAuth scopes a caller needs for a plugin's entries: the manifest's
//! `[scopes]` table gives lists of scopes by glob over tool and prompt
//! names, resource URIs or URI templates and skill paths (the plugin's own names), and a
//! `default` for the entries no pattern matches. An entry needs every scope
//! of every pattern that matches it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::exposure::{self, EntryKind};

/// `[scopes]`: what a caller needs for each entry.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScopeRules {
    /// The scopes of every entry no pattern below matches.
    pub default: Option<Vec<String>>,
    #[serde(default)]
    pub tools: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub prompts: BTreeMap<String, Vec<String>>,
    /// By resource URI or URI template.
    #[serde(default)]
    pub resources: BTreeMap<String, Vec<String>>,
    /// By skill path.
    #[serde(default)]
    pub skills: BTreeMap<String, Vec<String>>,
}

impl ScopeRules {
    fn of(&self, kind: EntryKind) -> &BTreeMap<String, Vec<String>> {
        match kind {
            EntryKind::Tool => &self.tools,
            EntryKind::Prompt => &self.prompts,
            EntryKind::Resource => &self.resources,
            EntryKind::Skill => &self.skills,
        }
    }

    /// The scopes a caller needs for the plugin's entry `name` of `kind`,
    /// sorted, each once.
    pub fn required(&self, kind: EntryKind, name: &str) -> Vec<String> {
        let mut matched = false;
        let mut needed = BTreeSet::new();
        for (pattern, scopes) in self.of(kind) {
            if glob::Pattern::new(pattern).is_ok_and(|glob| glob.matches(name)) {
                matched = true;
                needed.extend(scopes.iter().cloned());
            }
        }
        if !matched {
            needed.extend(self.default.iter().flatten().cloned());
        }
        needed.into_iter().collect()
    }

    /// Every scope the table names.
    pub fn named(&self) -> impl Iterator<Item = &str> {
        let by_pattern = [&self.tools, &self.prompts, &self.resources, &self.skills]
            .into_iter()
            .flat_map(|rules| rules.values().flatten());
        self.default.iter().flatten().chain(by_pattern).map(String::as_str)
    }

    /// The first pattern that is not a glob, or scope that is not an OAuth
    /// scope token, with why.
    pub(super) fn check(&self) -> Result<(), String> {
        for (key, rules) in [
            ("tools", &self.tools),
            ("prompts", &self.prompts),
            ("resources", &self.resources),
            ("skills", &self.skills),
        ] {
            for pattern in rules.keys() {
                exposure::check(pattern).map_err(|why| format!("[scopes] {key}: {why}"))?;
            }
        }
        match self.named().find(|scope| !is_scope_token(scope)) {
            Some(bad) => Err(format!(
                "[scopes]: {bad:?} is not a scope: one or more visible ASCII characters, without spaces, '\"' or '\\'"
            )),
            None => Ok(()),
        }
    }
}

/// An OAuth 2.0 scope token (RFC 6749 §3.3): `%x21 / %x23-5B / %x5D-7E`, at least one.
pub fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty() && scope.bytes().all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(text: &str) -> ScopeRules {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn matching_patterns_add_up_and_the_default_covers_the_rest() {
        let rules = rules(
            r#"
            default = ["notes:read"]
            tools = { "touch_*" = ["notes:write"], "*_note" = ["notes:read", "audit"] }
            resources = { "notes://note/*" = ["notes:read"] }
            "#,
        );
        assert_eq!(
            rules.required(EntryKind::Tool, "touch_note"),
            ["audit", "notes:read", "notes:write"]
        );
        assert_eq!(rules.required(EntryKind::Tool, "search_notes"), ["notes:read"]);
        assert_eq!(rules.required(EntryKind::Prompt, "anything"), ["notes:read"]);
        assert_eq!(
            rules.required(EntryKind::Resource, "notes://note/{slug}"),
            ["notes:read"]
        );
        assert!(ScopeRules::default().required(EntryKind::Tool, "x").is_empty());
        assert!(rules.check().is_ok());
    }

    #[test]
    fn scopes_and_patterns_are_checked() {
        assert!(
            rules(r#"tools = { "a" = ["has space"] }"#)
                .check()
                .unwrap_err()
                .contains("is not a scope")
        );
        assert!(rules(r#"default = [""]"#).check().is_err());
        assert!(
            rules(r#"tools = { "[" = ["x"] }"#)
                .check()
                .unwrap_err()
                .contains("glob")
        );
        assert!(is_scope_token("files:read"));
        assert!(!is_scope_token("caf\u{e9}"));
    }
}
