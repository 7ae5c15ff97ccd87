//! The live HTTP sessions: their unguessable ids, the credential each is
//! bound to, the task that carries what each session sends onto its streams,
//! idle expiry, and ending a session (which frees it).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use axum::http::StatusCode;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::error::HttpError;
use super::streams::Streams;
use crate::auth::Credential;
use crate::request::Outgoing;
use crate::server::Hub;
use crate::session::Session;

/// One MCP session reached over HTTP.
pub struct HttpSession {
    pub id: String,
    pub session: Arc<Session>,
    pub streams: Arc<Streams>,
    credential: Credential,
    activity: Arc<Activity>,
    /// Asks the task routing the session's messages to route all it has been
    /// sent so far, then answer.
    flush: mpsc::UnboundedSender<oneshot::Sender<()>>,
}

/// When a session was last used, and how many connections hold it open.
struct Activity {
    last_seen: Mutex<Instant>,
    open: AtomicUsize,
}

/// Marks a session in use (an open stream, or a request being answered)
/// until dropped.
pub struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        *self.0.last_seen.lock().unwrap() = Instant::now();
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl HttpSession {
    /// Whether `credential` is of the principal that created the session.
    fn is_of(&self, credential: &Credential) -> bool {
        fn id(credential: &Credential) -> Option<&str> {
            credential.as_ref().map(|principal| principal.id.as_str())
        }
        id(&self.credential) == id(credential)
    }

    pub fn busy(&self) -> Busy {
        self.activity.open.fetch_add(1, Ordering::Relaxed);
        Busy(self.activity.clone())
    }

    /// Whether the client speaks a revision with SSE priming events and
    /// polling (2025-11-25 and later; versions are dates, so they sort).
    pub fn polls(&self) -> bool {
        self.session.protocol_version() >= "2025-11-25"
    }

    fn idle_for(&self, idle: Duration) -> bool {
        self.activity.open.load(Ordering::Relaxed) == 0 && self.activity.last_seen.lock().unwrap().elapsed() >= idle
    }

    /// Ends the session: its streams close, the requests it still runs are
    /// cancelled, and it is freed once they stop.
    pub fn end(&self, why: &str) {
        tracing::debug!(session = %self.id, why, "HTTP session ended");
        self.streams.close();
        let session = self.session.clone();
        let why = why.to_owned();
        tokio::spawn(async move { session.close(Duration::ZERO, &why).await });
    }

    /// Ends the session as the server stops: running calls get `grace` to
    /// finish and their responses (and the status of tasks stopped after it)
    /// still reach the open streams, which close last.
    async fn shut_down(&self, grace: Duration) {
        self.session.close(grace, "the server is shutting down").await;
        let (flushed, routed) = oneshot::channel();
        if self.flush.send(flushed).is_ok() {
            // An error means the router ended: everything was routed.
            let _ = routed.await;
        }
        self.streams.close();
        tracing::debug!(session = %self.id, "HTTP session ended: the server is stopping");
    }
}

/// 128 random bits from the operating system, as 32 hex digits.
fn new_session_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system provides random bytes");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub struct Sessions {
    hub: Arc<Hub>,
    max_sessions: usize,
    table: Mutex<HashMap<String, Arc<HttpSession>>>,
    /// The server is shutting down: no new session starts.
    closing: AtomicBool,
}

impl Sessions {
    pub fn new(hub: Arc<Hub>, max_sessions: usize) -> Self {
        Self {
            hub,
            max_sessions,
            table: Mutex::new(HashMap::new()),
            closing: AtomicBool::new(false),
        }
    }

