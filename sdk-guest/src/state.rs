//! Plugin state: the key-value buckets the plugin's manifest grants
//! (`[keyvalue] buckets = ["notes"]` in `NAME.toml`), kept by the host in its
//! state store (across restarts, and shared by replicas that share a Redis
//! store), through the standard `wasi:keyvalue` interface (0.2.0-draft2).
//!
//! ```no_run
//! use wasm_mcp_sdk::state::Bucket;
//!
//! fn remember(key: &str, text: &str) -> Result<u64, wasm_mcp_sdk::state::StateError> {
//!     let notes = Bucket::open("notes")?;
//!     notes.set(key, text)?;
//!     let saved = Bucket::open("counters")?.increment("saved", 1)?;
//!     Ok(saved as u64)
//! }
//! ```
//!
//! Every call may run in a fresh instance, so open a bucket in each call
//! that uses it (opening is cheap: nothing is read). A bucket the manifest
//! does not grant fails to open with an error naming the manifest line to
//! add; a write past the bucket's quota fails with an error naming it.
//! A counter ([`Bucket::increment`]) is its decimal text: `get` of a counter
//! at 42 returns `b"42"`. [`Bucket::update`] changes a value with
//! compare-and-swap, so concurrent calls (on any replica) lose no update.
//!
//! These functions need the host: in native tests, call the tools that use
//! them through a running server instead.

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::bindings::wasi::keyvalue::{atomics, batch, store};

/// Why the host did not do what was asked, in its words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateError(pub String);

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StateError {}

impl From<store::Error> for StateError {
    fn from(error: store::Error) -> Self {
        StateError(match error {
            store::Error::NoSuchStore => "no such bucket".into(),
            store::Error::AccessDenied => "access to the bucket was denied".into(),
            store::Error::Other(message) => message,
        })
    }
}

/// The result of a state operation.
pub type Result<T> = std::result::Result<T, StateError>;

/// One bucket of the plugin's state, open for this call.
pub struct Bucket {
    inner: store::Bucket,
}

impl Bucket {
    /// Opens the bucket `name`, which the plugin's manifest must grant.
    pub fn open(name: &str) -> Result<Bucket> {
        Ok(Bucket {
            inner: store::open(name)?,
        })
    }

    /// The value of `key`, if it has one.
    pub fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.inner.get(key)?)
    }

    /// The value of `key` as text (invalid UTF-8 replaced), if it has one.
    pub fn get_string(&self, key: &str) -> Result<Option<String>> {
        Ok(self.get(key)?.map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
    }

    /// The value of `key` read as JSON into `T`, if it has one.
    pub fn get_json<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        self.get(key)?
            .map(|bytes| serde_json::from_slice(&bytes))
            .transpose()
            .map_err(|error| StateError(format!("the value of {key:?} is not the JSON expected: {error}")))
    }

    /// Sets `key` to `value`.
    pub fn set(&self, key: &str, value: impl AsRef<[u8]>) -> Result<()> {
        Ok(self.inner.set(key, value.as_ref())?)
    }

    /// Sets `key` to `value` as JSON.
    pub fn set_json<T: Serialize>(&self, key: &str, value: &T) -> Result<()> {
        let json = serde_json::to_vec(value).map_err(|error| StateError(error.to_string()))?;
        self.set(key, json)
    }

    /// Removes `key` (nothing if it has no value).
    pub fn delete(&self, key: &str) -> Result<()> {
        Ok(self.inner.delete(key)?)
    }

    /// Whether `key` has a value.
    pub fn exists(&self, key: &str) -> Result<bool> {
        Ok(self.inner.exists(key)?)
    }

    /// One page of keys, from `cursor` (none: the first page), and the
    /// cursor of the next page (none: this was the last). Keys come in no
    /// particular order.
    pub fn keys_page(&self, cursor: Option<&str>) -> Result<(Vec<String>, Option<String>)> {
        let page = self.inner.list_keys(cursor)?;
        Ok((page.keys, page.cursor))
    }

    /// Every key, page by page.
    pub fn keys(&self) -> Result<Vec<String>> {
        let mut keys = Vec::new();
        let mut cursor = None;
        loop {
            let (page, next) = self.keys_page(cursor.as_deref())?;
            keys.extend(page);
            match next {
                Some(next) => cursor = Some(next),
                None => return Ok(keys),
            }
        }
    }

    /// Adds `delta` to the counter `key` (absent: 0) at once, whoever else
    /// counts; returns its new value.
    pub fn increment(&self, key: &str, delta: i64) -> Result<i64> {
        Ok(atomics::increment(&self.inner, key, delta)?)
    }

    /// Replaces the value of `key` with `change(the value now)` by
    /// compare-and-swap: if another call changed it meanwhile, `change` runs
    /// again on the newer value. Returns the value written.
    pub fn update(&self, key: &str, mut change: impl FnMut(Option<&[u8]>) -> Vec<u8>) -> Result<Vec<u8>> {
        let mut cas = atomics::Cas::new(&self.inner, key)?;
        loop {
            let value = change(cas.current()?.as_deref());
            match atomics::swap(cas, &value) {
                Ok(()) => return Ok(value),
                Err(atomics::CasError::CasFailed(newer)) => cas = newer,
                Err(atomics::CasError::StoreError(error)) => return Err(error.into()),
            }
        }
    }

    /// The values of `keys`, in their order (none where a key has none).
    pub fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>> {
        let keys: Vec<String> = keys.iter().map(|key| key.to_string()).collect();
        let found = batch::get_many(&self.inner, &keys)?;
        Ok(found.into_iter().map(|pair| pair.map(|(_, value)| value)).collect())
    }

    /// Sets every key to its value.
    pub fn set_many(&self, pairs: &[(&str, &[u8])]) -> Result<()> {
        let pairs: Vec<(String, Vec<u8>)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_vec())).collect();
        Ok(batch::set_many(&self.inner, &pairs)?)
    }

    /// Removes every key of `keys`.
    pub fn delete_many(&self, keys: &[&str]) -> Result<()> {
        let keys: Vec<String> = keys.iter().map(|key| key.to_string()).collect();
        Ok(batch::delete_many(&self.inner, &keys)?)
    }
}
