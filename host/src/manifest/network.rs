//! The `[network]` table of a manifest: which addresses a plugin may reach,
//! and which extra certificate authorities its HTTPS requests trust.
//!
//! ```toml
//! [network]
//! allow = [
//!     "api.example.com:443",     # a DNS name and one port
//!     "db.internal:5432-5433",   # a port range
//!     "93.184.216.34:*",         # an IPv4 address, any port
//!     "10.1.0.0/16:8080",        # an IPv4 CIDR range
//!     "[2001:db8::1]:443",       # an IPv6 address (in brackets)
//!     "[2001:db8::/32]:443",     # an IPv6 CIDR range (prefix inside the brackets)
//!     "127.0.0.1:8080",          # loopback: only when named like this
//!     "localhost:8080",          # or by the name `localhost`
//!     "https://api.github.com",  # TLS only: https:// requests to port 443
//!     "https://internal.example:8443",
//!     # HTTP requests only, of these methods, under these paths:
//!     { rule = "https://api.example.com", methods = ["GET"], path_prefixes = ["/v1/repos/"] },
//! ]
//! ca_file = "certs/internal-ca.pem" # relative to the manifest's folder
//! ```
//!
//! Every rule is `HOST:PORTS` or `https://HOST[:PORTS]`. `HOST` is a DNS name
//! (letters, digits, `-` and `.`; no wildcards), an IPv4 address or CIDR
//! range, or an IPv6 address or CIDR range in brackets. `PORTS` is a port
//! (1–65535), a range `A-B`, or `*` for any port; an `https://` rule without
//! one covers 443. An `https://` rule is TLS only: it grants `wasi:http`
//! requests whose URL is `https://` (the host makes the TLS connection and
//! verifies the certificate), and nothing else: no plain `http://` request,
//! no socket, no name lookup by the plugin. A rule written as a table
//! (`{ rule = "...", methods = [...], path_prefixes = [...] }`) grants only
//! `wasi:http` requests (never a socket, whose requests the host cannot
//! read) of the listed methods (every method when absent) whose path lies
//! under one of the prefixes (every path when absent). Rules are parsed when
//! the manifest is read; an invalid one is an error naming the rule and the file.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;

use serde::Deserialize;

/// The `[network]` table.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NetworkSettings {
    /// What the plugin may connect (TCP) or send datagrams (UDP) to, and
    /// send HTTP requests to.
    #[serde(default)]
    pub allow: Vec<NetRule>,
    /// PEM certificates of authorities the plugin's HTTPS requests trust
    /// besides the platform's; relative to the manifest's folder once parsed.
    pub ca_file: Option<PathBuf>,
}

/// One `allow` rule: a host pattern and the ports it covers; for a rule
/// written as a table, the methods and paths of the HTTP requests it grants.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RuleEntry")]
pub struct NetRule {
    pub host: HostPattern,
    pub ports: PortRange,
    /// Written `https://...`: grants only HTTPS requests through `wasi:http`.
    pub tls_only: bool,
    /// The rule as written (its `rule` when written as a table), for messages.
    pub text: String,
    /// The HTTP methods it grants, upper-cased; empty: every method.
    pub methods: Vec<String>,
    /// The path prefixes it grants (each starting with `/`); empty: every path.
    pub path_prefixes: Vec<String>,
}

impl NetRule {
    /// Whether it grants `wasi:http` requests only: TLS only, or limited to
    /// some methods or paths (which a socket's bytes cannot be held to).
    pub fn http_only(&self) -> bool {
        self.tls_only || !self.methods.is_empty() || !self.path_prefixes.is_empty()
    }
}

/// An `allow` entry as written: a rule, or a table of a rule and the
/// methods and path prefixes it is limited to.
#[derive(Deserialize)]
#[serde(untagged)]
enum RuleEntry {
    Text(String),
    Limited(LimitedRule),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitedRule {
    rule: String,
    #[serde(default)]
    methods: Vec<String>,
    #[serde(default)]
    path_prefixes: Vec<String>,
}

/// What a rule's host part names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// A DNS name, lower-cased, without a trailing dot. The host resolves it.
    Name(String),
    /// An address (a /32 or /128) or a CIDR range.
    Net(IpNet),
}

