//! Enforcing `[network]` grants: which socket addresses and which DNS names a
//! plugin may use.
//!
//! Every check is on the address a socket actually uses, after resolution:
//! wasmtime-wasi asks [`NetworkPolicy::allows`] before every TCP connect, UDP
//! send and UDP receive, and a name rule is turned into addresses by the host
//! (not the guest) each time it is needed, with a short cache. So a granted
//! name that resolves to a refused address is refused too, and an address no
//! rule covers is refused whatever name the guest used to find it.
//!
//! Some addresses are refused unless a rule names them explicitly:
//! loopback, link-local (which holds the cloud metadata endpoint
//! 169.254.169.254), the unspecified address, broadcast and multicast, and
//! the metadata endpoints fd00:ec2::254 and 100.100.100.200. "Explicitly"
//! means an address or range rule that lies inside that block
//! (`127.0.0.1:8080`, `127.0.0.0/8:*`, `[::1]:*`, `169.254.169.254:80`), or the
//! name `localhost` for loopback addresses; a wide range such as `0.0.0.0/0`
//! or a name that happens to resolve there does not.
//!
//! A plugin never listens or accepts: binding is allowed only to the
//! unspecified address with port 0 (the implicit bind of a connect).
//!
//! A TLS-only rule (`https://HOST[:PORTS]`) grants only the [`Channel::Tls`]
//! of an `https://` request, which the host encrypts and verifies itself:
//! sockets, name lookups and plain `http://` requests never use it. A rule
//! limited to some methods or path prefixes grants only `wasi:http`
//! requests ([`HttpRequest`]) it admits, checked on every request, a kept
//! connection's too.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wasmtime_wasi::sockets::SocketAddrUse;

use crate::manifest::{HostPattern, IpNet, NetRule, path_under};
use crate::metrics::METRICS;

/// How long the host trusts its own resolution of a rule's name.
const NAME_CACHE_TTL: Duration = Duration::from_secs(30);
/// A cached resolution at least this old is refreshed once before a
/// connection to an address outside it is refused (round-robin DNS).
const NAME_REFRESH_AFTER: Duration = Duration::from_secs(1);

/// Resolves a DNS name to addresses (the host's resolver; replaceable in tests).
pub type Resolver = Arc<dyn Fn(String) -> Pin<Box<dyn Future<Output = Vec<IpAddr>> + Send + Sync>> + Send + Sync>;

/// The host's resolution of a name, and when it was made.
type Resolved = (Instant, Arc<[IpAddr]>);

/// A block of addresses refused unless a rule names it explicitly.
struct Restricted {
    net: IpNet,
    what: &'static str,
}

const RESTRICTED: &[Restricted] = &[
    Restricted {
        net: IpNet::v4(0, 0, 0, 0, 8),
        what: "the unspecified address (\"this host\")",
    },
    Restricted {
        net: IpNet::v4(127, 0, 0, 0, 8),
        what: "loopback",
    },
    Restricted {
        net: IpNet::v4(169, 254, 169, 254, 32),
        what: "the cloud metadata endpoint",
    },
    Restricted {
        net: IpNet::v4(169, 254, 0, 0, 16),
        what: "link-local",
    },
    Restricted {
        net: IpNet::v4(100, 100, 100, 200, 32),
        what: "a cloud metadata endpoint",
    },
    Restricted {
        net: IpNet::v4(224, 0, 0, 0, 4),
        what: "multicast",
    },
    Restricted {
        net: IpNet::v4(255, 255, 255, 255, 32),
        what: "broadcast",
    },
    Restricted {
        net: IpNet::v6([0, 0, 0, 0, 0, 0, 0, 0], 128),
        what: "the unspecified address (\"this host\")",
    },
    Restricted {
        net: IpNet::v6([0, 0, 0, 0, 0, 0, 0, 1], 128),
        what: "loopback",
    },
    Restricted {
        net: IpNet::v6([0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254], 128),
        what: "the cloud metadata endpoint",
    },
    Restricted {
        net: IpNet::v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10),
        what: "link-local",
    },
    Restricted {
        net: IpNet::v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8),
        what: "multicast",
    },
];

/// The restricted block `ip` falls in (the most specific one), if any.
fn restricted(ip: IpAddr) -> Option<&'static Restricted> {
    let ip = embedded_v4(ip).map(IpAddr::V4).unwrap_or(ip);
    RESTRICTED
        .iter()
        .filter(|r| r.net.contains(ip))
        .max_by_key(|r| r.net.prefix)
}

