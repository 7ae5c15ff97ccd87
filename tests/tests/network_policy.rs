//! `wasm-mcp check --network-policy DIR`, from the outside: the NetworkPolicy
//! the real binary prints for directories of real plugins, with manifests of
//! known `[network]` rules (files, and a plugin locked from a registry), is
//! read as Kubernetes reads it and asked, connection by connection, whether
//! it lets the pods reach what each manifest grants and nothing that none
//! grants. A host name cannot be an address block, so a rule naming one opens
//! its ports to every address; that is what these checks expect of it.

use std::net::IpAddr;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use wasm_mcp_tests::command::succeeds;
use wasm_mcp_tests::registry::TestRegistry;
use wasm_mcp_tests::{PluginDir, binary, plugins_dist};

/// Where a connection goes: an address, or a pod (its namespace's labels and its own).
enum To<'a> {
    Address(&'a str),
    Pod(&'a [(&'a str, &'a str)], &'a [(&'a str, &'a str)]),
}

/// The policy's egress entries, as read from its YAML.
struct Policy {
    egress: Vec<Value>,
}

impl Policy {
    /// Reads the one NetworkPolicy in `yaml`; checks whom it is for.
    fn read(yaml: &str) -> Policy {
        let policy: Value = serde_norway::from_str(yaml).unwrap_or_else(|e| panic!("not YAML ({e}):\n{yaml}"));
        assert_eq!(policy["apiVersion"], "networking.k8s.io/v1", "{policy}");
        assert_eq!(policy["kind"], "NetworkPolicy", "{policy}");
        assert_eq!(
            policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/name"], "wasm-mcp",
            "it applies to the server's pods: {policy}"
        );
        assert_eq!(policy["spec"]["policyTypes"], serde_json::json!(["Egress"]), "{policy}");
        Policy {
            egress: policy["spec"]["egress"].as_array().expect("egress entries").clone(),
        }
    }

    /// Whether some entry lets a pod open `protocol` connections to `to` on `port`.
    fn admits(&self, protocol: &str, to: To, port: u16) -> bool {
        self.egress
            .iter()
            .any(|entry| peers_admit(&entry["to"], &to) && ports_admit(&entry["ports"], protocol, port))
    }
}

/// An entry's `to`: absent or empty is every destination; else one peer must match.
fn peers_admit(peers: &Value, to: &To) -> bool {
    let Some(peers) = peers.as_array().filter(|p| !p.is_empty()) else {
        return true;
    };
    peers.iter().any(|peer| match to {
        To::Address(address) => {
            let block = &peer["ipBlock"];
            let address: IpAddr = address.parse().unwrap();
            block["cidr"].as_str().is_some_and(|cidr| in_block(address, cidr))
                && !block["except"]
                    .as_array()
                    .is_some_and(|except| except.iter().any(|c| in_block(address, c.as_str().unwrap())))
        }
        To::Pod(namespace, pod) => {
            peer.get("ipBlock").is_none()
                && selects(&peer["namespaceSelector"], namespace)
                && selects(&peer["podSelector"], pod)
        }
    })
}

/// Whether a label selector (absent: this namespace, taken as any here) matches `labels`.
fn selects(selector: &Value, labels: &[(&str, &str)]) -> bool {
    selector["matchLabels"].as_object().is_none_or(|wanted| {
        wanted
            .iter()
            .all(|(key, value)| labels.iter().any(|(k, v)| k == key && value == v))
    })
}

/// An entry's `ports`: absent or empty is every port; a port without a
/// protocol is TCP; without a port, every port of the protocol.
fn ports_admit(ports: &Value, protocol: &str, port: u16) -> bool {
    let Some(ports) = ports.as_array().filter(|p| !p.is_empty()) else {
        return true;
    };
    ports.iter().any(|entry| {
        let proto = entry["protocol"].as_str().unwrap_or("TCP");
        let Some(first) = entry["port"].as_u64() else {
            return proto == protocol;
        };
        let last = entry["endPort"].as_u64().unwrap_or(first);
        proto == protocol && (first..=last).contains(&u64::from(port))
    })
}

