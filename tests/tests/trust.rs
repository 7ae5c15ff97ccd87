//! Trust before a plugin runs, against a real registry (Debian's
//! `docker-registry`, plain HTTP on loopback): keys made with `wasm-mcp
//! keygen`, artifacts signed with `wasm-mcp sign` (cosign's form and tag),
//! and a trust policy deciding what `add` pins and `serve` loads. The right
//! signer is served; every refusal is said with its rule and reason:
//! unsigned, another key, a signature for another artifact, a tampered
//! payload, a malformed signature, no rule, a revoked digest or key, a loose
//! file when only signed plugins may run. A signature deleted from the
//! registry refuses the next load although the component is stored; with
//! the registry down, the signatures kept from the last look decide.
//! Keyless signatures are Sigstore bundles from a private Sigstore instance
//! (`wasm_mcp_tests::sigstore`), attached as OCI referrers and checked
//! offline against its trusted root and the identity a rule names. A
//! signature covers a plugin's skills layer as it covers its component.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use wasm_mcp_tests::command::{fails, succeeds};
use wasm_mcp_tests::expect::single_text;
use wasm_mcp_tests::process::serve_command;
use wasm_mcp_tests::redis::TestRedis;
use wasm_mcp_tests::registry::TestRegistry;
use wasm_mcp_tests::sigstore::{self, Issue, Sigstore};
use wasm_mcp_tests::{PluginDir, StdioServer, plugin_wasm};

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// A plain-HTTP registry, a store, keys and a policy file in one place.
struct Setup {
    registry: TestRegistry,
    work: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        // The reqwest of the workspace is built without a TLS provider of its own.
        wasm_mcp_tests::tls_provider();
        Self {
            registry: TestRegistry::start_plain(),
            work: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.work.path().join(name)
    }

    /// `wasm-mcp ARGS…` for this registry, with the store in the work directory.
    fn wasm_mcp(&self, args: &[&str]) -> Command {
        let mut command = self.registry.wasm_mcp(&self.path("cache"));
        command.args(args);
        command
    }

    /// A key pair made by `wasm-mcp keygen`: the public key's path.
    fn keygen(&self, name: &str) -> PathBuf {
        let prefix = self.path(name);
        let mut command = Command::new(wasm_mcp_tests::binary());
        command.arg("keygen").arg("--out").arg(&prefix);
        assert_eq!(
            succeeds(command).trim(),
            prefix.with_extension("pub").display().to_string()
        );
        prefix.with_extension("pub")
    }

    /// Publishes the built plugin `built` at `repository:tag`; the pinned reference.
    fn push(&self, built: &str, reference: &str) -> String {
        let dir = self.path(&format!("publish-{}", reference.replace(['/', ':'], "-")));
        std::fs::create_dir_all(&dir).unwrap();
        let wasm = dir.join("plugin.wasm");
        std::fs::copy(plugin_wasm(built), &wasm).unwrap();
        let reference = self.registry.reference(reference);
        let out = succeeds(self.wasm_mcp(&["push", wasm.to_str().unwrap(), &reference]));
        out.trim().to_owned()
    }

