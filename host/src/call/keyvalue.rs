//! `wasi:keyvalue` (0.2.0-draft2: `store`, `atomics`, `batch`) for plugin
//! calls: a bucket opens only if the plugin's manifest grants it, under the
//! namespace it belongs to (the plugin's, and for a caller bucket the
//! caller's too); sizes are checked here, quotas and expiry by the store
//! ([`PluginStore`], which the state store implements), and every refusal
//! says what to change. The imports are linked for every plugin: one that
//! does not use them loads the same.
//!
//! A counter (`increment`) is kept as its decimal text: `get` of a counter
//! at 42 returns `b"42"`, and `set` of `b"42"` makes one. A compare-and-swap
//! compares values: `swap` writes only if the key still holds the value
//! `cas.new` read (or still has none).

use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::component::Resource;

use super::scope::BoxFuture;
use super::state::CallState;
use crate::contract::bindings::store::{Error, KeyResponse};
use crate::contract::bindings::{KvBucket, KvCas, atomics, batch, store};
use crate::manifest::{BucketGrant, BucketScope};

/// Keys in one page of `list-keys`.
pub const LIST_PAGE_KEYS: usize = 100;
/// Keys in one `get-many`, `set-many` or `delete-many`.
const BATCH_MAX_KEYS: usize = 1000;
/// The most a `get-many` may bring back (its keys times the largest value).
const BATCH_MAX_BYTES: u64 = 64 << 20;
/// Buckets and compare-and-swaps one call may hold open at once.
const MAX_OPEN_HANDLES: usize = 256;

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
    grants: Vec<BucketGrant>,
    store: Arc<dyn PluginStore>,
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
    fn open(&self, name: &str, caller: Option<&str>) -> Result<KvBucket, String> {
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

    fn quota(&self, bucket: &KvBucket) -> Quota {
        let grant = &self.grants[bucket.grant];
        Quota {
            max_keys: grant.max_keys,
            max_bytes: grant.max_bytes,
            expire_after: grant.expire_after,
        }
    }

    /// Why `key` (and `value`) may not be stored in `bucket`, if so: an empty
    /// key (a page's cursor is its last key), or one of them too large.
    fn check_sizes(&self, bucket: &KvBucket, key: &str, value: Option<&[u8]>) -> Result<(), Error> {
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
    fn error(&self, bucket: &KvBucket, fault: StoreFault) -> Error {
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
    async fn read(&self, bucket: &KvBucket, key: String) -> Result<Option<Vec<u8>>, Error> {
        self.check_sizes(bucket, &key, None)?;
        let found = self.store.get_many(&bucket.namespace, vec![key]).await;
        found
            .map(|mut values| values.pop().flatten())
            .map_err(|fault| self.error(bucket, fault))
    }

    async fn write(&self, bucket: &KvBucket, entries: Vec<(String, Vec<u8>)>) -> Result<(), Error> {
        for (key, value) in &entries {
            self.check_sizes(bucket, key, Some(value))?;
        }
        let quota = self.quota(bucket);
        let written = self.store.set_many(&bucket.namespace, quota, entries).await;
        written.map_err(|fault| self.error(bucket, fault))
    }

    async fn remove(&self, bucket: &KvBucket, keys: Vec<String>) -> Result<(), Error> {
        for key in &keys {
            self.check_sizes(bucket, key, None)?;
        }
        let removed = self.store.delete_many(&bucket.namespace, keys).await;
        removed.map_err(|fault| self.error(bucket, fault))
    }
}

impl CallState {
    fn bucket(&self, bucket: &Resource<KvBucket>) -> wasmtime::Result<KvBucket> {
        Ok(self.table.get(bucket)?.clone())
    }

    /// Holds one more bucket or compare-and-swap open, if the call may.
    fn take_handle(&mut self) -> Result<(), Error> {
        if self.keyvalue_handles >= MAX_OPEN_HANDLES {
            return Err(Error::Other(format!(
                "this call holds {MAX_OPEN_HANDLES} buckets and compare-and-swaps open: drop some before opening more"
            )));
        }
        self.keyvalue_handles += 1;
        Ok(())
    }

    fn give_back_handle(&mut self) {
        self.keyvalue_handles = self.keyvalue_handles.saturating_sub(1);
    }
}

/// Refuses a batch of more keys than one may have.
fn check_batch(keys: usize) -> Result<(), Error> {
    if keys > BATCH_MAX_KEYS {
        return Err(Error::Other(format!(
            "a batch of {keys} keys: at most {BATCH_MAX_KEYS} keys in one get-many, set-many or delete-many"
        )));
    }
    Ok(())
}

impl store::Host for CallState {
    async fn open(&mut self, identifier: String) -> wasmtime::Result<Result<Resource<KvBucket>, Error>> {
        let opened = self.buckets.open(&identifier, self.scope.caller());
        let bucket = match opened {
            Ok(bucket) => bucket,
            Err(why) => {
                // The plugin has the words (a plugin opening in a loop would flood the log).
                tracing::debug!(plugin = %self.plugin, bucket = %identifier, "{why}");
                return Ok(Err(Error::Other(why)));
            }
        };
        if let Err(error) = self.take_handle() {
            return Ok(Err(error));
        }
        Ok(Ok(self.table.push(bucket)?))
    }
}

impl store::HostBucket for CallState {
    async fn get(
        &mut self,
        bucket: Resource<KvBucket>,
        key: String,
    ) -> wasmtime::Result<Result<Option<Vec<u8>>, Error>> {
        let bucket = self.bucket(&bucket)?;
        Ok(self.buckets.clone().read(&bucket, key).await)
    }

    async fn set(
        &mut self,
        bucket: Resource<KvBucket>,
        key: String,
        value: Vec<u8>,
    ) -> wasmtime::Result<Result<(), Error>> {
        let bucket = self.bucket(&bucket)?;
        Ok(self.buckets.clone().write(&bucket, vec![(key, value)]).await)
    }

    async fn delete(&mut self, bucket: Resource<KvBucket>, key: String) -> wasmtime::Result<Result<(), Error>> {
        let bucket = self.bucket(&bucket)?;
        Ok(self.buckets.clone().remove(&bucket, vec![key]).await)
    }

    async fn exists(&mut self, bucket: Resource<KvBucket>, key: String) -> wasmtime::Result<Result<bool, Error>> {
        let bucket = self.bucket(&bucket)?;
        Ok(self
            .buckets
            .clone()
            .read(&bucket, key)
            .await
            .map(|value| value.is_some()))
    }

    async fn list_keys(
        &mut self,
        bucket: Resource<KvBucket>,
        cursor: Option<String>,
    ) -> wasmtime::Result<Result<KeyResponse, Error>> {
        let bucket = self.bucket(&bucket)?;
        let listed = self
            .buckets
            .store
            .list_keys(&bucket.namespace, cursor, LIST_PAGE_KEYS)
            .await;
        Ok(listed
            .map(|(keys, cursor)| KeyResponse { keys, cursor })
            .map_err(|fault| self.buckets.error(&bucket, fault)))
    }

    async fn drop(&mut self, bucket: Resource<KvBucket>) -> wasmtime::Result<()> {
        self.table.delete(bucket)?;
        self.give_back_handle();
        Ok(())
    }
}

impl atomics::Host for CallState {
    async fn increment(
        &mut self,
        bucket: Resource<KvBucket>,
        key: String,
        delta: i64,
    ) -> wasmtime::Result<Result<i64, Error>> {
        let bucket = self.bucket(&bucket)?;
        if let Err(error) = self.buckets.check_sizes(&bucket, &key, None) {
            return Ok(Err(error));
        }
        let quota = self.buckets.quota(&bucket);
        let counted = self.buckets.store.increment(&bucket.namespace, quota, key, delta).await;
        Ok(counted.map_err(|fault| self.buckets.error(&bucket, fault)))
    }

    async fn swap(&mut self, cas: Resource<KvCas>, value: Vec<u8>) -> wasmtime::Result<Result<(), atomics::CasError>> {
        let KvCas { bucket, key, seen } = self.table.delete(cas)?;
        self.give_back_handle();
        if let Err(error) = self.buckets.check_sizes(&bucket, &key, Some(&value)) {
            return Ok(Err(atomics::CasError::StoreError(error)));
        }
        let quota = self.buckets.quota(&bucket);
        let swapped = self
            .buckets
            .store
            .swap(&bucket.namespace, quota, key.clone(), seen, value)
            .await;
        Ok(match swapped {
            Ok(Swapped::Written) => Ok(()),
            Ok(Swapped::Changed(now)) => {
                if let Err(error) = self.take_handle() {
                    return Ok(Err(atomics::CasError::StoreError(error)));
                }
                let retry = self.table.push(KvCas { bucket, key, seen: now })?;
                Err(atomics::CasError::CasFailed(retry))
            }
            Err(fault) => Err(atomics::CasError::StoreError(self.buckets.error(&bucket, fault))),
        })
    }
}

impl atomics::HostCas for CallState {
    async fn new(
        &mut self,
        bucket: Resource<KvBucket>,
        key: String,
    ) -> wasmtime::Result<Result<Resource<KvCas>, Error>> {
        let bucket = self.bucket(&bucket)?;
        let seen = match self.buckets.clone().read(&bucket, key.clone()).await {
            Ok(seen) => seen,
            Err(error) => return Ok(Err(error)),
        };
        if let Err(error) = self.take_handle() {
            return Ok(Err(error));
        }
        Ok(Ok(self.table.push(KvCas { bucket, key, seen })?))
    }

    async fn current(&mut self, cas: Resource<KvCas>) -> wasmtime::Result<Result<Option<Vec<u8>>, Error>> {
        Ok(Ok(self.table.get(&cas)?.seen.clone()))
    }

    async fn drop(&mut self, cas: Resource<KvCas>) -> wasmtime::Result<()> {
        self.table.delete(cas)?;
        self.give_back_handle();
        Ok(())
    }
}

impl batch::Host for CallState {
    async fn get_many(
        &mut self,
        bucket: Resource<KvBucket>,
        keys: Vec<String>,
    ) -> wasmtime::Result<Result<Vec<Option<(String, Vec<u8>)>>, Error>> {
        let bucket = self.bucket(&bucket)?;
        if let Err(error) = check_batch(keys.len()) {
            return Ok(Err(error));
        }
        let largest = self.buckets.grants[bucket.grant].max_value_bytes;
        if keys.len() as u64 * largest > BATCH_MAX_BYTES {
            return Ok(Err(Error::Other(format!(
                "get-many of {} keys could bring back more than {BATCH_MAX_BYTES} bytes (values of up to {largest} \
                 bytes each): ask for at most {} keys at once",
                keys.len(),
                BATCH_MAX_BYTES / largest
            ))));
        }
        for key in &keys {
            if let Err(error) = self.buckets.check_sizes(&bucket, key, None) {
                return Ok(Err(error));
            }
        }
        let found = self.buckets.store.get_many(&bucket.namespace, keys.clone()).await;
        Ok(found
            .map(|values| {
                keys.into_iter()
                    .zip(values)
                    .map(|(key, value)| value.map(|value| (key, value)))
                    .collect()
            })
            .map_err(|fault| self.buckets.error(&bucket, fault)))
    }

    async fn set_many(
        &mut self,
        bucket: Resource<KvBucket>,
        key_values: Vec<(String, Vec<u8>)>,
    ) -> wasmtime::Result<Result<(), Error>> {
        let bucket = self.bucket(&bucket)?;
        if let Err(error) = check_batch(key_values.len()) {
            return Ok(Err(error));
        }
        Ok(self.buckets.clone().write(&bucket, key_values).await)
    }

    async fn delete_many(
        &mut self,
        bucket: Resource<KvBucket>,
        keys: Vec<String>,
    ) -> wasmtime::Result<Result<(), Error>> {
        let bucket = self.bucket(&bucket)?;
        if let Err(error) = check_batch(keys.len()) {
            return Ok(Err(error));
        }
        Ok(self.buckets.clone().remove(&bucket, keys).await)
    }
}
