//! Skills two ways. `git-workflow` is static: its files sit in the skills
//! folder (`skills/`, collected beside the component as `playbook.skills/`),
//! and the host publishes each file's digest and size. `reports/daily` is
//! made by the plugin when it is read: its report carries the time of the
//! read, so it is listed as `"dynamic"`, with no digests.

use std::time::{SystemTime, UNIX_EPOCH};

use wasm_mcp_sdk::{Plugin, Skill};

const DAILY_SKILL_MD: &str = "---
name: daily
description: Write today's status report from the live figures in today.md
---

# Daily report

Read `today.md` for the figures as of now, then write three lines:
what changed, what is blocked, what comes next.
";

/// The files of `reports/daily` as they are now.
fn daily_files() -> Vec<String> {
    vec!["SKILL.md".into(), "today.md".into()]
}

/// A file of `reports/daily`, made now.
fn daily_file(file: &str) -> Option<String> {
    match file {
        "SKILL.md" => Some(DAILY_SKILL_MD.into()),
        "today.md" => {
            let seconds = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
            Some(format!(
                "# Figures\n\nMade at {seconds} (seconds since 1970, UTC).\nOpen pull requests: {}\n",
                seconds % 7
            ))
        }
        _ => None,
    }
}

fn plugin() -> Plugin {
    Plugin::new().skill(Skill::new("reports/daily", daily_files, daily_file))
}

wasm_mcp_sdk::export!(plugin);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_file_is_made_and_others_are_not_found() {
        let plugin = plugin();
        for file in daily_files() {
            let contents = plugin.read_skill_file("reports/daily", &file).unwrap();
            assert_eq!(contents.uri, format!("skill://reports/daily/{file}"));
        }
        assert!(plugin.read_skill_file("reports/daily", "nope.md").is_err());
        assert!(plugin.read_skill_file("reports/weekly", "SKILL.md").is_err());
    }
}
