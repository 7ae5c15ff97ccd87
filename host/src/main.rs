//! The `wasm-mcp` binary: the command line of [`cli`] over the `wasm_mcp` library.

mod cli;

fn main() -> anyhow::Result<()> {
    cli::run()
}
