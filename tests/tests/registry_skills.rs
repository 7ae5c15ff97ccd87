//! A plugin's skills folder travelling with it through a real OCI registry
//! (Debian's `docker-registry`): `wasm-mcp push` packs `NAME.skills/` as one
//! more layer of the artifact (the same folder, the same digest; a plugin
//! without skills has no such layer), and the plugin `add`ed into an empty
//! plugins folder serves its static skills exactly as from the folder (the
//! same `skills/list` entries and digests, the same bytes read), `pull`
//! writes the folder back beside the component, and a skills layer whose
//! bytes do not match its digest is refused. A skills layer built by hand
//! with an entry reaching outside its folder is refused, naming what is
//! wrong, by `add`, by `pull` and by a running server, which serves on.

use std::path::Path;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use wasm_mcp_tests::command::{fails, run, succeeds};
use wasm_mcp_tests::modern::{ModernStdio, meta, with_meta};
use wasm_mcp_tests::process::serve_command;
use wasm_mcp_tests::registry::{OpenApi, TestRegistry};
use wasm_mcp_tests::wait::poll;
use wasm_mcp_tests::{PluginDir, timeout, workspace_root};

const SKILLS_MEDIA_TYPE: &str = "application/vnd.wasm-mcp.skills.v1.tar";
const STATIC_SKILL: &str = "skill://git-workflow/SKILL.md";

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// `request` of a 2026-07-28 client: the whole response.
fn request(server: &mut ModernStdio, method: &str, params: Value) -> Value {
    server.request(method, with_meta(params, &meta(json!({}), None)))
}

#[track_caller]
fn result(response: &Value) -> &Value {
    response
        .get("result")
        .unwrap_or_else(|| panic!("expected a result, got {response}"))
}

/// The skills served, by URI.
fn skills(server: &mut ModernStdio) -> Vec<Value> {
    let list = request(server, "skills/list", json!({}));
    result(&list)["skills"].as_array().unwrap().clone()
}

fn skill<'a>(listed: &'a [Value], uri: &str) -> &'a Value {
    listed
        .iter()
        .find(|s| s["uri"] == uri)
        .unwrap_or_else(|| panic!("{uri} is not listed: {listed:#?}"))
}

/// The text `resources/read` of `uri` gives.
fn read(server: &mut ModernStdio, uri: &str) -> String {
    let read = request(server, "resources/read", json!({ "uri": uri }));
    result(&read)["contents"][0]["text"].as_str().unwrap().to_owned()
}

/// `wasm-mcp serve` of `plugins` with the registry's settings and `cache`.
fn serve(registry: &TestRegistry, cache: &Path, plugins: &Path) -> ModernStdio {
    let mut command = serve_command(plugins);
    registry.configure(&mut command, cache);
    let mut server = ModernStdio::spawn(command);
    server.wait_until_loaded();
    server
}

/// `wasm-mcp push WASM REF`: the digest pushed and what it said on stderr.
fn push(registry: &TestRegistry, cache: &Path, wasm: &Path, reference: &str) -> (String, String) {
    let mut command = registry.wasm_mcp(cache);
    command.arg("push").arg(wasm).arg(reference);
    let output = run(command);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    );
    assert!(output.status.success(), "push failed:\n{stdout}\n{stderr}");
    (stdout.trim().rsplit('@').next().unwrap().to_owned(), stderr)
}

