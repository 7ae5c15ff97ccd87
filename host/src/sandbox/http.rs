//! Outgoing HTTP (`wasi:http/outgoing-handler`) under the plugin's `[network]`
//! grants, the same ones its sockets are held to.
//!
//! The request's host must be granted: a DNS name only if a rule names it
//! (with the request's port), an IP literal only if it passes the address
//! check. The host resolves the name itself and connects only to an address
//! [`NetworkPolicy::check`] allows, so a granted name that resolves to
//! loopback or a metadata endpoint is refused exactly as for a socket. Only
//! plain `http://` is sent; `https://` is refused (this host links no TLS stack).

use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Poll, ready};
use std::time::Duration;

use http::uri::Scheme;
use http_body_util::BodyExt;
use tokio::net::TcpStream;
use wasmtime_wasi::sockets::SocketAddrUse;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::NetworkPolicy;

/// Bounds a connect (and the HTTP handshake) when the guest sets none.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Bounds the wait for the response head when the guest sets none.
const FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(60);

/// The rest of a response's I/O, driven after its head arrived.
type IoFuture = Box<dyn Future<Output = Result<(), Error>> + Send>;
type Sent = (http::Response<WasiBody>, IoFuture);

/// The `wasi:http` hooks of one call: every request is checked against the plugin's grants.
pub struct HttpGate {
    policy: Arc<NetworkPolicy>,
}

impl HttpGate {
    pub fn new(policy: Arc<NetworkPolicy>) -> Self {
        Self { policy }
    }
}

impl WasiHttpHooks for HttpGate {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: IoFuture,
    ) -> Box<dyn Future<Output = Result<Sent, Error>> + Send> {
        let policy = self.policy.clone();
        Box::new(async move { send(&policy, request, options).await })
    }
}

/// Logs a refused request (with the plugin's name) and returns the guest's error code.
fn refuse(policy: &NetworkPolicy, target: &str, why: &str, code: Error) -> Error {
    tracing::warn!(plugin = %policy.plugin(), target, "outgoing HTTP request refused: {why}");
    code
}

async fn send(
    policy: &NetworkPolicy,
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
) -> Result<Sent, Error> {
    let uri = request.uri().clone();
    let authority = uri.authority().ok_or(Error::HttpRequestUriInvalid)?;
    let target = format!("{}://{authority}", uri.scheme_str().unwrap_or("http"));
    if uri.scheme() != Some(&Scheme::HTTP) {
        let why = "only plain http:// is supported (this host provides no TLS for wasi:http)";
        return Err(refuse(policy, &target, why, Error::HttpRequestDenied));
    }
    let port = authority.port_u16().unwrap_or(80);
    let host = authority.host();
    let addrs: Vec<SocketAddr> = match host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => {
            if !policy.grants_name(host, port) {
                let why = "no [network] rule of the plugin's manifest grants this name and port";
                return Err(refuse(policy, &target, why, Error::HttpRequestDenied));
            }
            match tokio::net::lookup_host((host, port)).await {
                Ok(addrs) => addrs.collect(),
                Err(e) => {
                    let why = format!("the name does not resolve: {e}");
                    let code = Error::DnsError {
                        rcode: None,
                        info_code: None,
                    };
                    return Err(refuse(policy, &target, &why, code));
                }
            }
        }
    };
    let mut allowed = Vec::new();
    for addr in addrs {
        // Logs each refused address.
        if policy.check(addr, SocketAddrUse::TcpConnect).await {
            allowed.push(addr);
        }
    }
    if allowed.is_empty() {
        let why = "no address it resolves to is granted";
        return Err(refuse(policy, &target, why, Error::DestinationIpProhibited));
    }

    let connect_timeout = options.and_then(|o| o.connect_timeout).unwrap_or(CONNECT_TIMEOUT);
    let first_byte_timeout = options.and_then(|o| o.first_byte_timeout).unwrap_or(FIRST_BYTE_TIMEOUT);
    let mut stream = Err(Error::ConnectionRefused);
    for addr in allowed {
        stream = match tokio::time::timeout(connect_timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => Ok(stream),
            Ok(Err(e)) => Err(Error::Connect(e)),
            Err(_) => Err(Error::ConnectionTimeout),
        };
        if stream.is_ok() {
            break;
        }
    }
    let (mut sender, conn) = tokio::time::timeout(
        connect_timeout,
        hyper::client::conn::http1::handshake(TokioIo::new(stream?)),
    )
    .await
    .map_err(|_| Error::ConnectionTimeout)??;

    // The request line carries only the path (the authority went into `Host`).
    *request.uri_mut() = http::Uri::builder()
        .path_and_query(uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"))
        .build()
        .map_err(|_| Error::HttpRequestUriInvalid)?;

    // Wait for the response head while driving the connection (as wasmtime-wasi-http's default sender does).
    let mut send = std::pin::pin!(tokio::time::timeout(first_byte_timeout, sender.send_request(request)));
    let mut conn = Some(conn);
    let response = std::future::poll_fn(|cx| match send.as_mut().poll(cx) {
        Poll::Ready(Ok(result)) => Poll::Ready(result.map_err(Error::from)),
        Poll::Ready(Err(_)) => Poll::Ready(Err(Error::ConnectionReadTimeout)),
        Poll::Pending => {
            let Some(driver) = conn.as_mut() else {
                return Poll::Pending;
            };
            let done = ready!(Pin::new(driver).poll(cx));
            conn = None;
            match done {
                Ok(()) => match send.as_mut().poll(cx) {
                    Poll::Ready(Ok(result)) => Poll::Ready(result.map_err(Error::from)),
                    Poll::Ready(Err(_)) => Poll::Ready(Err(Error::ConnectionReadTimeout)),
                    Poll::Pending => Poll::Pending,
                },
                Err(e) => Poll::Ready(Err(Error::from(e))),
            }
        }
    })
    .await?;
    let response = response.map(|body| body.map_err(Error::from).boxed_unsync());
    let io: IoFuture = Box::new(async move {
        match conn {
            Some(conn) => conn.await.map_err(Error::from),
            None => Ok(()),
        }
    });
    Ok((response, io))
}