/// The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`),
/// IPv4-compatible (`::a.b.c.d`) or NAT64 (`64:ff9b::a.b.c.d`) IPv6 address.
fn embedded_v4(ip: IpAddr) -> Option<Ipv4Addr> {
    let IpAddr::V6(v6) = ip else { return None };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = v6.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    let compatible = s[..6] == [0; 6] && u32::from(tail) > 1;
    let nat64 = s[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
    (compatible || nat64).then_some(tail)
}

/// `ip` as the socket layer sees it: IPv4-mapped IPv6 addresses as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

/// How the plugin reaches an address, which decides the rules that may grant it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// A socket: any rule that grants more than HTTP requests.
    Socket,
    /// A plain `http://` request: any rule but a TLS-only one.
    Plain,
    /// An `https://` request, encrypted and verified by the host: any rule.
    Tls,
}

impl Channel {
    fn admits(self, rule: &NetRule) -> bool {
        match self {
            Channel::Socket => !rule.http_only(),
            Channel::Plain => !rule.tls_only,
            Channel::Tls => true,
        }
    }
}

/// What a rule limited to methods or paths is checked against: an outgoing
/// HTTP request's method and path (with its query, which is ignored).
#[derive(Debug, Clone, Copy)]
pub struct HttpRequest<'a> {
    pub method: &'a str,
    pub path: &'a str,
}

impl HttpRequest<'_> {
    /// Whether `rule` grants this request's method and path.
    fn admitted_by(&self, rule: &NetRule) -> bool {
        (rule.methods.is_empty() || rule.methods.iter().any(|m| m == self.method))
            && (rule.path_prefixes.is_empty() || rule.path_prefixes.iter().any(|p| path_under(self.path, p)))
    }
}

/// Whether `rule` grants what comes over `channel` (with `request`, for an HTTP request).
fn grants(rule: &NetRule, channel: Channel, request: Option<HttpRequest<'_>>) -> bool {
    channel.admits(rule) && request.is_none_or(|request| request.admitted_by(rule))
}

/// A plugin's network grants, shared by all its calls.
pub struct NetworkPolicy {
    plugin: String,
    rules: Vec<NetRule>,
    resolver: Resolver,
    /// The host's resolution of each rule name, and when it was made.
    names: Mutex<HashMap<String, Resolved>>,
}

impl std::fmt::Debug for NetworkPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetworkPolicy")
            .field("plugin", &self.plugin)
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

impl NetworkPolicy {
    /// The policy of `plugin` with `rules`, resolving names with the host's resolver.
    pub fn new(plugin: &str, rules: Vec<NetRule>) -> Self {
        // Spawned, so the future the socket check awaits is `Sync` as wasmtime-wasi requires.
        Self::with_resolver(
            plugin,
            rules,
            Arc::new(|name| Box::pin(async move { tokio::spawn(host_lookup(name)).await.unwrap_or_default() })),
        )
    }

    pub fn with_resolver(plugin: &str, rules: Vec<NetRule>, resolver: Resolver) -> Self {
        Self {
            plugin: plugin.to_owned(),
            rules,
            resolver,
            names: Mutex::new(HashMap::new()),
        }
    }

    /// Whether some rule grants sockets (one not limited to HTTP requests).
    pub fn grants_sockets(&self) -> bool {
        self.rules.iter().any(|rule| !rule.http_only())
    }

    /// Whether some rule is limited to methods or paths (so a kept
    /// connection is checked again for each request).
    pub fn limits_requests(&self) -> bool {
        self.rules
            .iter()
            .any(|rule| !rule.methods.is_empty() || !rule.path_prefixes.is_empty())
    }

    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    pub fn rules(&self) -> &[NetRule] {
        &self.rules
    }

    /// Whether the guest may ask to resolve `name`: only names a rule grants
    /// to sockets. (IP literals resolve to themselves without any lookup.)
    pub fn may_resolve(&self, name: &str) -> bool {
        let trimmed = name.trim_start_matches('[').trim_end_matches(']');
        if trimmed.parse::<IpAddr>().is_ok() {
            return true;
        }
        let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
        self.rules
            .iter()
            .any(|rule| Channel::Socket.admits(rule) && matches!(&rule.host, HostPattern::Name(n) if *n == name))
    }

