//! What a plugin's manifest grants, in a form the lockfile records as what
//! the operator approved, and the growth of one set over another: a
//! directory, write access, a variable, a network rule, a CA or a changed
//! scope rule not approved, a key-value bucket (or one shared by every
//! caller where one per caller was approved), or a limit above the approved
//! one (or the built-in default), a bucket's quotas and sizes among them.
//! Narrower grants are no growth.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::manifest::{BucketScope, EnvValue, Manifest, default_bucket_bound};
use crate::settings::{LimitSettings, Limits};

/// The grants of one manifest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Grants {
    /// One line per grant: `directory HOST at GUEST`, `write HOST at GUEST`,
    /// `env NAME = VALUE`, `network RULE`, `network CA FILE`, `scopes …`,
    /// `keyvalue bucket NAME per caller` (and `… shared by every caller`).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub grants: BTreeSet<String>,
    /// The limits it sets (`fuel`, `tool NAME timeout_secs`, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub limits: BTreeMap<String, f64>,
}

impl Grants {
    /// What `manifest` grants.
    pub fn of(manifest: &Manifest) -> Self {
        let mut grants = BTreeSet::new();
        for dir in &manifest.directories {
            let place = format!("{} at {}", dir.host.display(), dir.guest);
            if dir.writable {
                grants.insert(format!("write {place}"));
            }
            grants.insert(format!("directory {place}"));
        }
        for (name, value) in &manifest.env {
            grants.insert(match value {
                EnvValue::Literal(text) => format!("env {name} = {text:?}"),
                EnvValue::FromHost { from_host } => format!("env {name} = the host's {from_host}"),
            });
        }
        for rule in &manifest.network.allow {
            grants.insert(format!("network {rule}"));
        }
        if let Some(ca) = &manifest.network.ca_file {
            grants.insert(format!("network CA {}", ca.display()));
        }
        let scopes = &manifest.scopes;
        if let Some(default) = &scopes.default {
            grants.insert(format!("scopes of every entry: {}", default.join(" ")));
        }
        for (kind, rules) in [
            ("tool", &scopes.tools),
            ("prompt", &scopes.prompts),
            ("resource", &scopes.resources),
        ] {
            for (pattern, needed) in rules {
                grants.insert(format!("scopes of {kind} {pattern}: {}", needed.join(" ")));
            }
        }
        let mut limits = BTreeMap::new();
        for bucket in manifest.keyvalue.grants() {
            // A bucket shared by every caller grants more than one per caller.
            grants.insert(format!("keyvalue bucket {} per caller", bucket.name));
            if bucket.scope == BucketScope::Plugin {
                grants.insert(format!("keyvalue bucket {} shared by every caller", bucket.name));
            }
            for (bound, value) in [
                ("max_keys", bucket.max_keys),
                ("max_bytes", bucket.max_bytes),
                ("max_value_bytes", bucket.max_value_bytes),
                ("max_key_bytes", bucket.max_key_bytes),
            ] {
                limits.insert(format!("keyvalue {} {bound}", bucket.name), value as f64);
            }
        }
        set_limits(&mut limits, "", &manifest.limits);
        for (tool, settings) in &manifest.tools {
            set_limits(&mut limits, &format!("tool {tool} "), &settings.limits);
        }
        Self { grants, limits }
    }

    /// What `self` asks for beyond `approved`, one line each; empty when it
    /// asks for no more.
    pub fn growth(&self, approved: &Grants) -> Vec<String> {
        let defaults = Limits::default();
        let mut more: Vec<String> = self
            .grants
            .difference(&approved.grants)
            .map(|grant| format!("+ {grant}"))
            .collect();
        for (name, &asked) in &self.limits {
            let allowed = approved
                .limits
                .get(name)
                .copied()
                .unwrap_or_else(|| default_limit(&defaults, name));
            if asked > allowed {
                more.push(format!("+ limit {name} {asked} (approved {allowed})"));
            }
        }
        more
    }
}

/// A grant or growth line as shown beyond the operator's own lockfile and
/// terminal (the status page, the log, clients): a literal environment value
/// replaced by the words "a literal value", as the status page shows variables
/// by name only.
pub fn redacted(line: &str) -> String {
    let env = line.strip_prefix("+ ").unwrap_or(line);
    match env.strip_prefix("env ").and_then(|rest| rest.split_once(" = \"")) {
        Some((name, _)) => format!("{}env {name} = a literal value", &line[..line.len() - env.len()]),
        None => line.to_owned(),
    }
}

