//! Plugins' `wasi:keyvalue` state in the state store: the embedded database
//! keeps it across restarts of one process, Redis shares it between
//! replicas (see the backends for how each keeps it).

use super::{Backend, StateStore};
use crate::call::BoxFuture;
use crate::call::buckets::{KeyPage, PluginStore, Quota, StoreFault, Swapped};

impl StateStore {
    /// Says which store did not answer, and what that means for plugins.
    fn kv_answered<T>(&self, outcome: Result<T, StoreFault>) -> Result<T, StoreFault> {
        outcome.map_err(|fault| match fault {
            StoreFault::Unavailable(why) => StoreFault::Unavailable(format!(
                "{} does not answer ({why}); plugin state cannot be read or written until it does (the server \
                 reconnects by itself)",
                self.described
            )),
            fault => fault,
        })
    }
}

/// `$method` of the backend, its outcome as [`StateStore::kv_answered`] says.
macro_rules! on_backend {
    ($store:expr, $method:ident($($arg:expr),*)) => {
        Box::pin(async move {
            let outcome = match &$store.backend {
                Backend::Embedded(embedded) => embedded.$method($($arg),*).await,
                Backend::Shared(shared) => shared.$method($($arg),*).await,
            };
            $store.kv_answered(outcome)
        })
    };
}

impl PluginStore for StateStore {
    fn get_many<'a>(
        &'a self,
        namespace: &'a str,
        keys: Vec<String>,
    ) -> BoxFuture<'a, Result<Vec<Option<Vec<u8>>>, StoreFault>> {
        on_backend!(self, kv_get_many(namespace, keys))
    }

    fn set_many<'a>(
        &'a self,
        namespace: &'a str,
        quota: Quota,
        entries: Vec<(String, Vec<u8>)>,
    ) -> BoxFuture<'a, Result<(), StoreFault>> {
        on_backend!(self, kv_set_many(namespace, quota, entries))
    }

    fn delete_many<'a>(&'a self, namespace: &'a str, keys: Vec<String>) -> BoxFuture<'a, Result<(), StoreFault>> {
        on_backend!(self, kv_delete_many(namespace, keys))
    }

    fn list_keys<'a>(
        &'a self,
        namespace: &'a str,
        cursor: Option<String>,
        limit: usize,
    ) -> BoxFuture<'a, Result<KeyPage, StoreFault>> {
        on_backend!(self, kv_list_keys(namespace, cursor, limit))
    }

    fn increment<'a>(
        &'a self,
        namespace: &'a str,
        quota: Quota,
        key: String,
        delta: i64,
    ) -> BoxFuture<'a, Result<i64, StoreFault>> {
        on_backend!(self, kv_increment(namespace, quota, key, delta))
    }

    fn swap<'a>(
        &'a self,
        namespace: &'a str,
        quota: Quota,
        key: String,
        expected: Option<Vec<u8>>,
        value: Vec<u8>,
    ) -> BoxFuture<'a, Result<Swapped, StoreFault>> {
        on_backend!(self, kv_swap(namespace, quota, key, expected, value))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const ROOMY: Quota = Quota {
        max_keys: 1000,
        max_bytes: 1 << 20,
        expire_after: None,
    };

    fn pairs(keys: &[&str]) -> Vec<(String, Vec<u8>)> {
        keys.iter().map(|k| (k.to_string(), k.as_bytes().to_vec())).collect()
    }

    #[tokio::test]
    async fn namespaces_keep_apart_and_pages_cover_every_key() {
        let store = StateStore::in_memory();
        store.set_many("p/a/", ROOMY, pairs(&["x", "y"])).await.unwrap();
        store.set_many("p/a/c1", ROOMY, pairs(&["x"])).await.unwrap();
        let found = store.get_many("p/a/", vec!["x".into(), "z".into()]).await.unwrap();
        assert_eq!(found, vec![Some(b"x".to_vec()), None]);
        let (keys, next) = store.list_keys("p/a/c1", None, 10).await.unwrap();
        assert_eq!((keys, next), (vec!["x".to_owned()], None));

        let many: Vec<String> = (0..25).map(|i| format!("k{i:02}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        store.set_many("q/b/", ROOMY, pairs(&refs)).await.unwrap();
        let (mut seen, mut cursor, mut pages) = (Vec::new(), None, 0);
        loop {
            let (keys, next) = store.list_keys("q/b/", cursor, 10).await.unwrap();
            seen.extend(keys);
            pages += 1;
            match next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!((seen, pages), (many, 3));
    }

    #[tokio::test]
    async fn quotas_refuse_growth_only() {
        let store = StateStore::in_memory();
        let two_keys = Quota { max_keys: 2, ..ROOMY };
        store.set_many("n/", two_keys, pairs(&["a", "b"])).await.unwrap();
        assert_eq!(
            store.set_many("n/", two_keys, pairs(&["c"])).await,
            Err(StoreFault::OverKeys)
        );
        store.set_many("n/", two_keys, pairs(&["a"])).await.unwrap();
        store.delete_many("n/", vec!["a".into()]).await.unwrap();
        store.set_many("n/", two_keys, pairs(&["c"])).await.unwrap();
        let ten_bytes = Quota { max_bytes: 10, ..ROOMY };
        store
            .set_many("m/", ten_bytes, vec![("k".into(), vec![0; 9])])
            .await
            .unwrap();
        let over = store.set_many("m/", ten_bytes, vec![("k".into(), vec![0; 10])]).await;
        assert_eq!(over, Err(StoreFault::OverBytes));
        store
            .set_many("m/", ten_bytes, vec![("k".into(), vec![0; 2])])
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn counters_are_decimal_text_and_swaps_compare_values() {
        let store = StateStore::in_memory();
        assert_eq!(store.increment("c/", ROOMY, "n".into(), 5).await, Ok(5));
        assert_eq!(store.increment("c/", ROOMY, "n".into(), -7).await, Ok(-2));
        assert_eq!(
            store.get_many("c/", vec!["n".into()]).await.unwrap(),
            vec![Some(b"-2".to_vec())]
        );
        store
            .set_many("c/", ROOMY, vec![("t".into(), b"x".to_vec())])
            .await
            .unwrap();
        assert_eq!(
            store.increment("c/", ROOMY, "t".into(), 1).await,
            Err(StoreFault::NotACounter)
        );
        let swapped = store
            .swap("c/", ROOMY, "t".into(), Some(b"y".to_vec()), b"z".to_vec())
            .await;
        assert_eq!(swapped, Ok(Swapped::Changed(Some(b"x".to_vec()))));
        let swapped = store
            .swap("c/", ROOMY, "t".into(), Some(b"x".to_vec()), b"z".to_vec())
            .await;
        assert_eq!(swapped, Ok(Swapped::Written));
        let swapped = store.swap("c/", ROOMY, "new".into(), None, b"1".to_vec()).await;
        assert_eq!(swapped, Ok(Swapped::Written));
    }

    #[tokio::test]
    async fn expired_keys_are_not_read_and_make_room() {
        let store = StateStore::in_memory();
        let brief = Quota {
            max_keys: 1,
            expire_after: Some(Duration::from_millis(1)),
            ..ROOMY
        };
        store.set_many("e/", brief, pairs(&["a"])).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(store.get_many("e/", vec!["a".into()]).await.unwrap(), vec![None]);
        // Kept with no expiry, in the room `a` made.
        let lasting = Quota { max_keys: 1, ..ROOMY };
        store.set_many("e/", lasting, pairs(&["b"])).await.unwrap();
        assert_eq!(store.list_keys("e/", None, 10).await.unwrap().0, vec!["b".to_owned()]);
    }
}