    /// What every session shares.
    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    fn full(&self) -> Result<(), HttpError> {
        if self.closing.load(Ordering::Relaxed) {
            return Err(HttpError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "The server is shutting down and starts no new session",
            ));
        }
        if self.table.lock().unwrap().len() >= self.max_sessions {
            return Err(HttpError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("Too many sessions ({} open); try again later", self.max_sessions),
            ));
        }
        Ok(())
    }

    /// A new session, not yet reachable by its id (see [`Self::admit`]).
    pub fn create(&self, credential: Credential) -> Result<Arc<HttpSession>, HttpError> {
        self.full()?;
        let (outbox, mut outgoing) = mpsc::unbounded_channel::<Outgoing>();
        let (flush, mut flushes) = mpsc::unbounded_channel::<oneshot::Sender<()>>();
        let http_session = Arc::new(HttpSession {
            id: new_session_id(),
            session: Session::acting_for(self.hub.clone(), outbox, credential.clone()),
            streams: Arc::new(Streams::default()),
            credential,
            activity: Arc::new(Activity {
                last_seen: Mutex::new(Instant::now()),
                open: AtomicUsize::new(0),
            }),
            flush,
        });
        let streams = http_session.streams.clone();
        let id = http_session.id.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    out = outgoing.recv() => match out {
                        Some(out) => streams.route(out),
                        None => break,
                    },
                    Some(flushed) = flushes.recv() => {
                        while let Ok(out) = outgoing.try_recv() {
                            streams.route(out);
                        }
                        let _ = flushed.send(());
                    }
                }
            }
            // Every sender is gone: the session and all its calls are dropped.
            tracing::debug!(session = %id, "HTTP session freed");
        });
        Ok(http_session)
    }

    /// Makes a session reachable by its id (once it is initialized).
    pub fn admit(&self, http_session: Arc<HttpSession>) -> Result<(), HttpError> {
        self.full()?;
        let mut table = self.table.lock().unwrap();
        table.insert(http_session.id.clone(), http_session);
        tracing::debug!(open = table.len(), "HTTP session opened");
        Ok(())
    }

    /// The session `id`, if it exists and `credential` is of the principal
    /// that created it (anything else is told it does not exist).
    pub fn get(&self, id: &str, credential: &Credential) -> Result<Arc<HttpSession>, HttpError> {
        let table = self.table.lock().unwrap();
        let found = table
            .get(id)
            .filter(|s| s.is_of(credential))
            .ok_or_else(HttpError::session_not_found)?;
        *found.activity.last_seen.lock().unwrap() = Instant::now();
        Ok(found.clone())
    }

    /// Ends the session `id` for the client that owns it.
    pub fn remove(&self, id: &str, credential: &Credential) -> Result<(), HttpError> {
        let mut table = self.table.lock().unwrap();
        match table.get(id) {
            Some(s) if s.is_of(credential) => {
                let removed = table.remove(id).expect("just seen");
                let open = table.len();
                drop(table);
                removed.end("deleted by the client");
                tracing::debug!(open, "HTTP session removed");
                Ok(())
            }
            _ => Err(HttpError::session_not_found()),
        }
    }

    /// Ends every session as the server stops, giving running calls `grace`
    /// to finish; returns once every session has ended.
    pub async fn close_all(&self, grace: Duration) {
        self.closing.store(true, Ordering::Relaxed);
        let sessions: Vec<_> = self.table.lock().unwrap().values().cloned().collect();
        futures_util::future::join_all(sessions.iter().map(|s| s.shut_down(grace))).await;
        self.table.lock().unwrap().clear();
    }

    /// Ends sessions with no open connection and no request for `idle`,
    /// checking a few times per `idle`, until the table is dropped.
    pub async fn expire_idle(sessions: Weak<Self>, idle: Duration) {
        let mut ticker = tokio::time::interval((idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30)));
        loop {
            ticker.tick().await;
            let Some(sessions) = sessions.upgrade() else {
                return;
            };
            let mut expired = Vec::new();
            sessions.table.lock().unwrap().retain(|_, s| {
                let idle = s.idle_for(idle);
                if idle {
                    expired.push(s.clone());
                }
                !idle
            });
            for session in expired {
                tracing::info!(session = %session.id, ?idle, "HTTP session expired");
                session.end("idle");
            }
        }
    }
}
