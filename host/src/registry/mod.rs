//! Plugins from OCI registries: references ([`reference`]), the lockfile that
//! pins each by digest ([`lockfile`]), the content-addressed store in the
//! cache directory ([`store`]), the artifact layout ([`artifact`]), the
//! credentials ([`credentials`]) and the client ([`client`]).
//!
//! [`Registry`] is what the server and the commands use: a locked plugin's
//! component, manifest and skills, from the store when it holds them (checked
//! against their digests), else pulled by digest (never by tag) and stored.
//! The client is made on first use: a server with no lockfile never makes one.
//!
//! With a trust policy ([`crate::trust`]), an artifact is verified before it
//! is pulled or loaded, on every load (a stored one included): its
//! signatures are read from the registry each time (and kept in the store
//! for a start with the registry down), so a signature deleted from the
//! registry refuses the next load.

pub mod artifact;
pub mod client;
pub mod credentials;
pub mod lockfile;
pub mod reference;
pub mod store;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use tokio::sync::OnceCell;

use crate::manifest::Manifest;
use crate::settings::RegistryValues;
use crate::skills::SkillSet;
use crate::trust::{Policy, Signatures, Verdict};
use artifact::Artifact;
use client::{RegistryClient, Unreachable};
use lockfile::Locked;
use oci_client::manifest::OciDescriptor;
use store::Store;

/// A locked plugin as the store holds it, checked: ready to load.
pub struct Pulled {
    /// Where its component is in the store.
    pub wasm_path: PathBuf,
    /// Its component's bytes.
    pub wasm: Vec<u8>,
    /// The text of its manifest layer, if it has one.
    pub manifest: Option<String>,
    /// Its skills, from its skills layer (none without one).
    pub skills: SkillSet,
    /// Why the trust policy lets it be served (none: there is no policy).
    pub verdict: Option<Verdict>,
}

impl Pulled {
    /// The manifest it was published with (none: no grants), read as the
    /// manifest of plugin `name` in the plugins directory `dir` (relative
    /// grant paths are taken from there); `reference` names it in errors.
    pub fn parsed_manifest(&self, name: &str, dir: &Path, reference: &str) -> Result<Manifest> {
        match &self.manifest {
            Some(text) => Manifest::parse(text, &dir.join(format!("{name}.toml")))
                .with_context(|| format!("the manifest published with {reference}")),
            None => Ok(Manifest::default()),
        }
    }
}

/// The store and, once needed, the client.
pub struct Registry {
    settings: RegistryValues,
    store: Option<Store>,
    client: OnceCell<RegistryClient>,
    /// The trust policy (replaced when its file changes).
    policy: std::sync::RwLock<Option<Arc<Policy>>>,
    /// The digests revoked through the shared state store (`wasm-mcp revoke`).
    revoked: std::sync::RwLock<std::collections::BTreeSet<String>>,
}

impl Registry {
    /// A registry front with `settings` (its trust policy read now),
    /// storing under the cache directory `cache` (none: pulls are refused,
    /// saying why).
    ///
    /// # Errors
    /// A trust policy that cannot be read.
    pub fn new(settings: &RegistryValues, cache: Option<PathBuf>) -> Result<Self> {
        let policy = settings.trust_policy.as_deref().map(Policy::read).transpose()?;
        if settings.require_signed && policy.is_none() {
            bail!(
                "{} asks for signed plugins only, but no trust policy says whose signatures to accept: \
                 set one ({}) or drop {}",
                crate::settings::registry::require_signed.name(),
                crate::settings::registry::trust_policy.hint(),
                crate::settings::registry::require_signed.name()
            );
        }
        Ok(Self {
            settings: settings.clone(),
            store: cache.as_deref().map(Store::in_cache),
            client: OnceCell::new(),
            policy: std::sync::RwLock::new(policy.map(Arc::new)),
            revoked: Default::default(),
        })
    }

    /// The trust policy, if the operator set one.
    pub fn policy(&self) -> Option<Arc<Policy>> {
        self.policy.read().expect("not poisoned").clone()
    }

    /// Why loose `.wasm` files in the plugins directory are refused, if they
    /// are: the operator serves signed plugins only (`--require-signed`, or
    /// `require_signed_files` in the trust policy).
    pub fn loose_files_refused(&self) -> Option<String> {
        let from_policy = self
            .policy()
            .filter(|policy| policy.require_signed_files)
            .map(|policy| format!("the trust policy {} (require_signed_files)", policy.path.display()));
        let from_settings = self
            .settings
            .require_signed
            .then(|| crate::settings::registry::require_signed.name());
        from_settings.or(from_policy)
    }

    /// Whether loose files are held to the grants approved for them (`--approve-files`).
    pub fn approves_files(&self) -> bool {
        self.settings.approve_files
    }

    /// The trust policy's file, if the operator set one.
    pub fn policy_path(&self) -> Option<&Path> {
        self.settings.trust_policy.as_deref()
    }

    /// Replaces the trust policy (its file changed).
    pub fn set_policy(&self, policy: Policy) {
        *self.policy.write().expect("not poisoned") = Some(Arc::new(policy));
    }

    /// Replaces the digests revoked through the state store; whether they changed.
    pub fn set_revoked(&self, revoked: std::collections::BTreeSet<String>) -> bool {
        let mut current = self.revoked.write().expect("not poisoned");
        let changed = *current != revoked;
        *current = revoked;
        changed
    }

