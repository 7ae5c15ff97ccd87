//! The one wasmtime `Engine` every plugin runs on.
//!
//! The engine is configured once, at start, for everything later features need:
//! async calls, fuel metering (which also makes a running plugin yield to
//! tokio, see `crate::call::FUEL_YIELD_INTERVAL`) and the pooling allocator (a
//! fresh instance per call is cheap).

use anyhow::Result;
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// Bytes of each pooled linear memory and table kept resident between calls:
/// the pages a call dirtied within them are zeroed in place, the rest is
/// decommitted.
///
/// Wasmtime 50.0.0–50.0.1 scanned for dirty pages without asking for present
/// (or swapped) ones, so Linux reported every page never touched as written
/// and each reset zeroed the whole budget; 50.0.2 asks for pages that are
/// present or swapped again. With that fix 64 KiB, 256 KiB and 1 MiB cost
/// the same CPU per call (bench/HISTORY.md, entry 14), and 64 KiB keeps
/// the least resident.
const KEEP_RESIDENT_BYTES: usize = 64 << 10;

/// How the engine is set up: the sizes of its pools.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// Plugin calls that may hold an instance at the same moment.
    pub max_instances: u32,
    /// The largest linear memory any plugin may be granted, in bytes.
    pub max_memory_bytes: usize,
}

/// Builds the engine every plugin shares.
pub fn plugin_engine(settings: &EngineSettings) -> Result<Engine> {
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(settings.max_instances)
        .total_core_instances(settings.max_instances * 8)
        .total_memories(settings.max_instances * 2)
        .total_tables(settings.max_instances * 8)
        .total_stacks(settings.max_instances)
        .max_memories_per_component(4)
        .max_memory_size(settings.max_memory_bytes)
        .max_core_instance_size(1 << 20)
        .max_component_instance_size(1 << 20)
        .table_elements(100_000)
        // A slot handed back is reset by zeroing the pages the call
        // dirtied (found with PAGEMAP_SCAN where the kernel has it)
        // rather than by madvise: no page faults on the next call and no
        // TLB shootdowns across cores.
        .pagemap_scan(Enabled::Auto)
        .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
        .table_keep_resident(KEEP_RESIDENT_BYTES);

    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .consume_fuel(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Ok(Engine::new(&config)?)
}
