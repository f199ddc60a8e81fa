//! Registry scenarios R01–R15.

use anchor::{shadow_snapshot, Anchor, Registry, Seed, SeedError};
use serde_json::{json, Value};

use crate::helpers::{expected, keys, outcome, reg, stats, to_json};

#[test]
fn r01_seed_and_turn_id_variants() {
    let e = expected("R01_seed_variants");
    let full = Anchor::new(&Seed::from_value(
        &json!({"session_id": " sid-1 ", "stream_id": "stream-1", "run_id": "run-1",
        "source_message_refs": ["m1"], "status": "restoring", "started_at": 5}),
    ))
    .unwrap();
    assert_eq!(to_json(&full), e["full"]);
    let turn = |seed: Value| {
        Anchor::new(&Seed::from_value(&seed))
            .unwrap()
            .identity
            .turn_id
            .to_string()
    };
    assert_eq!(
        turn(json!({"session_id": "s", "stream_id": "S"})),
        e["turn_from_stream"]
    );
    assert_eq!(
        turn(json!({"session_id": "s", "stream_id": "S", "run_id": "R", "local_id": "L"})),
        e["turn_from_run"]
    );
    assert_eq!(turn(json!({"session_id": "s"})), e["turn_pending"]);
    let err = Anchor::new(&Seed::from_value(&json!({}))).unwrap_err();
    assert_eq!(err, SeedError::MissingSessionId);
    assert_eq!(format!("Error: {err}"), e["missing_session"]["throws"]);
}

#[test]
fn r02_dedupe_routing_and_settlement() {
    let e = expected("R02_registry_fixture");
    let mut r = reg(json!({"session_id": "sid-1", "turn_id": "turn-1"}));
    let c = json!({"run_id": "run-1", "stream_id": "stream-1"});
    let events = [
        json!({"type": "token", "data": "{\"text\":\"live token\"}", "lastEventId": "run-1:1", "created_at": "2026-06-11T00:00:01Z"}),
        json!({"event": "token", "payload": {"text": "replay token"}, "event_id": "run-1:1", "seq": 1}),
        json!({"event": "reasoning", "payload": {"text": "thinking"}, "event_id": "run-1:2", "seq": 2}),
        json!({"event": "artifact_reference", "payload": {"path": "a.md"}, "event_id": "run-1:3", "seq": 3}),
        json!({"event": "state_saved", "payload": {"kind": "memory", "action": "saved"}, "event_id": "run-1:4", "seq": 4}),
        json!({"event": "stream_end", "payload": {}, "event_id": "run-1:5", "seq": 5}),
        json!({"event": "done", "payload": {}, "event_id": "run-1:6", "seq": 6, "created_at": "2026-06-11T00:00:06Z"}),
        json!({"source_type": "settled_message", "payload": {"role": "assistant", "id": "message-final", "content": "final answer",
            "_turnUsage": {"input_tokens": 8, "output_tokens": 13}}}),
    ];
    let results: Vec<Value> = events.iter().map(|ev| outcome(&r.apply(ev, &c))).collect();
    assert_eq!(Value::Array(results), e["results"]);
    let wrong = json!({"event": "token", "payload": {"text": "wrong session", "session_id": "sid-2"}, "event_id": "run-1:7"});
    assert_eq!(outcome(&r.apply(&wrong, &c)), e["wrong"]);
    assert_eq!(stats(&r), e["stats"]);
    assert_eq!(keys(&r), e["dedupe_keys"]);
    let a = r.anchor();
    let kinds: Vec<_> = a
        .activity_events
        .iter()
        .map(|ev| ev.kind.unwrap().as_str())
        .collect();
    assert_eq!(json!(kinds), e["kinds"]);
    assert_eq!(a.activity_events[0].payload["text"], "live token");
    assert_eq!(
        json!([
            a.artifacts.len(),
            a.side_effects.len(),
            a.metadata_events.len(),
            a.transport_events.len()
        ]),
        e["counts"]
    );
    assert_eq!(to_json(&a.identity), e["identity"]);
    assert_eq!(to_json(r.initial_identity()), e["registry_identity"]);
    assert_eq!(to_json(&a.lifecycle), e["lifecycle"]);
    assert_eq!(to_json(&a.content), e["content"]);
    assert_eq!(a.usage.as_ref().unwrap(), &e["usage"]);
}

