//! Outgoing HTTP (`wasi:http/outgoing-handler`) under the plugin's `[network]`
//! grants, the same ones its sockets are held to, over plain TCP or TLS.
//!
//! The request's host must be granted: a DNS name only if a rule names it
//! (with the request's port), an IP literal only if it passes the address
//! check; an `http://` request may not use a TLS-only (`https://`) rule. The
//! host resolves the name itself and connects only to an address
//! [`NetworkPolicy::allows`] allows, so a granted name that resolves to
//! loopback or a metadata endpoint is refused exactly as for a socket. An
//! `https://` request is then encrypted by the host: the server's certificate
//! must be valid for the URL's host under the plugin's [`TlsTrust`], and ALPN
//! picks HTTP/2 or HTTP/1.1. A call's requests to one origin share
//! connections ([`Pool`]); every wait is bounded by the request's timeouts
//! and by what is left of the call's deadline.
//!
//! A rule limited to methods or path prefixes is held to every request,
//! on a kept connection too. Once a request has passed these checks, a
//! header the operator bound to its destination ([`Credentials`]) is added
//! to it: a request that sets that header itself is refused, and no
//! response header handed back holds the secret. Redirects are the
//! plugin's to follow, each a request of its own matched afresh.

use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::uri::Scheme;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::{http1, http2};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::credentials::{Added, Credential, Credentials, Destination};
use super::network::{Channel, HttpRequest, NetworkPolicy};
use super::pool::{Origin, Pool, Sender};
use super::tls::{self, Failure, TlsTrust, Watched};
use crate::metrics::METRICS;

/// Bounds a connect (with the TLS and HTTP handshakes) when the guest sets none.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Bounds the wait for the response head when the guest sets none.
const FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(60);
/// Bounds the wait for each part of the response body when the guest sets none.
const BETWEEN_BYTES_TIMEOUT: Duration = Duration::from_secs(60);

/// The rest of a response's I/O, driven after its head arrived.
type IoFuture = Box<dyn Future<Output = Result<(), Error>> + Send>;
type Sent = (http::Response<WasiBody>, IoFuture);

/// What is left of the call's deadline.
pub type TimeLeft = Arc<dyn Fn() -> Duration + Send + Sync>;

/// The `wasi:http` hooks of one call: every request is checked against the
/// plugin's grants, and its connections are kept for the call's next requests.
pub struct HttpGate {
    policy: Arc<NetworkPolicy>,
    tls: Arc<TlsTrust>,
    credentials: Option<Arc<dyn Credentials>>,
    caller: Option<Arc<str>>,
    pool: Arc<Pool>,
    time_left: Option<TimeLeft>,
}

impl HttpGate {
    pub fn new(policy: Arc<NetworkPolicy>, tls: Arc<TlsTrust>, credentials: Option<Arc<dyn Credentials>>) -> Self {
        Self {
            policy,
            tls,
            credentials,
            caller: None,
            pool: Arc::default(),
            time_left: None,
        }
    }

    /// The call's requests act for `caller` (named where a credential is
    /// used); set again when a spare instance is armed for a request. Kept
    /// only for a plugin with credentials bound: no other call pays for it.
    pub fn act_for(&mut self, caller: Option<&str>) {
        if self.credentials.is_some() {
            self.caller = caller.map(Arc::from);
        }
    }

    /// Bounds every wait of the call's requests by `time_left`.
    pub fn bound_by(&mut self, time_left: TimeLeft) {
        self.time_left = Some(time_left);
    }
}

impl WasiHttpHooks for HttpGate {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: IoFuture,
    ) -> Box<dyn Future<Output = Result<Sent, Error>> + Send> {
        let exchange = Exchange {
            policy: self.policy.clone(),
            tls: self.tls.clone(),
            credentials: self.credentials.clone(),
            caller: self.caller.clone(),
            pool: self.pool.clone(),
            waits: Waits {
                options: options.unwrap_or_default(),
                time_left: self.time_left.clone(),
            },
        };
        Box::new(async move { exchange.send(request).await })
    }
}

/// How long each step of a request may take.
#[derive(Clone)]
struct Waits {
    options: RequestOptions,
    time_left: Option<TimeLeft>,
}

impl Waits {
    /// `wait`, or less if the call's deadline comes first.
    fn capped(&self, wait: Duration) -> Duration {
        self.time_left.as_ref().map_or(wait, |left| wait.min(left()))
    }

    fn connect(&self) -> Duration {
        self.capped(self.options.connect_timeout.unwrap_or(CONNECT_TIMEOUT))
    }

