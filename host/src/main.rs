//! The `wasm-mcp` binary: the command line of the `wasm_mcp` library
//! ([`wasm_mcp::cli`]), with the allocator set up for it.

use std::process::ExitCode;

fn main() -> ExitCode {
    without_fast_bins();
    wasm_mcp::cli::main()
}

/// Turns off glibc malloc's fast bins. Every plugin call makes a store of a
/// few KiB, and each allocation that large first consolidated every small
/// block freed into the fast bins since the last one; without them a freed
/// block is merged at once, and the per-thread caches still serve small
/// blocks quickly. Server CPU per echo call with 16 in flight fell by about
/// a third (bench/HISTORY.md, entry 15).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn without_fast_bins() {
    // SAFETY: mallopt only changes a setting of the allocator, which glibc
    // reads under its own lock.
    unsafe {
        libc::mallopt(libc::M_MXFAST, 0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn without_fast_bins() {}
