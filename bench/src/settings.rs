//! The `WASM_MCP_BENCH_*` settings every benchmark reads.

/// Whether `WASM_MCP_BENCH_QUICK` (set and not `0`) asks for a short run, to
/// try a benchmark out: less work, and no results file written.
pub fn quick() -> bool {
    std::env::var_os("WASM_MCP_BENCH_QUICK").is_some_and(|v| v != "0")
}

/// The whole number in the variable `name`, or `default` when it is unset;
/// fails on anything else than a number above zero.
pub fn number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .unwrap_or_else(|| panic!("{name} must be a whole number above zero, got {value:?}")),
        Err(_) => default,
    }
}
