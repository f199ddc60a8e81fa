//! Properties of the anchor over generated turns and arbitrary JSON.

use anchor::synthetic::{self, JournalEvent, Lcg, RUN, SESSION};
use anchor::{
    normalize, project_historical_scene, project_settled_final_answer, shadow_snapshot, Mode,
    Registry, Seed, SourceEvent,
};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// A journal whose events all carry their timestamp in the payload too, so a live frame and
/// the journal row of the same event are identical copies; the settled message is journaled
/// in-band before `stream_end`, as the server does.
fn journal(n: usize, seed: u64) -> Vec<JournalEvent> {
    let mut events = synthetic::turn(n, seed);
    let stream_end = events.pop().expect("a turn ends with stream_end");
    events.push(JournalEvent {
        seq: 0,
        kind: "settled_message",
        payload: json!({"role": "assistant", "id": "msg-1", "content": "Settled.", "usage": {"input_tokens": 3}}),
        created_at: 0.0,
    });
    events.push(stream_end);
    for (i, e) in events.iter_mut().enumerate() {
        e.seq = i as u64 + 1;
        e.created_at = 1_781_200_000.0 + i as f64;
        e.payload["created_at"] = json!(e.created_at);
    }
    events
}

fn fresh() -> Registry {
    Registry::new(&Seed::new(SESSION).stream(RUN)).unwrap()
}

fn ctx() -> Value {
    json!({"session_id": SESSION, "stream_id": RUN})
}

/// The settled message as the transcript delivers it: no frame, but the journal identity.
fn transcript_copy(e: &JournalEvent) -> Value {
    json!({"source_type": "settled_message", "event_id": e.event_id(), "payload": e.payload})
}

/// How one copy of an event reaches the anchor.
#[derive(Clone, Copy)]
enum Shape {
    Live,
    Replay,
    Transcript,
}

fn shaped(e: &JournalEvent, shape: Shape) -> Value {
    match shape {
        Shape::Live => e.live_frame(),
        Shape::Replay => e.journal_row(),
        Shape::Transcript if e.kind == "settled_message" => transcript_copy(e),
        Shape::Transcript => e.journal_row(),
    }
}

/// A delivery schedule as a browser sees it: a live stream that drops after `k` events, then
/// replays resumed from cursors the client had actually reached, interleaved with each other,
/// with repeats, and the transcript's settled message at any point after it was journaled.
fn schedule(journal: &[JournalEvent], seed: u64) -> Vec<Value> {
    let mut rng = Lcg::new(seed);
    let n = journal.len();
    let k = rng.below(n as u64 + 1) as usize;
    // Streams: (next index, end, shape).
    let mut streams: Vec<(usize, usize, Shape)> = vec![(0, k, Shape::Live)];
    let mut seen = vec![false; n];
    let mut frontier = 0; // every event before this index has been delivered
    let mut out = Vec::new();
    let mut replays_left = 1 + rng.below(3);
    loop {
        while frontier < n && seen[frontier] {
            frontier += 1;
        }
        let live_done = streams.iter().all(|s| s.0 >= s.1);
        if frontier == n && (replays_left == 0 || rng.below(2) == 0) && live_done {
            break;
        }
        // Spawn a replay from a cursor the client has reached (never beyond its frontier).
        if replays_left > 0 && (live_done || rng.below(4) == 0) {
            replays_left -= 1;
            let cursor = rng.below(frontier as u64 + 1) as usize;
            streams.push((cursor, n, Shape::Replay));
        } else if frontier < n && live_done && streams.iter().all(|s| s.0 >= s.1) {
            // Everything stalled: the client resumes from its frontier.
            streams.push((frontier, n, Shape::Replay));
        }
        let active: Vec<usize> = (0..streams.len())
            .filter(|&i| streams[i].0 < streams[i].1)
            .collect();
        if active.is_empty() {
            continue;
        }
        let pick = active[rng.below(active.len() as u64) as usize];
        let (next, _, shape) = streams[pick];
        streams[pick].0 += 1;
        seen[next] = true;
        out.push(shaped(&journal[next], shape));
        if journal[next].kind == "settled_message" && rng.below(2) == 0 {
            out.push(shaped(&journal[next], Shape::Transcript));
        }
    }
    out
}