/// An IP network: an address with its first `prefix` bits significant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    pub addr: IpAddr,
    pub prefix: u8,
}

/// An inclusive range of ports; `*` is 1–65535 (and also covers port 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    pub first: u16,
    pub last: u16,
}

impl PortRange {
    pub const ANY: PortRange = PortRange {
        first: 0,
        last: u16::MAX,
    };

    pub fn contains(&self, port: u16) -> bool {
        (self.first..=self.last).contains(&port)
    }
}

impl IpNet {
    /// Whether `ip` lies in this network (of the same family).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => mask_v4(ip, self.prefix) == net,
            (IpAddr::V6(net), IpAddr::V6(ip)) => mask_v6(ip, self.prefix) == net,
            _ => false,
        }
    }

    /// Whether all of `other` lies in this network.
    pub fn covers(&self, other: &IpNet) -> bool {
        other.prefix >= self.prefix && self.contains(other.addr)
    }

    /// `addr/prefix`, failing when bits past the prefix are set.
    pub fn new(addr: IpAddr, prefix: u8) -> Result<IpNet, String> {
        let max = if addr.is_ipv4() { 32 } else { 128 };
        if prefix > max {
            return Err(format!("prefix /{prefix} is longer than {max} bits"));
        }
        let masked = match addr {
            IpAddr::V4(a) => IpAddr::V4(mask_v4(a, prefix)),
            IpAddr::V6(a) => IpAddr::V6(mask_v6(a, prefix)),
        };
        if masked != addr {
            return Err(format!(
                "{addr}/{prefix} has bits set past the prefix (the range starts at {masked}/{prefix})"
            ));
        }
        Ok(IpNet { addr, prefix })
    }

    pub const fn v4(a: u8, b: u8, c: u8, d: u8, prefix: u8) -> IpNet {
        IpNet {
            addr: IpAddr::V4(Ipv4Addr::new(a, b, c, d)),
            prefix,
        }
    }

    pub const fn v6(segments: [u16; 8], prefix: u8) -> IpNet {
        let [a, b, c, d, e, f, g, h] = segments;
        IpNet {
            addr: IpAddr::V6(Ipv6Addr::new(a, b, c, d, e, f, g, h)),
            prefix,
        }
    }
}

impl fmt::Display for IpNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

fn mask_v4(ip: Ipv4Addr, prefix: u8) -> Ipv4Addr {
    let bits = u32::from(ip);
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix))
    };
    Ipv4Addr::from(bits & mask)
}

fn mask_v6(ip: Ipv6Addr, prefix: u8) -> Ipv6Addr {
    let bits = u128::from(ip);
    let mask = if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(prefix))
    };
    Ipv6Addr::from(bits & mask)
}

impl TryFrom<String> for NetRule {
    type Error = String;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        parse_rule(&text).map_err(|why| format!("network.allow rule {text:?}: {why}"))
    }
}

impl TryFrom<RuleEntry> for NetRule {
    type Error = String;

    fn try_from(entry: RuleEntry) -> Result<Self, Self::Error> {
        let limited = match entry {
            RuleEntry::Text(text) => return NetRule::try_from(text),
            RuleEntry::Limited(limited) => limited,
        };
        let mut rule = NetRule::try_from(limited.rule)?;
        let text = rule.text.clone();
        let why = |why: String| format!("network.allow rule {text:?}: {why}");
        for method in limited.methods {
            let valid = !method.is_empty() && method.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-');
            if !valid {
                return Err(why(format!(
                    "method {method:?} is not an HTTP method name (e.g. \"GET\", \"POST\")"
                )));
            }
            rule.methods.push(method.to_ascii_uppercase());
        }
        for prefix in limited.path_prefixes {
            if !prefix.starts_with('/') || prefix.contains(['?', '#']) || ambiguous_path(&prefix) {
                return Err(why(format!(
                    "path prefix {prefix:?} must start with '/' and hold no query, fragment, \
                     '.' or '..' segment, backslash or percent-encoded '.', '/' or '\\'"
                )));
            }
            rule.path_prefixes.push(prefix);
        }
        Ok(rule)
    }
}

