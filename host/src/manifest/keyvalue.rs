//! The `[keyvalue]` table of a manifest: the buckets a plugin may open through
//! `wasi:keyvalue`, whom each is kept for, and its bounds.
//!
//! ```toml
//! [keyvalue]
//! buckets = ["cache", "notes"]   # the buckets the plugin may open
//! max_keys = 10000               # per bucket (per caller of a caller bucket)
//! max_bytes = 10485760           # keys and values, per bucket (per caller)
//! max_value_bytes = 1048576      # one value
//! max_key_bytes = 512            # one key
//!
//! [keyvalue.bucket.notes]        # one bucket's own settings, over the above
//! scope = "caller"               # each caller sees only its own keys ("plugin": shared by all callers)
//! max_keys = 100
//! expire_after_secs = 86400      # a key is dropped this long after its last write
//! ```
//!
//! Every bucket belongs to its plugin: two plugins' buckets of one name never
//! meet. Bucket names are letters, digits, `_`, `-` and `.`; a setting for a
//! bucket not listed, a zero bound or an unknown key is an error naming it.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

/// Keys a bucket holds unless the manifest says otherwise.
pub const DEFAULT_MAX_KEYS: u64 = 10_000;
/// Bytes of keys and values a bucket holds unless the manifest says otherwise.
pub const DEFAULT_MAX_BYTES: u64 = 10 << 20;
/// Bytes of one value unless the manifest says otherwise.
pub const DEFAULT_MAX_VALUE_BYTES: u64 = 1 << 20;
/// Bytes of one key unless the manifest says otherwise.
pub const DEFAULT_MAX_KEY_BYTES: u64 = 512;
/// The most any bound may be set to (values cross into the plugin's memory).
const MAX_VALUE_BYTES_CEILING: u64 = 64 << 20;
const MAX_KEY_BYTES_CEILING: u64 = 64 << 10;

/// Whom a bucket's keys are kept for.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BucketScope {
    /// One set of keys for the plugin, whoever calls it.
    #[default]
    Plugin,
    /// One set of keys per caller: the authenticated principal, or the
    /// user of a stdio server.
    Caller,
}

/// Bounds that apply to every bucket, or one bucket's own (none: the
/// table's, then the defaults).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BucketBounds {
    pub max_keys: Option<u64>,
    pub max_bytes: Option<u64>,
    pub max_value_bytes: Option<u64>,
    pub max_key_bytes: Option<u64>,
}

/// `[keyvalue.bucket.NAME]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BucketSettings {
    #[serde(default)]
    pub scope: BucketScope,
    pub expire_after_secs: Option<u64>,
    max_keys: Option<u64>,
    max_bytes: Option<u64>,
    max_value_bytes: Option<u64>,
    max_key_bytes: Option<u64>,
}

/// The `[keyvalue]` table.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KeyValueSettings {
    /// The buckets the plugin may open.
    #[serde(default)]
    pub buckets: Vec<String>,
    /// Settings of single buckets.
    #[serde(default)]
    pub bucket: BTreeMap<String, BucketSettings>,
    max_keys: Option<u64>,
    max_bytes: Option<u64>,
    max_value_bytes: Option<u64>,
    max_key_bytes: Option<u64>,
}

/// The bounds a table sets.
macro_rules! bounds_of {
    ($table:expr) => {
        BucketBounds {
            max_keys: $table.max_keys,
            max_bytes: $table.max_bytes,
            max_value_bytes: $table.max_value_bytes,
            max_key_bytes: $table.max_key_bytes,
        }
    };
}

/// One granted bucket as the host serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketGrant {
    pub name: String,
    pub scope: BucketScope,
    pub max_keys: u64,
    pub max_bytes: u64,
    pub max_value_bytes: u64,
    pub max_key_bytes: u64,
    pub expire_after: Option<Duration>,
}

impl std::fmt::Display for BucketGrant {
    /// `notes (per caller, 100 keys, 10485760 bytes, values to 1048576 bytes, keys to 512 bytes)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let whose = match self.scope {
            BucketScope::Plugin => "shared by every caller",
            BucketScope::Caller => "per caller",
        };
        write!(
            f,
            "{} ({whose}, {} keys, {} bytes, values to {} bytes, keys to {} bytes",
            self.name, self.max_keys, self.max_bytes, self.max_value_bytes, self.max_key_bytes
        )?;
        if let Some(after) = self.expire_after {
            write!(f, ", expiring {} s after a write", after.as_secs())?;
        }
        f.write_str(")")
    }
}

