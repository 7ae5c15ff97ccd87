//! Build-time settings of the binary: it is rebuilt when a directory `wasm-mcp new` embeds
//! changes (`include_dir!` is not tracked by cargo the way `include_str!` is), and on glibc it is
//! linked with packed relative relocations (`DT_RELR`): the 2 MB table of about 84 000
//! relocations the loader reads at every start becomes 22 KB (fewer pages read and kept at
//! start), where the linker and the C library support it (GNU ld 2.38 and glibc 2.36 on).

fn main() {
    println!("cargo:rerun-if-changed=templates");
    println!("cargo:rerun-if-changed=../sdk-guest/src");
    println!("cargo:rerun-if-changed=../sdk-guest/examples");
    let target = |name| std::env::var(name).unwrap_or_default();
    if target("CARGO_CFG_TARGET_OS") == "linux" && target("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
