//! The shared state store: task records, leases and events in a Redis every
//! replica uses. Records are hashes (`wasm-mcp:task:ID`) that expire with
//! their task's ttl; the ids of running tasks are a set; a replica's lease
//! is a key that expires unless renewed; events are published on one
//! channel. The connection is made in the background and remade whenever
//! it drops (resubscribing to the channel); a request made while there is
//! none fails at once.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, Client, IntoConnectionInfo, ProtocolVersion, PushInfo, PushKind, Script};
use serde::{Deserialize, Serialize};
use tokio::sync::{SetOnce, broadcast, mpsc};

use super::{Event, TaskEntry};

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
