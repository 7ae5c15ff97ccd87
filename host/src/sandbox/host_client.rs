//! The host's own HTTP client, for requests it makes itself (never a
//! plugin's): to an authorization server, for its metadata, its keys, an
//! introspection or an access token. It trusts the platform's roots (as a
//! plugin's `https://` requests do by default), speaks HTTP/1.1, follows no
//! redirect, and reads an answer within a time and a size bound.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use url::Url;

use super::tls::TlsTrust;

/// The largest answer read.
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// A client of the host's own requests.
#[derive(Clone)]
pub struct HostClient {
    http: HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl Default for HostClient {
    fn default() -> Self {
        let mut tls = (*TlsTrust::default().config()).clone();
        // The connector offers the protocols it speaks itself.
        tls.alpn_protocols.clear();
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        Self {
            http: HyperClient::builder(TokioExecutor::new()).build(connector),
        }
    }
}

impl HostClient {
    /// Sends `request`: its status and body, within `timeout` and
    /// [`MAX_ANSWER_BYTES`].
    pub async fn send(
        &self,
        request: http::Request<Full<Bytes>>,
        timeout: Duration,
    ) -> Result<(http::StatusCode, Bytes)> {
        let exchange = async {
            let response = self.http.request(request).await?;
            let status = response.status();
            let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
                .collect()
                .await
                .map_err(|error| anyhow::anyhow!("reading the answer: {error}"))?
                .to_bytes();
            anyhow::Ok((status, body))
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| anyhow::anyhow!("no answer within {timeout:?}"))?
    }
}

/// A URL given in a setting: absolute http(s), plain http only to this machine.
pub fn checked_url(url: &str, setting: &str) -> Result<Url> {
    let parsed = Url::parse(url).with_context(|| format!("{setting}: {url:?} is not a URL"))?;
    let local = matches!(parsed.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if local => Ok(parsed),
        "http" => bail!("{setting}: {url} must be https:// (plain http:// only for localhost)"),
        _ => bail!("{setting}: {url} must be an https:// URL"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_only_to_this_machine() {
        assert!(checked_url("http://as.example.com", "--auth-issuer").is_err());
        assert!(checked_url("http://127.0.0.1:9000", "--auth-issuer").is_ok());
    }
}