#[test]
fn r03_cross_run_rejected_stream_reconnect_accepted() {
    let e = expected("R03_cross_run_vs_stream_reconnect");
    let mut r = reg(
        json!({"session_id": "sid-run", "turn_id": "turn-run", "run_id": "run-a", "stream_id": "stream-a"}),
    );
    let none = Value::Null;
    let wrong = r.apply(
        &json!({"event": "token", "event_id": "run-b:1", "run_id": "run-b", "seq": 1}),
        &none,
    );
    let new_stream = r.apply(
        &json!({"event": "reasoning", "event_id": "run-a:2", "run_id": "run-a", "stream_id": "stream-b", "seq": 2}),
        &none,
    );
    let foreign = r.apply(
        &json!({"event": "token", "event_id": "run-b:3", "seq": 3}),
        &none,
    );
    assert_eq!(outcome(&wrong), e["wrong_run"]);
    assert_eq!(outcome(&new_stream), e["new_stream"]);
    assert_eq!(outcome(&foreign), e["foreign_event_id_without_run_id"]);
    assert_eq!(stats(&r), e["stats"]);
    assert_eq!(to_json(&r.anchor().identity), e["identity"]);
    let activity: Vec<Value> = r
        .anchor()
        .activity_events
        .iter()
        .map(|ev| json!([ev.event_id, ev.run_id, ev.stream_id]))
        .collect();
    assert_eq!(Value::Array(activity), e["activity"]);
}

#[test]
fn r04_session_and_turn_mismatch() {
    let e = expected("R04_session_and_turn_mismatch");
    let mut r = reg(json!({"session_id": "s1", "turn_id": "t1"}));
    let payload_session = r.apply(
        &json!({"type": "token", "data": "{\"text\":\"x\",\"session_id\":\"s2\"}", "lastEventId": "r:1"}),
        &Value::Null,
    );
    let explicit_turn = r.apply(
        &json!({"type": "token", "turn_id": "t2", "event_id": "r:2"}),
        &Value::Null,
    );
    let ctx_session = r.apply(
        &json!({"type": "token", "event_id": "r:3"}),
        &json!({"session_id": "other"}),
    );
    assert_eq!(outcome(&payload_session), e["payload_session"]);
    assert_eq!(outcome(&explicit_turn), e["explicit_turn"]);
    assert_eq!(outcome(&ctx_session), e["ctx_session_ignored"]);
    assert_eq!(stats(&r), e["stats"]);
    assert_eq!(keys(&r), e["dedupe_keys"]);
}

#[test]
fn r05_seqless_local_events_are_never_deduped() {
    let e = expected("R05_seqless_local_not_deduped");
    let mut r = reg(json!({"session_id": "sid-tool", "turn_id": "turn-tool"}));
    let events = [
        json!({"type": "tool", "payload": {"tool_call_id": "call-1", "name": "shell"}}),
        json!({"type": "tool_update", "payload": {"tool_call_id": "call-1"}}),
        json!({"type": "tool_complete", "payload": {"tool_call_id": "call-1", "result": "ok"}}),
        json!({"type": "token", "payload": {"text": "first token"}}),
        json!({"type": "token", "payload": {"text": "first token"}}),
    ];
    let results: Vec<Value> = events
        .iter()
        .map(|ev| outcome(&r.apply(ev, &Value::Null)))
        .collect();
    assert_eq!(Value::Array(results), e["results"]);
    assert_eq!(keys(&r), e["dedupe_keys"]);
    let a = &r.anchor().activity_events;
    assert_eq!(
        json!(a
            .iter()
            .map(|ev| ev.kind.unwrap().as_str())
            .collect::<Vec<_>>()),
        e["kinds"]
    );
    assert_eq!(
        json!(a.iter().map(|ev| &*ev.local_id).collect::<Vec<_>>()),
        e["local_ids"]
    );
}

#[test]
fn r06_local_key_with_seq_dedupes_per_source_type() {
    let e = expected("R06_local_key_dedupe_with_seq");
    let mut r = reg(json!({"session_id": "s", "turn_id": "t"}));
    let results: Vec<Value> = [
        json!({"source_event_type": "token", "text": "a", "local_id": "live-prose:S:1", "seq": 3}),
        json!({"source_event_type": "token", "text": "b", "local_id": "live-prose:S:1", "seq": 3}),
        json!({"source_event_type": "reasoning", "text": "a", "local_id": "live-prose:S:1", "seq": 3}),
    ]
    .iter()
    .map(|ev| outcome(&r.apply(ev, &Value::Null)))
    .collect();
    assert_eq!(Value::Array(results), e["results"]);
    assert_eq!(keys(&r), e["dedupe_keys"]);
}

