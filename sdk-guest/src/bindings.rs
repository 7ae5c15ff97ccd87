//! The Rust bindings of the `full-plugin` world (every feature, skills the
//! plugin makes, and `wasi:keyvalue`), generated from `wit/`.
//!
//! Plugin authors rarely need this module: the SDK re-exports the types they
//! use and [`crate::export!`] implements the exports. It is public so that the
//! export macro can reach it from the plugin crate.
//!
//! The generated items carry the doc comments of `wit/plugin.wit`; parts the
//! WIT leaves undocumented (generated module paths, self-describing fields)
//! are exempt from the crate's `missing_docs` lint.

#![allow(missing_docs)]

wit_bindgen::generate!({
    world: "full-plugin",
    path: "../wit",
    pub_export_macro: true,
    export_macro_name: "__export_bindings",
    default_bindings_module: "wasm_mcp_sdk::bindings",
    runtime_path: "wasm_mcp_sdk::bindings::__rt",
    generate_all,
    additional_type_attributes: {
        "wasm-mcp:plugin/types@0.1.0/annotations": [#[derive(Default)]],
        "wasm-mcp:plugin/tools@0.1.0/tool-annotations": [#[derive(Default)]],
    },
});

#[doc(hidden)]
pub use wit_bindgen::rt as __rt;
