//! The layout of a plugin in a registry: the CNCF wasm artifact (an OCI image
//! manifest whose config is `application/vnd.wasm.config.v0+json` and whose
//! layer is the component, `application/wasm`), plus, when the plugin has a
//! manifest, that `NAME.toml` as a layer of our own media type,
//! [`MANIFEST_MEDIA_TYPE`], and, when it ships skills, its `NAME.skills/`
//! folder packed as one more ([`SKILLS_MEDIA_TYPE`], see
//! [`crate::skills::archive`]). Clients that know only the wasm layout
//! (`wkg`, `oras`) see a wasm artifact; one without our layers serves with no
//! grants and no static skills.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use oci_client::client::{Config, ImageLayer};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use serde::{Deserialize, Serialize};

use super::reference::digest_of;

/// The media type of an OCI image manifest, which wasm artifacts are.
pub const OCI_MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The config of a wasm artifact (CNCF TAG Runtime's layout).
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The component layer of a wasm artifact.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The plugin's manifest (`NAME.toml`: grants, limits, exposure), as a layer.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.wasm-mcp.manifest.v1+toml";
/// The plugin's skills folder (`NAME.skills/`), packed as a tar, as a layer.
pub const SKILLS_MEDIA_TYPE: &str = "application/vnd.wasm-mcp.skills.v1.tar";

/// The manifest media types a pull accepts.
pub const ACCEPTED_MANIFESTS: &[&str] = &[
    OCI_MANIFEST_MEDIA_TYPE,
    "application/vnd.docker.distribution.manifest.v2+json",
];

/// The config of a wasm artifact, as the layout defines it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WasmConfig {
    created: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    author: Option<String>,
    architecture: String,
    os: String,
    layer_digests: Vec<String>,
    component: ComponentInfo,
}

/// What the component imports and exports (its top-level names).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct ComponentInfo {
    pub exports: Vec<String>,
    pub imports: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// What `push` sends: the layers, the config and the manifest naming them.
pub struct Publication {
    pub layers: Vec<ImageLayer>,
    pub config: Config,
    /// The manifest's JSON, exactly as pushed (its digest names the artifact).
    pub manifest: Vec<u8>,
}

impl Publication {
    /// The artifact of a plugin: `wasm` (the component, `file_name` its title),
    /// `manifest` (the text of its `NAME.toml`, if it has one), `skills` (its
    /// skills folder packed, if it has one), `component` what the component
    /// imports and exports.
    pub fn new(
        file_name: &str,
        wasm: Vec<u8>,
        manifest: Option<String>,
        skills: Option<Vec<u8>>,
        component: ComponentInfo,
    ) -> Result<Self> {
        let created = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        let title = |name: &str| BTreeMap::from([("org.opencontainers.image.title".to_owned(), name.to_owned())]);
        let mut layers = vec![ImageLayer::new(
            wasm,
            WASM_LAYER_MEDIA_TYPE.to_owned(),
            Some(title(file_name)),
        )];
        let beside = |extension: &str| {
            let name = std::path::Path::new(file_name).with_extension(extension);
            Some(title(&name.to_string_lossy()))
        };
        if let Some(manifest) = manifest {
            layers.push(ImageLayer::new(
                manifest.into_bytes(),
                MANIFEST_MEDIA_TYPE.to_owned(),
                beside("toml"),
            ));
        }
        if let Some(skills) = skills {
            layers.push(ImageLayer::new(
                skills,
                SKILLS_MEDIA_TYPE.to_owned(),
                beside("skills.tar"),
            ));
        }
        let config = WasmConfig {
            created: created.clone(),
            author: None,
            architecture: "wasm".into(),
            os: "wasip2".into(),
            layer_digests: layers.iter().map(|l| digest_of(&l.data)).collect(),
            component,
        };
        let config = Config::new(serde_json::to_vec(&config)?, WASM_CONFIG_MEDIA_TYPE.to_owned(), None);
        let annotations = BTreeMap::from([("org.opencontainers.image.created".to_owned(), created)]);
        let mut manifest = OciImageManifest::build(&layers, &config, Some(annotations));
        manifest.media_type = Some(OCI_MANIFEST_MEDIA_TYPE.to_owned());
        Ok(Self {
            layers,
            config,
            manifest: serde_json::to_vec(&manifest)?,
        })
    }
}

/// A pulled artifact's manifest, read as a plugin: its component layer, and
/// its manifest and skills layers, if it has them.
#[derive(Debug, Clone)]
pub struct Artifact {
    pub wasm: OciDescriptor,
    pub manifest: Option<OciDescriptor>,
    pub skills: Option<OciDescriptor>,
}

