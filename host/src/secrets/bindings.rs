//! One binding, checked: the requests it matches (a plugin's, to a scheme,
//! host, port and path prefix, of some methods), the header it adds and in
//! which form, and where the value comes from (one of the operator's
//! secrets, or an access token the host obtains upstream). A binding that
//! does not hold together is refused at start, in words naming it.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{Result, anyhow, bail};
use base64::Engine as _;
use futures_util::FutureExt as _;
use futures_util::future::BoxFuture;
use http::{HeaderName, HeaderValue};
use secrecy::{ExposeSecret as _, SecretString};
use url::Url;

use super::sources::Secret;
use super::upstream_oauth::UpstreamToken;
use crate::config::Binding;
use crate::manifest::path_under;
use crate::sandbox::{Added, Credential, Destination};

/// Where audit lines go: one per credential added to a request.
const AUDIT: &str = "wasm_mcp::secrets::audit";

/// Headers the host never lets a binding set: they shape the request itself.
const RESERVED: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "te",
    "upgrade",
];

/// A binding, checked and ready.
pub struct Bound {
    name: String,
    plugin: String,
    target: Target,
    /// Upper-cased; empty: every method.
    methods: Vec<String>,
    header: HeaderName,
    form: Form,
    source: Source,
}

/// The requests a binding's target covers.
struct Target {
    tls: bool,
    host: String,
    port: u16,
    path: String,
}

enum Form {
    Bearer,
    Basic { username: String },
    Template(String),
}

enum Source {
    Secret(Arc<Secret>),
    Upstream(Arc<UpstreamToken>),
}

impl Bound {
    /// The binding `name` as configured, its secret found among `secrets`.
    pub fn check(name: &str, binding: &Binding, secrets: &BTreeMap<String, Arc<Secret>>) -> Result<Bound> {
        Self::checked(name, binding, secrets).map_err(|e| anyhow!("binding {name:?}: {e}"))
    }

    fn checked(name: &str, binding: &Binding, secrets: &BTreeMap<String, Arc<Secret>>) -> Result<Bound> {
        if binding.plugin.is_empty() {
            bail!("plugin = \"NAME\" is missing: name the plugin whose requests carry it");
        }
        let target = Target::parse(&binding.target, binding.plain_http)?;
        let secret = |secret: &str| {
            secrets.get(secret).cloned().ok_or_else(|| {
                anyhow!("the secret {secret:?} is not defined: add [secrets.{secret}] with env = \"VARIABLE\" or file = \"PATH\"")
            })
        };
        let source = match (&binding.secret, &binding.oauth) {
            (Some(name), None) => Source::Secret(secret(name)?),
            (None, Some(oauth)) => Source::Upstream(Arc::new(UpstreamToken::new(
                oauth,
                &binding.target,
                secret(&oauth.client_secret)?,
            )?)),
            _ => bail!("set one of secret = \"NAME\" or [bindings.{name}.oauth]"),
        };
        let (header, form) = form(binding)?;
        if matches!(source, Source::Upstream(_)) && !matches!(form, Form::Bearer) {
            bail!("an oauth binding adds a bearer token: leave out form (or write form = \"bearer\")");
        }
        let mut methods = Vec::new();
        for method in &binding.methods {
            if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
                bail!("method {method:?} is not an HTTP method name (e.g. \"GET\")");
            }
            methods.push(method.to_ascii_uppercase());
        }
        Ok(Bound {
            name: name.to_owned(),
            plugin: binding.plugin.clone(),
            target,
            methods,
            header,
            form,
            source,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The plugin whose requests it is for.
    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    /// Whether a request to `destination` carries it.
    pub fn matches(&self, destination: &Destination<'_>) -> bool {
        let host = destination.host.strip_suffix('.').unwrap_or(destination.host);
        destination.tls == self.target.tls
            && destination.port == self.target.port
            && host.eq_ignore_ascii_case(&self.target.host)
            && (self.target.path == "/" || path_under(destination.path, &self.target.path))
            && (self.methods.is_empty() || self.methods.iter().any(|m| m == destination.method))
    }

    /// The secret's value, or an upstream token, and the secret's name (the
    /// client secret's, for an upstream token).
    async fn credential(&self) -> Result<(SecretString, &str), String> {
        match &self.source {
            Source::Secret(secret) => Ok((secret.value(), secret.name())),
            Source::Upstream(upstream) => Ok((upstream.token().await?, upstream.client_secret())),
        }
    }
}

impl Credential for Bound {
    fn header(&self) -> &HeaderName {
        &self.header
    }

    fn value<'a>(&'a self, url: &'a str, caller: Option<&'a str>) -> BoxFuture<'a, Result<Added, String>> {
        async move {
            let (credential, secret) = self.credential().await?;
            let raw = credential.expose_secret();
            let (text, encoded) = match &self.form {
                Form::Bearer => (format!("Bearer {raw}"), None),
                Form::Basic { username } => {
                    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{username}:{raw}"));
                    (format!("Basic {encoded}"), Some(encoded))
                }
                Form::Template(template) => (template.replace("{secret}", raw), None),
            };
            let mut value = HeaderValue::from_str(&text).map_err(|_| {
                format!(
                    "the secret {secret:?} does not make a valid {} header value (a line break or a control character)",
                    self.header
                )
            })?;
            value.set_sensitive(true);
            let url = url.split('?').next().unwrap_or(url);
            tracing::info!(
                target: AUDIT,
                plugin = %self.plugin,
                binding = %self.name,
                secret,
                header = %self.header,
                url,
                caller = caller.unwrap_or("-"),
                "credential added to an outgoing request"
            );
            let mut secrets = vec![credential];
            secrets.extend(encoded.map(SecretString::from));
            Ok(Added { value, secrets })
        }
        .boxed()
    }
}

