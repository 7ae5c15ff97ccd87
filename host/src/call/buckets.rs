//! The buckets a plugin's manifest grants, as its calls open them: under
//! the namespace each belongs to (the plugin's, and for a caller bucket the
//! caller's too), with key and value sizes checked here, and the store that
//! keeps them ([`PluginStore`], which the state store implements: quotas and
//! expiry are held there). Every refusal says what to change.

use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::scope::BoxFuture;
use crate::contract::bindings::KvBucket;
use crate::contract::bindings::store::Error;
use crate::manifest::{BucketGrant, BucketScope};

/// What a bucket's writes are held to by the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub max_keys: u64,
    pub max_bytes: u64,
    /// A key is dropped this long after its last write.
    pub expire_after: Option<Duration>,
}

/// Why the store did not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreFault {
    /// The write would take the namespace past its `max_keys`.
    OverKeys,
    /// The write would take the namespace past its `max_bytes`.
    OverBytes,
    /// `increment` of a key whose value is not a decimal integer, or past the range of one.
    NotACounter,
    /// The store did not answer; says what happened.
    Unavailable(String),
}

/// One page of keys, and the cursor of the next page (none: the last).
pub type KeyPage = (Vec<String>, Option<String>);

/// How a compare-and-swap ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Swapped {
    Written,
    /// The key no longer held the expected value; it holds this now.
    Changed(Option<Vec<u8>>),
}

/// Where plugins' keys are kept: the host's state store. A namespace is
/// one bucket of one plugin (and one caller); keys never cross namespaces.
pub trait PluginStore: Send + Sync {
    fn get_many<'a>(
        &'a self,
        namespace: &'a str,
        keys: Vec<String>,
    ) -> BoxFuture<'a, Result<Vec<Option<Vec<u8>>>, StoreFault>>;
    /// Writes the pairs in order; one that would go past `quota` is refused
    /// with the fault, and the rest with it (those before it may or may not
    /// be written, as `batch` allows).
    fn set_many<'a>(
        &'a self,
        namespace: &'a str,
        quota: Quota,
        entries: Vec<(String, Vec<u8>)>,
    ) -> BoxFuture<'a, Result<(), StoreFault>>;
    fn delete_many<'a>(&'a self, namespace: &'a str, keys: Vec<String>) -> BoxFuture<'a, Result<(), StoreFault>>;
    /// Up to `limit` keys after `cursor`, and the cursor of the next page if there may be one.
    fn list_keys<'a>(
        &'a self,
        namespace: &'a str,
        cursor: Option<String>,
        limit: usize,
    ) -> BoxFuture<'a, Result<KeyPage, StoreFault>>;
    fn increment<'a>(
        &'a self,
        namespace: &'a str,
        quota: Quota,
        key: String,
        delta: i64,
    ) -> BoxFuture<'a, Result<i64, StoreFault>>;
    /// Writes `value` if `key` still holds `expected` (none: has no value).
    fn swap<'a>(
        &'a self,
        namespace: &'a str,
        quota: Quota,
        key: String,
        expected: Option<Vec<u8>>,
        value: Vec<u8>,
    ) -> BoxFuture<'a, Result<Swapped, StoreFault>>;
}

/// The buckets one plugin's manifest grants, and the store they are kept in.
pub struct Buckets {
    plugin: Arc<str>,
    pub(super) grants: Vec<BucketGrant>,
    pub(super) store: Arc<dyn PluginStore>,
}

impl Buckets {
    pub fn new(plugin: &str, grants: Vec<BucketGrant>, store: Arc<dyn PluginStore>) -> Arc<Self> {
        Arc::new(Self {
            plugin: plugin.into(),
            grants,
            store,
        })
    }

    /// The bucket `name` opened for `caller`, or why it cannot be.
    pub(super) fn open(&self, name: &str, caller: Option<&str>) -> Result<KvBucket, String> {
        let Some(grant) = self.grants.iter().position(|grant| grant.name == name) else {
            let mut granted: Vec<String> = self.grants.iter().map(|g| format!("{:?}", g.name)).collect();
            granted.push(format!("{name:?}"));
            return Err(format!(
                "bucket {name:?} is not granted to plugin {plugin}: the operator adds it to the plugin's manifest \
                 ({plugin}.toml): [keyvalue] buckets = [{}]",
                granted.join(", "),
                plugin = self.plugin
            ));
        };
        let namespace = match self.grants[grant].scope {
            BucketScope::Plugin => format!("{}/{name}/", self.plugin),
            BucketScope::Caller => {
                let Some(caller) = caller else {
                    return Err(format!(
                        "bucket {name:?} of plugin {} is kept per caller, and this request has no caller to keep it \
                         for: over HTTP, serve with authentication (--auth-token or --auth-issuer)",
                        self.plugin
                    ));
                };
                let digest = Sha256::digest(caller.as_bytes());
                let id: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
                format!("{}/{name}/{id}", self.plugin)
            }
        };
        Ok(KvBucket { grant, namespace })
    }