impl KeyValueSettings {
    /// Why the table is not valid, naming the key.
    pub fn check(&self) -> Result<(), String> {
        for name in &self.buckets {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)) {
                return Err(format!(
                    "keyvalue.buckets: {name:?} is not a bucket name (letters, digits, '_', '-' and '.')"
                ));
            }
        }
        for (name, settings) in &self.bucket {
            if !self.buckets.contains(name) {
                return Err(format!(
                    "keyvalue.bucket.{name}: the bucket is not granted; add {name:?} to keyvalue.buckets"
                ));
            }
            check_bounds(&bounds_of!(settings), &format!("keyvalue.bucket.{name}."))?;
            if settings.expire_after_secs == Some(0) {
                return Err(format!("keyvalue.bucket.{name}.expire_after_secs must be at least 1"));
            }
        }
        check_bounds(&bounds_of!(self), "keyvalue.")
    }

    /// The granted buckets with every bound resolved.
    pub fn grants(&self) -> Vec<BucketGrant> {
        self.buckets
            .iter()
            .map(|name| {
                let own = self.bucket.get(name).cloned().unwrap_or_default();
                let (mine, table) = (bounds_of!(own), bounds_of!(self));
                let bound = |pick: fn(&BucketBounds) -> Option<u64>, default: u64| {
                    pick(&mine).or(pick(&table)).unwrap_or(default)
                };
                BucketGrant {
                    name: name.clone(),
                    scope: own.scope,
                    max_keys: bound(|b| b.max_keys, DEFAULT_MAX_KEYS),
                    max_bytes: bound(|b| b.max_bytes, DEFAULT_MAX_BYTES),
                    max_value_bytes: bound(|b| b.max_value_bytes, DEFAULT_MAX_VALUE_BYTES),
                    max_key_bytes: bound(|b| b.max_key_bytes, DEFAULT_MAX_KEY_BYTES),
                    expire_after: own.expire_after_secs.map(Duration::from_secs),
                }
            })
            .collect()
    }
}

/// The built-in default of the bound `name` (`max_keys`, `max_bytes`,
/// `max_value_bytes`, `max_key_bytes`), if it is one.
pub fn default_bucket_bound(name: &str) -> Option<u64> {
    Some(match name {
        "max_keys" => DEFAULT_MAX_KEYS,
        "max_bytes" => DEFAULT_MAX_BYTES,
        "max_value_bytes" => DEFAULT_MAX_VALUE_BYTES,
        "max_key_bytes" => DEFAULT_MAX_KEY_BYTES,
        _ => return None,
    })
}

fn check_bounds(bounds: &BucketBounds, prefix: &str) -> Result<(), String> {
    for (key, value, ceiling) in [
        ("max_keys", bounds.max_keys, u64::MAX),
        ("max_bytes", bounds.max_bytes, u64::MAX),
        ("max_value_bytes", bounds.max_value_bytes, MAX_VALUE_BYTES_CEILING),
        ("max_key_bytes", bounds.max_key_bytes, MAX_KEY_BYTES_CEILING),
    ] {
        match value {
            Some(0) => return Err(format!("{prefix}{key} must be at least 1")),
            Some(v) if v > ceiling => return Err(format!("{prefix}{key} must be at most {ceiling}")),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<KeyValueSettings, String> {
        let settings: KeyValueSettings = toml::from_str(text).map_err(|e| e.to_string())?;
        settings.check().map(|()| settings)
    }

    #[test]
    fn a_bucket_takes_its_own_bounds_over_the_tables_and_the_defaults() {
        let settings = parse(
            "buckets = [\"cache\", \"notes\"]\nmax_keys = 50\n\
             [bucket.notes]\nscope = \"caller\"\nmax_bytes = 4096\nexpire_after_secs = 60\n",
        )
        .unwrap();
        let grants = settings.grants();
        assert_eq!(grants[0].name, "cache");
        assert_eq!(grants[0].scope, BucketScope::Plugin);
        assert_eq!((grants[0].max_keys, grants[0].max_bytes), (50, DEFAULT_MAX_BYTES));
        assert_eq!(grants[1].scope, BucketScope::Caller);
        assert_eq!((grants[1].max_keys, grants[1].max_bytes), (50, 4096));
        assert_eq!(grants[1].expire_after, Some(Duration::from_secs(60)));
        assert_eq!(grants[1].max_value_bytes, DEFAULT_MAX_VALUE_BYTES);
    }

    #[test]
    fn bad_names_and_bounds_name_the_key() {
        for (text, says) in [
            ("buckets = [\"a b\"]", "keyvalue.buckets"),
            (
                "buckets = [\"a\"]\n[bucket.b]\nmax_keys = 1",
                "add \"b\" to keyvalue.buckets",
            ),
            (
                "buckets = [\"a\"]\nmax_keys = 0",
                "keyvalue.max_keys must be at least 1",
            ),
            (
                "buckets = [\"a\"]\nmax_key_bytes = 1000000",
                "keyvalue.max_key_bytes must be at most",
            ),
            (
                "buckets = [\"a\"]\n[bucket.a]\nexpire_after_secs = 0",
                "expire_after_secs",
            ),
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.contains(says), "{text}: {error}");
        }
        assert!(parse("buckets = [\"a\"]\n[bucket.a]\nscope = \"everyone\"").is_err());
    }
}