#[test]
fn r07_settled_message_rules() {
    let e = expected("R07_settled_message_rules");
    let mut r = reg(json!({"session_id": "s", "turn_id": "t"}));
    let payloads = [
        json!({"role": "assistant", "content": "one"}),
        json!({"role": "assistant", "content": "two", "message_id": 7, "id": "m2", "usage": {"input_tokens": 1}, "_turnUsage": {"input_tokens": 2}}),
        json!({"role": "user", "content": "three", "usage": {"u": 3}}),
        json!({"content": "", "usage": {"u": 4}}),
        json!({"role": "assistant", "text": "", "final_answer": "fa", "answer": "an"}),
        json!({"role": "assistant", "content": {"text": "obj"}, "local_id": "L9"}),
    ];
    let mut results = Vec::new();
    for (i, p) in payloads.iter().enumerate() {
        let a = r.apply(
            &json!({"source_type": "settled_message", "payload": p}),
            &Value::Null,
        );
        results.push(outcome(&a));
        if i == 1 {
            assert_eq!(r.anchor().content.final_message_ref.as_deref(), Some("m2"));
        }
        if i == 4 {
            assert_eq!(r.anchor().content.final_answer, "fa");
        }
    }
    assert_eq!(Value::Array(results), e["results"]);
    assert_eq!(to_json(&r.anchor().content), e["content"]);
    assert_eq!(r.anchor().usage.as_ref().unwrap(), &e["usage"]);
    assert_eq!(keys(&r), e["dedupe_keys"]);
    let locals: Vec<&str> = r
        .anchor()
        .metadata_events
        .iter()
        .map(|ev| &*ev.local_id)
        .collect();
    assert_eq!(json!(locals), e["metadata_local_ids"]);
}

#[test]
fn r08_lifecycle_transitions() {
    let mut r = reg(json!({"session_id": "s", "turn_id": "t"}));
    let events = [
        json!({"type": "token", "payload": {}}),
        json!({"type": "token", "created_at": 1, "payload": {}}),
        json!({"type": "tool", "created_at": 3, "payload": {}}),
        json!({"type": "done", "created_at": 4, "payload": {}}),
        json!({"type": "cancel", "payload": {"status": "cancelled"}}),
        json!({"type": "tool", "created_at": 6, "payload": {}}),
        json!({"type": "stream_end", "created_at": 7, "payload": {}}),
    ];
    let got: Vec<Value> = events
        .iter()
        .map(|ev| {
            let _ = r.apply(ev, &Value::Null);
            to_json(&r.anchor().lifecycle)
        })
        .collect();
    assert_eq!(Value::Array(got), *expected("R08_lifecycle"));
}

#[test]
fn r09_non_activity_routing() {
    let e = expected("R09_metadata_routing");
    let mut r = reg(json!({"session_id": "s", "turn_id": "t"}));
    let events = [
        json!({"type": "usage", "payload": {"input_tokens": 3, "output_tokens": 4}}),
        json!({"type": "title", "payload": {"title": "T"}}),
        json!({"type": "runtime_journal_snapshot", "payload": {"status": "restoring"}}),
        json!({"type": "inflight_snapshot", "payload": {"status": "restoring"}}),
        json!({"type": "state_saved", "payload": {"kind": "memory"}}),
        json!({"type": "artifact_reference", "payload": {"path": "out.md"}}),
    ];
    let results: Vec<Value> = events
        .iter()
        .map(|ev| outcome(&r.apply(ev, &Value::Null)))
        .collect();
    assert_eq!(Value::Array(results), e["results"]);
    let a = r.anchor();
    let pairs = |list: &[anchor::AnchorEvent], kind: bool| -> Value {
        Value::Array(
            list.iter()
                .map(|ev| {
                    let second = if kind {
                        json!(ev.kind.map(|k| k.as_str()))
                    } else {
                        json!(ev.status)
                    };
                    json!([ev.source_event_type, second])
                })
                .collect(),
        )
    };
    assert_eq!(pairs(&a.metadata_events, false), e["metadata"]);
    assert_eq!(pairs(&a.side_effects, true), e["side_effects"]);
    assert_eq!(pairs(&a.artifacts, true), e["artifacts"]);
    assert_eq!(a.usage.as_ref().unwrap(), &e["usage"]);
    assert_eq!(a.lifecycle.status, e["lifecycle_status"]);
}

