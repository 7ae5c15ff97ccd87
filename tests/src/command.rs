//! Running the one-shot commands (`wasm-mcp push`, `add`, `sign`, … and
//! third-party clients) the tests drive, and saying what they printed when
//! they did not end as expected.

use std::process::{Command, Output};

/// Runs `command`; its output.
pub fn run(mut command: Command) -> Output {
    command.output().unwrap_or_else(|e| panic!("run {command:?}: {e}"))
}

/// Runs `command`, which must succeed; its stdout.
#[track_caller]
pub fn succeeds(command: Command) -> String {
    let output = run(command);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    );
    assert!(
        output.status.success(),
        "failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    stdout
}

/// Runs `command`, which must fail with status 1; its stderr.
#[track_caller]
pub fn fails(command: Command) -> String {
    let output = run(command);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.code(),
        Some(1),
        "expected failure; stdout:\n{}\nstderr:\n{stderr}",
        String::from_utf8_lossy(&output.stdout)
    );
    stderr
}