    /// Whether a rule grants the DNS name `name` on `port` over `channel` (an
    /// outgoing HTTP request's authority) to `request`; if not, why. IP
    /// literals are not names: only [`Self::allows`] decides about them.
    pub fn grants_name(
        &self,
        name: &str,
        port: u16,
        channel: Channel,
        request: Option<HttpRequest<'_>>,
    ) -> Result<(), String> {
        let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
        let mut matching = self
            .rules
            .iter()
            .filter(|rule| rule.ports.contains(port) && matches!(&rule.host, HostPattern::Name(n) if *n == name));
        match matching.clone().find(|rule| grants(rule, channel, request)) {
            Some(_) => Ok(()),
            None => Err(match matching.next() {
                Some(rule) => not_granted_why(rule, channel, request),
                None => "no [network] rule of the plugin's manifest grants this name and port".to_string(),
            }),
        }
    }

    /// Whether a socket may use `addr` for `usage`; refusals are logged.
    pub async fn check(&self, addr: SocketAddr, usage: SocketAddrUse) -> bool {
        let verdict = match usage {
            SocketAddrUse::TcpBind | SocketAddrUse::UdpBind => {
                if addr.ip().is_unspecified() && addr.port() == 0 {
                    Ok(())
                } else {
                    Err("a plugin may not bind a socket to a chosen address or port".to_string())
                }
            }
            SocketAddrUse::TcpListen | SocketAddrUse::TcpAccept => {
                Err("a plugin may not listen for or accept connections".to_string())
            }
            SocketAddrUse::TcpConnect | SocketAddrUse::UdpSend | SocketAddrUse::UdpReceive => {
                self.allows(addr, Channel::Socket, None).await
            }
        };
        match verdict {
            Ok(()) => true,
            Err(why) => {
                // A datagram from elsewhere is dropped silently by wasmtime-wasi; not worth a warning.
                if !matches!(usage, SocketAddrUse::UdpReceive) {
                    tracing::warn!(plugin = %self.plugin, address = %addr, ?usage, "network access refused: {why}");
                    METRICS.egress_refused(&self.plugin, &addr.to_string(), &why);
                }
                false
            }
        }
    }

    /// Whether a rule covers `addr` over `channel` (for `request`, over
    /// HTTP); if not, why.
    pub async fn allows(
        &self,
        addr: SocketAddr,
        channel: Channel,
        request: Option<HttpRequest<'_>>,
    ) -> Result<(), String> {
        let ip = canonical(addr.ip());
        let port = addr.port();
        let block = restricted(ip);
        let mut covering = None;
        for rule in self.rules.iter().filter(|r| r.ports.contains(port)) {
            let covers = match &rule.host {
                HostPattern::Net(net) => net.contains(ip) && block.is_none_or(|b| b.net.covers(net)),
                HostPattern::Name(name) => {
                    let explicit = block.is_none() || (name == "localhost" && ip.is_loopback());
                    explicit && self.name_resolves_to(name, ip).await
                }
            };
            if covers && grants(rule, channel, request) {
                return Ok(());
            }
            if covers {
                covering = Some(rule);
            }
        }
        Err(match (covering, block) {
            (Some(rule), _) => not_granted_why(rule, channel, request),
            (None, Some(b)) => format!(
                "{} is {}, which only a rule naming it explicitly grants (e.g. \"{}\")",
                ip,
                b.what,
                SocketAddr::new(ip, port)
            ),
            (None, None) if self.rules.is_empty() => "the plugin's manifest grants no network access".to_string(),
            (None, None) => "no [network] rule of the plugin's manifest covers it".to_string(),
        })
    }

    /// Whether the host's resolution of `name` includes `ip`.
    async fn name_resolves_to(&self, name: &str, ip: IpAddr) -> bool {
        let cached = self.names.lock().unwrap().get(name).cloned();
        let now = Instant::now();
        if let Some((at, addrs)) = &cached {
            let age = now.duration_since(*at);
            if age < NAME_CACHE_TTL && (addrs.contains(&ip) || age < NAME_REFRESH_AFTER) {
                return addrs.contains(&ip);
            }
        }
        let addrs: Arc<[IpAddr]> = (self.resolver)(name.to_owned())
            .await
            .into_iter()
            .map(canonical)
            .collect();
        let found = addrs.contains(&ip);
        self.names.lock().unwrap().insert(name.to_owned(), (now, addrs));
        found
    }
}

