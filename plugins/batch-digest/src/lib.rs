//! A long-running tool done right, to copy from: `digest_batch` works through
//! its input one step at a time, reports progress after every step, asks the
//! host whether the request was cancelled between steps (and stops with a
//! clear result if so), and declares that it may run as an MCP task so a
//! client can start it, poll it, and collect the result later.
//!
//! The work itself is key stretching: each input is hashed with SHA-256, then
//! the digest is hashed again, `rounds` times. That is slow on purpose, and
//! the same for every run, so results can be checked.
//!
//! `digest` is the quick, single-input version of the same computation; it
//! stays an ordinary call (task support forbidden, the default).
//!
//! The manifest beside the component (`batch-digest.toml`) raises the fuel
//! and wall-clock limits of `digest_batch` above the host's defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use wasm_mcp_sdk::host::{self, LogLevel};
use wasm_mcp_sdk::{Plugin, Structured, TaskSupport, Tool};

/// Within one step, how many rounds run between two cancellation checks:
/// a step may be long, and asking the host is cheap but not free.
const ROUNDS_PER_CHECK: u64 = 100_000;

const DEFAULT_BATCH_ROUNDS: u64 = 1_000_000;

fn default_batch_rounds() -> u64 {
    DEFAULT_BATCH_ROUNDS
}

fn one_round() -> u64 {
    1
}