    fn first_byte(&self) -> Duration {
        self.capped(self.options.first_byte_timeout.unwrap_or(FIRST_BYTE_TIMEOUT))
    }

    fn between_bytes(&self) -> Duration {
        self.capped(self.options.between_bytes_timeout.unwrap_or(BETWEEN_BYTES_TIMEOUT))
    }
}

/// One request, with what it needs of the call.
struct Exchange {
    policy: Arc<NetworkPolicy>,
    tls: Arc<TlsTrust>,
    credentials: Option<Arc<dyn Credentials>>,
    caller: Option<Arc<str>>,
    pool: Arc<Pool>,
    waits: Waits,
}

impl Exchange {
    /// Logs a refused or failed request (with the plugin's name) and returns the guest's error code.
    fn refuse(&self, target: &str, why: &str, code: Error) -> Error {
        tracing::warn!(plugin = %self.policy.plugin(), target, "outgoing HTTP request refused: {why}");
        METRICS.egress_refused(self.policy.plugin(), target, why);
        code
    }

    /// The error code of a request whose exchange on `sender`'s connection
    /// failed; a TLS failure (an alert after the handshake, say) is told as
    /// such, and logged.
    fn failed(&self, target: &str, error: hyper::Error, sender: &Sender) -> Error {
        match sender.tls_failure() {
            Some(tls) => {
                let (code, why) = tls::failure(tls);
                self.refuse(target, &format!("the TLS connection failed: {why}"), code)
            }
            None => Error::from(error),
        }
    }

    async fn send(self, mut request: http::Request<WasiBody>) -> Result<Sent, Error> {
        let uri = request.uri().clone();
        let authority = uri.authority().ok_or(Error::HttpRequestUriInvalid)?;
        let tls = uri.scheme() == Some(&Scheme::HTTPS);
        let origin = Origin {
            tls,
            host: authority.host().to_ascii_lowercase(),
            port: authority.port_u16().unwrap_or(if tls { 443 } else { 80 }),
        };
        let target = format!("{}://{authority}", if tls { "https" } else { "http" });
        let method = request.method().clone();
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let line = HttpRequest {
            method: method.as_str(),
            path,
        };
        let credential = self.bound_credential(&request, &origin, line, &target)?;

        let host = request.headers().get(http::header::HOST).cloned();
        let mut idle = self.idle_connection(&origin, line, &target).await?;
        let mut added: Option<Added> = None;
        let (sender, mut response) = loop {
            let reused = idle.is_some();
            let mut sender = match idle.take() {
                Some(sender) => sender,
                None => self.connect(&origin, &target, line).await?,
            };
            // The egress checks passed: the bound credential goes in now.
            if let (Some(credential), None) = (&credential, &added) {
                let url = format!("{target}{path}");
                let value = credential.value(&url, self.caller.as_deref()).await.map_err(|why| {
                    let why = format!("no credential for {target}: {why}");
                    self.refuse(&target, &why, Error::InternalError(Some(why.clone())))
                })?;
                request
                    .headers_mut()
                    .insert(credential.header().clone(), value.value.clone());
                added = Some(value);
            }
            shape(&mut request, &uri, host.as_ref(), &sender)?;
            if let Some(shared) = sender.share() {
                self.pool.put(origin.clone(), shared);
            }
            match tokio::time::timeout(self.waits.first_byte(), sender.try_send(request)).await {
                Ok(Ok(response)) => break (sender, response),
                Ok(Err(mut e)) => match e.take_message() {
                    // A kept connection the server closed while it was idle gives the
                    // request back untouched (no byte of it was sent): it goes once more,
                    // on a new connection.
                    Some(unsent) if reused => {
                        tracing::debug!(
                            plugin = %self.policy.plugin(), target,
                            "a kept connection was closed before it took the request ({}); retrying on a new one",
                            e.error()
                        );
                        request = unsent;
                    }
                    _ => return Err(self.failed(&target, e.into_error(), &sender)),
                },
                Err(_) => return Err(Error::ConnectionReadTimeout),
            }
        };
        if let Some(added) = &added {
            without_secret(response.headers_mut(), added);
        }
        // An HTTP/1.1 connection is free again once this response has been read.
        let release = sender.is_http1().then(|| (self.pool.clone(), origin, sender));
        let between_bytes = self.waits.clone();
        let response = response.map(|incoming| ResponseBody::new(incoming, between_bytes, release).boxed_unsync());
        let io: IoFuture = Box::new(async { Ok(()) });
        Ok((response, io))
    }