    /// Publishes the built plugin `built` with `manifest` at `repository:tag`; the pinned reference.
    fn push_with_manifest(&self, built: &str, manifest: &str, reference: &str) -> String {
        let dir = self.path(&format!("publish-{}", reference.replace(['/', ':'], "-")));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("plugin.toml"), manifest).unwrap();
        self.push(built, reference)
    }

    /// `wasm-mcp sign REF --key NAME.key`.
    fn sign(&self, reference: &str, key: &str) {
        let key = self.path(key).with_extension("key");
        succeeds(self.wasm_mcp(&["sign", reference, "--key", key.to_str().unwrap()]));
    }

    /// The manifest of the artifact `pinned` (`ADDR/REPO@sha256:HEX`), as stored.
    fn artifact_manifest(&self, pinned: &str) -> Vec<u8> {
        let (repository, digest) = repository_and_digest(&self.registry.addr, pinned);
        let response = reqwest::blocking::Client::new()
            .get(self.api(&format!("{repository}/manifests/{digest}")))
            .header("Accept", OCI_MANIFEST)
            .send()
            .unwrap();
        assert!(response.status().is_success(), "{}", response.status());
        response.bytes().unwrap().to_vec()
    }

    /// Attaches `bundle` to `pinned` as its referrer.
    fn attach(&self, pinned: &str, bundle: &str) {
        let (repository, digest) = repository_and_digest(&self.registry.addr, pinned);
        let size = self.artifact_manifest(pinned).len();
        sigstore::attach(&self.registry.addr, &repository, &digest, size, bundle);
    }

    /// A bundle by `identity` over `pinned` from `instance`, attached to it; the bundle.
    fn sign_keyless(&self, instance: &Sigstore, pinned: &str, identity: (&str, &str), how: Issue) -> String {
        let bundle = instance.sign(&self.artifact_manifest(pinned), identity.0, identity.1, how);
        self.attach(pinned, &bundle);
        bundle
    }

    /// Writes the trust policy (`ADDR` in `text` stands for the registry).
    fn policy(&self, text: &str) -> PathBuf {
        let path = self.path("policy.toml");
        std::fs::write(&path, text.replace("ADDR", &self.registry.addr)).unwrap();
        path
    }

    /// `wasm-mcp add REF` under the policy, into `plugins` as `name`.
    fn add(&self, plugins: &Path, reference: &str, name: &str) -> Command {
        let mut command = self.wasm_mcp(&[
            "add",
            reference,
            "--name",
            name,
            "--pull-retries",
            "0",
            "--trust-policy",
        ]);
        command.arg(self.path("policy.toml")).arg("--plugins").arg(plugins);
        command
    }

    /// A server of `plugins` under the policy.
    fn serve(&self, plugins: &Path) -> StdioServer {
        self.serve_with(plugins, &[])
    }

    /// A server of `plugins` under the policy, with the flags `extra`.
    fn serve_with(&self, plugins: &Path, extra: &[&str]) -> StdioServer {
        let mut command = serve_command(plugins);
        self.registry.configure(&mut command, &self.path("cache"));
        command
            .arg("--trust-policy")
            .arg(self.path("policy.toml"))
            .args(["--pull-retries", "0"])
            .args(extra);
        let mut server = StdioServer::spawn_command(command);
        server.initialize(json!({}));
        server.wait_until_loaded();
        server
    }

    /// The registry's HTTP API (plain HTTP, no password).
    fn api(&self, path: &str) -> String {
        format!("http://{}/v2/{path}", self.registry.addr)
    }

    /// The signature manifest of `pinned` (`ADDR/REPO@sha256:HEX`) and its digest.
    fn signature_manifest(&self, pinned: &str) -> (Value, String) {
        let (repository, tag) = signature_tag(&self.registry.addr, pinned);
        let response = reqwest::blocking::Client::new()
            .get(self.api(&format!("{repository}/manifests/{tag}")))
            .header("Accept", OCI_MANIFEST)
            .send()
            .unwrap();
        assert!(response.status().is_success(), "{}", response.status());
        let digest = response.headers()["docker-content-digest"].to_str().unwrap().to_owned();
        (serde_json::from_str(&response.text().unwrap()).unwrap(), digest)
    }

    /// Puts `manifest` as the signatures of `pinned`.
    fn put_signature_manifest(&self, pinned: &str, manifest: &Value) {
        let (repository, tag) = signature_tag(&self.registry.addr, pinned);
        let response = reqwest::blocking::Client::new()
            .put(self.api(&format!("{repository}/manifests/{tag}")))
            .header("Content-Type", OCI_MANIFEST)
            .body(manifest.to_string())
            .send()
            .unwrap();
        assert!(response.status().is_success(), "{}", response.status());
    }
}

/// The repository (without the registry) and signature tag of `pinned`.
fn signature_tag(addr: &str, pinned: &str) -> (String, String) {
    let (repository, digest) = repository_and_digest(addr, pinned);
    (repository, digest.replacen(':', "-", 1) + ".sig")
}

/// The repository (without the registry and tag) and digest of `pinned`.
fn repository_and_digest(addr: &str, pinned: &str) -> (String, String) {
    let (name, digest) = pinned.split_once('@').unwrap();
    let repository = name.strip_prefix(&format!("{addr}/")).unwrap();
    let repository = repository.rsplit_once(':').map_or(repository, |(r, _)| r);
    (repository.to_owned(), digest.to_owned())
}

/// Each of `replicas` withdraws the `version` tool with `list_changed`
/// (the time since `since`, when `what` happened, printed), saying `why`.
fn each_withdraws(replicas: &mut [StdioServer], since: std::time::Instant, what: &str, why: &str) {
    for (n, replica) in replicas.iter_mut().enumerate() {
        replica.wait_for_notification("tools/list_changed after the revocation", |m| {
            m["method"] == "notifications/tools/list_changed"
        });
        eprintln!(
            "replica {n}: the revoked plugin withdrawn {:?} after {what}",
            since.elapsed()
        );
        let error = replica.call_tool("version", json!({})).error().message;
        assert!(error.contains("Unknown tool"), "{error}");
        // The server logs before it notifies, but stderr is read by another
        // thread of the harness than stdout, which may not have it yet: wait for it.
        replica.wait_for_stderr(&format!("the withdrawal saying {why:?}"), |stderr| {
            stderr.contains("plugin withdrawn, refused now: ") && stderr.contains(why)
        });
    }
}

#[track_caller]
fn refused(command: Command, what: &[&str]) {
    let stderr = fails(command);
    for w in what {
        assert!(stderr.contains(w), "{w:?} in:\n{stderr}");
    }
}