impl Target {
    /// `https://HOST[:PORT][/PATH]` (`http://` only with `plain_http`).
    fn parse(text: &str, plain_http: bool) -> Result<Target> {
        let url = Url::parse(text)
            .map_err(|e| anyhow!("target {text:?} is not a URL ({e}); write https://HOST[:PORT][/PATH-PREFIX]"))?;
        let tls = match url.scheme() {
            "https" => true,
            "http" if plain_http => false,
            "http" => bail!(
                "target {text:?} is http://: the secret would cross the network unencrypted; \
                 use https://, or set plain_http = true to allow it"
            ),
            other => bail!("target {text:?} has the scheme {other}://; write https://HOST[:PORT][/PATH-PREFIX]"),
        };
        if !url.username().is_empty() || url.password().is_some() || url.query().is_some() || url.fragment().is_some() {
            bail!("target {text:?} may hold no user, query or fragment: only a scheme, host, port and path prefix");
        }
        let host = url
            .host_str()
            .ok_or_else(|| anyhow!("target {text:?} has no host"))?
            .to_ascii_lowercase();
        let port = url.port_or_known_default().unwrap_or(443);
        Ok(Target {
            tls,
            host,
            port,
            path: url.path().to_owned(),
        })
    }
}

/// The header a binding sets, and the form of its value.
fn form(binding: &Binding) -> Result<(HeaderName, Form)> {
    let form = binding.form.as_deref().unwrap_or("bearer");
    let authorization = || {
        if binding.header.is_some() || binding.template.is_some() {
            bail!("form = {form:?} sets Authorization: header and template are for form = \"header\"");
        }
        Ok(http::header::AUTHORIZATION)
    };
    Ok(match form {
        "bearer" => {
            if binding.username.is_some() {
                bail!("username is for form = \"basic\"");
            }
            (authorization()?, Form::Bearer)
        }
        "basic" => {
            let username = binding
                .username
                .clone()
                .ok_or_else(|| anyhow!("form = \"basic\" needs username = \"USER\" (the secret is the password)"))?;
            (authorization()?, Form::Basic { username })
        }
        "header" => {
            let name = binding
                .header
                .as_deref()
                .ok_or_else(|| anyhow!("form = \"header\" needs header = \"NAME\" (e.g. \"X-Api-Key\")"))?;
            let header = HeaderName::try_from(name).map_err(|_| anyhow!("header {name:?} is not a header name"))?;
            if RESERVED.contains(&header.as_str()) {
                bail!("header {name:?} shapes the request itself; the host does not let a binding set it");
            }
            let template = binding.template.clone().unwrap_or_else(|| "{secret}".to_owned());
            if template.matches("{secret}").count() != 1 {
                bail!("template {template:?} must hold {{secret}} once: where the secret goes");
            }
            (header, Form::Template(template))
        }
        other => bail!("form {other:?} is unknown: write \"bearer\", \"basic\" or \"header\""),
    })
}
