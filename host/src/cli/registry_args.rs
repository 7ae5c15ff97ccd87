//! The flags the registry commands (`push`, `pull`, `add`, `update`,
//! `remove`) share: the config file, the `[registry]` settings, and the
//! cache directory that holds the store of pulled plugins (the one `serve`
//! reads, so what `add` pulled, a server on this machine does not pull again).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::config::{ConfigFile, Settings};
use crate::registry::Registry;
use crate::settings::{RegistrySettings, ServerSettings};

#[derive(Args)]
pub struct RegistryArgs {
    /// A TOML file of host-wide settings (its [registry] section, and cache_dir under [server]); flags override it.
    #[arg(long, value_name = "FILE", env = "WASM_MCP_CONFIG")]
    config: Option<PathBuf>,
    #[command(flatten)]
    registry: RegistrySettings,
    /// Directory of compiled plugins and of the store of pulled ones [default: $XDG_CACHE_HOME/wasm-mcp or ~/.cache/wasm-mcp]
    #[arg(long, value_name = "DIR", env = "WASM_MCP_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
}

impl RegistryArgs {
    /// The settings: the defaults, the config file, then these flags.
    pub fn settings(&self) -> Result<Settings> {
        let flags = ConfigFile {
            registry: self.registry.clone(),
            server: ServerSettings {
                cache_dir: self.cache_dir.clone(),
                ..ServerSettings::default()
            },
            ..ConfigFile::default()
        };
        Settings::load(self.config.as_deref(), &flags)
    }

    /// The settings, the registry front they make, and the cache directory.
    pub fn open(&self) -> Result<(Settings, Registry, Option<PathBuf>)> {
        let settings = self.settings()?;
        let cache = super::cache_directory(settings.server.cache_dir.clone(), false)?;
        let registry = Registry::new(&settings.registry, cache.clone())?;
        Ok((settings, registry, cache))
    }
}