#[test]
fn the_signer_a_rule_names_is_served_and_every_other_case_is_refused_with_its_reason() {
    let setup = Setup::new();
    let publisher = setup.keygen("publisher");
    let stranger = setup.keygen("stranger");
    setup.policy(&format!(
        "[[rule]]\npattern = \"ADDR/trusted/*\"\nkeys = [\"{}\"]\n\n\
         [[rule]]\npattern = \"ADDR/dev/**\"\nallow_unsigned = true\n",
        publisher.file_name().unwrap().to_str().unwrap()
    ));
    let plugins = PluginDir::empty();
    let rule = "rule \"ADDR/trusted/*\" wants a signature by".replace("ADDR", &setup.registry.addr);

    // Signed by the publisher: added, and served.
    let signed = setup.push("versioned-v1", "trusted/versioned:1");
    setup.sign(&signed, "publisher");
    let added = succeeds(setup.add(plugins.path(), &signed, "versioned"));
    assert!(added.contains("Added versioned"), "{added}");
    let mut verify = setup.wasm_mcp(&["verify", &signed, "--key"]);
    verify.arg(&publisher);
    let verified = succeeds(verify);
    assert!(
        verified.contains(&format!("signature 1  signed by {}", publisher.display())),
        "{verified}"
    );
    let mut server = setup.serve(plugins.path());
    assert_eq!(single_text(server.call_tool("version", json!({})).result()), "v1");
    server.shutdown();

    // Unsigned.
    let unsigned = setup.push("raw-echo", "trusted/unsigned:1");
    refused(
        setup.add(plugins.path(), &unsigned, "unsigned"),
        &[&rule, "it is unsigned (the registry has no sha256-"],
    );

    // Signed by a key the rule does not name.
    let other = setup.push("raw-echo", "trusted/other:1");
    setup.sign(&other, "stranger");
    refused(
        setup.add(plugins.path(), &other, "other"),
        &[&rule, "signature 1: it does not verify with those keys"],
    );
    let mut verify = setup.wasm_mcp(&["verify", &other, "--key"]);
    verify.arg(&publisher);
    refused(
        verify,
        &["no signature of", "verifies with the keys or trusted root given"],
    );
    let mut verify = setup.wasm_mcp(&["verify", &other, "--key"]);
    verify.arg(&stranger);
    succeeds(verify);

    // The publisher's signature of one artifact, copied to another.
    let copied = setup.push("raw-echo", "trusted/versioned:2");
    let (manifest, _) = setup.signature_manifest(&signed);
    setup.put_signature_manifest(&copied, &manifest);
    refused(
        setup.add(plugins.path(), &copied, "copied"),
        &[&format!(
            "is for another artifact, {}",
            signed.rsplit('@').next().unwrap()
        )],
    );

    // A payload altered in the registry's storage after it was signed.
    let tampered = setup.push("raw-echo", "trusted/tampered:1");
    setup.sign(&tampered, "publisher");
    let (manifest, _) = setup.signature_manifest(&tampered);
    let payload = setup
        .registry
        .blob_path(manifest["layers"][0]["digest"].as_str().unwrap());
    let text = std::fs::read_to_string(&payload).unwrap();
    std::fs::write(&payload, text.replace("sha256:", "sha256:0")).unwrap();
    refused(
        setup.add(plugins.path(), &tampered, "tampered"),
        &["a signature payload of", "does not match its digest"],
    );

    // A signature that is not one.
    let malformed = setup.push("raw-echo", "trusted/malformed:1");
    setup.sign(&malformed, "publisher");
    let (mut manifest, _) = setup.signature_manifest(&malformed);
    manifest["layers"][0]["annotations"]["dev.cosignproject.cosign/signature"] = json!("bm90IGEgc2lnbmF0dXJl");
    setup.put_signature_manifest(&malformed, &manifest);
    refused(
        setup.add(plugins.path(), &malformed, "malformed"),
        &[
            &rule,
            "signature 1: it is malformed: the signature is not an ASN.1 DER ECDSA signature",
        ],
    );

    // No rule covers it: no default trust.
    let elsewhere = setup.push("raw-echo", "elsewhere/echo:1");
    refused(
        setup.add(plugins.path(), &elsewhere, "elsewhere"),
        &["no rule covers", "add a rule naming the keys that sign it"],
    );

    // A development registry's rule lets unsigned plugins in.
    let dev = setup.push("raw-echo", "dev/team/echo:1");
    succeeds(setup.add(plugins.path(), &dev, "dev-echo"));
    assert!(
        !std::fs::read_to_string(plugins.path().join("plugins.lock"))
            .unwrap()
            .contains("unsigned"),
        "nothing refused was pinned"
    );
}

