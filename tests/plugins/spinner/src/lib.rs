//! A plugin that misbehaves on purpose, for the host's limit, cancellation,
//! trap and output-capture tests: it burns CPU, sleeps, allocates, panics,
//! overflows its stack, prints, and returns large results.

use std::hint::black_box;
use std::thread::sleep;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use wasm_mcp_sdk::{NoArgs, Plugin, Tool, host};

/// Loops forever without ever asking whether it was cancelled.
fn spin(_: NoArgs) -> String {
    let mut x = 0u64;
    loop {
        x = black_box(x.wrapping_add(1));
    }
}

/// Loops until the host says the request was cancelled.
fn spin_checked(_: NoArgs) -> String {
    let mut checks = 0u64;
    while !host::is_cancelled() {
        let mut x = 0u64;
        for _ in 0..10_000 {
            x = black_box(x.wrapping_add(1));
        }
        checks += 1;
    }
    format!("cancelled after {checks} checks")
}

#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    /// How long to sleep, in milliseconds.
    ms: u64,
}

fn sleep_ms(args: SleepArgs) -> String {
    sleep(Duration::from_millis(args.ms));
    format!("slept {} ms", args.ms)
}

#[derive(Deserialize, JsonSchema)]
struct AllocArgs {
    /// How many MiB to allocate and touch.
    mb: u64,
}

/// Allocates and writes every page; a failed allocation traps.
fn alloc(args: AllocArgs) -> String {
    let bytes = usize::try_from(args.mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
    let mut block = vec![0u8; bytes];
    for page in block.chunks_mut(4096) {
        page[0] = 1;
    }
    black_box(&block);
    format!("allocated {} MiB", args.mb)
}

fn panic(_: NoArgs) -> String {
    panic!("panic requested by the caller")
}

#[derive(Deserialize, JsonSchema)]
struct BigOutputArgs {
    /// How many KiB of text to return.
    kb: u64,
}

/// `kb` × 1024 bytes of `x`.
fn big_output(args: BigOutputArgs) -> String {
    "x".repeat(usize::try_from(args.kb.saturating_mul(1024)).unwrap_or(usize::MAX))
}

/// Recurses until the stack overflows (the guard never holds). Each frame
/// keeps a block alive across the call, and `black_box` on the result keeps
/// the compiler from turning the recursion into a loop.
fn trap_stack(_: NoArgs) -> String {
    fn depth(n: u64) -> u64 {
        let frame = black_box([n; 32]);
        if frame[0] == u64::MAX {
            return 0;
        }
        black_box(depth(n + 1)) ^ frame[31]
    }
    format!("returned {}", depth(0))
}

#[derive(Deserialize, JsonSchema)]
struct PrintArgs {
    /// The text written to stdout and to stderr.
    text: String,
}

fn print(args: PrintArgs) -> &'static str {
    println!("{}", args.text);
    eprintln!("{}", args.text);
    "printed"
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool(Tool::new("spin", spin).description("Burns CPU forever; never checks for cancellation."))
        .tool(
            Tool::new("spin_checked", spin_checked)
                .description("Burns CPU until the request is cancelled, checking between rounds."),
        )
        .tool(Tool::new("sleep", sleep_ms).description("Sleeps `ms` milliseconds, then returns \"slept <ms> ms\"."))
        .tool(
            Tool::new("alloc", alloc)
                .description("Allocates and touches `mb` MiB, then returns \"allocated <mb> MiB\"."),
        )
        .tool(Tool::new("panic", panic).description("Panics (the instance traps)."))
        .tool(Tool::new("big_output", big_output).description("Returns `kb` KiB of text."))
        .tool(Tool::new("trap_stack", trap_stack).description("Recurses until the stack overflows."))
        .tool(Tool::new("print", print).description("Writes `text` to stdout and stderr, then returns \"printed\"."))
}

wasm_mcp_sdk::export!(plugin);