impl fmt::Display for NetRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)?;
        if !self.methods.is_empty() {
            write!(f, " methods {}", self.methods.join(","))?;
        }
        if !self.path_prefixes.is_empty() {
            write!(f, " paths {}", self.path_prefixes.join(","))?;
        }
        Ok(())
    }
}

/// Whether `path` (of an HTTP request, without its query) could name
/// another path once a server normalizes it: a `.` or `..` segment, a
/// backslash, or a percent-encoded `.`, `/` or `\`. Such a path lies under
/// no prefix.
pub fn ambiguous_path(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    path.contains('\\')
        || ["%2e", "%2f", "%5c"].iter().any(|encoded| lower.contains(encoded))
        || path.split('/').any(|segment| segment == "." || segment == "..")
}

/// Whether the request path `path` (its query ignored) lies under `prefix`:
/// it is the prefix, or continues it after a `/` (`/v1` covers `/v1` and
/// `/v1/x`, not `/v10`); never when it is [ambiguous](ambiguous_path).
pub fn path_under(path: &str, prefix: &str) -> bool {
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let path = if path.is_empty() { "/" } else { path };
    if ambiguous_path(path) {
        return false;
    }
    match path.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || prefix.ends_with('/') || rest.starts_with('/'),
        None => false,
    }
}

fn parse_rule(text: &str) -> Result<NetRule, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("is empty; write HOST:PORT, e.g. \"api.example.com:443\"".into());
    }
    let (tls_only, rest) = match trimmed.split_once("://") {
        None => (false, trimmed),
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => (true, rest.strip_suffix('/').unwrap_or(rest)),
        Some((scheme, _)) => {
            return Err(format!(
                "has the scheme {scheme}://; only https:// rules exist (TLS only). \
                 Write HOST:PORT for a rule that grants plain connections and http:// too"
            ));
        }
    };
    // A '/' may only start a CIDR prefix length.
    let has_path = rest
        .split('/')
        .skip(1)
        .any(|after| !after.starts_with(|c: char| c.is_ascii_digit()));
    if tls_only && (has_path || rest.contains(['?', '#', '@'])) {
        return Err("is not https://HOST or https://HOST:PORTS (no path, query or user part)".into());
    }
    let (host, ports) = if let Some(inside) = rest.strip_prefix('[') {
        let (inside, after) = inside
            .split_once(']')
            .ok_or("has '[' without ']'; write an IPv6 address as \"[2001:db8::1]:443\"")?;
        let ports = match after.strip_prefix(':') {
            Some(ports) => ports,
            None if tls_only && after.is_empty() => HTTPS_PORT,
            None => return Err("has no port after ']'; write \"[ADDRESS]:PORT\" or \"[ADDRESS]:*\"".into()),
        };
        (parse_ipv6_host(inside)?, ports)
    } else {
        let (host, ports) = match rest.rsplit_once(':') {
            Some(split) => split,
            None if tls_only => (rest, HTTPS_PORT),
            None => {
                return Err(
                    "has no port; write HOST:PORT, HOST:FIRST-LAST or HOST:* (e.g. \"api.example.com:443\")".into(),
                );
            }
        };
        if host.contains(':') {
            return Err("looks like an IPv6 address: put it in brackets, e.g. \"[::1]:8080\"".into());
        }
        (parse_host(host)?, ports)
    };
    Ok(NetRule {
        host,
        ports: parse_ports(ports)?,
        tls_only,
        text: trimmed.to_owned(),
        methods: Vec::new(),
        path_prefixes: Vec::new(),
    })
}

/// The port an `https://` rule without one covers.
const HTTPS_PORT: &str = "443";

fn parse_ipv6_host(inside: &str) -> Result<HostPattern, String> {
    let (addr, prefix) = match inside.split_once('/') {
        Some((addr, prefix)) => (addr, Some(prefix)),
        None => (inside, None),
    };
    let ip: Ipv6Addr = addr.parse().map_err(|_| format!("{addr:?} is not an IPv6 address"))?;
    let prefix = match prefix {
        Some(p) => parse_prefix(p, 128)?,
        None => 128,
    };
    Ok(HostPattern::Net(IpNet::new(IpAddr::V6(ip), prefix)?))
}