/// Why `rule`, which covers a destination, does not grant it over `channel` to `request`.
fn not_granted_why(rule: &NetRule, channel: Channel, request: Option<HttpRequest<'_>>) -> String {
    if rule.tls_only && channel != Channel::Tls {
        return format!(
            "the rule \"{}\" grants it to https:// requests only (TLS verified by the host); \
             add a HOST:PORT rule to grant plain connections",
            rule.text
        );
    }
    match request {
        Some(request) => format!(
            "the rule \"{rule}\" does not grant {} {} (only the methods and path prefixes it lists)",
            request.method, request.path
        ),
        None => format!(
            "the rule \"{rule}\" grants wasi:http requests only (it lists methods or path prefixes); \
             add a HOST:PORT rule to grant sockets"
        ),
    }
}

/// The host resolver: every address of `name`, none when it does not resolve.
async fn host_lookup(name: String) -> Vec<IpAddr> {
    match tokio::net::lookup_host((name.as_str(), 0)).await {
        Ok(addrs) => addrs.map(|a| a.ip()).collect(),
        Err(e) => {
            tracing::debug!(name, "a granted name does not resolve: {e}");
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(texts: &[&str]) -> Vec<NetRule> {
        texts
            .iter()
            .map(|t| NetRule::try_from(t.to_string()).unwrap())
            .collect()
    }

    /// A policy whose resolver knows a fixed table.
    fn policy(texts: &[&str]) -> NetworkPolicy {
        let table: HashMap<&str, Vec<IpAddr>> = HashMap::from([
            ("api.example.com", vec!["93.184.216.34".parse().unwrap()]),
            ("rebind.example.com", vec!["127.0.0.1".parse().unwrap()]),
            ("metadata.example.com", vec!["169.254.169.254".parse().unwrap()]),
            ("localhost", vec!["127.0.0.1".parse().unwrap(), "::1".parse().unwrap()]),
        ]);
        let table: HashMap<String, Vec<IpAddr>> = table.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        let resolver: Resolver = Arc::new(move |name| {
            let found = table.get(&name).cloned().unwrap_or_default();
            Box::pin(async move { found })
        });
        NetworkPolicy::with_resolver("test", rules(texts), resolver)
    }

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    fn allows(policy: &NetworkPolicy, text: &str) -> bool {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(policy.allows(addr(text), Channel::Socket, None)).is_ok()
    }

    #[test]
    fn nothing_is_allowed_without_rules() {
        let p = policy(&[]);
        assert!(!allows(&p, "93.184.216.34:443"));
        assert!(!p.may_resolve("api.example.com"));
    }

    #[test]
    fn names_are_checked_on_their_resolved_addresses() {
        let p = policy(&[
            "api.example.com:443",
            "rebind.example.com:80",
            "metadata.example.com:80",
        ]);
        assert!(allows(&p, "93.184.216.34:443"));
        assert!(!allows(&p, "93.184.216.34:80"), "wrong port");
        assert!(
            !allows(&p, "93.184.216.35:443"),
            "an address the name does not resolve to"
        );
        assert!(!allows(&p, "127.0.0.1:80"), "a granted name resolving to loopback");
        assert!(
            !allows(&p, "169.254.169.254:80"),
            "a granted name resolving to metadata"
        );
        assert!(p.may_resolve("API.example.com."));
        assert!(!p.may_resolve("evil.example.com"));
        assert!(p.may_resolve("10.0.0.1") && p.may_resolve("::1"));
    }

    #[test]
    fn restricted_addresses_need_an_explicit_rule() {
        let wide = policy(&["0.0.0.0/0:*", "[::/0]:*"]);
        assert!(allows(&wide, "93.184.216.34:443"));
        for refused in [
            "127.0.0.1:8080",
            "127.1.2.3:8080",
            "[::1]:8080",
            "169.254.169.254:80",
            "169.254.1.1:80",
            "[fe80::1]:80",
            "[fd00:ec2::254]:80",
            "0.0.0.0:80",
            "[::]:80",
            "[::ffff:127.0.0.1]:80",
            "[::ffff:169.254.169.254]:80",
            "[64:ff9b::7f00:1]:80",
            "[::127.0.0.1]:80",
            "224.0.0.1:5353",
            "255.255.255.255:67",
        ] {
            assert!(!allows(&wide, refused), "{refused} must be refused");
        }
        let explicit = policy(&["127.0.0.1:8080", "[::1]:*", "169.254.169.254:80", "localhost:9000"]);
        assert!(allows(&explicit, "127.0.0.1:8080"));
        assert!(allows(&explicit, "[::ffff:127.0.0.1]:8080"));
        assert!(!allows(&explicit, "127.0.0.1:8081"));
        assert!(!allows(&explicit, "127.0.0.2:8080"));
        assert!(allows(&explicit, "[::1]:1234"));
        assert!(allows(&explicit, "169.254.169.254:80"));
        assert!(!allows(&explicit, "169.254.169.253:80"));
        assert!(allows(&explicit, "127.0.0.1:9000"), "localhost names loopback");
        assert!(allows(&explicit, "[::1]:9000"));
        let loopback = policy(&["127.0.0.0/8:*"]);
        assert!(allows(&loopback, "127.5.5.5:1"));
        assert!(!allows(&loopback, "169.254.169.254:80"));
    }

    #[test]
    fn tls_only_rules_grant_https_requests_and_nothing_else() {
        let p = policy(&["https://api.example.com", "https://93.184.216.34:8443"]);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        assert!(!p.grants_sockets());
        assert!(
            !p.may_resolve("api.example.com"),
            "the host resolves a TLS-only name itself"
        );
        assert!(p.grants_name("api.example.com", 443, Channel::Tls, None).is_ok());
        let why = p.grants_name("api.example.com", 443, Channel::Plain, None).unwrap_err();
        assert!(
            why.contains("https://api.example.com") && why.contains("https:// requests only"),
            "{why}"
        );
        assert!(p.grants_name("api.example.com", 80, Channel::Tls, None).is_err());
        for text in ["93.184.216.34:443", "93.184.216.34:8443"] {
            assert!(rt.block_on(p.allows(addr(text), Channel::Tls, None)).is_ok(), "{text}");
            let why = rt.block_on(p.allows(addr(text), Channel::Plain, None)).unwrap_err();
            assert!(why.contains("https:// requests only"), "{text}: {why}");
        }
        assert!(!rt.block_on(p.check(addr("93.184.216.34:443"), SocketAddrUse::TcpConnect)));
        let mixed = policy(&["https://api.example.com", "api.example.com:80"]);
        assert!(mixed.grants_sockets() && mixed.may_resolve("api.example.com"));
        assert!(mixed.grants_name("api.example.com", 80, Channel::Plain, None).is_ok());
    }

    #[test]
    fn limited_rules_grant_the_http_requests_they_list_and_no_socket() {
        let settings: crate::manifest::NetworkSettings = toml::from_str(
            r#"allow = [{ rule = "api.example.com:443", methods = ["GET"], path_prefixes = ["/v1/"] }]"#,
        )
        .unwrap();
        let table: HashMap<String, Vec<IpAddr>> =
            HashMap::from([("api.example.com".to_string(), vec!["93.184.216.34".parse().unwrap()])]);
        let resolver: Resolver = Arc::new(move |name| {
            let found = table.get(&name).cloned().unwrap_or_default();
            Box::pin(async move { found })
        });
        let p = NetworkPolicy::with_resolver("test", settings.allow, resolver);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let get = HttpRequest {
            method: "GET",
            path: "/v1/items",
        };
        let post = HttpRequest {
            method: "POST",
            path: "/v1/items",
        };
        assert!(!p.grants_sockets() && !p.may_resolve("api.example.com") && p.limits_requests());
        assert!(p.grants_name("api.example.com", 443, Channel::Plain, Some(get)).is_ok());
        let why = p
            .grants_name("api.example.com", 443, Channel::Tls, Some(post))
            .unwrap_err();
        assert!(why.contains("does not grant POST /v1/items"), "{why}");
        let address = addr("93.184.216.34:443");
        assert!(rt.block_on(p.allows(address, Channel::Tls, Some(get))).is_ok());
        assert!(rt.block_on(p.allows(address, Channel::Tls, Some(post))).is_err());
        let why = rt.block_on(p.allows(address, Channel::Socket, None)).unwrap_err();
        assert!(why.contains("grants wasi:http requests only"), "{why}");
    }

    #[test]
    fn binding_listening_and_accepting_are_refused() {
        let p = policy(&["0.0.0.0/0:*"]);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            assert!(p.check(addr("0.0.0.0:0"), SocketAddrUse::TcpBind).await);
            assert!(p.check(addr("[::]:0"), SocketAddrUse::UdpBind).await);
            assert!(!p.check(addr("0.0.0.0:8080"), SocketAddrUse::TcpBind).await);
            assert!(!p.check(addr("0.0.0.0:0"), SocketAddrUse::TcpListen).await);
            assert!(!p.check(addr("93.184.216.34:5000"), SocketAddrUse::TcpAccept).await);
            assert!(p.check(addr("93.184.216.34:443"), SocketAddrUse::TcpConnect).await);
        });
    }
}