#[test]
fn revoked_digests_and_keys_loose_files_and_deleted_signatures_stop_a_plugin() {
    let mut setup = Setup::new();
    let publisher = setup.keygen("publisher");
    let rule = |setup: &Setup, revoked: &str| {
        setup.policy(&format!(
            "[[rule]]\npattern = \"ADDR/trusted/*\"\nkeys = [\"publisher.pub\"]\n\n[revoked]\n{revoked}"
        ))
    };
    rule(&setup, "");
    let plugins = PluginDir::empty();
    let signed = setup.push("versioned-v1", "trusted/versioned:1");
    setup.sign(&signed, "publisher");
    succeeds(setup.add(plugins.path(), &signed, "versioned"));
    let digest = signed.rsplit('@').next().unwrap();

    rule(&setup, &format!("digests = [\"{digest}\"]\n"));
    refused(setup.add(plugins.path(), &signed, "again"), &["its digest is revoked"]);
    rule(&setup, "keys = [\"publisher.pub\"]\n");
    refused(
        setup.add(plugins.path(), &signed, "again"),
        &[&format!(
            "signature 1: it is by the revoked key {}",
            publisher.display()
        )],
    );
    rule(&setup, "");

    // The registry down: the signatures kept from the last look decide.
    setup.registry.stop();
    let mut registry_down = setup.serve(plugins.path());
    assert_eq!(
        single_text(registry_down.call_tool("version", json!({})).result()),
        "v1"
    );
    let stderr = registry_down.stderr();
    assert!(
        stderr.contains("checking the signatures kept from the last look"),
        "{stderr}"
    );
    registry_down.shutdown();
    setup.registry.run();

    // The signature deleted from the registry: the next start refuses the
    // plugin although its component is in the store.
    let (_, manifest_digest) = setup.signature_manifest(&signed);
    let (repository, _) = signature_tag(&setup.registry.addr, &signed);
    let deleted = reqwest::blocking::Client::new()
        .delete(setup.api(&format!("{repository}/manifests/{manifest_digest}")))
        .send()
        .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());
    let mut server = setup.serve(plugins.path());
    let error = server.call_tool("version", json!({})).error().message;
    assert!(error.contains("Unknown tool"), "{error}");
    let stderr = server.stderr();
    server.shutdown();
    assert!(
        stderr.contains("it is unsigned (the registry has no sha256-") && stderr.contains("the plugin is not served"),
        "{stderr}"
    );

    // Only signed plugins: a loose file is refused too.
    setup.policy("require_signed_files = true\n");
    let loose = PluginDir::with(&["raw-echo"]);
    let mut server = setup.serve(loose.path());
    assert!(server.call_tool("echo", json!({"message": "x"})).is_error());
    let stderr = server.stderr();
    server.shutdown();
    assert!(
        stderr.contains("is a loose file, and the server serves signed plugins only (the trust policy")
            && stderr.contains("(require_signed_files)"),
        "{stderr}"
    );

    // The same asked for by the operator's setting, and that setting without a policy.
    setup.policy("");
    let mut command = serve_command(loose.path());
    setup.registry.configure(&mut command, &setup.path("cache"));
    command
        .arg("--trust-policy")
        .arg(setup.path("policy.toml"))
        .arg("--require-signed");
    let mut server = StdioServer::spawn_command(command);
    server.initialize(json!({}));
    server.wait_until_loaded();
    assert!(server.call_tool("echo", json!({"message": "x"})).is_error());
    let stderr = server.stderr();
    server.shutdown();
    assert!(
        stderr
            .contains("is a loose file, and the server serves signed plugins only (require_signed (--require-signed))"),
        "{stderr}"
    );
    let mut command = serve_command(loose.path());
    command.arg("--require-signed");
    refused(
        command,
        &[
            "require_signed (--require-signed) asks for signed plugins only, but no trust policy says whose signatures to accept: set one (--trust-policy",
        ],
    );
}

#[test]
fn a_revocation_in_the_policy_file_withdraws_the_plugin_from_every_server_following_it() {
    let setup = Setup::new();
    setup.keygen("publisher");
    let policy = |revoked: &str| {
        setup.policy(&format!(
            "[[rule]]\npattern = \"ADDR/trusted/*\"\nkeys = [\"publisher.pub\"]\n\n[revoked]\n{revoked}"
        ))
    };
    policy("");
    let plugins = PluginDir::empty();
    let signed = setup.push("versioned-v1", "trusted/versioned:1");
    setup.sign(&signed, "publisher");
    succeeds(setup.add(plugins.path(), &signed, "versioned"));
    let mut replicas: Vec<StdioServer> = (0..3).map(|_| setup.serve(plugins.path())).collect();
    for replica in &mut replicas {
        assert_eq!(single_text(replica.call_tool("version", json!({})).result()), "v1");
    }

    let digest = signed.rsplit('@').next().unwrap();
    let revoked_at = std::time::Instant::now();
    policy(&format!("digests = [\"{digest}\"]\n"));
    each_withdraws(
        &mut replicas,
        revoked_at,
        "the policy was written",
        "its digest is revoked",
    );

    // Lifting the revocation serves it again.
    policy("");
    for replica in &mut replicas {
        replica.wait_for_notification("tools/list_changed after the revocation is lifted", |m| {
            m["method"] == "notifications/tools/list_changed"
        });
        assert_eq!(single_text(replica.call_tool("version", json!({})).result()), "v1");
    }
    for replica in replicas {
        replica.shutdown();
    }
}