fn parse_host(host: &str) -> Result<HostPattern, String> {
    if host.is_empty() {
        return Err("has no host before the ':'".into());
    }
    if let Some((addr, prefix)) = host.split_once('/') {
        let ip: Ipv4Addr = addr
            .parse()
            .map_err(|_| format!("{addr:?} is not an IPv4 address (a CIDR range is ADDRESS/BITS)"))?;
        return Ok(HostPattern::Net(IpNet::new(IpAddr::V4(ip), parse_prefix(prefix, 32)?)?));
    }
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        return Ok(HostPattern::Net(IpNet::new(IpAddr::V4(ip), 32)?));
    }
    if host.contains('*') {
        return Err("wildcard names are not supported: list each name, or grant an address range".into());
    }
    let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    if name.len() > 253 {
        return Err("the name is longer than 253 characters".into());
    }
    for label in name.split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err(format!("{host:?} is not a valid DNS name (empty or over-long label)"));
        }
        if !label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') || label.starts_with('-') {
            return Err(format!(
                "{host:?} is not a valid DNS name (letters, digits, '-' and '.' only; write non-ASCII names in punycode)"
            ));
        }
    }
    if name.split('.').all(|label| label.chars().all(|c| c.is_ascii_digit())) {
        return Err(format!("{host:?} is not a valid IPv4 address"));
    }
    Ok(HostPattern::Name(name))
}

fn parse_prefix(text: &str, max: u8) -> Result<u8, String> {
    text.parse::<u8>()
        .ok()
        .filter(|p| *p <= max)
        .ok_or_else(|| format!("prefix /{text} must be a number of bits from 0 to {max}"))
}