    pub(super) fn quota(&self, bucket: &KvBucket) -> Quota {
        let grant = &self.grants[bucket.grant];
        Quota {
            max_keys: grant.max_keys,
            max_bytes: grant.max_bytes,
            expire_after: grant.expire_after,
        }
    }

    /// Why `key` (and `value`) may not be stored in `bucket`, if so: an empty
    /// key (a page's cursor is its last key), or one of them too large.
    pub(super) fn check_sizes(&self, bucket: &KvBucket, key: &str, value: Option<&[u8]>) -> Result<(), Error> {
        let grant = &self.grants[bucket.grant];
        let setting = self.setting_of(grant);
        if key.is_empty() {
            return Err(Error::Other(format!(
                "an empty key: a key in bucket {:?} has at least one byte",
                grant.name
            )));
        }
        if key.len() as u64 > grant.max_key_bytes {
            return Err(Error::Other(format!(
                "the key of {} bytes is longer than bucket {:?} allows ({} bytes; {setting} max_key_bytes)",
                key.len(),
                grant.name,
                grant.max_key_bytes
            )));
        }
        if let Some(value) = value.filter(|v| v.len() as u64 > grant.max_value_bytes) {
            return Err(Error::Other(format!(
                "the value of {} bytes for key {key:?} is larger than bucket {:?} allows ({} bytes; {setting} \
                 max_value_bytes)",
                value.len(),
                grant.name,
                grant.max_value_bytes
            )));
        }
        Ok(())
    }

    /// Where the manifest sets a bucket's bounds, for messages.
    fn setting_of(&self, grant: &BucketGrant) -> String {
        format!("[keyvalue.bucket.{}] in {}.toml", grant.name, self.plugin)
    }

    /// The error the plugin gets for `fault` in `bucket`.
    pub(super) fn error(&self, bucket: &KvBucket, fault: StoreFault) -> Error {
        let grant = &self.grants[bucket.grant];
        let whose = match grant.scope {
            BucketScope::Plugin => "",
            BucketScope::Caller => " for this caller",
        };
        let setting = self.setting_of(grant);
        Error::Other(match fault {
            StoreFault::OverKeys => format!(
                "bucket {:?} is full{whose}: it holds its quota of {} keys; delete keys, or the operator raises \
                 max_keys ({setting})",
                grant.name, grant.max_keys
            ),
            StoreFault::OverBytes => format!(
                "bucket {:?} is full{whose}: the write would take it past its quota of {} bytes of keys and values; \
                 delete keys, or the operator raises max_bytes ({setting})",
                grant.name, grant.max_bytes
            ),
            StoreFault::NotACounter => {
                "increment: the key's value is not a decimal integer (a counter is kept as its decimal text), or \
                 the result is out of the range of a signed 64-bit integer"
                    .to_owned()
            }
            StoreFault::Unavailable(why) => why,
        })
    }

    /// The value of `key`, if it has one.
    pub(super) async fn read(&self, bucket: &KvBucket, key: String) -> Result<Option<Vec<u8>>, Error> {
        self.check_sizes(bucket, &key, None)?;
        let found = self.store.get_many(&bucket.namespace, vec![key]).await;
        found
            .map(|mut values| values.pop().flatten())
            .map_err(|fault| self.error(bucket, fault))
    }

    pub(super) async fn write(&self, bucket: &KvBucket, entries: Vec<(String, Vec<u8>)>) -> Result<(), Error> {
        for (key, value) in &entries {
            self.check_sizes(bucket, key, Some(value))?;
        }
        let quota = self.quota(bucket);
        let written = self.store.set_many(&bucket.namespace, quota, entries).await;
        written.map_err(|fault| self.error(bucket, fault))
    }

    pub(super) async fn remove(&self, bucket: &KvBucket, keys: Vec<String>) -> Result<(), Error> {
        for key in &keys {
            self.check_sizes(bucket, key, None)?;
        }
        let removed = self.store.delete_many(&bucket.namespace, keys).await;
        removed.map_err(|fault| self.error(bucket, fault))
    }
}