/// The layers (media type, digest) of the artifact `digest` as the registry keeps it.
fn layers(registry: &TestRegistry, digest: &str) -> Vec<(String, String)> {
    let manifest: Value = serde_json::from_slice(&std::fs::read(registry.blob_path(digest)).unwrap()).unwrap();
    manifest["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["mediaType"].as_str().unwrap().to_owned(),
                l["digest"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn add(registry: &TestRegistry, cache: &Path, plugins: &Path, reference: &str) -> std::process::Command {
    let mut command = registry.wasm_mcp(cache);
    command.arg("add").arg(reference).arg("--plugins").arg(plugins);
    command
}

#[test]
fn a_plugin_pushed_with_its_skills_serves_them_once_added_as_from_its_folder() {
    let registry = TestRegistry::start();
    let cache = tempfile::tempdir().unwrap();
    let local = PluginDir::with(&["playbook"]);
    let source = workspace_root().join("plugins/playbook/skills");

    // Served from the folder beside the component.
    let mut server = ModernStdio::serve(&local, &[]);
    let from_folder = skills(&mut server);
    let skill_md = read(&mut server, STATIC_SKILL);
    server.close();
    eprintln!("skills/list from the folder: {from_folder:#?}");
    assert_eq!(
        skill_md,
        std::fs::read_to_string(source.join("git-workflow/SKILL.md")).unwrap()
    );

    // Pushed twice: the same folder packs to the same layer.
    let wasm = local.path().join("playbook.wasm");
    let reference = registry.reference("skills/playbook:1");
    let (digest, said) = push(&registry, cache.path(), &wasm, &reference);
    assert!(said.contains("its 1 skill(s) from"), "{said}");
    let (again, _) = push(&registry, cache.path(), &wasm, &registry.reference("skills/playbook:2"));
    let published = layers(&registry, &digest);
    assert_eq!(
        published[0],
        ("application/wasm".to_owned(), sha256(&std::fs::read(&wasm).unwrap()))
    );
    assert_eq!(published[1].0, SKILLS_MEDIA_TYPE, "{published:?}");
    assert_eq!(published.len(), 2, "{published:?}");
    assert_eq!(
        layers(&registry, &again)[1],
        published[1],
        "the same folder, the same digest"
    );

    // A plugin without skills is published as before: its component alone.
    let bare = PluginDir::with(&["raw-echo"]);
    let (echo, said) = push(
        &registry,
        cache.path(),
        &bare.path().join("raw-echo.wasm"),
        &registry.reference("skills/raw-echo:1"),
    );
    assert!(!said.contains("skill(s)"), "{said}");
    assert_eq!(layers(&registry, &echo).len(), 1);

    // Added into an empty plugins folder, served from the store.
    let plugins = PluginDir::empty();
    let fresh = tempfile::tempdir().unwrap();
    let added = succeeds(add(&registry, fresh.path(), plugins.path(), &reference));
    assert!(added.contains(&format!("digest    {digest}")), "{added}");
    assert!(
        added.contains("skills    git-workflow, reports/daily (made when read)"),
        "{added}"
    );
    let mut server = serve(&registry, fresh.path(), plugins.path());
    let from_registry = skills(&mut server);
    eprintln!("skills/list once added from the registry: {from_registry:#?}");
    assert_eq!(
        skill(&from_registry, STATIC_SKILL),
        skill(&from_folder, STATIC_SKILL),
        "the same entry, digests and sizes included"
    );
    assert_eq!(
        from_registry.iter().map(|s| &s["uri"]).collect::<Vec<_>>(),
        from_folder.iter().map(|s| &s["uri"]).collect::<Vec<_>>(),
        "the skill the plugin makes is served too"
    );
    for file in skill(&from_registry, STATIC_SKILL)["resources"].as_array().unwrap() {
        let uri = file["uri"].as_str().unwrap();
        let text = read(&mut server, uri);
        assert_eq!(file["digest"], sha256(text.as_bytes()), "{uri}");
        let path = uri.trim_start_matches("skill://");
        assert_eq!(text, std::fs::read_to_string(source.join(path)).unwrap(), "{uri}");
    }
    server.close();

    // `pull` writes the folder back beside the component.
    let out = fresh.path().join("fetched/playbook.wasm");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let mut pull = registry.wasm_mcp(fresh.path());
    pull.arg("pull").arg(&reference).arg("-o").arg(&out);
    succeeds(pull);
    for file in ["git-workflow/SKILL.md", "git-workflow/references/commit-messages.md"] {
        assert_eq!(
            std::fs::read(out.with_extension("skills").join(file)).unwrap(),
            std::fs::read(source.join(file)).unwrap(),
            "{file}"
        );
    }

    // The registry's copy of the skills layer changed in place: refused.
    let blob = registry.blob_path(&published[1].1);
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[600] ^= 0xff;
    std::fs::write(&blob, bytes).unwrap();
    let elsewhere = PluginDir::empty();
    let stderr = fails(add(
        &registry,
        tempfile::tempdir().unwrap().path(),
        elsewhere.path(),
        &reference,
    ));
    assert!(
        stderr.contains("does not match its digest") && stderr.contains(SKILLS_MEDIA_TYPE),
        "{stderr}"
    );
    assert!(!elsewhere.path().join("plugins.lock").exists(), "nothing is pinned");
}

/// A tar of `entries` (path, bytes) written as given: the `tar` crate's
/// builder would refuse a path with `..`.
fn hostile_tar(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, data) in entries {
        let mut header = tar::Header::new_gnu();
        header.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append(&header, *data).unwrap();
    }
    builder.into_inner().unwrap()
}

#[test]
fn a_skills_layer_reaching_outside_its_folder_is_refused_and_the_server_serves_on() {
    let registry = TestRegistry::start_plain();
    let cache = tempfile::tempdir().unwrap();
    let local = PluginDir::with(&["playbook"]);
    let wasm = std::fs::read(local.path().join("playbook.wasm")).unwrap();
    let good = registry.reference("skills/playbook:1");
    push(&registry, cache.path(), &local.path().join("playbook.wasm"), &good);
    let plugins = PluginDir::empty();
    succeeds(add(&registry, cache.path(), plugins.path(), &good));
    let mut server = serve(&registry, cache.path(), plugins.path());
    assert!(skills(&mut server).iter().any(|s| s["uri"] == STATIC_SKILL));

    // The same component, with a skills layer built by hand.
    let skill_md = b"---\nname: escape\ndescription: Writes where it should not\n---\n";
    let archive = hostile_tar(&[("escape/SKILL.md", skill_md), ("../escape.md", b"outside")]);
    let config = br#"{"architecture":"wasm","os":"wasip2","layerDigests":[]}"#;
    let digest = OpenApi::new(&registry.addr, "skills/hostile").artifact(
        "1",
        "application/vnd.wasm.config.v0+json",
        config,
        &[("application/wasm", &wasm), (SKILLS_MEDIA_TYPE, &archive)],
    );
    let hostile = registry.reference("skills/hostile:1");

    let stderr = fails(add(&registry, cache.path(), plugins.path(), &hostile));
    for said in [
        &format!("the skills layer of {hostile}@{digest} is refused"),
        "\"../escape.md\" climbs out of its folder",
    ] {
        assert!(stderr.contains(said), "{said:?} in:\n{stderr}");
    }
    let lock = std::fs::read_to_string(plugins.path().join("plugins.lock")).unwrap();
    assert!(!lock.contains("hostile"), "the lockfile is unchanged:\n{lock}");

    let out = cache.path().join("out/hostile.wasm");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let mut pull = registry.wasm_mcp(cache.path());
    pull.arg("pull").arg(&hostile).arg("-o").arg(&out);
    assert!(fails(pull).contains("climbs out of its folder"));
    assert_eq!(
        std::fs::read_dir(out.parent().unwrap()).unwrap().count(),
        0,
        "nothing is written"
    );

    // Pinned by hand in the lockfile the server follows: refused, named, and
    // the plugin served before serves on.
    let pinned = format!("{lock}\n[plugins.hostile]\nreference = \"{hostile}\"\ndigest = \"{digest}\"\n");
    std::fs::write(plugins.path().join("plugins.lock"), pinned).unwrap();
    let refused = poll(timeout(), || {
        let stderr = server.stderr();
        stderr
            .lines()
            .find(|l| l.contains("plugin failed to load") && l.contains("hostile"))
            .map(str::to_owned)
    })
    .unwrap_or_else(|| panic!("no load failure for hostile:\n{}", server.stderr()));
    assert!(refused.contains("climbs out of its folder"), "{refused}");
    let served: Vec<Value> = skills(&mut server);
    assert_eq!(
        served.iter().map(|s| s["uri"].as_str().unwrap()).collect::<Vec<_>>(),
        [STATIC_SKILL, "skill://reports/daily/SKILL.md"]
    );
    assert!(read(&mut server, STATIC_SKILL).starts_with("---\nname: git-workflow"));
    server.close();
}
