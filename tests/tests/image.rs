//! The container image (`Containerfile`), from the outside. Its final stage is
//! built with buildah around the release binary these tests run (the
//! `prebuilt` stage: wasmtime is not built a second time; `make image` builds
//! every stage from the checkout), on the Debian base `container/bases.sh`
//! makes from Debian's packages. Then podman runs it as the image says: its
//! non-root user, its root filesystem read-only, the plugins directory a
//! lockfile (one plugin pinned by digest in a registry of the test) mounted
//! read-only, and the two volumes empty directories of root's that anyone may
//! write, as Kubernetes' emptyDir makes them. It pulls the plugin, says
//! ready on `/readyz`, and answers a 2026-07-28 tools/call.
//!
//! Podman here runs containers with runc (crun refuses this machine's mix
//! of cgroup v1 and v2), on the host's network (loopback only), and with
//! resource limits no higher than the ones it runs under (raising them is
//! refused). Buildah, podman, runc and mmdebstrap are Debian's, installed by
//! `make image-deps`; the test needs root, as `make test` runs.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use reqwest::StatusCode;
use serde_json::{Value, json};
use wasm_mcp_tests::command::succeeds;
use wasm_mcp_tests::http::LeanHttpClient;
use wasm_mcp_tests::http::blocking_client;
use wasm_mcp_tests::registry::TestRegistry;
use wasm_mcp_tests::wait::poll;
use wasm_mcp_tests::{binary, compile_timeout, plugin_wasm, workspace_root};

const IMAGE: &str = "localhost/wasm-mcp:test";

/// The files of the image's root filesystem, besides the C libraries the
/// binary links: nothing else is there (no shell, no package manager).
const FILES: &[&str] = &[
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/ssl/certs/ca-certificates.crt",
    "/usr/local/bin/wasm-mcp",
];

fn tool(program: &str) -> Command {
    let mut command = Command::new(program);
    command.env("WASM_MCP_LOG", "warn");
    command
}

/// Builds the image's final stage around `target/release/wasm-mcp`.
fn build_image() {
    binary();
    for program in ["buildah", "podman", "runc", "mmdebstrap"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {program}")])
            .output();
        assert!(
            found.is_ok_and(|found| found.status.success()),
            "{program} is not installed: run `make image-deps` (the image test needs root)"
        );
    }
    let root = workspace_root();
    let mut base = tool(root.join("container/bases.sh").to_str().unwrap());
    base.arg("debian");
    let debian = succeeds(base).trim().to_owned();
    // The image of an earlier run would be left untagged.
    let mut earlier = tool("podman");
    earlier.args(["rmi", "--ignore", IMAGE]);
    succeeds(earlier);
    let mut build = tool("buildah");
    build
        .args(["bud", "--isolation", "chroot", "--network", "host", "--quiet"])
        .args(["--build-arg", "BINARY=prebuilt"])
        .args(["--build-arg", &format!("DEBIAN_IMAGE={debian}")])
        .args(["--build-arg", "VERSION=test", "-t", IMAGE, "-f", "Containerfile", "."])
        .current_dir(&root);
    succeeds(build);
    // The stages the binary came through, images of their own, are not kept.
    let mut stages = tool("podman");
    stages.args(["images", "--quiet", "--filter", "dangling=true"]);
    stages.args(["--filter", "label=wasm-mcp.intermediate=true"]);
    for stage in succeeds(stages).lines() {
        let mut remove = tool("podman");
        remove.args(["rmi", stage]);
        succeeds(remove);
    }
}

/// `podman ARGS…`, with the runtime that works here.
fn podman() -> Command {
    let mut command = tool("podman");
    command.args(["--runtime", "runc"]);
    command
}

/// The hard limit on open files this process has: the container gets it
/// (podman would ask for more, which is refused here).
fn open_files_limit() -> u64 {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
    let line = limits.lines().find(|l| l.starts_with("Max open files")).unwrap();
    line.split_whitespace().nth(4).unwrap().parse().unwrap()
}

/// A directory as Kubernetes' emptyDir is: root's, anyone may write.
fn empty_dir(parent: &Path, name: &str) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

/// A running container; removed when dropped.
struct Container {
    name: String,
}

impl Container {
    fn inspect(&self) -> Value {
        let mut inspect = podman();
        inspect.args(["container", "inspect", &self.name]);
        serde_json::from_str::<Value>(&succeeds(inspect)).unwrap()[0].clone()
    }

    fn logs(&self) -> String {
        let mut logs = podman();
        logs.args(["logs", &self.name]);
        let output = logs.output().unwrap();
        String::from_utf8_lossy(&output.stderr).into_owned() + &String::from_utf8_lossy(&output.stdout)
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = podman().args(["rm", "--force", "--time", "5", &self.name]).output();
    }
}

