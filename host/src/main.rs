//! The `wasm-mcp` binary: the command line of [`cli`] over the `wasm_mcp` library.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    match cli::run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            cli::report(&error);
            ExitCode::FAILURE
        }
    }
}
