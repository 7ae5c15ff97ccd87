//! Rebuilds the binary when a directory `wasm-mcp new` embeds changes (`include_dir!`
//! is not tracked by cargo the way `include_str!` is).

fn main() {
    println!("cargo:rerun-if-changed=templates");
    println!("cargo:rerun-if-changed=../sdk-guest/src");
    println!("cargo:rerun-if-changed=../sdk-guest/examples");
}
