//! The shared state store: task records, leases and events in a Redis every
//! replica uses. Records are hashes (`wasm-mcp:task:ID`) that expire with
//! their task's ttl; the ids of running tasks are a set; a replica's lease
//! is a key that expires unless renewed; events are published on one
//! channel. The connection is made in the background and remade whenever
//! it drops (resubscribing to the channel); a request made while there is
//! none fails at once.
//!
//! A plugin's namespace of keys is a hash of its values, a sorted set of its
//! keys (all of score 0: listed in byte order, a page after the last key of
//! the one before), a sorted set of when its keys expire (for a bucket with
//! expiry) and a counter of the bytes it holds, all under one hash tag; every
//! operation on them is one Lua script, so quotas, expiry and
//! compare-and-swap hold between replicas.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, Client, IntoConnectionInfo, ProtocolVersion, PushInfo, PushKind, Script};
use serde::{Deserialize, Serialize};
use tokio::sync::{SetOnce, broadcast, mpsc};

use super::{Event, TaskEntry};
use crate::call::buckets::{KeyPage, Quota, StoreFault, Swapped};

const EVENTS: &str = "wasm-mcp:events";
const RUNNING: &str = "wasm-mcp:running";
/// The set of revoked plugin digests.
const REVOKED: &str = "wasm-mcp:revoked";

/// How long a request to Redis, or a connection attempt, may take.
const TIMEOUT: Duration = Duration::from_secs(2);

/// Writes a record unless the stored one is as new or has ended (the rule
/// of `super::supersedes`, run inside Redis so that it holds between
/// replicas), and keeps the set of running tasks.
const PUT: &str = r"
local stored = redis.call('HMGET', KEYS[1], 'revision', 'terminal')
if stored[1] and (stored[2] == '1' or tonumber(stored[1]) >= tonumber(ARGV[2])) then return 0 end
redis.call('HSET', KEYS[1], 'entry', ARGV[1], 'revision', ARGV[2], 'terminal', ARGV[3])
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
if ARGV[3] == '1' then redis.call('SREM', KEYS[2], ARGV[5]) else redis.call('SADD', KEYS[2], ARGV[5]) end
return 1
";

/// What every key-value script starts with: its keys (a namespace's values,
/// expiry times and bytes held), the time, and the functions the scripts share.
const KV_PRELUDE: &str = r"
local values, expiry, used, index = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = tonumber(ARGV[1])
local function alive(key)
  local at = redis.call('ZSCORE', expiry, key)
  return not at or tonumber(at) > now
