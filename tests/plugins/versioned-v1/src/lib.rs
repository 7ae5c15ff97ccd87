//! Version 1 of the `versioned` test plugin: the same tools and resource as
//! every other version, answering "v1". Hot-reload tests copy it over
//! `versioned.wasm` to swap versions (see `../versioned.rs`).

const VERSION: &str = "v1";

include!("../../versioned.rs");
