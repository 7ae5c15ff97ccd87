//! Exercises `wasi:keyvalue` from a plugin: every operation of `store`,
//! `atomics` and `batch` with what each returned, pages of keys, filling a
//! bucket until the host refuses, and a counter kept by compare-and-swap.
//! The bucket is an argument, so a test may name one the manifest does not grant.
//! `timed` serves the benchmark: the time of each get or set, seen from the plugin.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use wasm_mcp_sdk::bindings::wasi::keyvalue::{atomics, store};
use wasm_mcp_sdk::state::{Bucket, StateError};
use wasm_mcp_sdk::{Plugin, Structured, Tool};

#[derive(Deserialize, JsonSchema)]
struct BucketArgs {
    bucket: String,
}

#[derive(Deserialize, JsonSchema)]
struct FillArgs {
    bucket: String,
    /// Keys are PREFIX-0, PREFIX-1, …
    prefix: String,
    /// How many keys to write at most.
    count: u32,
    /// Bytes of each value.
    value_bytes: u32,
    /// Write them in batches of this many with set-many (0: one set each).
    #[serde(default)]
    batch: u32,
}

#[derive(Serialize, JsonSchema)]
struct Filled {
    written: u32,
    /// What stopped it, if anything did.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Serialize, JsonSchema)]
struct Listed {
    keys: Vec<String>,
    pages: u32,
}

#[derive(Deserialize, JsonSchema)]
struct KeyArgs {
    bucket: String,
    key: String,
}

fn fill(args: FillArgs) -> Result<Structured<Filled>, StateError> {
    let bucket = Bucket::open(&args.bucket)?;
    let value = vec![b'x'; args.value_bytes as usize];
    let mut written = 0;
    let step = args.batch.max(1);
    while written < args.count {
        let end = (written + step).min(args.count);
        let keys: Vec<String> = (written..end).map(|i| format!("{}-{i}", args.prefix)).collect();
        let outcome = if args.batch == 0 {
            bucket.set(&keys[0], &value)
        } else {
            let pairs: Vec<(&str, &[u8])> = keys.iter().map(|k| (k.as_str(), value.as_slice())).collect();
            bucket.set_many(&pairs)
        };
        if let Err(error) = outcome {
            return Ok(Structured(Filled {
                written,
                error: Some(error.0),
            }));
        }
        written = end;
    }
    Ok(Structured(Filled { written, error: None }))
}

fn list(args: BucketArgs) -> Result<Structured<Listed>, StateError> {
    let bucket = Bucket::open(&args.bucket)?;
    let (mut keys, mut pages, mut cursor) = (Vec::new(), 0, None);
    loop {
        let (page, next) = bucket.keys_page(cursor.as_deref())?;
        keys.extend(page);
        pages += 1;
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(Structured(Listed { keys, pages })),
        }
    }
}

/// Text of a value, or null.
fn text(value: Option<Vec<u8>>) -> Value {
    value.map_or(Value::Null, |v| json!(String::from_utf8_lossy(&v)))
}

