//! The tools every server in the suite serves, compiled natively: `echo` and
//! `count_primes` (the sieve of `wasm-mcp-workloads`, the same Rust code the
//! spinner test plugin compiles to wasm), and the JSON-RPC lines that call them.

use serde_json::{Value, json};

/// The text the echo calls send, and must get back.
pub const ECHO_MESSAGE: &str = "hello from the bench";

/// The primes counted by the CPU-bound calls.
pub const PRIMES_BELOW: u32 = 2_000_000;

/// `echo`: the message it is given.
pub fn echo(arguments: &Value) -> Option<String> {
    arguments.get("message")?.as_str().map(str::to_owned)
}

/// `count_primes`: what the spinner test plugin answers.
pub fn count_primes(arguments: &Value) -> Option<String> {
    let below = u32::try_from(arguments.get("below")?.as_u64()?).ok()?;
    Some(format!(
        "{} primes below {below}",
        wasm_mcp_workloads::sieve(below as usize)
    ))
}

/// One tool call the suite makes, and the text its answer must carry.
#[derive(Clone)]
pub struct ToolCall {
    pub tool: &'static str,
    pub arguments: Value,
    pub expected: String,
}

impl ToolCall {
    pub fn echo() -> Self {
        let arguments = json!({ "message": ECHO_MESSAGE });
        Self {
            tool: "echo",
            expected: echo(&arguments).expect("echo arguments"),
            arguments,
        }
    }

    pub fn count_primes() -> Self {
        let arguments = json!({ "below": PRIMES_BELOW });
        Self {
            tool: "count_primes",
            expected: count_primes(&arguments).expect("count_primes arguments"),
            arguments,
        }
    }

    /// The tools/call request line with `id`, newline included.
    pub fn request_line(&self, id: u64) -> String {
        let mut line = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": { "name": self.tool, "arguments": self.arguments },
        })
        .to_string();
        line.push('\n');
        line
    }
}