#[test]
fn an_update_asking_for_more_is_held_until_approved_and_a_narrower_one_is_not() {
    let setup = Setup::new();
    setup.policy("[[rule]]\npattern = \"ADDR/dev/**\"\nallow_unsigned = true\n");
    let plugins = PluginDir::empty();
    let tag = setup.registry.reference("dev/versioned:stable");
    let v1 = setup.push_with_manifest(
        "versioned-v1",
        "[network]\nallow = [\"example.com:80\"]\n[limits]\ntimeout_secs = 10\n",
        "dev/versioned:stable",
    );
    succeeds(setup.add(plugins.path(), &tag, "versioned"));
    let lock = || std::fs::read_to_string(plugins.path().join("plugins.lock")).unwrap();
    assert!(lock().contains("network example.com:80"), "{}", lock());
    let status = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    };
    let mut server = setup.serve_with(plugins.path(), &["--status", &status]);
    assert_eq!(single_text(server.call_tool("version", json!({})).result()), "v1");
    let held_updates = || -> Value {
        let body = reqwest::blocking::get(format!("http://{status}/status.json"))
            .unwrap()
            .text()
            .unwrap();
        serde_json::from_str::<Value>(&body).unwrap()["held_updates"].clone()
    };
    assert_eq!(held_updates(), json!({}));

    // v2 asks for another host, a directory and a longer deadline: held.
    let v2 = setup.push_with_manifest(
        "versioned-v2",
        "[network]\nallow = [\"example.com:80\", \"example.org:443\"]\n\
         [[directories]]\nhost = \"/tmp\"\nguest = \"/scratch\"\n[limits]\ntimeout_secs = 60\n",
        "dev/versioned:stable",
    );
    let mut update = setup.wasm_mcp(&["update", "--plugins"]);
    update
        .arg(plugins.path())
        .arg("--trust-policy")
        .arg(setup.path("policy.toml"));
    let held = succeeds(update);
    for line in [
        "held      it asks for more than was approved:",
        "+ network example.org:443",
        "+ directory /tmp at /scratch",
        "+ limit timeout_secs 60 (approved 10)",
        "`wasm-mcp approve versioned`",
        "0 plugin(s) updated, 1 held for approval",
    ] {
        assert!(held.contains(line), "{line:?} in:\n{held}");
    }
    let digest = |pinned: &str| pinned.rsplit('@').next().unwrap().to_owned();
    assert!(lock().contains(&format!("digest = \"{}\"", digest(&v1))), "{}", lock());
    let mut check = setup.wasm_mcp(&["check"]);
    check.arg(plugins.path());
    let report = succeeds(check);
    assert!(
        report.contains(&format!("held      update to {}", digest(&v2)))
            && report.contains("+ network example.org:443"),
        "{report}"
    );
    assert_eq!(single_text(server.call_tool("version", json!({})).result()), "v1");
    // The status page shows the held update, line by line.
    let shown = wasm_mcp_tests::wait::poll(wasm_mcp_tests::wait::timeout(), || {
        Some(held_updates()).filter(|held| held != &json!({}))
    })
    .expect("the held update on the status page");
    assert_eq!(shown["versioned"]["digest"], json!(digest(&v2)), "{shown}");
    let asks: Vec<&str> = shown["versioned"]["asks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    for line in ["+ network example.org:443", "+ directory /tmp at /scratch"] {
        assert!(asks.contains(&line), "{line:?} in {asks:?}");
    }

    // Approved: the server follows the lockfile to v2.
    let mut approve = setup.wasm_mcp(&["approve", "versioned", "--plugins"]);
    approve
        .arg(plugins.path())
        .arg("--trust-policy")
        .arg(setup.path("policy.toml"));
    assert!(succeeds(approve).contains("Approved versioned"));
    assert!(lock().contains(&format!("digest = \"{}\"", digest(&v2))), "{}", lock());
    assert!(!lock().contains("pending"), "{}", lock());
    assert!(
        wasm_mcp_tests::wait::poll(wasm_mcp_tests::wait::timeout(), || {
            Some(()).filter(|()| held_updates() == json!({}))
        })
        .is_some(),
        "the approved update is no longer shown as held"
    );
    server.wait_for_stderr("v2 loaded", |stderr| {
        stderr.contains(&format!("from={tag}@{}", digest(&v2)))
    });
    assert_eq!(single_text(server.call_tool("version", json!({})).result()), "v2");

    // A lockfile edited by hand to a version that asks for more than was
    // approved: not loaded, v2 keeps serving.
    let wider = setup.push_with_manifest(
        "versioned-v1",
        "[network]\nallow = [\"example.com:80\", \"example.org:443\", \"evil.example:25\"]\n",
        "dev/versioned:wider",
    );
    let edited = lock().replace(&digest(&v2), &digest(&wider));
    std::fs::write(plugins.path().join("plugins.lock"), edited).unwrap();
    let stderr = server.wait_for_stderr("the wider version refused", |stderr| {
        stderr.contains("asks for more than plugins.lock approved for versioned")
    });
    assert!(
        stderr.contains("+ network evil.example:25") && stderr.contains("the last good version keeps serving"),
        "{stderr}"
    );
    assert_eq!(single_text(server.call_tool("version", json!({})).result()), "v2");
    server.shutdown();

    // A narrower update is pinned without approval.
    std::fs::write(
        plugins.path().join("plugins.lock"),
        lock().replace(&digest(&wider), &digest(&v2)),
    )
    .unwrap();
    let narrower = setup.push_with_manifest("versioned-v1", "[limits]\ntimeout_secs = 5\n", "dev/versioned:stable");
    let mut update = setup.wasm_mcp(&["update", "--plugins"]);
    update
        .arg(plugins.path())
        .arg("--trust-policy")
        .arg(setup.path("policy.toml"));
    let updated = succeeds(update);
    assert!(!updated.contains("it asks for more than was approved"), "{updated}");
    assert!(
        lock().contains(&format!("digest = \"{}\"", digest(&narrower))),
        "{}",
        lock()
    );
}

