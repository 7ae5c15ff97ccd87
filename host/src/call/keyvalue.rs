//! `wasi:keyvalue` (0.2.0-draft2: `store`, `atomics`, `batch`) for plugin
//! calls, on the buckets the plugin's manifest grants ([`super::buckets`]):
//! a bucket opens only if granted; batches, and the buckets and
//! compare-and-swaps a call holds open, are bounded. The imports are linked
//! for every plugin: one that does not use them loads the same.
//!
//! A counter (`increment`) is kept as its decimal text: `get` of a counter
//! at 42 returns `b"42"`, and `set` of `b"42"` makes one. A compare-and-swap
//! compares values: `swap` writes only if the key still holds the value
//! `cas.new` read (or still has none).

use wasmtime::component::Resource;

use super::buckets::Swapped;
use super::state::CallState;
use crate::contract::bindings::store::{Error, KeyResponse};
use crate::contract::bindings::{KvBucket, KvCas, atomics, batch, store};

/// Keys in one page of `list-keys`.
const LIST_PAGE_KEYS: usize = 100;
/// Keys in one `get-many`, `set-many` or `delete-many`.
const BATCH_MAX_KEYS: usize = 1000;
/// The most a `get-many` may bring back (its keys times the largest value).
const BATCH_MAX_BYTES: u64 = 64 << 20;
/// Buckets and compare-and-swaps one call may hold open at once.
const MAX_OPEN_HANDLES: usize = 256;

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
