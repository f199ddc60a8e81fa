//! The cost of one more event on a long turn: apply 1,000 fresh events to a turn that already
//! holds N, for N = 1k and N = 100k, and compare. Per-event work that grows with the turn would
//! show as a ratio above 1.
//!
//! `cargo bench -p anchor --bench marginal` prints one JSON object.

use std::hint::black_box;
use std::time::{Duration, Instant};

use anchor::synthetic::{self, RUN, SESSION};
use anchor::{Registry, Seed};
use serde_json::{json, Value};

const BATCH: usize = 1_000;
const ROUNDS: usize = 11;

/// A turn of `n` events, with the frames it was built from (kept alive by the caller so that
/// freeing them cannot land in a timed region).
fn prefilled(n: usize, ctx: &Value) -> (Registry, Vec<Value>) {
    let frames: Vec<Value> = synthetic::turn(n, 42)
        .iter()
        .map(|e| e.live_frame())
        .collect();
    let mut r = Registry::new(&Seed::new(SESSION).stream(RUN)).unwrap();
    for frame in &frames {
        let _ = r.apply(frame, ctx);
    }
    (r, frames)
}

/// Fresh live token frames continuing a turn of `n` events.
fn more(n: usize) -> Vec<Value> {
    (0..BATCH)
        .map(|i| {
            let seq = n + 1 + i;
            json!({"type": "token", "data": format!("{{\"text\":\"more {i} \"}}"), "lastEventId": format!("{RUN}:{seq}")})
        })
        .collect()
}

/// Median nanoseconds per event over `ROUNDS` freshly built turns of `n` events.
///
/// Each turn is built for its round (a clone would not do: cloned vectors have no spare
/// capacity, so the first push would copy the whole turn) and kept until the end, so that
/// nothing is freed just before a measurement: glibc consolidates a large free inside the next
/// allocations, which would be timed as if it were the anchor's work.
fn per_event_ns(n: usize, ctx: &Value) -> f64 {
    let inputs = more(n);
    let mut kept = Vec::with_capacity(ROUNDS);
    let mut samples: Vec<Duration> = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let (mut r, frames) = prefilled(n, ctx);
        let before = r.stats().applied;
        let start = Instant::now();
        for input in &inputs {
            let _ = black_box(r.apply(input, ctx));
        }
        samples.push(start.elapsed());
        assert_eq!(r.stats().applied, before + BATCH as u64);
        kept.push((r, frames));
    }
    drop(kept);
    samples.sort();
    samples[ROUNDS / 2].as_nanos() as f64 / BATCH as f64
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument that excludes us skips the run.
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with('-') && !"marginal".contains(a.as_str()))
    {
        return;
    }
    let ctx = json!({"session_id": SESSION, "stream_id": RUN});
    let small = per_event_ns(1_000, &ctx);
    let large = per_event_ns(100_000, &ctx);
    println!(
        "{}",
        json!({
            "batch": BATCH,
            "rounds": ROUNDS,
            "ns_per_event_at_1k": (small * 10.0).round() / 10.0,
            "ns_per_event_at_100k": (large * 10.0).round() / 10.0,
            "ratio_100k_over_1k": (large / small * 1000.0).round() / 1000.0,
        })
    );
}