fn once(journal: &[JournalEvent]) -> Registry {
    let mut r = fresh();
    for e in journal {
        let _ = r.apply(&e.journal_row(), &ctx());
    }
    r
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_delivery_order_of_the_same_events_gives_the_same_anchor(n in 2usize..80, turn_seed: u64, order_seed: u64) {
        let journal = journal(n, turn_seed);
        let expected = once(&journal);
        let mut r = fresh();
        for input in schedule(&journal, order_seed) {
            let _ = r.apply(&input, &ctx());
        }
        prop_assert_eq!(r.anchor(), expected.anchor());
        prop_assert_eq!(r.stats().applied, expected.stats().applied);
        prop_assert_eq!(r.stats().skipped_mismatched, 0);
        prop_assert_eq!(r.dedupe_keys().collect::<Vec<_>>(), expected.dedupe_keys().collect::<Vec<_>>());
        // The scene is a function of the anchor alone.
        prop_assert_eq!(
            serde_json::to_value(r.scene(Mode::TransparentStream)).unwrap(),
            serde_json::to_value(expected.scene(Mode::TransparentStream)).unwrap()
        );
    }

    #[test]
    fn replaying_a_settled_turn_changes_nothing(n in 2usize..80, seed: u64) {
        let journal = journal(n, seed);
        let mut r = once(&journal);
        let before = r.clone();
        for e in &journal {
            let _ = r.apply(&e.journal_row(), &ctx());
            let _ = r.apply(&e.live_frame(), &ctx());
        }
        prop_assert_eq!(r.anchor(), before.anchor());
        prop_assert_eq!(r.stats().applied, before.stats().applied);
        prop_assert_eq!(r.stats().skipped_mismatched, 0);
        prop_assert!(r.stats().skipped_duplicate >= before.stats().applied);
    }

    #[test]
    fn a_source_event_applies_exactly_as_the_value_it_came_from(
        inputs in prop::collection::vec(prop_oneof![json_value(), event_like()], 1..8),
        context in json_value(),
        seed in json_value(),
    ) {
        let seed = Seed::from_value(&seed);
        let mut by_value = Registry::new(&seed).unwrap_or_else(|_| fresh());
        let mut by_source = by_value.clone();
        let mut by_text = by_value.clone();
        let mut by_batch = by_value.clone();
        let mut expected_all = Vec::new();
        for input in &inputs {
            let source = SourceEvent::from(input.clone());
            prop_assert_eq!(&source.to_value(), input);
            let parsed: SourceEvent = serde_json::from_str(&input.to_string()).unwrap();
            prop_assert_eq!(&parsed, &source);
            // Applied twice: the second time as a duplicate (or not, the same way).
            for _ in 0..2 {
                let expected = by_value.apply(input, &context);
                prop_assert_eq!(by_source.apply(&source, &context), expected.clone());
                prop_assert_eq!(by_text.apply(&parsed, &context), expected.clone());
                expected_all.push(expected);
            }
        }
        prop_assert_eq!(&by_source, &by_value);
        prop_assert_eq!(&by_text, &by_value);
        // The batch call: every input twice, in the same order, prefetching ahead.
        let sources: Vec<SourceEvent> = inputs.iter().map(|v| SourceEvent::from(v.clone())).collect();
        let mut batch = Vec::new();
        by_batch.apply_batch(
            sources.iter().flat_map(|s| [(s, &context), (s, &context)]),
            |applied| batch.push(applied),
        );
        prop_assert_eq!(batch, expected_all);
        prop_assert_eq!(&by_batch, &by_value);
    }

    #[test]
    fn no_json_input_of_any_shape_panics(input in json_value(), context in json_value(), seed in json_value()) {
        let _ = normalize(&input, &context);
        let mut r = Registry::new(&Seed::from_value(&seed)).unwrap_or_else(|_| fresh());
        let applied = r.apply(&input, &context);
        let _ = r.upsert_by_local_id(&input, &context);
        let again = r.apply(&input, &context);
        if applied.applied && applied.dedupe_key.is_some() {
            prop_assert!(!again.applied, "an accepted identity is never accepted twice");
        }
        for mode in [Mode::CompactWorklog, Mode::TransparentStream, Mode::HideAllActivity] {
            let scene = serde_json::to_value(r.scene(mode)).unwrap();
            prop_assert_eq!(scene["activity_rows"].as_array().unwrap().len(), r.row_count());
        }
        let round_trip: Registry = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
        prop_assert_eq!(&round_trip, &r);
        let _ = project_settled_final_answer(&input, &context);
        let _ = project_historical_scene(&input, None);
        let _ = shadow_snapshot(&input);
        let _ = anchor::trace::canonical_json(&input);
    }
}

