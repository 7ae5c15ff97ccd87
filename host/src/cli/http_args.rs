//! The `serve` flags of the Streamable HTTP transport: where it listens and
//! whom it lets in (its bounds are the `[http]` settings), and the transport
//! settings they make.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::settings::{AuthSettings, AuthValues, HttpSettings, HttpValues};
use crate::transport::http::HttpConfig;

/// The environment variable that may hold the bearer token.
const TOKEN_ENV: &str = "WASM_MCP_AUTH_TOKEN";
/// The environment variable that holds the introspection client's secret.
const CLIENT_SECRET_ENV: &str = "WASM_MCP_AUTH_CLIENT_SECRET";

#[derive(Args)]
pub struct HttpArgs {
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (a bare PORT means 127.0.0.1:PORT; port 0 picks a free one).
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// Also accept requests whose Origin is ORIGIN (repeatable; `*` accepts any); localhost origins always are.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
    /// Require `Authorization: Bearer TOKEN`, TOKEN being a line of this file (each line is its own credential); or set WASM_MCP_AUTH_TOKEN.
    #[arg(long, value_name = "PATH", requires = "http")]
    auth_token_file: Option<PathBuf>,
    #[command(flatten)]
    pub settings: HttpSettings,
    #[command(flatten)]
    pub auth: AuthSettings,
}

/// `PORT`, `IP:PORT` or `HOST:PORT`.
fn parse_addr(addr: &str) -> Result<SocketAddr> {
    if let Ok(port) = addr.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Ok(addr) = addr.parse() {
        return Ok(addr);
    }
    let mut resolved: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .with_context(|| format!("--http {addr}: expected PORT, IP:PORT or HOST:PORT"))?
        .collect();
    resolved.sort_by_key(|a| !a.is_ipv4());
    resolved
        .into_iter()
        .next()
        .with_context(|| format!("--http {addr}: the name resolves to no address"))
}

/// Tokens from the file (one per line; blank lines and `#` comments skipped)
/// and from the environment.
fn load_tokens(file: Option<&PathBuf>) -> Result<Vec<String>> {
    let mut tokens = Vec::new();
    if let Some(path) = file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read --auth-token-file {}", path.display()))?;
        tokens.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(String::from),
        );
        if tokens.is_empty() {
            bail!("--auth-token-file {} holds no token", path.display());
        }
    }
    if let Ok(token) = std::env::var(TOKEN_ENV) {
        let token = token.trim();
        if token.is_empty() {
            bail!("{TOKEN_ENV} is set but empty");
        }
        tokens.push(token.to_owned());
    }
    if let Some(bad) = tokens
        .iter()
        .find(|t| t.chars().any(|c| c.is_whitespace() || c.is_control()))
    {
        bail!(
            "a bearer token cannot contain spaces or control characters ({} characters long)",
            bad.len()
        );
    }
    Ok(tokens)
}

impl HttpArgs {
    /// The transport settings with the resolved `[http]` settings, or `None`
    /// to serve over stdio.
    pub fn config(&self, settings: &HttpValues, auth: &AuthValues) -> Result<Option<HttpConfig>> {
        let Some(addr) = &self.http else {
            return Ok(None);
        };
        Ok(Some(HttpConfig {
            addr: parse_addr(addr)?,
            allowed_origins: self.allow_origin.clone(),
            auth_tokens: load_tokens(self.auth_token_file.as_ref())?,
            settings: settings.clone(),
            auth: auth.clone(),
            auth_client_secret: std::env::var(CLIENT_SECRET_ENV).ok().filter(|s| !s.trim().is_empty()),
        }))
    }
}