/// Every operation once, with what it returned.
fn operations(args: BucketArgs) -> Result<String, StateError> {
    let bucket = Bucket::open(&args.bucket)?;
    let raw = store::open(&args.bucket)?;
    let mut seen = serde_json::Map::new();
    let mut note = |name: &str, value: Value| {
        seen.insert(name.to_owned(), value);
    };
    bucket.set("a", "1")?;
    note("get a", text(bucket.get("a")?));
    note("exists a", json!(bucket.exists("a")?));
    note("exists z", json!(bucket.exists("z")?));
    bucket.delete("a")?;
    bucket.delete("never-set")?;
    note("get a after delete", text(bucket.get("a")?));
    bucket.set_many(&[("b", b"x"), ("c", b"y")])?;
    let many = bucket.get_many(&["b", "z", "c"])?;
    note("get-many b z c", json!(many.into_iter().map(text).collect::<Vec<_>>()));
    bucket.delete_many(&["b", "c"])?;
    note("exists b after delete-many", json!(bucket.exists("b")?));
    note("increment n 5", json!(bucket.increment("n", 5)?));
    note("increment n -2", json!(bucket.increment("n", -2)?));
    note("get n", text(bucket.get("n")?));
    bucket.set("n", "40")?;
    note("increment n 2 after set 40", json!(bucket.increment("n", 2)?));
    bucket.set("s", "abc")?;
    note("increment s", json!(bucket.increment("s", 1).map_err(|e| e.0).err()));
    bucket.set("max", i64::MAX.to_string())?;
    note(
        "increment max",
        json!(bucket.increment("max", 1).map_err(|e| e.0).err()),
    );
    // A compare-and-swap that another write overtakes fails, with a handle on the newer value.
    let cas = atomics::Cas::new(&raw, "k")?;
    note("cas current before", text(cas.current()?));
    bucket.set("k", "other")?;
    match atomics::swap(cas, b"mine") {
        Ok(()) => note("first swap", json!("written")),
        Err(atomics::CasError::StoreError(error)) => note("first swap", json!(StateError::from(error).0)),
        Err(atomics::CasError::CasFailed(newer)) => {
            note("first swap", json!("failed"));
            note("cas current after", text(newer.current()?));
            let second = atomics::swap(newer, b"mine").is_ok();
            note("second swap", json!(second));
        }
    }
    note("get k", text(bucket.get("k")?));
    bucket.delete_many(&["n", "s", "max", "k"])?;
    Ok(Value::Object(seen).to_string())
}

fn set(args: KeyArgs) -> Result<String, StateError> {
    Bucket::open(&args.bucket)?.set(&args.key, &args.key)?;
    Ok("set".into())
}

fn get(args: KeyArgs) -> Result<String, StateError> {
    Ok(text(Bucket::open(&args.bucket)?.get(&args.key)?).to_string())
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    bucket: String,
    key: String,
    /// How many times to add one.
    times: u32,
}

/// Adds one to the counter `key`, `times` times, with `increment`.
fn increment_times(args: CountArgs) -> Result<String, StateError> {
    let bucket = Bucket::open(&args.bucket)?;
    let mut last = 0;
    for _ in 0..args.times {
        last = bucket.increment(&args.key, 1)?;
    }
    Ok(last.to_string())
}

/// Adds one to the decimal counter `key`, `times` times, each by compare-and-swap.
fn cas_add_times(args: CountArgs) -> Result<String, StateError> {
    let bucket = Bucket::open(&args.bucket)?;
    let mut last = Vec::new();
    for _ in 0..args.times {
        last = bucket.update(&args.key, |now| {
            let count: u64 = now.and_then(|v| std::str::from_utf8(v).ok()?.parse().ok()).unwrap_or(0);
            (count + 1).to_string().into_bytes()
        })?;
    }
    Ok(String::from_utf8_lossy(&last).into_owned())
}

#[derive(Deserialize, JsonSchema)]
struct TimedArgs {
    bucket: String,
    /// `get` or `set`.
    op: String,
    count: u32,
    value_bytes: u32,
}

#[derive(Serialize, JsonSchema)]
struct Timings {
    nanos: Vec<u64>,
}

/// Runs `count` gets or sets of distinct keys (a get reads what a set of the
/// same count wrote) and returns how long each took, in nanoseconds, as the
/// plugin sees it: the crossing into the host, the store and back.
fn timed(args: TimedArgs) -> Result<Structured<Timings>, StateError> {
    let bucket = Bucket::open(&args.bucket)?;
    let value = vec![b'v'; args.value_bytes as usize];
    let mut took = Vec::with_capacity(args.count as usize);
    for i in 0..args.count {
        let key = format!("timed-{i}");
        let started = std::time::Instant::now();
        match args.op.as_str() {
            "set" => bucket.set(&key, &value)?,
            _ => {
                bucket.get(&key)?;
            }
        }
        took.push(started.elapsed().as_nanos() as u64);
    }
    Ok(Structured(Timings { nanos: took }))
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool(Tool::new("fill", fill))
        .tool(Tool::new("list", list))
        .tool(Tool::new("operations", operations))
        .tool(Tool::new("set", set))
        .tool(Tool::new("get", get))
        .tool(Tool::new("increment_times", increment_times))
        .tool(Tool::new("cas_add_times", cas_add_times))
        .tool(Tool::new("timed", timed))
}

wasm_mcp_sdk::export!(plugin);