fn parse_ports(text: &str) -> Result<PortRange, String> {
    if text == "*" {
        return Ok(PortRange::ANY);
    }
    let port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("port {p:?} must be a number from 1 to 65535 (or * for any port)"))
    };
    match text.split_once('-') {
        Some((first, last)) => {
            let (first, last) = (port(first)?, port(last)?);
            if first > last {
                return Err(format!("port range {text} is empty (its first port is above its last)"));
            }
            Ok(PortRange { first, last })
        }
        None => {
            let p = port(text)?;
            Ok(PortRange { first: p, last: p })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> NetRule {
        NetRule::try_from(text.to_string()).unwrap_or_else(|e| panic!("{e}"))
    }

    fn error(text: &str) -> String {
        NetRule::try_from(text.to_string()).unwrap_err()
    }

    #[test]
    fn every_form_parses() {
        assert_eq!(
            rule("API.Example.com.:443").host,
            HostPattern::Name("api.example.com".into())
        );
        assert_eq!(rule("api.example.com:443").ports, PortRange { first: 443, last: 443 });
        assert_eq!(
            rule("localhost:8000-8010").ports,
            PortRange {
                first: 8000,
                last: 8010
            }
        );
        assert_eq!(rule("93.184.216.34:*").ports, PortRange::ANY);
        assert_eq!(
            rule("93.184.216.34:*").host,
            HostPattern::Net(IpNet::v4(93, 184, 216, 34, 32))
        );
        assert_eq!(
            rule("10.1.0.0/16:80").host,
            HostPattern::Net(IpNet::v4(10, 1, 0, 0, 16))
        );
        assert_eq!(
            rule("[::1]:8080").host,
            HostPattern::Net(IpNet::v6([0, 0, 0, 0, 0, 0, 0, 1], 128))
        );
        assert_eq!(
            rule("[2001:db8::/32]:443").host,
            HostPattern::Net(IpNet::v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32))
        );
        assert!(!rule("api.example.com:443").tls_only);
    }

    #[test]
    fn https_rules_are_tls_only_and_default_to_port_443() {
        let r = rule("https://API.example.com");
        assert!(r.tls_only);
        assert_eq!(r.host, HostPattern::Name("api.example.com".into()));
        assert_eq!(r.ports, PortRange { first: 443, last: 443 });
        assert_eq!(r.text, "https://API.example.com");
        assert_eq!(rule("https://api.example.com/").ports.first, 443);
        assert_eq!(
            rule("HTTPS://localhost:8443-8444").ports,
            PortRange {
                first: 8443,
                last: 8444
            }
        );
        assert_eq!(rule("https://[::1]").ports.first, 443);
        assert_eq!(rule("https://[::1]:*").ports, PortRange::ANY);
        assert_eq!(
            rule("https://10.0.0.0/8").host,
            HostPattern::Net(IpNet::v4(10, 0, 0, 0, 8))
        );
    }

    #[test]
    fn bad_rules_say_why() {
        for (text, needle) in [
            ("api.example.com", "no port"),
            ("api.example.com:", "port"),
            ("api.example.com:0", "1 to 65535"),
            ("api.example.com:70000", "1 to 65535"),
            ("api.example.com:90-80", "empty"),
            ("*.example.com:443", "wildcard"),
            ("exa mple.com:443", "not a valid DNS name"),
            ("::1:8080", "brackets"),
            ("[::1:8080", "without ']'"),
            ("[::1]", "no port"),
            ("[fe80::1%eth0]:80", "not an IPv6 address"),
            ("10.0.0.5/24:80", "bits set past the prefix"),
            ("10.0.0.0/33:80", "prefix"),
            ("300.1.1.1:80", "not a valid IPv4"),
            (":80", "no host"),
            ("", "empty"),
            ("http://example.com", "only https://"),
            ("ftp://example.com:21", "only https://"),
            ("https://example.com/path", "no path"),
            ("https://user@example.com", "no path"),
            ("https://", "no host"),
            ("https://[::1", "without ']'"),
            ("https://*.example.com", "wildcard"),
        ] {
            let err = error(text);
            assert!(err.contains(needle) && err.contains("network.allow"), "{text:?}: {err}");
        }
    }

    #[test]
    fn a_rule_written_as_a_table_limits_methods_and_paths() {
        let settings: NetworkSettings = toml::from_str(
            r#"allow = ["api.example.com:443", { rule = "https://api.example.com", methods = ["get", "HEAD"], path_prefixes = ["/v1/"] }]"#,
        )
        .unwrap();
        let (plain, limited) = (&settings.allow[0], &settings.allow[1]);
        assert!(plain.methods.is_empty() && plain.path_prefixes.is_empty() && !plain.http_only());
        assert_eq!(limited.methods, ["GET", "HEAD"]);
        assert_eq!(limited.path_prefixes, ["/v1/"]);
        assert!(limited.http_only() && limited.tls_only);
        assert_eq!(
            limited.to_string(),
            "https://api.example.com methods GET,HEAD paths /v1/"
        );
        for (table, needle) in [
            (r#"{ rule = "x.example:80", methods = ["G T"] }"#, "not an HTTP method"),
            (
                r#"{ rule = "x.example:80", path_prefixes = ["v1/"] }"#,
                "must start with '/'",
            ),
            (
                r#"{ rule = "x.example:80", path_prefixes = ["/v1/../admin"] }"#,
                "'..' segment",
            ),
            (r#"{ rule = "x.example", methods = ["GET"] }"#, "no port"),
        ] {
            let err = toml::from_str::<NetworkSettings>(&format!("allow = [{table}]"))
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{table}: {err}");
        }
    }

    #[test]
    fn a_path_lies_under_a_prefix_only_unambiguously() {
        assert!(path_under("/v1/items?q=1", "/v1/"));
        assert!(path_under("/v1", "/v1") && path_under("/v1/x", "/v1"));
        assert!(!path_under("/v10", "/v1"));
        assert!(!path_under("/v2/x", "/v1/"));
        for ambiguous in [
            "/v1/../admin",
            "/v1/./x",
            "/v1/%2e%2e/admin",
            "/v1/%2F..",
            "/v1\\..\\admin",
        ] {
            assert!(!path_under(ambiguous, "/v1/"), "{ambiguous}");
        }
    }

    #[test]
    fn networks_contain_and_cover() {
        let net = IpNet::v4(10, 1, 0, 0, 16);
        assert!(net.contains("10.1.200.3".parse().unwrap()));
        assert!(!net.contains("10.2.0.1".parse().unwrap()));
        assert!(!net.contains("::1".parse().unwrap()));
        assert!(net.covers(&IpNet::v4(10, 1, 2, 0, 24)));
        assert!(!net.covers(&IpNet::v4(10, 0, 0, 0, 8)));
        assert!(IpNet::v4(0, 0, 0, 0, 0).contains("127.0.0.1".parse().unwrap()));
    }
}
