//! Version 2 of the `versioned` test plugin: the same tools and resource as
//! every other version, answering "v2". Hot-reload tests copy it over
//! `versioned.wasm` to swap versions (see `../versioned.rs`).

const VERSION: &str = "v2";

include!("../../versioned.rs");