    /// Whether the trust policy lets the artifact `digest` of `reference` be
    /// served (`None`: there is no policy), from the signatures the registry
    /// has now, or, when it cannot be reached, those kept from the last look.
    ///
    /// # Errors
    /// A digest revoked through the state store, the policy's refusal, or
    /// signatures that cannot be read.
    pub async fn verify(&self, reference: &oci_client::Reference, digest: &str) -> Result<Option<Verdict>> {
        let repository = format!("{}/{}", reference.registry(), reference.repository());
        if self.revoked.read().expect("not poisoned").contains(digest) {
            bail!(
                "{repository}@{digest} is revoked through the state store the replicas share (`wasm-mcp revoke`; \
                 `wasm-mcp revoke --lift` serves it again)"
            );
        }
        let Some(policy) = self.policy() else {
            return Ok(None);
        };
        if !policy.needs_signatures(&repository, digest) {
            return policy.verify(&repository, digest, &Signatures::default()).map(Some);
        }
        let store = self.store()?;
        let signatures = match self.client().await?.signatures_and_bundles(reference, digest).await {
            Ok(found) => {
                store.write_signatures(digest, &found)?;
                found
            }
            Err(e) if Unreachable::caused(&e) => match store.read_signatures(digest)? {
                Some(kept) => {
                    tracing::info!(%repository, digest, "the registry cannot be reached: checking the signatures kept from the last look");
                    kept
                }
                None => {
                    return Err(e.context(format!(
                        "cannot check the signatures of {repository}@{digest}, and none were kept from an earlier look"
                    )));
                }
            },
            Err(e) => return Err(e),
        };
        policy.verify(&repository, digest, &signatures).map(Some)
    }

    /// The store.
    pub fn store(&self) -> Result<&Store> {
        self.store.as_ref().context(
            "there is no cache directory to keep pulled plugins in: set --cache-dir (or cache_dir under [server]), or HOME",
        )
    }

    /// The client, made on first use.
    pub async fn client(&self) -> Result<&RegistryClient> {
        self.client
            .get_or_try_init(|| async { RegistryClient::new(&self.settings) })
            .await
    }

    /// The plugin `locked` pins, from the store, or `None` when the store
    /// lacks part of it (an entry that no longer matches its digest is
    /// removed, and so lacking). Reading and hashing a component (the Python
    /// plugin is 19 MB) runs on the blocking pool, never on the runtime's threads.
    async fn open(&self, locked: &Locked) -> Result<Option<Pulled>> {
        let (store, locked) = (self.store()?.clone(), locked.clone());
        tokio::task::spawn_blocking(move || open_stored(&store, &locked))
            .await
            .context("reading the registry store did not finish")?
    }

    /// The plugin `locked` pins, once the trust policy lets it be served:
    /// from the store, else pulled by its digest.
    pub async fn pull(&self, locked: &Locked) -> Result<Pulled> {
        let reference = reference::parse(&locked.reference)?;
        let verdict = self.verify(&reference, &locked.digest).await?;
        let pulled = match self.open(locked).await? {
            Some(pulled) => pulled,
            None => {
                let store = self.store()?;
                self.client().await?.fetch(&reference, &locked.digest, store).await?;
                self.open(locked).await?.with_context(|| {
                    format!(
                        "{}@{}: pulled, but the store does not hold it whole (is the cache directory shared and being pruned?)",
                        locked.reference, locked.digest
                    )
                })?
            }
        };
        Ok(Pulled { verdict, ..pulled })
    }

    /// Each of `plugins`, pulled as [`Registry::pull`] does, at most
    /// `concurrent_pulls` at once; what went wrong for each that failed.
    pub async fn pull_all(&self, plugins: Vec<(String, Locked)>) -> BTreeMap<String, Result<Pulled>> {
        let turns = tokio::sync::Semaphore::new(self.settings.concurrent_pulls);
        let pulls = plugins.into_iter().map(|(name, locked)| {
            let turns = &turns;
            async move {
                let _turn = turns.acquire().await;
                let pulled = self
                    .pull(&locked)
                    .await
                    .with_context(|| format!("cannot pull {}@{}", locked.reference, locked.digest));
                (name, pulled)
            }
        });
        futures_util::future::join_all(pulls).await.into_iter().collect()
    }
}

/// The plugin `locked` pins as `store` holds it, each piece checked against
/// its digest; `None` when a piece is missing. Its skills layer is read
/// under the rules of a skills folder, and refused whole when it breaks one.
fn open_stored(store: &Store, locked: &Locked) -> Result<Option<Pulled>> {
    let Some(json) = store.read(&locked.digest)? else {
        return Ok(None);
    };
    let artifact = Artifact::read(&json).map_err(|e| anyhow::anyhow!("{} is not a plugin: {e:#}", locked.reference))?;
    let Some(wasm) = store.read(&artifact.wasm.digest)? else {
        return Ok(None);
    };
    // A layer the artifact has, read: `None` when the store lacks it.
    let layer = |layer: Option<&OciDescriptor>| match layer {
        Some(layer) => store.read(&layer.digest).map(|bytes| bytes.map(Some)),
        None => Ok(Some(None)),
    };
    let (Some(manifest), Some(skills)) = (layer(artifact.manifest.as_ref())?, layer(artifact.skills.as_ref())?) else {
        return Ok(None);
    };
    let manifest = manifest
        .map(String::from_utf8)
        .transpose()
        .map_err(|_| anyhow::anyhow!("the manifest layer of {} is not UTF-8 text", locked.reference))?;
    let skills = match skills {
        Some(archive) => {
            SkillSet::unpack(&archive, &format!("in the skills layer of {}", locked.reference)).map_err(|why| {
                anyhow::anyhow!(
                    "the skills layer of {}@{} is refused, and the plugin with it: {why}",
                    locked.reference,
                    locked.digest
                )
            })?
        }
        None => SkillSet::default(),
    };
    Ok(Some(Pulled {
        wasm_path: store.path(&artifact.wasm.digest),
        wasm,
        manifest,
        skills,
        verdict: None,
    }))
}