fn race(order: &[&str]) -> Registry {
    let mut r = reg(
        json!({"session_id": "sid-race", "turn_id": "turn-race", "run_id": "run-race", "stream_id": "stream-race"}),
    );
    let live = [
        json!({"type": "token", "data": "{\"text\":\"live token\"}", "lastEventId": "run-race:1"}),
    ];
    let replay = [
        json!({"event": "token", "payload": {"text": "replayed duplicate"}, "event_id": "run-race:1", "seq": 1}),
        json!({"event": "tool_complete", "payload": {"tool_call_id": "tool-1", "result": "ok"}, "event_id": "run-race:2", "seq": 2}),
        json!({"event": "done", "payload": {"status": "done"}, "event_id": "run-race:3", "seq": 3, "created_at": "2026-06-11T00:00:03Z"}),
    ];
    let settled = [
        json!({"source_type": "settled_message", "payload": {"role": "assistant", "id": "message-race",
        "content": "race final", "_turnUsage": {"input_tokens": 5, "output_tokens": 8}}}),
    ];
    for layer in order {
        let events: &[Value] = match *layer {
            "live" => &live,
            "replay" => &replay,
            _ => &settled,
        };
        let ctx = json!({"source_layer": layer});
        r.apply_batch(events.iter().map(|e| (e, &ctx)), drop);
    }
    r
}

fn race_summary(r: &Registry) -> Value {
    let a = r.anchor();
    json!({
        "activity": a.activity_events.iter().map(|ev| json!([ev.event_id, ev.kind.unwrap().as_str(), ev.status, ev.seq])).collect::<Vec<_>>(),
        "content": a.content,
        "dedupe_keys": keys(r),
        "lifecycle": a.lifecycle,
        "stats": stats(r),
        "usage": a.usage,
    })
}

#[test]
fn r10_replay_first_and_settled_first_agree() {
    let e = expected("R10_race_order_invariance");
    let replay_first = race(&["live", "replay", "settled"]);
    let settled_first = race(&["live", "settled", "replay"]);
    assert_eq!(race_summary(&replay_first), e["replay_first"]);
    assert_eq!(race_summary(&settled_first), race_summary(&replay_first));
    assert_eq!(e["equal"], true);
    assert_eq!(
        replay_first.anchor().activity_events[0].payload["text"],
        "live token"
    );
}

#[test]
fn r11_first_accepted_observation_wins() {
    let e = expected("R11_first_observation_wins");
    let live = json!({"type": "token", "data": "{\"text\":\"live\"}", "lastEventId": "R:1"});
    let replay = json!({"event": "token", "payload": {"text": "replay"}, "event_id": "R:1", "seq": 1, "created_at": 100});
    let run = |first: &Value, second: &Value| {
        let mut r = reg(json!({"session_id": "s", "turn_id": "t"}));
        let _ = r.apply(first, &Value::Null);
        let _ = r.apply(second, &Value::Null);
        let a = r.anchor();
        json!({"text": a.activity_events[0].payload["text"], "created_at": a.activity_events[0].created_at, "started_at": a.lifecycle.started_at})
    };
    assert_eq!(run(&live, &replay), e["live_first"]);
    assert_eq!(run(&replay, &live), e["replay_first"]);
}

