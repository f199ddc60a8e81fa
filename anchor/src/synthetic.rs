//! Synthetic turns for benchmarks and property tests: deterministic, realistic event mixes in
//! every source shape, generated from a size and a seed (no randomness source is touched).
//!
//! The mix follows the reference benchmark: reasoning bursts, token bursts,
//! `tool` + `metering` + `tool_complete` triples, an `interim_assistant` after about a fifth of
//! the prose bursts, then `done` and `stream_end`.

use serde_json::{json, Value};

/// The session every synthetic turn belongs to.
pub const SESSION: &str = "sess-bench";
/// The run (and stream) every synthetic turn belongs to.
pub const RUN: &str = "run-bench";

/// One journaled event of a synthetic turn.
#[derive(Clone, Debug, PartialEq)]
pub struct JournalEvent {
    /// Gapless from 1.
    pub seq: u64,
    /// The SSE event name.
    pub kind: &'static str,
    /// The SSE data object.
    pub payload: Value,
    /// Seconds since the epoch, as the journal records it.
    pub created_at: f64,
}

impl JournalEvent {
    /// `run:seq`.
    pub fn event_id(&self) -> String {
        format!("{RUN}:{}", self.seq)
    }

    /// As a live SSE frame: `{type, data: "<json>", lastEventId}`.
    pub fn live_frame(&self) -> Value {
        json!({"type": self.kind, "data": self.payload.to_string(), "lastEventId": self.event_id()})
    }

    /// As a journal replay row.
    pub fn journal_row(&self) -> Value {
        json!({
            "version": 1,
            "event_id": self.event_id(),
            "seq": self.seq,
            "run_id": RUN,
            "session_id": SESSION,
            "event": self.kind,
            "type": self.kind,
            "created_at": self.created_at,
            "terminal": matches!(self.kind, "done" | "stream_end"),
            "payload": self.payload,
        })
    }
}

/// A small deterministic generator (64-bit LCG, Knuth's constants).
#[derive(Clone, Debug)]
pub struct Lcg(u64);

impl Lcg {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Lcg(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// The next value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n.max(1)
    }
}

const WORDS: [&str; 24] = [
    "the",
    "anchor",
    "stream",
    "journal",
    "replay",
    "cursor",
    "settles",
    "turn",
    "in",
    "place",
    "without",
    "a",
    "second",
    "bubble",
    "and",
    "every",
    "event",
    "keeps",
    "its",
    "identity",
    "across",
    "reconnects",
    "so",
    "nothing",
];
const TOOLS: [&str; 5] = [
    "terminal",
    "read_file",
    "search_text",
    "write_file",
    "list_files",
];

fn words(rng: &mut Lcg, n: u64) -> String {
    (0..n)
        .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
        .collect::<Vec<_>>()
        .join(" ")
}

/// The journal of a turn with exactly `n` events (`n >= 2`), the last two `done`, `stream_end`.
pub fn turn(n: usize, seed: u64) -> Vec<JournalEvent> {
    let mut rng = Lcg::new(seed);
    let body = n.saturating_sub(2);
    let mut events: Vec<(&'static str, Value)> = Vec::with_capacity(n);
    let mut tool_no = 0u64;
    while events.len() < body {
        let room = body - events.len();
        match rng.below(3) {
            0 => {
                for _ in 0..(3 + rng.below(6)).min(room as u64) {
                    let len = 6 + rng.below(10);
                    events.push((
                        "reasoning",
                        json!({"text": format!("{} ", words(&mut rng, len))}),
                    ));
                }
            }
            1 => {
                let burst = (5 + rng.below(16)).min(room as u64);
                for _ in 0..burst {
                    let len = 1 + rng.below(3);
                    events.push((
                        "token",
                        json!({"text": format!("{} ", words(&mut rng, len))}),
                    ));
                }
                if events.len() < body && rng.below(5) == 0 {
                    events.push((
                        "interim_assistant",
                        json!({"text": words(&mut rng, 12), "already_streamed": false}),
                    ));
                }
            }
            _ if room >= 3 => {
                tool_no += 1;
                let name = TOOLS[rng.below(TOOLS.len() as u64) as usize];
                let tid = format!("call_{tool_no:05}");
                let args = json!({"path": format!("src/{}.rs", words(&mut rng, 1)), "limit": 200});
                events.push((
                    "tool",
                    json!({"event_type": "tool.started", "name": name, "preview": null, "args": args, "tid": tid}),
                ));
                events.push((
                    "metering",
                    json!({"tps": 41.5, "tps_available": true, "estimated": false, "active": 1, "session_id": SESSION}),
                ));
                let failed = rng.below(10) == 0;
                events.push((
                    "tool_complete",
                    json!({"event_type": "tool.completed", "name": name, "preview": words(&mut rng, 14), "args": args,
                        "tid": tid, "is_error": failed}),
                ));
            }
            _ => events.push(("token", json!({"text": "."}))),
        }
    }
    events.truncate(body);
    events.push((
        "done",
        json!({"usage": {"input_tokens": 1200 + n as u64, "output_tokens": n as u64 / 2}}),
    ));
    events.push(("stream_end", json!({"session_id": SESSION})));
    events
        .into_iter()
        .enumerate()
        .map(|(i, (kind, payload))| JournalEvent {
            seq: i as u64 + 1,
            kind,
            payload,
            created_at: 1_781_200_000.0 + i as f64 * 0.05,
        })
        .collect()
}

/// The settled assistant message of a synthetic turn.
pub fn settled_message() -> Value {
    json!({"source_type": "settled_message", "payload": {"role": "assistant", "id": "msg-bench",
        "content": "The anchor settles in place.", "_turnUsage": {"input_tokens": 1200, "output_tokens": 345}}})
}

/// The registry seed of a synthetic turn, as a trace's `config.anchor`.
pub fn seed() -> Value {
    json!({"session_id": SESSION, "stream_id": RUN, "run_id": null})
}

/// The benchmark turn the reference uses as `(source, input)` pairs: every event as a live frame,
/// then every event again as a journal row, then the settled message (`2n + 1` inputs).
pub fn benchmark_inputs(n: usize, seed: u64) -> Vec<(&'static str, Value)> {
    let journal = turn(n, seed);
    let mut inputs: Vec<(&'static str, Value)> =
        journal.iter().map(|e| ("live", e.live_frame())).collect();
    inputs.extend(journal.iter().map(|e| ("replay", e.journal_row())));
    inputs.push(("settled", settled_message()));
    inputs
}

/// [`benchmark_inputs`] as a trace file (JSON Lines with a config line).
pub fn benchmark_trace(n: usize, seed: u64) -> String {
    let mut out = json!({"config": {"anchor": self::seed(), "context": {"session_id": SESSION, "stream_id": RUN},
        "mode": "compact_worklog", "entry": "sequential"}})
    .to_string();
    out.push('\n');
    for (source, event) in benchmark_inputs(n, seed) {
        out.push_str(&json!({"source": source, "event": event}).to_string());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_have_the_requested_size_and_end_with_done_and_stream_end() {
        for n in [2, 3, 10, 1000] {
            let t = turn(n, 7);
            assert_eq!(t.len(), n);
            assert_eq!(t[n - 2].kind, "done");
            assert_eq!(t[n - 1].kind, "stream_end");
            assert!(t.iter().enumerate().all(|(i, e)| e.seq == i as u64 + 1));
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_turn() {
        assert_eq!(turn(500, 3), turn(500, 3));
        assert_ne!(turn(500, 3), turn(500, 4));
    }
}
