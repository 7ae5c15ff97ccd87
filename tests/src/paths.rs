//! Where the binary under test and the built plugins live.
//!
//! The binary is `target/release/wasm-mcp` under the workspace root (override
//! with `WASM_MCP_BIN`). Plugins are the `.wasm` files `make plugins` puts in
//! `plugins/dist` and `tests/plugins/dist`.

use std::path::{Path, PathBuf};

/// The workspace root (the parent of this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent directory")
        .to_path_buf()
}

/// The `wasm-mcp` binary under test: `$WASM_MCP_BIN`, else
/// `<workspace>/target/release/wasm-mcp`. Panics with instructions if missing.
pub fn binary() -> PathBuf {
    let path = match std::env::var_os("WASM_MCP_BIN") {
        Some(p) => PathBuf::from(p),
        None => workspace_root().join("target/release/wasm-mcp"),
    };
    assert!(
        path.is_file(),
        "the wasm-mcp binary is missing at {} (run `make build`, or set WASM_MCP_BIN)",
        path.display()
    );
    path
}

/// `plugins/dist`: the example plugins.
pub fn plugins_dist() -> PathBuf {
    workspace_root().join("plugins/dist")
}

/// `tests/plugins/dist`: plugins that exist only to test the host.
pub fn test_plugins_dist() -> PathBuf {
    workspace_root().join("tests/plugins/dist")
}

/// The built component `<name>.wasm`, looked up in `plugins/dist` then
/// `tests/plugins/dist`. Panics with instructions if it is not built.
pub fn plugin_wasm(name: &str) -> PathBuf {
    let file = format!("{name}.wasm");
    for dir in [plugins_dist(), test_plugins_dist()] {
        let candidate = dir.join(&file);
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!(
        "plugin {file} is not built: looked in {} and {} (run `make plugins`)",
        plugins_dist().display(),
        test_plugins_dist().display()
    );
}