    /// The credential the operator bound to this request's destination, if
    /// any; a request that sets the bound header itself is refused.
    fn bound_credential(
        &self,
        request: &http::Request<WasiBody>,
        origin: &Origin,
        line: HttpRequest<'_>,
        target: &str,
    ) -> Result<Option<&dyn Credential>, Error> {
        let Some(credentials) = &self.credentials else {
            return Ok(None);
        };
        let destination = Destination {
            tls: origin.tls,
            host: &origin.host,
            port: origin.port,
            path: line.path,
            method: line.method,
        };
        let Some(credential) = credentials.bound(&destination) else {
            return Ok(None);
        };
        if request.headers().contains_key(credential.header()) {
            let why = format!(
                "the request sets the {} header, which the host adds to this plugin's requests to {target}: \
                 leave it out",
                credential.header()
            );
            return Err(self.refuse(target, &why, Error::InternalError(Some(why.clone()))));
        }
        Ok(Some(credential))
    }

    /// An open connection to `origin` from an earlier request of the call,
    /// ready for this one, which rules limited to methods or paths must
    /// grant on that connection's address too.
    async fn idle_connection(
        &self,
        origin: &Origin,
        line: HttpRequest<'_>,
        target: &str,
    ) -> Result<Option<Sender>, Error> {
        while let Some(mut sender) = self.pool.take(origin) {
            if let Ok(true) = tokio::time::timeout(self.waits.connect(), sender.ready()).await {
                if self.policy.limits_requests() {
                    let channel = if origin.tls { Channel::Tls } else { Channel::Plain };
                    let by_name = origin.host.parse::<IpAddr>().is_err() && !origin.host.starts_with('[');
                    let granted = match by_name {
                        true => self.policy.grants_name(&origin.host, origin.port, channel, Some(line)),
                        false => Ok(()),
                    };
                    let granted = match granted {
                        Ok(()) => self.policy.allows(sender.peer(), channel, Some(line)).await,
                        refused => refused,
                    };
                    if let Err(why) = granted {
                        self.pool.put(origin.clone(), sender);
                        return Err(self.refuse(target, &why, Error::HttpRequestDenied));
                    }
                }
                return Ok(Some(sender));
            }
        }
        Ok(None)
    }

    /// A new connection to `origin`, to an address the grants allow for `line`.
    async fn connect(&self, origin: &Origin, target: &str, line: HttpRequest<'_>) -> Result<Sender, Error> {
        let channel = if origin.tls { Channel::Tls } else { Channel::Plain };
        let host = origin.host.as_str();
        let port = origin.port;
        let addrs: Vec<SocketAddr> = match host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => {
                if let Err(why) = self.policy.grants_name(host, port, channel, Some(line)) {
                    return Err(self.refuse(target, &why, Error::HttpRequestDenied));
                }
                match tokio::net::lookup_host((host, port)).await {
                    Ok(addrs) => addrs.collect(),
                    Err(e) => {
                        let why = format!("the name does not resolve: {e}");
                        let code = Error::DnsError {
                            rcode: None,
                            info_code: None,
                        };
                        return Err(self.refuse(target, &why, code));
                    }
                }
            }
        };
        let mut allowed = Vec::new();
        let mut refusal = None;
        for addr in addrs {
            match self.policy.allows(addr, channel, Some(line)).await {
                Ok(()) => allowed.push(addr),
                Err(why) => refusal = refusal.or(Some(format!("{addr}: {why}"))),
            }
        }
        if allowed.is_empty() {
            let why = format!("no address it resolves to is granted ({})", refusal.unwrap_or_default());
            return Err(self.refuse(target, &why, Error::DestinationIpProhibited));
        }