fn in_block(address: IpAddr, cidr: &str) -> bool {
    let (network, prefix) = cidr.split_once('/').expect("a CIDR block");
    let prefix: u32 = prefix.parse().unwrap();
    match (address, network.parse::<IpAddr>().unwrap()) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// The cluster's DNS, as the policy's selectors must find it.
const KUBE_SYSTEM: &[(&str, &str)] = &[("kubernetes.io/metadata.name", "kube-system")];
const KUBE_DNS: &[(&str, &str)] = &[("k8s-app", "kube-dns")];
/// Addresses no rule below names (documentation ranges).
const ELSEWHERE: &str = "198.51.100.20";
const ELSEWHERE_V6: &str = "2001:db9::20";

fn network_policy(dir: &Path) -> Command {
    let mut command = Command::new(binary());
    command
        .arg("check")
        .arg("--network-policy")
        .arg(dir)
        .env("WASM_MCP_LOG", "warn");
    command
}

fn admits_dns(policy: &Policy) {
    for protocol in ["UDP", "TCP"] {
        assert!(
            policy.admits(protocol, To::Pod(KUBE_SYSTEM, KUBE_DNS), 53),
            "DNS over {protocol}"
        );
        assert!(
            !policy.admits(protocol, To::Address(ELSEWHERE), 53),
            "DNS goes to the cluster's resolver only"
        );
    }
}

#[test]
fn the_policy_admits_what_the_manifests_grant_and_nothing_else() {
    let dir = PluginDir::empty();
    // http-get imports wasi:sockets, TCP and UDP (Rust's std links both); text-tools imports
    // no socket, which makes its rules TCP only.
    dir.add_plugin_as("http-get", "sockets");
    dir.add_file(
        "sockets.toml",
        br#"
[network]
allow = [
    "api.example.com:443",
    "db.internal:5432-5433",
    "203.0.113.7:*",
    "10.1.0.0/16:8080",
    "[2001:db8::/32]:9000",
    "127.0.0.1:7000",
    "localhost:7001",
]
"#,
    );
    dir.add_plugin_as("text-tools", "web");
    dir.add_file(
        "web.toml",
        br#"
[network]
allow = ["https://secure.example:8443", "[2001:db8:1::7]:25"]
"#,
    );
    let yaml = succeeds(network_policy(dir.path()));
    let policy = Policy::read(&yaml);
    admits_dns(&policy);

    // A rule naming a host: its ports, to every address; UDP too for a plugin with UDP sockets.
    for address in [ELSEWHERE, ELSEWHERE_V6] {
        assert!(
            policy.admits("TCP", To::Address(address), 443),
            "api.example.com:443 at {address}"
        );
        assert!(
            policy.admits("UDP", To::Address(address), 443),
            "api.example.com:443 over UDP"
        );
        assert!(policy.admits("TCP", To::Address(address), 5432) && policy.admits("TCP", To::Address(address), 5433));
        assert!(
            !policy.admits("TCP", To::Address(address), 5434),
            "5432-5433 ends at 5433"
        );
        assert!(!policy.admits("TCP", To::Address(address), 22), "no rule grants 22");
    }
    // An https:// rule: TCP only, whatever the plugin imports.
    assert!(policy.admits("TCP", To::Address(ELSEWHERE), 8443));
    assert!(!policy.admits("UDP", To::Address(ELSEWHERE), 8443), "TLS is over TCP");

    // Address rules: their block, on their ports.
    for protocol in ["TCP", "UDP"] {
        assert!(policy.admits(protocol, To::Address("203.0.113.7"), 1));
        assert!(policy.admits(protocol, To::Address("203.0.113.7"), 65535));
    }
    assert!(
        !policy.admits("TCP", To::Address("203.0.113.8"), 1),
        "203.0.113.7 alone"
    );
    assert!(policy.admits("TCP", To::Address("10.1.255.3"), 8080));
    assert!(!policy.admits("TCP", To::Address("10.2.0.1"), 8080), "10.1.0.0/16 only");
    assert!(!policy.admits("TCP", To::Address("10.1.0.1"), 8081));
    assert!(policy.admits("UDP", To::Address("2001:db8:ffff::1"), 9000));
    assert!(
        !policy.admits("TCP", To::Address("2001:db9::1"), 9000),
        "2001:db8::/32 only"
    );
    assert!(policy.admits("TCP", To::Address("2001:db8:1::7"), 25));
    assert!(
        !policy.admits("UDP", To::Address("2001:db8:1::7"), 25),
        "web has no UDP sockets"
    );
    assert!(!policy.admits("TCP", To::Address("2001:db8:1::8"), 25));

    // Loopback needs no egress: nothing is opened for it.
    for port in [7000, 7001] {
        assert!(!policy.admits("TCP", To::Address(ELSEWHERE), port), "{port}");
    }

    // The comments say which plugin's rule opened what.
    for rule in [
        "sockets: api.example.com:443",
        "sockets: db.internal:5432-5433",
        "web: https://secure.example:8443",
        "sockets: 127.0.0.1:7000",
        "sockets: localhost:7001",
    ] {
        assert!(yaml.contains(rule), "{rule} is named:\n{yaml}");
    }
}

#[test]
fn the_example_plugins_policy_opens_the_web_ports_of_http_get() {
    let yaml = succeeds(network_policy(&plugins_dist()));
    let policy = Policy::read(&yaml);
    admits_dns(&policy);
    for port in [80, 443] {
        assert!(policy.admits("TCP", To::Address(ELSEWHERE), port), "{port}:\n{yaml}");
    }
    // Its plain rules grant its UDP sockets too; its https:// rules only TLS.
    assert!(policy.admits("UDP", To::Address(ELSEWHERE), 80), "{yaml}");
    assert!(!policy.admits("UDP", To::Address(ELSEWHERE), 443), "{yaml}");
    for port in [22, 53, 6379, 8080] {
        assert!(!policy.admits("TCP", To::Address(ELSEWHERE), port), "{port}:\n{yaml}");
    }
    for rule in [
        "example.com:80",
        "example.org:80",
        "https://example.com",
        "https://example.org",
    ] {
        assert!(yaml.contains(&format!("http-get: {rule}\n")), "{rule}:\n{yaml}");
    }
}

#[test]
fn a_locked_plugin_brings_the_grants_published_with_it_and_its_registry() {
    let registry = TestRegistry::start_plain();
    let cache = tempfile::tempdir().unwrap();
    let published = tempfile::tempdir().unwrap();
    let wasm = published.path().join("fetcher.wasm");
    std::fs::copy(wasm_mcp_tests::plugin_wasm("text-tools"), &wasm).unwrap();
    std::fs::write(
        wasm.with_extension("toml"),
        "[network]\nallow = [\"https://fetched.example:9443\"]\n",
    )
    .unwrap();
    let reference = registry.reference("tools/fetcher:1");
    let mut push = registry.wasm_mcp(cache.path());
    push.arg("push").arg(&wasm).arg(&reference);
    succeeds(push);
    let plugins = PluginDir::empty();
    let mut add = registry.wasm_mcp(cache.path());
    add.arg("add").arg(&reference).arg("--plugins").arg(plugins.path());
    succeeds(add);

    let mut command = network_policy(plugins.path());
    registry.configure(&mut command, cache.path());
    let yaml = succeeds(command);
    let policy = Policy::read(&yaml);
    assert!(policy.admits("TCP", To::Address(ELSEWHERE), 9443), "{yaml}");
    assert!(yaml.contains("fetcher: https://fetched.example:9443"), "{yaml}");
    // Its registry is on loopback here: named, and nothing opened for it.
    let port: u16 = registry.addr.rsplit_once(':').unwrap().1.parse().unwrap();
    assert!(
        yaml.contains(&format!("fetcher: its registry 127.0.0.1:{port} (plugins.lock)")),
        "{yaml}"
    );
    assert!(!policy.admits("TCP", To::Address(ELSEWHERE), port), "{yaml}");
}

#[test]
fn no_policy_is_printed_while_a_plugin_does_not_load() {
    let dir = PluginDir::with(&["http-get"]);
    dir.add_file("broken.wasm", b"not a component");
    let output = Command::new(binary())
        .args(["check", "--network-policy"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty(), "{}", String::from_utf8_lossy(&output.stdout));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("broken.wasm does not load") && stderr.contains("no NetworkPolicy printed"),
        "{stderr}"
    );
}