/// Records the limits `settings` sets, each under `prefix` + its name.
fn set_limits(limits: &mut BTreeMap<String, f64>, prefix: &str, settings: &LimitSettings) {
    let set = [
        ("fuel", settings.fuel.map(|v| v as f64)),
        ("timeout_secs", settings.timeout_secs),
        ("memory_mib", settings.memory_mib.map(|v| v as f64)),
        ("max_output_kib", settings.max_output_kib.map(|v| v as f64)),
        ("max_concurrent_calls", settings.max_concurrent_calls.map(f64::from)),
    ];
    for (name, value) in set {
        if let Some(value) = value {
            limits.insert(format!("{prefix}{name}"), value);
        }
    }
}

/// The built-in default of the limit `name` (`tool NAME fuel` is `fuel`'s).
fn default_limit(defaults: &Limits, name: &str) -> f64 {
    let last = name.rsplit(' ').next().unwrap_or(name);
    if let Some(bound) = default_bucket_bound(last) {
        return bound as f64;
    }
    match last {
        "fuel" => defaults.fuel as f64,
        "timeout_secs" => defaults.timeout_secs,
        "memory_mib" => defaults.memory_mib as f64,
        "max_output_kib" => defaults.max_output_kib as f64,
        _ => f64::from(defaults.max_concurrent_calls),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn grants(text: &str) -> Grants {
        Grants::of(&Manifest::parse(text, Path::new("/plugins/p.toml")).unwrap())
    }

    #[test]
    fn more_is_growth_and_less_is_not() {
        let approved = grants(
            "[[directories]]\nhost = \"/data\"\nguest = \"/data\"\nwritable = true\n\
             [network]\nallow = [\"example.com:80\"]\n[limits]\ntimeout_secs = 15\n",
        );
        assert!(approved.growth(&approved).is_empty());
        let narrower =
            grants("[[directories]]\nhost = \"/data\"\nguest = \"/data\"\n[limits]\ntimeout_secs = 5\nfuel = 1000\n");
        assert_eq!(narrower.growth(&approved), Vec::<String>::new());
        let wider = grants(
            "[[directories]]\nhost = \"/data\"\nguest = \"/data\"\nwritable = true\n\
             [[directories]]\nhost = \"/etc\"\nguest = \"/etc\"\n\
             [env]\nTOKEN = \"x\"\n[network]\nallow = [\"example.com:80\", \"example.org:443\"]\n\
             [limits]\ntimeout_secs = 60\n",
        );
        assert_eq!(
            wider.growth(&approved),
            vec![
                "+ directory /etc at /etc".to_owned(),
                "+ env TOKEN = \"x\"".to_owned(),
                "+ network example.org:443".to_owned(),
                "+ limit timeout_secs 60 (approved 15)".to_owned(),
            ]
        );
        let writes = grants("[[directories]]\nhost = \"/data\"\nguest = \"/data\"\nwritable = true\n");
        let reads = grants("[[directories]]\nhost = \"/data\"\nguest = \"/data\"\n");
        assert_eq!(writes.growth(&reads), vec!["+ write /data at /data".to_owned()]);
        let per_caller =
            grants("[keyvalue]\nbuckets = [\"notes\"]\n[keyvalue.bucket.notes]\nscope = \"caller\"\nmax_keys = 10\n");
        let shared = grants("[keyvalue]\nbuckets = [\"notes\", \"cache\"]\nmax_keys = 20\n");
        assert!(per_caller.growth(&per_caller).is_empty());
        assert_eq!(
            shared.growth(&per_caller),
            vec![
                "+ keyvalue bucket cache per caller".to_owned(),
                "+ keyvalue bucket cache shared by every caller".to_owned(),
                "+ keyvalue bucket notes shared by every caller".to_owned(),
                "+ limit keyvalue notes max_keys 20 (approved 10)".to_owned(),
            ]
        );
        assert!(
            per_caller.growth(&shared).is_empty(),
            "one per caller and fewer keys: narrower"
        );
        // A limit no approval set is held to the built-in default.
        let above_default = grants("[limits]\ntimeout_secs = 31\n");
        assert_eq!(above_default.growth(&Grants::default()).len(), 1);
    }

    #[test]
    fn a_literal_value_is_not_shown_beyond_the_lockfile() {
        assert_eq!(redacted("+ env TOKEN = \"sk-123\""), "+ env TOKEN = a literal value");
        assert_eq!(redacted("env TOKEN = \"sk-123\""), "env TOKEN = a literal value");
        assert_eq!(
            redacted("+ env HOME_DIR = the host's HOME"),
            "+ env HOME_DIR = the host's HOME"
        );
        assert_eq!(redacted("+ network example.org:443"), "+ network example.org:443");
    }
}
