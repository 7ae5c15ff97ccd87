//! A `SKILL.md`'s YAML frontmatter: read from the `---` block it begins
//! with, as a JSON object kept as written, and checked against the Agent
//! Skills rules (`name` and `description` present, the name 1 to 64
//! lowercase letters, digits and single hyphens, equal to its folder's).

use serde_json::{Map, Value};

/// The frontmatter of the `SKILL.md` `bytes` of the skill in folder
/// `folder`, checked: it has a name and a description, and names the skill
/// as its folder does.
pub fn check_skill_md(bytes: &[u8], folder: &str) -> Result<Map<String, Value>, String> {
    let frontmatter = parse(bytes)?;
    check_matches(&frontmatter, folder)?;
    Ok(frontmatter)
}

/// The frontmatter of the `SKILL.md` `bytes`, or why it has none usable.
fn parse(bytes: &[u8]) -> Result<Map<String, Value>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "its SKILL.md is not UTF-8 text".to_owned())?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let missing = || "its SKILL.md does not begin with YAML frontmatter (a block between two --- lines)".to_owned();
    let body = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or_else(missing)?;
    let end = body
        .match_indices("---")
        .find(|(at, _)| {
            let before = &body[..*at];
            let after = body[at + 3..].trim_start_matches([' ', '\t']);
            (before.is_empty() || before.ends_with('\n')) && (after.is_empty() || after.starts_with(['\n', '\r']))
        })
        .map(|(at, _)| at)
        .ok_or_else(missing)?;
    let yaml = &body[..end];
    let value: Value =
        serde_norway::from_str(yaml).map_err(|e| format!("its SKILL.md frontmatter is not YAML: {e}"))?;
    let Value::Object(map) = value else {
        return Err("its SKILL.md frontmatter is not a mapping of fields".into());
    };
    for field in ["name", "description"] {
        if !map.get(field).and_then(Value::as_str).is_some_and(|s| !s.is_empty()) {
            return Err(format!("its SKILL.md frontmatter has no {field} (a non-empty string)"));
        }
    }
    Ok(map)
}

/// Whether the frontmatter's `name` is `folder`, the skill's folder name, and a valid skill name.
fn check_matches(frontmatter: &Map<String, Value>, folder: &str) -> Result<(), String> {
    let name = frontmatter.get("name").and_then(Value::as_str).unwrap_or_default();
    if name != folder {
        return Err(format!(
            "its SKILL.md frontmatter names it {name:?}, but its folder is {folder:?}; \
             a skill's name is its folder's (rename one to match the other)"
        ));
    }
    check_name(name)
}

/// Whether `name` is a skill name: 1 to 64 lowercase letters, digits and
/// hyphens, none first or last or two in a row.
fn check_name(name: &str) -> Result<(), String> {
    let valid = (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    match valid {
        true => Ok(()),
        false => Err(format!(
            "{name:?} is not a skill name: 1 to 64 lowercase letters, digits and hyphens, \
             no hyphen first, last or next to another"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_is_kept_in_order() {
        let map = parse(b"---\nname: refunds\ndescription: Refund requests\nlicense: Apache-2.0\nmetadata:\n  team: billing\n---\nbody\n").unwrap();
        assert_eq!(
            Value::Object(map),
            serde_json::json!({
                "name": "refunds", "description": "Refund requests",
                "license": "Apache-2.0", "metadata": { "team": "billing" }
            })
        );
    }

    #[test]
    fn a_missing_block_or_field_says_what_is_wrong() {
        assert!(parse(b"# title\n").unwrap_err().contains("does not begin"));
        assert!(parse(b"---\nname: a\n---\n").unwrap_err().contains("no description"));
        assert!(
            parse(b"---\nname: a\ndescription: d\n")
                .unwrap_err()
                .contains("does not begin")
        );
        assert!(parse(b"---\n- a\n---\n").unwrap_err().contains("mapping"));
    }

    #[test]
    fn names_follow_the_agent_skills_rules() {
        assert!(check_name("git-workflow").is_ok());
        for bad in ["", "Git", "-a", "a-", "a--b", "a_b", &"a".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