end
local function drop(key)
  local len = redis.call('HSTRLEN', values, key)
  if redis.call('HDEL', values, key) == 1 then redis.call('DECRBY', used, #key + len) end
  redis.call('ZREM', expiry, key)
  redis.call('ZREM', index, key)
end
local function purge()
  for _, key in ipairs(redis.call('ZRANGEBYSCORE', expiry, '-inf', now)) do drop(key) end
end
-- Writes key = value within the quota (ARGV[2] keys, ARGV[3] bytes; ARGV[4]
-- ms to expiry, 0: none); over it, purges expired keys once; returns the fault, if any.
local function put(key, value)
  for attempt = 1, 2 do
    local count = redis.call('ZCARD', index)
    local bytes = tonumber(redis.call('GET', used) or '0')
    local exists = redis.call('HEXISTS', values, key) == 1
    local old = 0
    if exists then old = #key + redis.call('HSTRLEN', values, key) end
    local new_count = count
    if not exists then new_count = count + 1 end
    local new_bytes = bytes - old + #key + #value
    local fault = nil
    if new_count > tonumber(ARGV[2]) and new_count > count then fault = 'keys'
    elseif new_bytes > tonumber(ARGV[3]) and new_bytes > bytes then fault = 'bytes' end
    if not fault then
      redis.call('HSET', values, key, value)
      redis.call('ZADD', index, 0, key)
      redis.call('INCRBY', used, new_bytes - bytes)
      if tonumber(ARGV[4]) > 0 then redis.call('ZADD', expiry, now + tonumber(ARGV[4]), key)
      else redis.call('ZREM', expiry, key) end
      return nil
    end
    if attempt == 2 then return fault end
    purge()
  end
end
";

/// ARGV: now, keys… → the live value of each, or nil.
const KV_GET_MANY: &str = r"
local found = {}
for i = 2, #ARGV do
  local value = redis.call('HGET', values, ARGV[i])
  if value and alive(ARGV[i]) then found[i - 1] = value else found[i - 1] = false end
end
return found
";

/// ARGV: now, max keys, max bytes, ttl, key, value, key, value… → 'ok' or the fault.
const KV_SET_MANY: &str = r"
for i = 5, #ARGV, 2 do
  local fault = put(ARGV[i], ARGV[i + 1])
  if fault then return fault end
end
return 'ok'
";

/// ARGV: now, keys… → 'ok'.
const KV_DELETE_MANY: &str = r"
for i = 2, #ARGV do drop(ARGV[i]) end
return 'ok'
";

/// ARGV: now, the last key of the page before ('': none), count → the
/// next cursor ('': none) and the live keys of this page.
const KV_LIST: &str = r"
local first = '-'
if ARGV[2] ~= '' then first = '(' .. ARGV[2] end
local page = redis.call('ZRANGEBYLEX', index, first, '+', 'LIMIT', 0, tonumber(ARGV[3]))
local keys = {}
for _, key in ipairs(page) do
  if alive(key) then keys[#keys + 1] = key end
end
local after = ''
if #page == tonumber(ARGV[3]) then after = page[#page] end
return {after, keys}
";

/// ARGV: now, max keys, max bytes, ttl, key, delta → {'ok', the count as text} or {'fault', the fault}.
/// HINCRBY does the 64-bit arithmetic (Lua numbers are doubles); the count is
/// then written through `put`, which holds it to the quota.
const KV_INCREMENT: &str = r"
local key = ARGV[5]
if not alive(key) then drop(key) end
local before = redis.call('HGET', values, key)
local counted = redis.pcall('HINCRBY', values, key, ARGV[6])
if type(counted) == 'table' and counted.err then return {'fault', 'counter'} end
local text = redis.call('HGET', values, key)
if before then redis.call('HSET', values, key, before) else redis.call('HDEL', values, key) end
local fault = put(key, text)
if fault then return {'fault', fault} end
return {'ok', text}
";

/// ARGV: now, max keys, max bytes, ttl, key, '1' if a value is expected, the
/// expected value, the new value → {'ok', ''}, {'changed', the value now or nil} or {'fault', the fault}.
const KV_SWAP: &str = r"
local key = ARGV[5]
local current = redis.call('HGET', values, key)
if current and not alive(key) then current = false end
local expected = false
if ARGV[6] == '1' then expected = ARGV[7] end
if current ~= expected then return {'changed', current} end
local fault = put(key, ARGV[8])
if fault then return {'fault', fault} end
return {'ok', ''}
";

/// The scripts of plugins' key-value state.
struct KvScripts {
    get_many: Script,
    set_many: Script,
    delete_many: Script,
    list: Script,
    increment: Script,
    swap: Script,
}

impl KvScripts {
    fn new() -> Self {
        let script = |body: &str| Script::new(&format!("{KV_PRELUDE}{body}"));
        Self {
            get_many: script(KV_GET_MANY),
            set_many: script(KV_SET_MANY),
            delete_many: script(KV_DELETE_MANY),
            list: script(KV_LIST),
            increment: script(KV_INCREMENT),
            swap: script(KV_SWAP),
        }
    }
}

/// An event as published: who sent it, so a replica skips its own.
#[derive(Serialize, Deserialize)]
struct Envelope {
    origin: String,
    event: Event,
}

pub struct Shared {
    connection: Arc<SetOnce<ConnectionManager>>,
    replica: String,
    lease: Duration,
    put: Script,
    kv: Box<KvScripts>,
}

impl Shared {
    /// Starts connecting to the Redis at `url`; events other replicas
    /// publish go to `events`. Fails only for a URL that is not one.
    pub fn connect(
        url: &str,
        described: &str,
        replica: &str,
        lease: Duration,
        events: broadcast::Sender<Event>,
    ) -> anyhow::Result<Self> {
        let info = url
            .into_connection_info()
            .map_err(|error| anyhow::anyhow!("--state {}: not a Redis URL ({error})", redacted(url)))?;
        // Events arrive as RESP3 pushes on the connection requests use.
        let settings = info.redis_settings().clone().set_protocol(ProtocolVersion::RESP3);
        let client = Client::open(info.set_redis_settings(settings))?;
        let (pushes, pushed) = mpsc::unbounded_channel();
        let config = ConnectionManagerConfig::new()
            .set_push_sender(pushes)
            .set_automatic_resubscription()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(1));
        let connection = Arc::new(SetOnce::new());
        tokio::spawn(keep_connecting(
            client,
            config,
            connection.clone(),
            described.to_owned(),
        ));
        tokio::spawn(forward_events(pushed, replica.to_owned(), events));
        Ok(Self {
            connection,
            replica: replica.to_owned(),
            lease,
            put: Script::new(PUT),
            kv: Box::new(KvScripts::new()),
        })
    }

    /// The connection; until the first one is made, a request waits for
    /// it as long as a request may take.
    async fn connection(&self) -> Result<ConnectionManager, String> {
        match self.connection.get() {
            Some(connection) => Ok(connection.clone()),
            None => tokio::time::timeout(TIMEOUT, self.connection.wait())
                .await
                .cloned()
                .map_err(|_| "not connected yet".to_owned()),
        }
    }

    pub async fn put(&self, entry: &TaskEntry) -> Result<bool, String> {
        let mut connection = self.connection().await?;
        let json = serde_json::to_string(entry).expect("a task entry serializes");
        let written: i64 = self
            .put
            .key(task_key(&entry.id))
            .key(RUNNING)
            .arg(json)
            .arg(entry.revision)
            .arg(if entry.terminal { "1" } else { "0" })
            .arg(entry.expires_at_ms)
            .arg(&entry.id)
            .invoke_async(&mut connection)
            .await
            .map_err(|error| error.to_string())?;
        Ok(written == 1)
    }

    pub async fn get(&self, id: &str) -> Result<Option<TaskEntry>, String> {
        let mut connection = self.connection().await?;
        let stored: Option<String> = connection
            .hget(task_key(id), "entry")
            .await
            .map_err(|error| error.to_string())?;
        Ok(stored.and_then(|json| serde_json::from_str(&json).ok()))
    }

    pub async fn running(&self) -> Result<Vec<TaskEntry>, String> {
        let mut connection = self.connection().await?;
        let ids: Vec<String> = connection.smembers(RUNNING).await.map_err(|error| error.to_string())?;
        let mut running = Vec::with_capacity(ids.len());
        for id in ids {
            match self.get(&id).await? {
                Some(entry) => running.push(entry),
                // Its record expired while it ran: nothing is left to end.
                None => {
                    let _: i64 = connection.srem(RUNNING, &id).await.map_err(|error| error.to_string())?;
                }
            }
        }
        Ok(running)
    }

    pub async fn renew(&self) -> Result<(), String> {
        let mut connection = self.connection().await?;
        connection
            .pset_ex(replica_key(&self.replica), 1, self.lease.as_millis() as u64)
            .await
            .map_err(|error| error.to_string())
    }

    pub async fn is_alive(&self, replica: &str) -> Result<bool, String> {
        let mut connection = self.connection().await?;
        connection
            .exists(replica_key(replica))
            .await
            .map_err(|error| error.to_string())
    }

    pub async fn revoked_digests(&self) -> Result<std::collections::BTreeSet<String>, String> {
        let mut connection = self.connection().await?;
        connection.smembers(REVOKED).await.map_err(|error| error.to_string())
    }

    pub async fn revoke(&self, digest: &str, lift: bool) -> Result<(), String> {
        let mut connection = self.connection().await?;
        let changed: Result<i64, _> = if lift {
            connection.srem(REVOKED, digest).await
        } else {
            connection.sadd(REVOKED, digest).await
        };
        changed.map(|_| ()).map_err(|error| error.to_string())
    }

    pub async fn publish(&self, event: &Event) -> Result<(), String> {
        let mut connection = self.connection().await?;
        let envelope = Envelope {
            origin: self.replica.clone(),
            event: event.clone(),
        };
        let json = serde_json::to_string(&envelope).expect("an event serializes");
        let _: i64 = connection
            .publish(EVENTS, json)
            .await
            .map_err(|error| error.to_string())?;
        Ok(())
    }
}

impl Shared {
    /// `script` invoked on `namespace`'s keys with the time and `args`.
    async fn kv_invoke<T: redis::FromRedisValue>(
        &self,
        script: &Script,
        namespace: &str,
        args: impl FnOnce(&mut redis::ScriptInvocation<'_>),
    ) -> Result<T, StoreFault> {
        let mut connection = self.connection().await.map_err(StoreFault::Unavailable)?;
        let mut invocation = script.prepare_invoke();
        for part in ["values", "expiry", "bytes", "keys"] {
            invocation.key(format!("wasm-mcp:kv:{{{namespace}}}:{part}"));
        }
        invocation.arg(super::now_ms());
        args(&mut invocation);
        invocation
            .invoke_async(&mut connection)
            .await
            .map_err(|error| StoreFault::Unavailable(error.to_string()))
    }

    pub async fn kv_get_many(&self, namespace: &str, keys: Vec<String>) -> Result<Vec<Option<Vec<u8>>>, StoreFault> {
        self.kv_invoke(&self.kv.get_many, namespace, |invocation| {
            invocation.arg(keys);
        })
        .await
    }

    pub async fn kv_set_many(
        &self,
        namespace: &str,
        quota: Quota,
        entries: Vec<(String, Vec<u8>)>,
    ) -> Result<(), StoreFault> {
        let outcome: String = self
            .kv_invoke(&self.kv.set_many, namespace, |invocation| {
                with_quota(invocation, quota);
                for (key, value) in entries {
                    invocation.arg(key).arg(value);
                }
            })
            .await?;
        fault(&outcome).map_or(Ok(()), Err)
    }

    pub async fn kv_delete_many(&self, namespace: &str, keys: Vec<String>) -> Result<(), StoreFault> {
        let _: String = self
            .kv_invoke(&self.kv.delete_many, namespace, |invocation| {
                invocation.arg(keys);
            })
            .await?;
        Ok(())
    }

    pub async fn kv_list_keys(
        &self,
        namespace: &str,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<KeyPage, StoreFault> {
        let (next, keys): (String, Vec<String>) = self
            .kv_invoke(&self.kv.list, namespace, |invocation| {
                invocation.arg(cursor.unwrap_or_default()).arg(limit);
            })
            .await?;
        Ok((keys, (!next.is_empty()).then_some(next)))
    }

    pub async fn kv_increment(
        &self,
        namespace: &str,
        quota: Quota,
        key: String,
        delta: i64,
    ) -> Result<i64, StoreFault> {
        let (outcome, text): (String, String) = self
            .kv_invoke(&self.kv.increment, namespace, |invocation| {
                with_quota(invocation, quota);
                invocation.arg(key).arg(delta);
            })
            .await?;
        match fault(&outcome) {
            Some(_) => Err(fault(&text).unwrap_or(StoreFault::NotACounter)),
            None => text.parse().map_err(|_| StoreFault::NotACounter),
        }
    }

    pub async fn kv_swap(
        &self,
        namespace: &str,
        quota: Quota,
        key: String,
        expected: Option<Vec<u8>>,
        value: Vec<u8>,
    ) -> Result<Swapped, StoreFault> {
        let (outcome, now): (String, Option<Vec<u8>>) = self
            .kv_invoke(&self.kv.swap, namespace, |invocation| {
                with_quota(invocation, quota);
                invocation
                    .arg(key)
                    .arg(if expected.is_some() { "1" } else { "0" })
                    .arg(expected.unwrap_or_default())
                    .arg(value);
            })
            .await?;
        match outcome.as_str() {
            "ok" => Ok(Swapped::Written),
            "changed" => Ok(Swapped::Changed(now)),
            _ => Err(now
                .and_then(|why| fault(&String::from_utf8_lossy(&why)))
                .unwrap_or_else(|| {
                    StoreFault::Unavailable(format!("an answer of the store not understood: {outcome}"))
                })),
        }
    }
}

/// The quota's arguments of a writing script: max keys, max bytes, ms to expiry (0: none).
fn with_quota(invocation: &mut redis::ScriptInvocation<'_>, quota: Quota) {
    let expire_ms = quota.expire_after.map_or(0, |after| after.as_millis() as u64);
    invocation.arg(quota.max_keys).arg(quota.max_bytes).arg(expire_ms);
}

/// The fault a script reported, if it reported one.
fn fault(outcome: &str) -> Option<StoreFault> {
    match outcome {
        "keys" => Some(StoreFault::OverKeys),
        "bytes" => Some(StoreFault::OverBytes),
        "counter" => Some(StoreFault::NotACounter),
        _ => None,
    }
}

fn task_key(id: &str) -> String {
    format!("wasm-mcp:task:{id}")
}

fn replica_key(replica: &str) -> String {
    format!("wasm-mcp:replica:{replica}")
}

/// The URL without its password, for errors and logs.
pub fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => format!("{}://…@{}", &url[..scheme], &url[at + 1..]),
        _ => url.to_owned(),
    }
}

/// Connects (and subscribes to the events), retrying every second until it
/// succeeds; from then on the connection manager reconnects by itself.
async fn keep_connecting(
    client: Client,
    config: ConnectionManagerConfig,
    slot: Arc<SetOnce<ConnectionManager>>,
    described: String,
) {
    let mut failed = false;
    loop {
        let connected = match client.get_connection_manager_with_config(config.clone()).await {
            Ok(mut manager) => manager.subscribe(EVENTS).await.map(|()| manager),
            Err(error) => Err(error),
        };
        match connected {
            Ok(manager) => {
                let _ = slot.set(manager);
                tracing::info!("{described} answers: connected");
                return;
            }
            Err(error) if !failed => {
                failed = true;
                tracing::error!("{described} cannot be reached ({error}): not ready; trying again every second");
            }
            Err(_) => {}
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Hands on the events other replicas publish.
async fn forward_events(
    mut pushed: mpsc::UnboundedReceiver<PushInfo>,
    replica: String,
    events: broadcast::Sender<Event>,
) {
    while let Some(push) = pushed.recv().await {
        if push.kind != PushKind::Message {
            continue;
        }
        let Some(payload) = push.data.into_iter().nth(1) else {
            continue;
        };
        let Ok(json) = redis::from_redis_value::<Vec<u8>>(payload) else {
            continue;
        };
        match serde_json::from_slice::<Envelope>(&json) {
            Ok(envelope) if envelope.origin != replica => {
                let _ = events.send(envelope.event);
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "an event on {EVENTS} that is not one of this version's"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::redacted;

    #[test]
    fn a_password_is_not_shown() {
        assert_eq!(redacted("redis://:secret@10.0.0.1:6379/0"), "redis://…@10.0.0.1:6379/0");
        assert_eq!(redacted("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
    }
}
