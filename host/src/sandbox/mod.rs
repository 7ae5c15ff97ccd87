//! Turns a plugin's grants into the WASI context its calls run with.
//!
//! Deny by default: no files, no environment, no network, no arguments, and
//! stdio that never reaches the protocol stream (stdin is empty; stdout and
//! stderr are captured into bounded buffers).

use wasmtime_wasi::WasiCtx;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;

/// Bytes of guest stdout or stderr kept per call; writes beyond fail in the guest.
pub const CAPTURED_OUTPUT_BYTES: usize = 64 << 10;

/// The captured stdout and stderr of one call.
pub struct CapturedOutput {
    pub stdout: MemoryOutputPipe,
    pub stderr: MemoryOutputPipe,
}

/// A WASI context that grants nothing, and the buffers its stdio writes to.
pub fn deny_all() -> (WasiCtx, CapturedOutput) {
    let output = CapturedOutput {
        stdout: MemoryOutputPipe::new(CAPTURED_OUTPUT_BYTES),
        stderr: MemoryOutputPipe::new(CAPTURED_OUTPUT_BYTES),
    };
    let mut builder = WasiCtx::builder();
    builder
        .stdout(output.stdout.clone())
        .stderr(output.stderr.clone());
    (builder.build(), output)
}