#[test]
fn a_keyless_bundle_is_checked_against_the_trusted_root_and_the_identity_the_rule_names() {
    const RELEASE: (&str, &str) = (
        "https://github.com/acme/tools/.github/workflows/release.yml@refs/heads/main",
        "https://token.actions.githubusercontent.com",
    );
    let setup = Setup::new();
    let instance = Sigstore::new();
    std::fs::write(setup.path("trusted_root.json"), instance.trusted_root()).unwrap();

    // A rule naming identities needs the trusted root they are checked against.
    let identities = format!(
        "[[rule]]\npattern = \"ADDR/keyless/*\"\nidentities = [{{ subject = \"{}\", issuer = \"{}\" }}]\n",
        RELEASE.0, RELEASE.1
    );
    setup.policy(&identities);
    let plugins = PluginDir::empty();
    let unsigned = setup.push_with_manifest("raw-echo", "# unsigned\n", "keyless/unsigned:1");
    refused(
        setup.add(plugins.path(), &unsigned, "unsigned"),
        &[
            "names keyless identities, which are checked against a Sigstore trusted root: name its file (trusted_root = \"trusted_root.json\")",
        ],
    );
    setup.policy(&format!("trusted_root = \"trusted_root.json\"\n\n{identities}"));
    let rule = format!(
        "rule \"{}/keyless/*\" wants a signature by {} (issuer {})",
        setup.registry.addr, RELEASE.0, RELEASE.1
    );

    // Signed by the identity the rule names: added, served, and `verify` says who signed it.
    let signed = setup.push("versioned-v1", "keyless/versioned:1");
    setup.sign_keyless(&instance, &signed, RELEASE, Issue::default());
    let added = succeeds(setup.add(plugins.path(), &signed, "versioned"));
    assert!(added.contains("Added versioned"), "{added}");
    let mut verify = setup.wasm_mcp(&["verify", &signed, "--trusted-root"]);
    verify.arg(setup.path("trusted_root.json"));
    let verified = succeeds(verify);
    let digest = signed.rsplit('@').next().unwrap();
    assert!(
        verified.contains(&format!(
            "bundle 1     signed by {} (issuer {}) for {digest}",
            RELEASE.0, RELEASE.1
        )),
        "{verified}"
    );
    let mut server = setup.serve(plugins.path());
    assert_eq!(single_text(server.call_tool("version", json!({})).result()), "v1");
    server.shutdown();

    // Unsigned.
    refused(
        setup.add(plugins.path(), &unsigned, "unsigned"),
        &[
            &rule,
            "it is unsigned (the registry has no sha256-",
            "and no Sigstore bundle refers to it)",
        ],
    );

    // Each case its own artifact (a manifest of its own), its bundle refused.
    let case = |name: &str| setup.push_with_manifest("raw-echo", &format!("# {name}\n"), &format!("keyless/{name}:1"));
    let mallory = (
        "https://github.com/mallory/tools/.github/workflows/release.yml@refs/heads/main",
        RELEASE.1,
    );
    let other_subject = case("other-subject");
    setup.sign_keyless(&instance, &other_subject, mallory, Issue::default());
    refused(
        setup.add(plugins.path(), &other_subject, "other-subject"),
        &[
            &rule,
            &format!(
                "Sigstore bundle 1: it is signed by {} (issuer {}), whom the rule does not name",
                mallory.0, mallory.1
            ),
        ],
    );

    let other_issuer = case("other-issuer");
    setup.sign_keyless(
        &instance,
        &other_issuer,
        (RELEASE.0, "https://issuer.example"),
        Issue::default(),
    );
    refused(
        setup.add(plugins.path(), &other_issuer, "other-issuer"),
        &[&format!(
            "it is signed by {} (issuer https://issuer.example), whom the rule does not name",
            RELEASE.0
        )],
    );

    // `add` refuses the bundle of `pinned`, as the trusted root does not verify it.
    let does_not_verify = |pinned: &str, name: &str, what: &str| {
        let stderr = fails(setup.add(plugins.path(), pinned, name));
        assert!(
            stderr.contains("Sigstore bundle 1: it does not verify against the trusted root"),
            "{stderr}"
        );
        eprintln!("{what}: {stderr}");
    };
    let not_trusted = case("other-authority");
    setup.sign_keyless(&instance.other_authority(), &not_trusted, RELEASE, Issue::default());
    does_not_verify(&not_trusted, "other-authority", "a certificate of another authority");

    let other_logs = case("other-logs");
    setup.sign_keyless(&Sigstore::new(), &other_logs, RELEASE, Issue::default());
    does_not_verify(&other_logs, "other-logs", "a signature logged elsewhere");

    let expired = case("expired");
    setup.sign_keyless(&instance, &expired, RELEASE, Issue { expired: true });
    does_not_verify(&expired, "expired", "an expired certificate");

    let copied = case("copied");
    setup.attach(
        &copied,
        &setup.sign_keyless(&instance, &case("original"), RELEASE, Issue::default()),
    );
    does_not_verify(&copied, "copied", "a bundle of another artifact");

    let tampered = case("tampered");
    let mut bundle: Value = serde_json::from_str(&instance.sign(
        &setup.artifact_manifest(&tampered),
        RELEASE.0,
        RELEASE.1,
        Issue::default(),
    ))
    .unwrap();
    let signature = bundle["messageSignature"]["signature"].as_str().unwrap().to_owned();
    let flipped = if signature.starts_with('M') { "N" } else { "M" };
    bundle["messageSignature"]["signature"] = json!(format!("{flipped}{}", &signature[1..]));
    setup.attach(&tampered, &bundle.to_string());
    does_not_verify(&tampered, "tampered", "a tampered signature");

    let malformed = case("malformed");
    setup.attach(&malformed, "{\"mediaType\": \"not a bundle\"}");
    refused(
        setup.add(plugins.path(), &malformed, "malformed"),
        &[
            "Sigstore bundle 1: it does not verify against the trusted root",
            "it is not a Sigstore bundle",
        ],
    );
}

