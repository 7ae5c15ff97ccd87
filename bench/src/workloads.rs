//! The tools every server in the suite serves, compiled natively: `echo`,
//! `count_primes` and `count_primes_by_division` (the sieve and the trial
//! division of `wasm-mcp-workloads`, the same Rust code the spinner test
//! plugin compiles to wasm), and the calls the suite makes.

use serde_json::{Value, json};
use wasm_mcp_tests::stdio::ToolCall;

/// The text the echo calls send, and must get back.
pub const ECHO_MESSAGE: &str = "hello from the bench";

/// The primes counted by the suite's sieve calls.
pub const PRIMES_BELOW: u32 = 2_000_000;

/// The primes counted by the suite's trial-division calls.
pub const DIVISION_BELOW: u32 = 200_000;

/// `echo`: the message it is given.
pub fn echo(arguments: &Value) -> Option<String> {
    arguments.get("message")?.as_str().map(str::to_owned)
}

/// `count_primes`: what the spinner test plugin answers.
pub fn count_primes(arguments: &Value) -> Option<String> {
    let below = u32::try_from(arguments.get("below")?.as_u64()?).ok()?;
    Some(primes_below(below))
}

/// `count_primes_by_division`: what the spinner test plugin answers.
pub fn count_primes_by_division(arguments: &Value) -> Option<String> {
    let below = u32::try_from(arguments.get("below")?.as_u64()?).ok()?;
    Some(format!(
        "{} primes below {below}",
        wasm_mcp_workloads::trial_division(below)
    ))
}

/// The answer of `count_primes` below `below`.
pub fn primes_below(below: u32) -> String {
    format!("{} primes below {below}", wasm_mcp_workloads::sieve(below as usize))
}

/// The suite's `echo` call.
pub fn echo_call() -> ToolCall {
    let arguments = json!({ "message": ECHO_MESSAGE });
    ToolCall {
        tool: "echo",
        expected: echo(&arguments).expect("echo arguments"),
        arguments,
    }
}

/// The suite's `count_primes` call.
pub fn count_primes_call() -> ToolCall {
    let arguments = json!({ "below": PRIMES_BELOW });
    ToolCall {
        tool: "count_primes",
        expected: count_primes(&arguments).expect("count_primes arguments"),
        arguments,
    }
}

/// The suite's `count_primes_by_division` call.
pub fn division_call() -> ToolCall {
    let arguments = json!({ "below": DIVISION_BELOW });
    ToolCall {
        tool: "count_primes_by_division",
        expected: count_primes_by_division(&arguments).expect("count_primes_by_division arguments"),
        arguments,
    }
}
