//! A temporary plugins directory holding a chosen set of built plugins.
//!
//! Each test serves exactly the plugins it names, copied (with their
//! `<name>.toml` manifest and `<name>.skills` folder when they exist) into a
//! fresh directory that is deleted when the [`PluginDir`] is dropped.

use std::path::{Path, PathBuf};

use crate::paths::plugin_wasm;

/// A temporary directory to pass as `--plugins`.
pub struct PluginDir {
    dir: tempfile::TempDir,
}

impl PluginDir {
    /// An empty plugins directory.
    pub fn empty() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("wasm-mcp-plugins-")
            .tempdir()
            .expect("create a temporary plugins directory");
        PluginDir { dir }
    }

    /// A directory holding copies of the named built plugins (`text-tools`
    /// for `text-tools.wasm`), each with its manifest if it has one.
    pub fn with(names: &[&str]) -> Self {
        let dir = Self::empty();
        for name in names {
            dir.add_plugin(name);
        }
        dir
    }

    /// A directory holding every built plugin of `plugins/dist` (and, with
    /// `with_test_plugins`, of `tests/plugins/dist`). Fails if there is none.
    pub fn with_all_built(with_test_plugins: bool) -> Self {
        let dir = Self::empty();
        let mut sources = vec![crate::paths::plugins_dist()];
        if with_test_plugins {
            sources.push(crate::paths::test_plugins_dist());
        }
        let mut count = 0;
        for source in sources {
            let Ok(entries) = std::fs::read_dir(&source) else {
                continue;
            };
            let mut stems: Vec<String> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "wasm"))
                .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .collect();
            stems.sort();
            for stem in stems {
                dir.add_plugin(&stem);
                count += 1;
            }
        }
        assert!(count > 0, "no built plugins found (run `make plugins`)");
        dir
    }

    /// The file stems of the `.wasm` files in the directory, sorted.
    pub fn plugin_names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.path())
            .expect("read the plugins directory")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "wasm"))
            .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .collect();
        names.sort();
        names
    }

    /// Copies the built plugin `<name>.wasm` (and `<name>.toml` if present).
    pub fn add_plugin(&self, name: &str) -> PathBuf {
        self.add_plugin_as(name, name)
    }

    /// Copies the built plugin `<name>.wasm` in under the file stem `as_name`
    /// (and its manifest and skills folder, renamed the same way, if present).
    pub fn add_plugin_as(&self, name: &str, as_name: &str) -> PathBuf {
        let wasm = plugin_wasm(name);
        let skills = wasm.with_extension("skills");
        if skills.is_dir() {
            self.add_folder(&format!("{as_name}.skills"), &skills);
        }
        let manifest = wasm.with_extension("toml");
        if manifest.is_file() {
            let text =
                std::fs::read_to_string(&manifest).unwrap_or_else(|e| panic!("read {}: {e}", manifest.display()));
            let base = manifest.parent().expect("a manifest has a folder");
            self.add_file(&format!("{as_name}.toml"), absolute_hosts(&text, base).as_bytes());
        }
        self.install(&wasm, &format!("{as_name}.wasm"))
    }

    /// Copies `source` in as `file_name` in one step (a copy under a
    /// temporary name, then a rename), so a watching server never sees half
    /// a file.
    fn install(&self, source: &Path, file_name: &str) -> PathBuf {
        let partial = self.path().join(format!(".{file_name}.partial"));
        let target = self.path().join(file_name);
        std::fs::copy(source, &partial)
            .unwrap_or_else(|e| panic!("copy {} to {}: {e}", source.display(), partial.display()));
        std::fs::rename(&partial, &target)
            .unwrap_or_else(|e| panic!("rename {} to {}: {e}", partial.display(), target.display()));
        target
    }

    /// Copies the folder `source` in as `name`, whole, in one step (a copy
    /// under a temporary name, then a rename), replacing any folder there.
    pub fn add_folder(&self, name: &str, source: &Path) {
        let partial = self.path().join(format!(".{name}.partial"));
        copy_folder(source, &partial);
        let target = self.path().join(name);
        if target.is_dir() {
            let old = self.path().join(format!(".{name}.old"));
            std::fs::rename(&target, &old).unwrap_or_else(|e| panic!("move {} away: {e}", target.display()));
            std::fs::rename(&partial, &target)
                .unwrap_or_else(|e| panic!("rename {} to {}: {e}", partial.display(), target.display()));
            std::fs::remove_dir_all(&old).unwrap_or_else(|e| panic!("remove {}: {e}", old.display()));
        } else {
            std::fs::rename(&partial, &target)
                .unwrap_or_else(|e| panic!("rename {} to {}: {e}", partial.display(), target.display()));
        }
    }

    /// Deletes `file_name` from the directory.
    pub fn remove_file(&self, file_name: &str) {
        let target = self.path().join(file_name);
        std::fs::remove_file(&target).unwrap_or_else(|e| panic!("remove {}: {e}", target.display()));
    }

    /// Writes an arbitrary file (a corrupt `.wasm`, a manifest) into the
    /// directory, in one step.
    pub fn add_file(&self, file_name: &str, bytes: &[u8]) -> PathBuf {
        let partial = self.path().join(format!(".{file_name}.partial"));
        std::fs::write(&partial, bytes).unwrap_or_else(|e| panic!("write {}: {e}", partial.display()));
        let target = self.path().join(file_name);
        std::fs::rename(&partial, &target)
            .unwrap_or_else(|e| panic!("rename {} to {}: {e}", partial.display(), target.display()));
        target
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// `text` (a manifest) with each relative `host = "..."` directory made
/// absolute against `base`, the folder it was copied from, so the copy
/// grants the same directories as the original.
fn absolute_hosts(text: &str, base: &Path) -> String {
    text.lines()
        .map(|line| {
            let trimmed = line.trim_start();
            let Some(value) = trimmed
                .strip_prefix("host")
                .map(str::trim_start)
                .and_then(|rest| rest.strip_prefix('='))
                .map(str::trim)
            else {
                return line.to_string();
            };
            let Some(path) = value.strip_prefix('"').and_then(|v| v.split('"').next()) else {
                return line.to_string();
            };
            if Path::new(path).is_absolute() {
                return line.to_string();
            }
            let absolute = base.join(path);
            let absolute = absolute.canonicalize().unwrap_or(absolute);
            format!("host = {:?}", absolute.display().to_string())
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// Copies the folder `from` and everything in it to `to`.
fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("create {}: {e}", to.display()));
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("read {}: {e}", from.display())) {
        let path = entry.expect("a folder entry").path();
        let target = to.join(path.file_name().expect("an entry has a name"));
        if path.is_dir() {
            copy_folder(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap_or_else(|e| panic!("copy {}: {e}", path.display()));
        }
    }
}
