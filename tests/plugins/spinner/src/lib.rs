//! A plugin that misbehaves on purpose, for the host's limit, cancellation,
//! trap and output-capture tests: it burns CPU, sleeps, allocates, panics,
//! overflows its stack, prints, and returns large results. Besides its
//! tools, a resource template (`spinner://misbehave/{how}`) and a prompt
//! (`spin`) misbehave the same way, for the limits of requests other than
//! tools/call.

use std::hint::black_box;
use std::thread::sleep;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use wasm_mcp_sdk::{Error, NoArgs, Plugin, Prompt, PromptMessage, ResourceContents, ResourceTemplate, Tool, host};
use wasm_mcp_workloads::{sieve, trial_division};

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

/// Recurses with nothing kept in linear memory, so the wasm call stack
/// itself overflows (which `trap_stack`'s frames, kept on the shadow stack in
/// linear memory, never reach first).
fn trap_call_stack(_: NoArgs) -> String {
    #[inline(never)]
    fn depth(n: u64) -> u64 {
        if n == 0 {
            return 1;
        }
        depth(n - 1).wrapping_mul(31).wrapping_add(n)
    }
    format!("returned {}", depth(black_box(u64::MAX)))
}

#[derive(Deserialize, JsonSchema)]
struct PrimesArgs {
    /// Count the primes below this number.
    below: u32,
}

/// CPU-bound work in tight loops, with no host calls: the sieve of
/// `wasm-mcp-workloads`, which the benchmarks also run natively.
fn count_primes(args: PrimesArgs) -> String {
    format!("{} primes below {}", sieve(args.below as usize), args.below)
}

/// CPU-bound work that is mostly divisions: `trial_division` of
/// `wasm-mcp-workloads`, which the benchmarks also run natively.
fn count_primes_by_division(args: PrimesArgs) -> String {
    format!("{} primes below {}", trial_division(args.below), args.below)
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

/// Reads of `spinner://misbehave/{how}`: `spin` loops forever, `alloc`
/// allocates 1 GiB, `panic` panics, `big` returns 1 MiB of text; anything
/// else is not found.
fn misbehave(uri: &str, how: Option<&str>) -> Result<Vec<ResourceContents>, Error> {
    let text = match how {
        Some("spin") => spin(NoArgs {}),
        Some("alloc") => alloc(AllocArgs { mb: 1024 }),
        Some("panic") => panic(NoArgs {}),
        Some("big") => big_output(BigOutputArgs { kb: 1024 }),
        _ => return Err(Error::NotFound(uri.to_string())),
    };
    Ok(vec![ResourceContents::text(uri, "text/plain", text)])
}

fn plugin() -> Plugin {
    Plugin::new()
        .resource_template(
            ResourceTemplate::new("spinner://misbehave/{how}", "misbehave", |uri, vars| {
                misbehave(uri, vars.get("how"))
            })
            .description("Reading `spin` loops forever, `alloc` allocates 1 GiB, `panic` panics, `big` is 1 MiB."),
        )
        .prompt(
            Prompt::new("spin", |_: NoArgs| -> Result<Vec<PromptMessage>, Error> {
                let text = spin(NoArgs {});
                Ok(vec![PromptMessage::user(wasm_mcp_sdk::ContentBlock::text(text))])
            })
            .description("Loops forever while building the prompt."),
        )
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
        .tool(
            Tool::new("trap_stack", trap_stack)
                .description("Recurses until the stack overflows (the shadow stack in linear memory)."),
        )
        .tool(
            Tool::new("trap_call_stack", trap_call_stack).description("Recurses until the wasm call stack overflows."),
        )
        .tool(
            Tool::new("count_primes", count_primes)
                .description("Counts the primes below `below` with a sieve (CPU-bound, no host calls)."),
        )
        .tool(
            Tool::new("count_primes_by_division", count_primes_by_division)
                .description("Counts the primes below `below` by trial division (CPU-bound, no host calls)."),
        )
        .tool(Tool::new("print", print).description("Writes `text` to stdout and stderr, then returns \"printed\"."))
}

wasm_mcp_sdk::export!(plugin);
