//! The live HTTP sessions: their unguessable ids, the credential each is
//! bound to, the task that carries what each session sends onto its streams,
//! idle expiry, and ending a session (which frees it).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use axum::http::StatusCode;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::access::Credential;
use super::error::HttpError;
use super::streams::Streams;
use crate::session::{Outgoing, Server, Session};

/// One MCP session reached over HTTP.
pub struct HttpSession {
    pub id: String,
    pub session: Arc<Session>,
    pub streams: Arc<Streams>,
    /// The protocol version negotiated at initialize.
    pub version: &'static str,
    credential: Credential,
    activity: Arc<Activity>,
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
    pub fn busy(&self) -> Busy {
        self.activity.open.fetch_add(1, Ordering::Relaxed);
        Busy(self.activity.clone())
    }

    /// Whether the client speaks a revision with SSE priming events and
    /// polling (2025-11-25 and later; versions are dates, so they sort).
    pub fn polls(&self) -> bool {
        self.version >= "2025-11-25"
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
        tokio::spawn(async move { session.close(Duration::ZERO).await });
    }
}

/// 128 random bits from the operating system, as 32 hex digits.
fn new_session_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system provides random bytes");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub struct Sessions {
    server: Arc<Server>,
    max_sessions: usize,
    table: Mutex<HashMap<String, Arc<HttpSession>>>,
}

impl Sessions {
    pub fn new(server: Arc<Server>, max_sessions: usize) -> Self {
        Self {
            server,
            max_sessions,
            table: Mutex::new(HashMap::new()),
        }
    }

    fn full(&self) -> Result<(), HttpError> {
        if self.table.lock().unwrap().len() >= self.max_sessions {
            return Err(HttpError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("Too many sessions ({} open); try again later", self.max_sessions),
            ));
        }
        Ok(())
    }

    /// A new session, not yet reachable by its id (see [`Self::admit`]).
    pub fn create(&self, credential: Credential, version: &'static str) -> Result<Arc<HttpSession>, HttpError> {
        self.full()?;
        let (outbox, mut outgoing) = mpsc::unbounded_channel::<Outgoing>();
        let http_session = Arc::new(HttpSession {
            id: new_session_id(),
            session: Session::new(self.server.clone(), outbox),
            streams: Arc::new(Streams::default()),
            version,
            credential,
            activity: Arc::new(Activity {
                last_seen: Mutex::new(Instant::now()),
                open: AtomicUsize::new(0),
            }),
        });
        let streams = http_session.streams.clone();
        let id = http_session.id.clone();
        tokio::spawn(async move {
            while let Some(out) = outgoing.recv().await {
                streams.route(out);
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

    /// The session `id`, if it exists and `credential` is the one it was
    /// created with (anything else is told it does not exist).
    pub fn get(&self, id: &str, credential: Credential) -> Result<Arc<HttpSession>, HttpError> {
        let table = self.table.lock().unwrap();
        let found = table
            .get(id)
            .filter(|s| s.credential == credential)
            .ok_or_else(HttpError::session_not_found)?;
        *found.activity.last_seen.lock().unwrap() = Instant::now();
        Ok(found.clone())
    }

    /// Ends the session `id` for the client that owns it.
    pub fn remove(&self, id: &str, credential: Credential) -> Result<(), HttpError> {
        let mut table = self.table.lock().unwrap();
        match table.get(id) {
            Some(s) if s.credential == credential => {
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

    /// Ends every session (the server is stopping).
    pub fn close_all(&self) {
        let sessions: Vec<_> = self.table.lock().unwrap().drain().map(|(_, s)| s).collect();
        for session in sessions {
            session.end("the server is stopping");
        }
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
