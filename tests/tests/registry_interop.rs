//! Plugins from a registry, both ways with clients that are not ours, against
//! a real registry (Debian's `docker-registry`, HTTPS from a test CA, with a
//! password): `wkg` (wasm-pkg-tools, installed into `.tools` by
//! `make registry-deps`) pushes a component that `wasm-mcp add` pins and
//! serves with no grants; what `wasm-mcp push` publishes, `wkg` pulls as the
//! same component, and `skopeo` copies as an OCI wasm artifact (config
//! `application/vnd.wasm.config.v0+json`, the component as the
//! `application/wasm` layer, the manifest as our own layer).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use wasm_mcp_tests::command::succeeds;
use wasm_mcp_tests::expect::single_text;
use wasm_mcp_tests::process::serve_command;
use wasm_mcp_tests::registry::{PASSWORD, TestRegistry, USER};
use wasm_mcp_tests::{PluginDir, StdioServer, plugin_wasm, workspace_root};

/// `wkg` as `make registry-deps` installs it.
fn wkg(registry: &TestRegistry) -> Command {
    let path = workspace_root().join(".tools/bin/wkg");
    assert!(
        path.is_file(),
        "wkg is missing at {} (run `make registry-deps`)",
        path.display()
    );
    let mut command = Command::new(path);
    // It trusts the platform's roots: here, the registry's test CA.
    command
        .env("SSL_CERT_FILE", registry.ca_file())
        .env("WKG_OCI_USERNAME", USER)
        .env("WKG_OCI_PASSWORD", PASSWORD);
    command
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// A copy of the built plugin `built` as `DIR/NAME.wasm`, with `manifest` as `NAME.toml`.
fn plugin_file(dir: &Path, built: &str, name: &str, manifest: Option<&str>) -> PathBuf {
    let wasm = dir.join(format!("{name}.wasm"));
    std::fs::copy(plugin_wasm(built), &wasm).unwrap();
    if let Some(manifest) = manifest {
        std::fs::write(wasm.with_extension("toml"), manifest).unwrap();
    }
    wasm
}

#[test]
fn a_component_pushed_by_wkg_is_added_and_served_with_no_grants() {
    let registry = TestRegistry::start();
    let work = tempfile::tempdir().unwrap();
    let plugins = PluginDir::empty();
    let wasm = plugin_file(work.path(), "raw-echo", "raw-echo", None);
    let reference = registry.reference("third-party/raw-echo:1.0");
    let mut push = wkg(&registry);
    push.args(["oci", "push"]).arg(&reference).arg(&wasm);
    let pushed = succeeds(push);
    assert!(pushed.contains("pushed"), "{pushed}");

    let mut add = registry.wasm_mcp(work.path());
    add.arg("add").arg(&reference).arg("--plugins").arg(plugins.path());
    let added = succeeds(add);
    assert!(
        added.contains("manifest  none published: it is granted nothing"),
        "{added}"
    );

    let mut serve = serve_command(plugins.path());
    registry.configure(&mut serve, work.path());
    let mut server = StdioServer::spawn_command(serve);
    server.initialize(json!({}));
    server.wait_until_loaded();
    let echoed = server
        .call_tool("echo", json!({"message": "from wkg"}))
        .result()
        .clone();
    assert_eq!(single_text(&echoed), "from wkg");
    server.shutdown();
}

#[test]
fn what_wasm_mcp_pushes_wkg_pulls_and_skopeo_copies_as_a_wasm_artifact() {
    let registry = TestRegistry::start();
    let work = tempfile::tempdir().unwrap();
    let manifest = "[limits]\nfuel = 1000000000\n";
    let wasm = plugin_file(work.path(), "raw-echo", "raw-echo", None);
    let bare = registry.reference("ours/raw-echo:1");
    let mut push = registry.wasm_mcp(work.path());
    push.arg("push").arg(&wasm).arg(&bare);
    succeeds(push);

    // wkg reads single-layer artifacts: a plugin published without a manifest.
    let pulled = work.path().join("pulled.wasm");
    let mut pull = wkg(&registry);
    pull.args(["oci", "pull"]).arg(&bare).arg("-o").arg(&pulled);
    succeeds(pull);
    assert_eq!(std::fs::read(&pulled).unwrap(), std::fs::read(&wasm).unwrap());

    // skopeo copies the artifact whole, with the manifest layer, into an OCI layout.
    let with_manifest = work.path().join("with-manifest");
    std::fs::create_dir(&with_manifest).unwrap();
    let wasm = plugin_file(&with_manifest, "raw-echo", "raw-echo", Some(manifest));
    let reference = registry.reference("ours/raw-echo:2");
    let mut push = registry.wasm_mcp(work.path());
    push.arg("push").arg(&wasm).arg(&reference);
    let digest = succeeds(push).trim().rsplit('@').next().unwrap().to_owned();
    let certs = work.path().join("certs");
    std::fs::create_dir(&certs).unwrap();
    std::fs::copy(registry.ca_file(), certs.join("ca.crt")).unwrap();
    let layout = work.path().join("layout");
    let mut copy = Command::new("skopeo");
    copy.args(["copy", "--src-creds", &format!("{USER}:{PASSWORD}"), "--src-cert-dir"])
        .arg(&certs)
        .arg(format!("docker://{reference}"))
        .arg(format!("oci:{}:2", layout.display()));
    succeeds(copy);
    let blob =
        |digest: &str| std::fs::read(layout.join("blobs/sha256").join(digest.trim_start_matches("sha256:"))).unwrap();
    let index: Value = serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
    assert_eq!(
        index["manifests"][0]["digest"],
        digest.as_str(),
        "the same manifest, byte for byte"
    );
    let oci: Value = serde_json::from_slice(&blob(&digest)).unwrap();
    assert_eq!(oci["mediaType"], "application/vnd.oci.image.manifest.v1+json");
    assert_eq!(oci["config"]["mediaType"], "application/vnd.wasm.config.v0+json");
    let config: Value = serde_json::from_slice(&blob(oci["config"]["digest"].as_str().unwrap())).unwrap();
    assert_eq!(
        (config["architecture"].as_str(), config["os"].as_str()),
        (Some("wasm"), Some("wasip2"))
    );
    let layers = oci["layers"].as_array().unwrap();
    assert_eq!(layers[0]["mediaType"], "application/wasm");
    assert_eq!(layers[0]["digest"], sha256(&std::fs::read(&wasm).unwrap()).as_str());
    assert_eq!(
        blob(layers[0]["digest"].as_str().unwrap()),
        std::fs::read(&wasm).unwrap()
    );
    assert_eq!(layers[1]["mediaType"], "application/vnd.wasm-mcp.manifest.v1+toml");
    assert_eq!(blob(layers[1]["digest"].as_str().unwrap()), manifest.as_bytes());
    let digests: Vec<&Value> = layers.iter().map(|l| &l["digest"]).collect();
    assert_eq!(
        config["layerDigests"].as_array().unwrap().iter().collect::<Vec<_>>(),
        digests
    );
}