#[test]
fn loose_files_are_held_to_the_grants_approved_for_them_when_the_operator_opts_in() {
    let setup = Setup::new();
    setup.policy("");
    let plugins = PluginDir::with(&["raw-echo"]);
    plugins.add_file("raw-echo.toml", b"[network]\nallow = [\"example.com:80\"]\n");
    let mut server = setup.serve_with(plugins.path(), &["--approve-files"]);
    assert!(server.call_tool("echo", json!({"message": "x"})).is_error());
    assert!(
        server.stderr().contains(
            "raw-echo.wasm has no grants approved in plugins.lock, and loose files are held to theirs (--approve-files): \
             `wasm-mcp approve raw-echo`"
        ),
        "{}",
        server.stderr()
    );

    // Approved: its grants recorded, and the server loads it.
    let mut approve = setup.wasm_mcp(&["approve", "raw-echo", "--plugins"]);
    approve.arg(plugins.path());
    let approved = succeeds(approve);
    assert!(
        approved.contains("Approved raw-echo") && approved.contains("network      example.com:80"),
        "{approved}"
    );
    let lock = || std::fs::read_to_string(plugins.path().join("plugins.lock")).unwrap();
    assert!(lock().contains("[files.raw-echo.approved]"), "{}", lock());
    server.wait_for_notification("tools/list_changed once approved", |m| {
        m["method"] == "notifications/tools/list_changed"
    });
    assert_eq!(
        single_text(server.call_tool("echo", json!({"message": "x"})).result()),
        "x"
    );

    // Its manifest edited to ask for more: refused, the approved version serving on.
    plugins.add_file(
        "raw-echo.toml",
        b"[network]\nallow = [\"example.com:80\", \"exfiltrate.example:443\"]\n",
    );
    server.wait_for_stderr("the wider manifest refused", |stderr| {
        stderr.contains("asks for more than plugins.lock approved for raw-echo: + network exfiltrate.example:443")
            && stderr.contains("the last good version keeps serving")
    });
    assert_eq!(
        single_text(server.call_tool("echo", json!({"message": "y"})).result()),
        "y"
    );

    // A narrower one loads without approval.
    plugins.add_file("raw-echo.toml", b"");
    server.wait_for_stderr("the narrower manifest loaded", |stderr| {
        stderr.matches("plugin loaded").count() >= 2
    });
    assert_eq!(
        single_text(server.call_tool("echo", json!({"message": "z"})).result()),
        "z"
    );

    // A literal value it asks for is named, never shown, beyond the lockfile.
    plugins.add_file("raw-echo.toml", b"[env]\nAPI_TOKEN = \"sk-not-for-clients\"\n");
    let stderr = server.wait_for_stderr("the variable refused", |stderr| {
        stderr.contains("asks for more than plugins.lock approved for raw-echo: + env API_TOKEN = a literal value")
    });
    assert!(!stderr.contains("sk-not-for-clients"), "{stderr}");
    server.shutdown();
}