/// Keys the anchor reads, so arbitrary inputs reach its interesting paths.
const KEYS: [&str; 32] = [
    "type",
    "event",
    "source_type",
    "source_event_type",
    "payload",
    "data",
    "event_id",
    "lastEventId",
    "seq",
    "run_id",
    "session_id",
    "turn_id",
    "stream_id",
    "local_id",
    "created_at",
    "timestamp",
    "status",
    "state",
    "text",
    "content",
    "role",
    "id",
    "tid",
    "name",
    "args",
    "is_error",
    "usage",
    "_turnUsage",
    "__proto__",
    "activitySegmentSeq",
    "anchor",
    "sources",
];
const TYPES: [&str; 12] = [
    "token",
    "reasoning",
    "tool",
    "tool_complete",
    "done",
    "cancel",
    "apperror",
    "settled_message",
    "usage",
    "stream_end",
    "metering",
    "constructor",
];

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        prop::sample::select(TYPES.to_vec()).prop_map(|s| json!(s)),
        "[ a-z:0-9\\-\\u{FEFF}\\u{3000}]{0,12}".prop_map(Value::String),
        Just(json!("{\"text\":\"hi\",\"seq\":{\"a\":1}}")),
        Just(json!("r:7")),
        Just(json!("0x10")),
    ];
    leaf.prop_recursive(7, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS.to_vec()), inner), 0..8).prop_map(
                |pairs| Value::Object(
                    pairs
                        .into_iter()
                        .map(|(k, v)| (k.to_owned(), v))
                        .collect::<Map<_, _>>()
                )
            ),
        ]
    })
}

/// Journal-row-like objects: a known type, identity from a small pool (so that duplicates and
/// mismatches happen), and a payload made of the keys normalization reads from payloads.
fn event_like() -> impl Strategy<Value = Value> {
    const PAYLOAD_KEYS: [&str; 14] = [
        "status",
        "state",
        "phase",
        "is_error",
        "seq",
        "event_id",
        "id",
        "tool_call_id",
        "created_at",
        "ts",
        "text",
        "type",
        "run_id",
        "session_id",
    ];
    let id = prop::sample::select(vec!["r:1", "r:2", "q:1", " r:1 ", ""]);
    let small = prop_oneof![
        prop::sample::select(vec!["running", "error", "completed", "x", "", "r", "s"])
            .prop_map(|s| json!(s)),
        (0i64..4).prop_map(|n| json!(n)),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
    ];
    let payload = prop::collection::vec((prop::sample::select(PAYLOAD_KEYS.to_vec()), small), 0..5)
        .prop_map(|pairs| {
            Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
        });
    (
        prop::sample::select(TYPES.to_vec()),
        prop::option::of(id),
        prop::option::of(0u64..4),
        prop::option::of(prop::sample::select(vec!["s", "other", ""])),
        prop::sample::select(vec!["payload", "data", "inline"]),
        payload,
    )
        .prop_map(|(kind, event_id, seq, session, carrier, payload)| {
            let mut event = Map::new();
            event.insert("type".into(), json!(kind));
            if let Some(id) = event_id {
                event.insert("event_id".into(), json!(id));
            }
            if let Some(seq) = seq {
                event.insert("seq".into(), json!(seq));
            }
            if let Some(session) = session {
                event.insert("session_id".into(), json!(session));
            }
            match carrier {
                "payload" => {
                    event.insert("payload".into(), payload);
                }
                "data" => {
                    event.insert("data".into(), payload);
                }
                _ => {
                    if let Value::Object(fields) = payload {
                        for (k, v) in fields {
                            event.entry(k).or_insert(v);
                        }
                    }
                }
            }
            Value::Object(event)
        })
}