impl Artifact {
    /// Reads the OCI manifest `json`; the error says why it is not a plugin.
    pub fn read(json: &[u8]) -> Result<Artifact> {
        let value: serde_json::Value =
            serde_json::from_slice(json).map_err(|e| anyhow::anyhow!("its manifest is not JSON: {e}"))?;
        if value.get("manifests").is_some() {
            bail!(
                "it is an image index (an artifact per platform), not one wasm artifact; name the wasm artifact itself"
            );
        }
        let manifest: OciImageManifest = serde_json::from_value(value)
            .map_err(|e| anyhow::anyhow!("its manifest is not an OCI image manifest: {e}"))?;
        let mut wasm = manifest.layers.iter().filter(|l| l.media_type == WASM_LAYER_MEDIA_TYPE);
        let Some(component) = wasm.next() else {
            let types: Vec<&str> = manifest.layers.iter().map(|l| l.media_type.as_str()).collect();
            bail!(
                "it is not a wasm artifact: none of its layers is {WASM_LAYER_MEDIA_TYPE} (its layers: {}; config {})",
                if types.is_empty() {
                    "none".to_owned()
                } else {
                    types.join(", ")
                },
                manifest.config.media_type
            );
        };
        if wasm.next().is_some() {
            bail!("it has several {WASM_LAYER_MEDIA_TYPE} layers; a plugin is one component");
        }
        let artifact = Artifact {
            wasm: component.clone(),
            manifest: at_most_one(&manifest, MANIFEST_MEDIA_TYPE, "a plugin has one manifest")?,
            skills: at_most_one(&manifest, SKILLS_MEDIA_TYPE, "a plugin has one skills folder")?,
        };
        for layer in artifact.layers() {
            super::reference::check_digest(&layer.digest)
                .map_err(|e| anyhow::anyhow!("its {} layer: {e}", layer.media_type))?;
            if layer.size < 0 {
                bail!("its {} layer has a negative size", layer.media_type);
            }
        }
        Ok(artifact)
    }

    /// The layers the plugin is made of: the component, then its manifest
    /// and skills, if it has them.
    pub fn layers(&self) -> impl Iterator<Item = &OciDescriptor> {
        [Some(&self.wasm), self.manifest.as_ref(), self.skills.as_ref()]
            .into_iter()
            .flatten()
    }

    /// The bytes its layers take, as its manifest declares them.
    pub fn declared_size(&self) -> u64 {
        self.layers().map(|l| l.size.max(0) as u64).sum()
    }
}

/// The layer of `media_type` of `manifest`, if it has one; more is refused
/// (`why` says why).
fn at_most_one(manifest: &OciImageManifest, media_type: &str, why: &str) -> Result<Option<OciDescriptor>> {
    let mut found = manifest.layers.iter().filter(|l| l.media_type == media_type);
    let first = found.next().cloned();
    if found.next().is_some() {
        bail!("it has several {media_type} layers; {why}");
    }
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_published_plugin_reads_back_with_its_layers() {
        let publication = Publication::new(
            "hello.wasm",
            b"\0asm\r\0\x01\0".to_vec(),
            Some("[env]\n".into()),
            Some(b"packed skills".to_vec()),
            ComponentInfo::default(),
        )
        .unwrap();
        let artifact = Artifact::read(&publication.manifest).unwrap();
        assert_eq!(artifact.wasm.digest, digest_of(b"\0asm\r\0\x01\0"));
        assert_eq!(artifact.manifest.unwrap().digest, digest_of(b"[env]\n"));
        assert_eq!(artifact.skills.unwrap().digest, digest_of(b"packed skills"));
        let manifest: serde_json::Value = serde_json::from_slice(&publication.manifest).unwrap();
        assert_eq!(manifest["config"]["mediaType"], WASM_CONFIG_MEDIA_TYPE);
        assert_eq!(manifest["layers"][0]["mediaType"], WASM_LAYER_MEDIA_TYPE);
        let config: serde_json::Value = serde_json::from_slice(&publication.config.data).unwrap();
        assert_eq!(config["os"], "wasip2");
        assert_eq!(config["layerDigests"].as_array().unwrap().len(), 3);
        assert_eq!(manifest["layers"][2]["mediaType"], SKILLS_MEDIA_TYPE);
        assert_eq!(
            manifest["layers"][2]["annotations"]["org.opencontainers.image.title"],
            "hello.skills.tar"
        );
        let without = Publication::new("hello.wasm", b"\0asm".to_vec(), None, None, ComponentInfo::default()).unwrap();
        let manifest: serde_json::Value = serde_json::from_slice(&without.manifest).unwrap();
        assert_eq!(manifest["layers"].as_array().unwrap().len(), 1, "no skills, no layer");
    }

    #[test]
    fn what_is_not_a_plugin_is_said() {
        let image = br#"{"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","size":2},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","size":2}]}"#;
        let err = Artifact::read(image).unwrap_err().to_string();
        assert!(err.contains("not a wasm artifact"), "{err}");
        let index = br#"{"schemaVersion":2,"manifests":[]}"#;
        assert!(Artifact::read(index).unwrap_err().to_string().contains("image index"));
    }
}