#[test]
fn the_image_serves_a_plugin_pulled_by_digest_as_a_non_root_user_on_a_read_only_root() {
    build_image();

    // What the image says of itself.
    let mut inspect = tool("podman");
    inspect.args(["image", "inspect", IMAGE]);
    let image = serde_json::from_str::<Value>(&succeeds(inspect)).unwrap()[0].clone();
    let config = &image["Config"];
    assert_eq!(config["User"], "10001:10001", "{config}");
    assert_eq!(config["Entrypoint"], json!(["/usr/local/bin/wasm-mcp"]), "{config}");
    assert_eq!(config["Cmd"], json!(["serve", "--http", "0.0.0.0:8080"]), "{config}");
    assert!(config["ExposedPorts"].get("8080/tcp").is_some(), "{config}");
    for volume in ["/var/cache/wasm-mcp", "/var/lib/wasm-mcp"] {
        assert!(config["Volumes"].get(volume).is_some(), "{volume}: {config}");
    }
    let labels = &config["Labels"];
    assert_eq!(labels["org.opencontainers.image.title"], "wasm-mcp", "{labels}");
    assert_eq!(labels["org.opencontainers.image.version"], "test", "{labels}");
    assert_eq!(labels["org.opencontainers.image.licenses"], "Apache-2.0", "{labels}");

    // What is in it: the binary, the libraries it links, certificates, the user.
    let mut mount = tool("podman");
    mount.args(["image", "mount", IMAGE]);
    let rootfs = PathBuf::from(succeeds(mount).trim());
    let mut files = BTreeSet::new();
    let mut pending = vec![rootfs.clone()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.insert(format!("/{}", path.strip_prefix(&rootfs).unwrap().display()));
            }
        }
    }
    let others: Vec<&String> = files
        .iter()
        .filter(|f| !FILES.contains(&f.as_str()) && !f.contains(".so"))
        .collect();
    assert!(others.is_empty(), "only the binary and what it needs: {others:?}");
    assert!(files.iter().any(|f| f.contains("libc.so")), "{files:?}");
    let passwd = std::fs::read_to_string(rootfs.join("etc/passwd")).unwrap();
    assert!(passwd.contains("wasm-mcp:x:10001:10001:"), "{passwd}");
    let _ = tool("podman").args(["image", "unmount", IMAGE]).output();

    // A plugin in a registry, and a plugins directory that pins it by digest.
    let registry = TestRegistry::start_plain();
    let scratch = tempfile::tempdir().unwrap();
    let wasm = scratch.path().join("text-tools.wasm");
    std::fs::copy(plugin_wasm("text-tools"), &wasm).unwrap();
    let reference = registry.reference("tools/text-tools:1");
    let adding = scratch.path().join("adding");
    let mut push = registry.wasm_mcp(&adding);
    push.arg("push").arg(&wasm).arg(&reference);
    let pinned = succeeds(push).trim().to_owned();
    let plugins = scratch.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let mut add = registry.wasm_mcp(&adding);
    add.arg("add").arg(&reference).arg("--plugins").arg(&plugins);
    succeeds(add);
    let lock = std::fs::read_to_string(plugins.join("plugins.lock")).unwrap();
    let digest = pinned.rsplit('@').next().unwrap();
    assert!(lock.contains(digest), "{lock}");

    // The container: the volumes start empty (the store is not the one `add` filled).
    let cache = empty_dir(scratch.path(), "cache");
    let state = empty_dir(scratch.path(), "state");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let container = Container {
        name: format!("wasm-mcp-test-{}", std::process::id()),
    };
    let files_limit = open_files_limit().min(65_536);
    let mut run = podman();
    run.args(["run", "--detach", "--name", &container.name, "--network", "host"])
        .args(["--read-only", "--read-only-tmpfs=false"])
        .args(["--ulimit", &format!("nofile={files_limit}:{files_limit}")])
        .args(["--ulimit", "nproc=4096:4096"])
        .args(["--volume", &format!("{}:/etc/wasm-mcp/plugins:ro", plugins.display())])
        .args(["--volume", &format!("{}:/var/cache/wasm-mcp", cache.display())])
        .args(["--volume", &format!("{}:/var/lib/wasm-mcp", state.display())])
        .arg(IMAGE)
        .args(["serve", "--http", &format!("127.0.0.1:{port}")]);
    succeeds(run);

    let base = format!("http://127.0.0.1:{port}");
    let http = blocking_client();
    let ready = poll(compile_timeout(), || {
        let response = http.get(format!("{base}/readyz")).send().ok()?;
        (response.status() == StatusCode::OK).then(|| response.text().unwrap().trim().to_owned())
    });
    assert_eq!(
        ready.as_deref(),
        Some("ready"),
        "/readyz never said ready; the container's log:\n{}",
        container.logs()
    );
    let healthz = http.get(format!("{base}/healthz")).send().unwrap();
    assert_eq!(healthz.status(), StatusCode::OK);

    // A 2026-07-28 request: no session, everything in the request.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = LeanHttpClient::new(&format!("{base}/mcp"), 1);
    let result = runtime.block_on(client.stateless().result(
        1,
        "tools/call",
        &json!({ "name": "reverse", "arguments": { "text": "container" } }),
        &json!({}),
    ));
    assert_eq!(result["content"][0]["text"], "reniatnoc", "{result}");

    // As whom, and on what: the image's user, a read-only root, the store on the volume.
    let state_of = container.inspect();
    let pid = state_of["State"]["Pid"].as_u64().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    assert_eq!(
        uid.split_whitespace().collect::<Vec<_>>(),
        ["Uid:", "10001", "10001", "10001", "10001"]
    );
    let mounts = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap();
    let root = mounts
        .lines()
        .find(|l| l.split_whitespace().nth(4) == Some("/"))
        .unwrap();
    let options = root.split_whitespace().nth(5).unwrap();
    assert!(options.split(',').any(|o| o == "ro"), "the root is read-only: {root}");
    let stored = cache.join("plugins/registry/sha256");
    assert!(
        std::fs::read_dir(&stored).is_ok_and(|mut entries| entries.next().is_some()),
        "the pulled plugin is in the store on the cache volume ({})",
        stored.display()
    );
    let log = container.logs();
    assert!(log.contains("text-tools"), "{log}");
}