/// Hashes `input` with SHA-256, then hashes the digest again until `rounds`
/// hashes were computed. Returns `None` if `cancelled` said stop first.
fn stretch(input: &[u8], rounds: u64, cancelled: impl Fn() -> bool) -> Option<[u8; 32]> {
    let mut digest: [u8; 32] = Sha256::digest(input).into();
    for round in 1..rounds {
        if round % ROUNDS_PER_CHECK == 0 && cancelled() {
            return None;
        }
        digest = Sha256::digest(digest).into();
    }
    Some(digest)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One input and how strongly to stretch it.
#[derive(Deserialize, JsonSchema)]
struct DigestArgs {
    /// The text to digest.
    text: String,
    /// How many SHA-256 hashes to chain (1 is a plain SHA-256 of the text).
    #[serde(default = "one_round")]
    #[schemars(range(min = 1, max = 10_000_000), default = "one_round")]
    rounds: u64,
}

/// The digest of one input.
#[derive(Serialize, JsonSchema)]
struct DigestReport {
    /// Hex SHA-256 digest after the last round.
    digest: String,
    /// The rounds computed.
    rounds: u64,
}

fn digest(args: DigestArgs) -> Structured<DigestReport> {
    let digest = stretch(args.text.as_bytes(), args.rounds, || false).expect("never cancelled");
    Structured(DigestReport {
        digest: hex(&digest),
        rounds: args.rounds,
    })
}

/// A batch of inputs, each digested in its own step.
#[derive(Deserialize, JsonSchema)]
struct BatchArgs {
    /// The texts to digest, in order; each is one step of the batch.
    #[schemars(length(min = 1, max = 1000))]
    items: Vec<String>,
    /// How many SHA-256 hashes to chain per text (default 1 000 000: about a
    /// second per text).
    #[serde(default = "default_batch_rounds")]
    #[schemars(range(min = 1, max = 100_000_000), default = "default_batch_rounds")]
    rounds: u64,
}

/// The digest of one input of the batch.
#[derive(Serialize, JsonSchema)]
struct ItemDigest {
    /// The input's position in `items`, from 0.
    index: usize,
    /// Hex SHA-256 digest after the last round.
    digest: String,
}

/// What a batch produced.
#[derive(Serialize, JsonSchema)]
struct BatchReport {
    /// One sentence on how the batch went.
    summary: String,
    /// Inputs digested.
    completed: usize,
    /// Inputs in the batch.
    total: usize,
    /// Rounds per input.
    rounds: u64,
    /// Whether the batch stopped before its end because it was cancelled.
    cancelled: bool,
    /// The digests of the inputs done, in order.
    digests: Vec<ItemDigest>,
}

/// The pattern for a long-running tool: one step at a time, progress after
/// each, a cancellation check between them.
fn digest_batch(args: BatchArgs) -> Structured<BatchReport> {
    let total = args.items.len();
    let mut digests = Vec::with_capacity(total);
    let mut cancelled = false;
    for (index, item) in args.items.iter().enumerate() {
        // Between steps: stop cleanly if the client gave up. The host would
        // stop the instance anyway, at its next yield (every million units of
        // fuel); asking first lets the plugin end on a step boundary with a
        // clear result.
        if host::is_cancelled() {
            cancelled = true;
            break;
        }
        let Some(digest) = stretch(item.as_bytes(), args.rounds, host::is_cancelled) else {
            cancelled = true;
            break;
        };
        digests.push(ItemDigest {
            index,
            digest: hex(&digest),
        });
        let done = digests.len();
        host::progress(
            done as f64,
            Some(total as f64),
            Some(&format!("digested {done} of {total} inputs")),
        );
    }
    let completed = digests.len();
    let summary = if cancelled {
        host::log(
            LogLevel::Notice,
            &format!("digest_batch cancelled after {completed} of {total} inputs"),
        );
        format!("Cancelled: stopped after {completed} of {total} inputs; the digests done so far are included.")
    } else {
        format!("Digested all {total} inputs with {} SHA-256 rounds each.", args.rounds)
    };
    Structured(BatchReport {
        summary,
        completed,
        total,
        rounds: args.rounds,
        cancelled,
        digests,
    })
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool(
            Tool::new("digest", digest)
                .title("Digest")
                .description(
                    "Hex SHA-256 digest of `text`, hashed again `rounds` times in all (default 1: plain SHA-256). \
                     Quick; for many inputs or many rounds use digest_batch.",
                )
                .read_only_hint(true)
                .idempotent_hint(true)
                .open_world_hint(false),
        )
        .tool(
            Tool::new("digest_batch", digest_batch)
                .title("Digest a batch (long-running)")
                .description(
                    "Digests each of `items` with `rounds` chained SHA-256 hashes (default 1 000 000, about \
                     a second per item), one item per step. Reports progress after each item and stops early \
                     when cancelled (a cancelled call has no result). Slow: call it as a task \
                     (params.task) to poll for the result instead of waiting.",
                )
                .read_only_hint(true)
                .idempotent_hint(true)
                .open_world_hint(false)
                .task_support(TaskSupport::Optional),
        )
}

wasm_mcp_sdk::export!(plugin);

/// Native unit tests (`cargo test -p batch-digest`, no wasm). Those of the
/// tool use the SDK's fake host, which records progress and logs and decides
/// when the request is cancelled.
#[cfg(test)]
mod tests {
    use super::*;
    use wasm_mcp_sdk::testing::FakeHost;

    #[test]
    fn one_round_is_plain_sha256() {
        let digest = stretch(b"abc", 1, || false).unwrap();
        assert_eq!(
            hex(&digest),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn rounds_chain_the_digest() {
        let once = stretch(b"abc", 1, || false).unwrap();
        let twice = stretch(b"abc", 2, || false).unwrap();
        assert_eq!(twice, <[u8; 32]>::from(Sha256::digest(once)));
    }

    #[test]
    fn a_cancelled_stretch_stops() {
        assert!(stretch(b"abc", 10 * ROUNDS_PER_CHECK, || true).is_none());
    }

    fn batch(items: &[&str], rounds: u64) -> BatchArgs {
        BatchArgs {
            items: items.iter().map(|s| s.to_string()).collect(),
            rounds,
        }
    }

    #[test]
    fn reports_progress_after_every_item() {
        let fake = FakeHost::new();
        let Structured(report) = fake.run(|| digest_batch(batch(&["a", "b", "c"], 2)));
        assert_eq!((report.completed, report.total, report.cancelled), (3, 3, false));
        let done: Vec<(f64, Option<f64>)> = fake.progress().iter().map(|p| (p.progress, p.total)).collect();
        assert_eq!(done, [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]);
        assert_eq!(fake.progress()[2].message.as_deref(), Some("digested 3 of 3 inputs"));
        assert!(fake.logs().is_empty());
    }

    #[test]
    fn stops_on_a_step_boundary_when_cancelled() {
        // Each short item asks once (before its step): cancelled at the third check.
        let fake = FakeHost::new().cancel_after_checks(2);
        let Structured(report) = fake.run(|| digest_batch(batch(&["a", "b", "c", "d"], 2)));
        assert!(report.cancelled);
        assert_eq!(report.completed, 2);
        assert_eq!(report.digests.len(), 2);
        assert_eq!(fake.cancel_checks(), 3);
        assert_eq!(fake.progress().len(), 2);
        assert_eq!(
            fake.logs(),
            [(
                LogLevel::Notice,
                "digest_batch cancelled after 2 of 4 inputs".to_string()
            )]
        );
    }

    #[test]
    fn checks_for_cancellation_within_a_long_step() {
        let fake = FakeHost::new().cancel_after_checks(1);
        let Structured(report) = fake.run(|| digest_batch(batch(&["long"], 3 * ROUNDS_PER_CHECK)));
        assert!(report.cancelled);
        assert_eq!(report.completed, 0);
    }

    #[test]
    fn the_whole_tool_through_the_plugin() {
        let fake = FakeHost::new();
        let result = fake
            .run(|| plugin().call_tool("digest_batch", r#"{"items": ["x"], "rounds": 1}"#))
            .expect("digest_batch exists");
        assert!(!result.is_error);
        let report: serde_json::Value = serde_json::from_str(result.structured_content.as_deref().unwrap()).unwrap();
        assert_eq!(report["completed"], 1);
        assert_eq!(fake.progress().len(), 1);
    }
}