#[test]
fn r12_shadow_snapshot_applies_layers_in_fixed_order() {
    let e = expected("R12_shadow_fixture");
    // Sources listed out of order on purpose: the order of application is fixed.
    let snapshot = shadow_snapshot(&json!({
        "anchor": {"session_id": "sid-shadow", "turn_id": "turn-shadow"},
        "context": {"run_id": "run-shadow", "stream_id": "stream-shadow"},
        "sources": {
            "inflight_events": [{"source_type": "inflight_snapshot", "payload": {"status": "restoring"}}],
            "settled_events": [{"source_type": "settled_message", "payload": {"role": "assistant", "id": "message-shadow", "content": "shadow final"}}],
            "replay_events": [
                {"event": "token", "payload": {"text": "live"}, "event_id": "run-shadow:1", "seq": 1},
                {"event": "tool_complete", "payload": {"tool_call_id": "tool-1", "result": "ok"}, "event_id": "run-shadow:2", "seq": 2},
            ],
            "live_events": [{"type": "token", "data": "{\"text\":\"live\"}", "lastEventId": "run-shadow:1", "created_at": "2026-06-11T00:00:01Z"}],
        }
    }))
    .unwrap();
    let layer = |i: usize| Value::Array(snapshot.results[i].iter().map(outcome).collect());
    assert_eq!(
        json!({"live": layer(0), "replay": layer(1), "settled": layer(2), "inflight": layer(3)}),
        e["results"]
    );
    let r = &snapshot.registry;
    let a = r.anchor();
    assert_eq!(stats(r), e["stats"]);
    assert_eq!(to_json(&a.identity), e["identity"]);
    assert_eq!(
        json!(a
            .activity_events
            .iter()
            .map(|ev| ev.kind.unwrap().as_str())
            .collect::<Vec<_>>()),
        e["kinds"]
    );
    assert_eq!(
        json!(a
            .metadata_events
            .iter()
            .map(|ev| &*ev.source_event_type)
            .collect::<Vec<_>>()),
        e["metadata"]
    );
    assert_eq!(a.content.final_answer, e["final_answer"]);
    assert_eq!(to_json(&a.lifecycle), e["lifecycle"]);
}

#[test]
fn r13_shadow_flat_input_and_journal_alias() {
    let e = expected("R13_shadow_flat_input_and_journal_alias");
    let token = json!({"event": "token", "payload": {"text": "x"}, "event_id": "r:1", "seq": 1});
    let used = shadow_snapshot(&json!({"session_id": "s", "turn_id": "t", "run_journal_events": [token], "replay_events": null})).unwrap();
    let ignored = shadow_snapshot(&json!({"session_id": "s", "turn_id": "t", "run_journal_events": [token], "replay_events": []})).unwrap();
    assert_eq!(
        Value::Array(used.results[1].iter().map(outcome).collect()),
        e["alias_used_when_replay_not_array"]
    );
    assert_eq!(
        Value::Array(ignored.results[1].iter().map(outcome).collect()),
        e["alias_ignored_when_replay_array"]
    );
}

#[test]
fn r14_json_round_trip_keeps_dedupe_memory() {
    let e = expected("R14_json_roundtrip_keeps_dedupe");
    let token = json!({"type": "token", "event_id": "r:1", "payload": {}});
    let mut r = reg(json!({"session_id": "s", "turn_id": "t"}));
    let _ = r.apply(&token, &Value::Null);
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(
        json!(json["event_index"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>()),
        e["enumerable_keys"]
    );
    let mut copy: Registry = serde_json::from_value(json).unwrap();
    assert_eq!(copy, r);
    assert_eq!(
        outcome(&copy.apply(&token, &Value::Null)),
        e["dup_after_roundtrip"]
    );
    assert_eq!(stats(&copy), e["stats"]);
}

#[test]
fn r15_malformed_registries_are_typed_errors_or_repaired() {
    let e = expected("R15_malformed_registries");
    // No anchor: the reference throws; deserializing one is a typed error here.
    assert!(e["no_anchor"]["throws"]
        .as_str()
        .unwrap()
        .contains("requires anchor"));
    let err = serde_json::from_value::<Registry>(json!({})).unwrap_err();
    assert!(err.to_string().contains("anchor"), "{err}");
    // An anchor without its lists: the reference throws for activity (Q11); here every list
    // defaults to empty, so both activity and metadata apply.
    assert!(e["anchor_without_activity_array"]["throws"]
        .as_str()
        .unwrap()
        .contains("push"));
    let mut r: Registry =
        serde_json::from_value(json!({"anchor": {"identity": {"session_id": "s"}}})).unwrap();
    assert_eq!(
        outcome(&r.apply(
            &json!({"type": "token", "payload": {"text": "x"}}),
            &Value::Null
        )),
        json!({"applied": true, "reason": null})
    );
    assert_eq!(
        outcome(&r.apply(
            &json!({"type": "title", "payload": {"title": "x"}}),
            &Value::Null
        )),
        e["anchor_without_activity_array_metadata_ok"]
    );
    assert_eq!(r.row_count(), 1);
    // A normalized event that is excluded counts as excluded.
    let mut r = reg(json!({"session_id": "s", "turn_id": "t"}));
    let out = r.apply_normalized(anchor::normalize(&Value::Null, &Value::Null));
    assert_eq!(outcome(&out), e["normalized_null"]["out"]);
    assert_eq!(stats(&r), e["normalized_null"]["stats"]);
}