        let deadline = Instant::now() + self.waits.connect();
        let mut stream = Err(Error::ConnectionRefused);
        for addr in allowed {
            stream = match tokio::time::timeout_at(deadline, TcpStream::connect(addr)).await {
                Ok(Ok(stream)) => Ok((stream, addr)),
                Ok(Err(e)) => Err(Error::Connect(e)),
                Err(_) => Err(Error::ConnectionTimeout),
            };
            if stream.is_ok() {
                break;
            }
        }
        let (stream, peer) = stream?;
        let handshakes = async {
            if !origin.tls {
                return self.handshake(stream, peer, false, Failure::default()).await;
            }
            let name = tls::server_name(host)?;
            let connector = tokio_rustls::TlsConnector::from(self.tls.config());
            match connector.connect(name, stream).await {
                Ok(stream) => {
                    let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
                    let failure = Failure::default();
                    self.handshake(Watched::new(stream, failure.clone()), peer, h2, failure)
                        .await
                }
                Err(e) => {
                    let (code, why) = tls::handshake_error(&e);
                    Err(self.refuse(target, &why, code))
                }
            }
        };
        tokio::time::timeout_at(deadline, handshakes)
            .await
            .map_err(|_| Error::ConnectionTimeout)?
    }

    /// The HTTP handshake on a new connection to `peer`, whose driver the
    /// pool then runs; `tls_failure` is where its TLS stream keeps a failure.
    async fn handshake<S>(&self, stream: S, peer: SocketAddr, h2: bool, tls_failure: Failure) -> Result<Sender, Error>
    where
        S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    {
        let io = TokioIo::new(stream);
        if h2 {
            let (sender, connection) = http2::handshake(Spawner, io).await?;
            self.pool.drive(async move {
                let _ = connection.await;
            });
            Ok(Sender::http2(sender, peer, tls_failure))
        } else {
            let (sender, connection) = http1::handshake(io).await?;
            self.pool.drive(async move {
                let _ = connection.await;
            });
            Ok(Sender::http1(sender, peer, tls_failure))
        }
    }
}

/// Shapes `request` (for `uri`, with the `host` header it came with) for the
/// protocol of `sender`'s connection.
fn shape(
    request: &mut http::Request<WasiBody>,
    uri: &http::Uri,
    host: Option<&http::HeaderValue>,
    sender: &Sender,
) -> Result<(), Error> {
    if sender.is_http1() {
        // The request line carries only the path (the authority goes into `Host`).
        *request.uri_mut() = http::Uri::builder()
            .path_and_query(uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"))
            .build()
            .map_err(|_| Error::HttpRequestUriInvalid)?;
        if let Some(host) = host {
            request.headers_mut().insert(http::header::HOST, host.clone());
        }
    } else {
        // The authority travels as `:authority`, which `Host` must not contradict.
        *request.uri_mut() = uri.clone();
        request.headers_mut().remove(http::header::HOST);
    }
    Ok(())
}

/// Drops every response header that holds a secret the host added to the
/// request (a server echoing it back), so the plugin never reads it.
fn without_secret(headers: &mut http::HeaderMap, added: &Added) {
    use secrecy::ExposeSecret as _;
    let holds = |value: &http::HeaderValue| {
        added.secrets.iter().any(|secret| {
            let secret = secret.expose_secret().as_bytes();
            !secret.is_empty() && value.as_bytes().windows(secret.len()).any(|w| w == secret)
        })
    };
    let holding: Vec<http::HeaderName> = headers
        .iter()
        .filter(|(_, value)| holds(value))
        .map(|(name, _)| name.clone())
        .collect();
    for name in holding {
        headers.remove(name);
    }
}

/// Runs the tasks of an HTTP/2 connection (one per stream) on the runtime.
#[derive(Clone, Copy)]
struct Spawner;

impl<F> hyper::rt::Executor<F> for Spawner
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        tokio::spawn(future);
    }
}

/// A response body as the guest reads it: each part must come within the
/// between-bytes wait, and the end gives an HTTP/1.1 connection back to the pool.
struct ResponseBody {
    incoming: Incoming,
    waits: Waits,
    timer: Pin<Box<Sleep>>,
    release: Option<(Arc<Pool>, Origin, Sender)>,
}

impl ResponseBody {
    fn new(incoming: Incoming, waits: Waits, release: Option<(Arc<Pool>, Origin, Sender)>) -> Self {
        let timer = Box::pin(tokio::time::sleep(waits.between_bytes()));
        Self {
            incoming,
            waits,
            timer,
            release,
        }
    }
}

impl Body for ResponseBody {
    type Data = hyper::body::Bytes;
    type Error = Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Self::Data>, Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.incoming).poll_frame(cx) {
            Poll::Ready(None) => {
                if let Some((pool, origin, sender)) = this.release.take() {
                    pool.put(origin, sender);
                }
                Poll::Ready(None)
            }
            Poll::Ready(Some(Ok(frame))) => {
                let next = Instant::now() + this.waits.between_bytes();
                this.timer.as_mut().reset(next);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(Error::from(e)))),
            Poll::Pending => match this.timer.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(Error::ConnectionReadTimeout))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.incoming.size_hint()
    }
}