#[test]
fn a_digest_revoked_through_the_shared_state_store_is_withdrawn_from_every_replica_at_once() {
    let setup = Setup::new();
    setup.policy("[[rule]]\npattern = \"ADDR/dev/**\"\nallow_unsigned = true\n");
    let plugins = PluginDir::empty();
    let pinned = setup.push("versioned-v1", "dev/versioned:1");
    succeeds(setup.add(plugins.path(), &pinned, "versioned"));
    let redis = TestRedis::start();
    let url = redis.url();
    let serve = || setup.serve_with(plugins.path(), &["--state", &url]);
    let mut replicas: Vec<StdioServer> = (0..3).map(|_| serve()).collect();
    for replica in &mut replicas {
        assert_eq!(single_text(replica.call_tool("version", json!({})).result()), "v1");
    }

    let revoked_at = std::time::Instant::now();
    let said = succeeds(setup.wasm_mcp(&["revoke", &pinned, "--state", &url]));
    let digest = pinned.rsplit('@').next().unwrap();
    assert!(
        said.contains(&format!("{digest} is revoked: every replica sharing")),
        "{said}"
    );
    each_withdraws(
        &mut replicas,
        revoked_at,
        "`wasm-mcp revoke` started",
        &format!("{digest} is revoked through the state store the replicas share"),
    );
    // A replica started after the revocation does not serve it either.
    let mut late = serve();
    assert!(late.call_tool("version", json!({})).is_error());
    late.shutdown();

    // Lifted: served again everywhere.
    let said = succeeds(setup.wasm_mcp(&["revoke", &pinned, "--lift", "--state", &url]));
    assert!(said.contains("may be served again"), "{said}");
    for replica in &mut replicas {
        replica.wait_for_notification("tools/list_changed after the lift", |m| {
            m["method"] == "notifications/tools/list_changed"
        });
        assert_eq!(single_text(replica.call_tool("version", json!({})).result()), "v1");
    }
    for replica in replicas {
        replica.shutdown();
    }

    // Without a shared store, the command says what to do instead.
    refused(
        setup.wasm_mcp(&["revoke", digest, "--state", "/tmp/state.redb"]),
        &[
            "a revocation goes through the state store the replicas share (redis://HOST:PORT)",
            "[revoked]",
        ],
    );
}

#[test]
fn a_signature_covers_the_skills_layer_and_other_skills_under_the_same_tag_are_refused() {
    let setup = Setup::new();
    let publisher = setup.keygen("publisher");
    setup.policy(&format!(
        "[[rule]]\npattern = \"ADDR/trusted/*\"\nkeys = [\"{}\"]\n",
        publisher.file_name().unwrap().to_str().unwrap()
    ));
    let rule = "rule \"ADDR/trusted/*\" wants a signature by".replace("ADDR", &setup.registry.addr);
    let source = PluginDir::with(&["playbook"]);
    let wasm = source.path().join("playbook.wasm");
    let reference = setup.registry.reference("trusted/playbook:1");
    let push = || {
        succeeds(setup.wasm_mcp(&["push", wasm.to_str().unwrap(), &reference]))
            .trim()
            .to_owned()
    };

    // Published with its skills and signed: added and served with them.
    let signed = push();
    setup.sign(&signed, "publisher");
    let plugins = PluginDir::empty();
    succeeds(setup.add(plugins.path(), &reference, "playbook"));
    let mut server = setup.serve(plugins.path());
    let listed = server.request("skills/list", json!({})).result().clone();
    assert!(listed.to_string().contains("skill://git-workflow/SKILL.md"), "{listed}");
    server.shutdown();

    // The same component under the same tag with one skill file changed is
    // another artifact, which no signature covers: update refuses it.
    let skill_md = source.path().join("playbook.skills/git-workflow/SKILL.md");
    let changed = std::fs::read_to_string(&skill_md).unwrap() + "\nAlso: push to main on Fridays.\n";
    std::fs::write(&skill_md, changed).unwrap();
    let other = push();
    assert_ne!(other, signed);
    let mut update = setup.wasm_mcp(&["update", "--pull-retries", "0", "--plugins"]);
    update
        .arg(plugins.path())
        .arg("--trust-policy")
        .arg(setup.path("policy.toml"));
    refused(update, &[&rule, "it is unsigned (the registry has no sha256-"]);
    let lock = std::fs::read_to_string(plugins.path().join("plugins.lock")).unwrap();
    let digest = |pinned: &str| pinned.rsplit('@').next().unwrap().to_owned();
    assert!(
        lock.contains(&digest(&signed)) && !lock.contains(&digest(&other)),
        "{lock}"
    );
}
