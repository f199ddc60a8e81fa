//! Normalization scenarios N01–N20.

use anchor::{dedupe_key, normalize, normalize_batch, AnchorEvent, Classification, Seq};
use serde_json::{json, Value};

use crate::helpers::{ctx, expected, outcome, reg, stats, to_json};

fn normalized(input: Value, context: Value) -> Value {
    let n = normalize(&input, &context);
    json!({
        "anchor_event": n.event.as_ref().map(to_json),
        "classification": n.classification.as_str(),
        "dedupe_key": n.dedupe_key,
        "source_event_type": n.source_event_type,
    })
}

fn event(input: Value, context: Value) -> Value {
    normalized(input, context)["anchor_event"].clone()
}

fn st() -> Value {
    json!({"session_id": "s", "turn_id": "t"})
}

#[test]
fn n01_live_sse_token_gets_its_envelope_identity() {
    let input = json!({"type": "token", "data": "{\"text\":\"hello\",\"session_id\":\"sid-1\"}", "lastEventId": "run-1:7"});
    assert_eq!(normalized(input, ctx()), *expected("N01_live_sse_token"));
}

#[test]
fn n02_journal_row_of_the_same_event_has_the_same_identity() {
    let input = json!({"event": "token", "payload": {"text": "hello", "session_id": "sid-1"}, "event_id": "run-1:7", "seq": 7});
    assert_eq!(normalized(input, ctx()), *expected("N02_replay_row_token"));
    assert_eq!(
        expected("N02_replay_row_token"),
        expected("N01_live_sse_token")
    );
}

#[test]
fn n03_event_id_splits_at_the_last_colon() {
    let input = json!({"type": "token", "event_id": "a:b:7", "payload": {}});
    assert_eq!(event(input, st()), *expected("N03_event_id_multi_colon"));
}

#[test]
fn n04_non_numeric_tail_is_a_string_seq() {
    let input = json!({"type": "token", "event_id": "r:abc", "payload": {}});
    assert_eq!(
        event(input, st()),
        *expected("N04_event_id_non_numeric_tail")
    );
}

#[test]
fn n05_event_id_without_colon_has_no_run_or_seq() {
    let input = json!({"type": "token", "event_id": "plain", "payload": {}});
    assert_eq!(normalized(input, st()), *expected("N05_event_id_no_colon"));
}

#[test]
fn n06_explicit_null_seq_suppresses_the_event_id_fallback() {
    let input = json!({"type": "token", "seq": null, "event_id": "r:5", "payload": {}});
    assert_eq!(normalized(input, st()), *expected("N06_explicit_null_seq"));
}

#[test]
fn n07_payload_identity_fields_are_promoted_and_win_over_context() {
    let input = json!({"type": "token", "event_id": "run-1:17", "payload": {
        "text": "x", "session_id": "payload-session", "turn_id": "payload-turn", "run_id": "payload-run",
        "stream_id": "payload-stream", "event_id": "payload-event", "seq": 99}});
    assert_eq!(event(input, ctx()), *expected("N07_promoted_identity"));
}

#[test]
fn n08_context_run_beats_the_run_in_the_event_id() {
    let input = json!({"type": "token", "event_id": "other:3", "payload": {}});
    let context = json!({"session_id": "s", "turn_id": "t", "run_id": "mine"});
    assert_eq!(
        event(input, context),
        *expected("N08_context_run_beats_event_id")
    );
}

#[test]
fn n09_flattened_client_events_keep_non_reserved_keys_in_the_payload() {
    let input = json!({"source_event_type": "tool", "type": "y", "event": "x", "name": "terminal", "status": "queued",
        "lastEventId": "r:4", "local_id": "L1", "created_at": 12.5, "activitySegmentSeq": 2});
    assert_eq!(event(input, st()), *expected("N09_flattened_form"));
}

#[test]
fn n10_data_and_payload_coercions() {
    let payload = |input: Value| event(input, ctx())["payload"].clone();
    let got = json!({
        "blank_data": payload(json!({"type": "token", "data": "   "})),
        "json_array": payload(json!({"type": "token", "data": "[1,2]"})),
        "json_null": payload(json!({"type": "token", "data": "null"})),
        "json_string": payload(json!({"type": "token", "data": "\"hi\""})),
        "not_json": payload(json!({"type": "token", "data": "plain text chunk"})),
        "number_data": payload(json!({"type": "token", "data": 42})),
        "payload_null_wins_over_data": payload(json!({"type": "token", "payload": null, "data": "{\"text\":\"d\"}"})),
    });
    assert_eq!(got, *expected("N10_data_coercions"));
}

#[test]
fn n11_unknown_source_types_are_excluded_and_counted() {
    let e = expected("N11_unknown_type_excluded");
    let input = json!({"type": "metering", "payload": {"tps": 1}});
    assert_eq!(normalized(input.clone(), ctx()), e["normalized"]);
    let mut r = reg(json!({"session_id": "sid-1", "turn_id": "turn-1"}));
    assert_eq!(outcome(&r.apply(&input, &ctx())), e["apply"]);
    assert_eq!(stats(&r), e["stats"]);
    for other in [
        "context_status",
        "todo_state",
        "title_status",
        "warning",
        "goal",
        "session_snapshot",
    ] {
        let n = normalize(&json!({"type": other, "payload": {}}), &ctx());
        assert_eq!(n.classification, Classification::Excluded, "{other}");
    }
}

#[test]
fn n12_prototype_named_types_are_excluded_not_silently_applied() {
    // Deliberate difference Q1: the reference applies `constructor` and stores it nowhere.
    let e = expected("N12_prototype_named_type");
    assert_eq!(e["apply"]["applied"], true, "the reference applies it");
    assert_eq!(e["stored"], json!([0, 0, 0, 0, 0]));
    for name in [
        "constructor",
        "__proto__",
        "toString",
        "hasOwnProperty",
        "valueOf",
    ] {
        let mut r = reg(json!({"session_id": "s", "turn_id": "t"}));
        let a = r.apply(
            &json!({"type": name, "event_id": "r:1", "payload": {}}),
            &Value::Null,
        );
        assert_eq!(
            outcome(&a),
            json!({"applied": false, "reason": "excluded"}),
            "{name}"
        );
        assert_eq!(
            stats(&r),
            json!({"applied": 0, "skipped_duplicate": 0, "skipped_excluded": 1, "skipped_mismatched": 0})
        );
        assert_eq!(r.dedupe_keys().count(), 0);
        let anchor = r.anchor();
        let stored = [
            anchor.activity_events.len(),
            anchor.artifacts.len(),
            anchor.side_effects.len(),
            anchor.metadata_events.len(),
            anchor.transport_events.len(),
        ];
        assert_eq!(stored, [0; 5]);
    }
}

#[test]
fn n13_pollution_keys_are_dropped_and_only_own_properties_count() {
    let e = expected("N13_pollution_and_inherited");
    let polluted = json!({"type": "token", "event_id": "run-1:18",
        "data": "{\"text\":\"clean\",\"__proto__\":{\"session_id\":\"polluted\"},\"constructor\":{\"bad\":true},\"prototype\":{\"bad\":true}}"});
    assert_eq!(event(polluted, ctx()), e["pollution"]);
    // JSON has no prototypes: an event whose identity was inherited is an event without one.
    let inherited = json!({"type": "token", "payload": {"text": "own"}});
    assert_eq!(event(inherited, ctx()), e["inherited_event"]);
}

#[test]
fn n14_sanitizer_limits_depth_drops_unsafe_keys_and_keeps_scalars() {
    fn nest(levels: usize, leaf: Value, wrap: &dyn Fn(Value) -> Value) -> Value {
        (0..levels).fold(leaf, |inner, _| wrap(inner))
    }
    // The reference's cycle bottoms out at the depth limit; an acyclic chain of the same shape
    // deeper than the limit gives the same result.
    let deep = nest(8, json!(1), &|inner| json!({"n": inner}));
    let cyc = nest(8, json!({"a": 1}), &|inner| json!({"a": 1, "self": inner}));
    let payload = json!({
        "deep": deep, "cyc": cyc, "arr": [1, null, "2", "x", "[Object]", [3]], "date": "[Object]", "big": "10",
        "nan": null, "z": "last", "A": "upper", "__proto__": {"x": 1}, "prototype": 1
    });
    let got = event(json!({"type": "token", "payload": payload}), ctx())["payload"].clone();
    assert_eq!(got, *expected("N14_sanitize"));
}

fn key_of(v: Value) -> String {
    let e: AnchorEvent = serde_json::from_value(v).expect("an anchor event");
    dedupe_key(&e)
}

#[test]
fn n15_dedupe_keys_use_identity_only() {
    let numeric_event_id = normalize(
        &json!({"type": "token", "event_id": 12, "run_id": "r", "seq": 3}),
        &Value::Null,
    );
    let text_only = normalize(
        &json!({"type": "token", "content": "visible text only", "timestamp": 123}),
        &Value::Null,
    );
    let non_object = normalize(&json!("r:1"), &Value::Null);
    let nan = AnchorEvent {
        run_id: Some("run-1".into()),
        seq: Some(Seq::Num(f64::NAN)),
        ..AnchorEvent::default()
    };
    let got = json!({
        "event_id": key_of(json!({"event_id": " run-1:2 ", "payload": {"text": "same"}})),
        "run_seq": key_of(json!({"run_id": "run-1", "seq": 2, "created_at": 123})),
        "run_seq_collision_a": key_of(json!({"run_id": "a:b", "seq": "c"})),
        "run_seq_collision_b": key_of(json!({"run_id": "a", "seq": "b:c"})),
        "local": key_of(json!({"session_id": "sid-1", "source_event_type": "token", "local_id": "local-1", "seq": 2})),
        "local_default_source": key_of(json!({"session_id": "sid-1", "local_id": "local-1", "seq": 2})),
        "local_no_seq": key_of(json!({"session_id": "sid-1", "source_event_type": "token", "local_id": "local-1"})),
        "local_pending": key_of(json!({"session_id": "sid-1", "source_event_type": "token", "local_id": "local-1", "seq": "pending"})),
        "zero_seq": key_of(json!({"run_id": "run-1", "seq": 0})),
        "nan_seq": dedupe_key(&nan),
        "empty_seq": key_of(json!({"run_id": "run-1", "seq": "", "session_id": "s", "local_id": "l"})),
        "numeric_event_id": numeric_event_id.dedupe_key,
        "unicode": key_of(json!({"event_id": "ré:1\"q"})),
        "text_only": text_only.dedupe_key,
        "non_object": non_object.dedupe_key,
    });
    assert_eq!(got, *expected("N15_dedupe_keys"));
}

#[test]
fn n16_seq_coercion_follows_js_number() {
    let c = |v: Value| to_json(&Seq::coerce(Some(&v)));
    let got = json!({
        "' 5 '": c(json!(" 5 ")), "ws": c(json!(" ")), "hex": c(json!("0x10")), "exp": c(json!("1e3")),
        "inf": c(json!("Infinity")), "arr": c(json!([])), "bool": c(json!(true)), "str": c(json!("abc")),
        "num": c(json!(4.5)),
    });
    assert_eq!(got, *expected("N16_seq_coercion"));
}

#[test]
fn n17_object_seq_in_a_payload_is_coerced_not_thrown() {
    // Deliberate difference Q4: the reference throws a TypeError here.
    assert!(expected("N17_payload_seq_object_throws")["throws"]
        .as_str()
        .unwrap()
        .contains("TypeError"));
    let e = event(
        json!({"type": "token", "payload": {"seq": {"a": 1}}}),
        ctx(),
    );
    assert_eq!(e["seq"], "[object Object]");
    assert_eq!(e["local_id"], "sid-1:turn-1:token:[object Object]");
    let top = event(
        json!({"type": "token", "seq": {"a": 1}, "payload": {}}),
        ctx(),
    );
    assert_eq!(
        top["seq"], "[object Object]",
        "input-level objects coerce the same way"
    );
}

#[test]
fn n18_source_type_precedence() {
    let ty = |input: Value| {
        normalize(&input, &Value::Null)
            .source_event_type
            .into_owned()
    };
    let got = json!({
        "type_over_event": ty(json!({"type": "token", "event": "reasoning"})),
        "source_event_type_first": ty(json!({"source_event_type": "tool", "sourceType": "x", "source_type": "y", "event_type": "z", "type": "token"})),
        "nonstring_falls_to_payload": ty(json!({"type": 5, "payload": {"type": "reasoning"}})),
        "trimmed": ty(json!({"type": "  done  "})),
    });
    assert_eq!(got, *expected("N18_source_type_precedence"));
}

#[test]
fn n19_local_id_rules() {
    let local = |input: Value, context: Value| event(input, context)["local_id"].clone();
    let got = json!({
        "ctx_local_id_wins": local(json!({"type": "tool", "payload": {"tid": "t1"}}), json!({"session_id": "s", "turn_id": "t", "local_id": "CTX"})),
        "payload_order": local(json!({"type": "tool", "payload": {"call_id": "c", "tool_use_id": "u", "tool_call_id": "tc", "tid": "ti", "id": "i"}}), st()),
        "numeric_id_blocks_fallthrough": local(json!({"type": "tool", "payload": {"id": 5, "tid": "t1"}}), st()),
        "generated_with_seq": local(json!({"type": "tool", "seq": 4, "payload": {}}), st()),
        "generated_no_ctx": local(json!({"type": "tool", "payload": {}}), json!({})),
    });
    assert_eq!(got, *expected("N19_local_id_rules"));
}

#[test]
fn n20_created_at_precedence() {
    let at = |input: Value, context: Value| event(input, context)["created_at"].clone();
    let got = json!({
        "zero_falls_through": at(json!({"type": "token", "created_at": 0, "timestamp": 5, "payload": {}}), st()),
        "payload_created_at": at(json!({"type": "token", "payload": {"created_at": 8, "ts": 9}}), st()),
        "payload_ts": at(json!({"type": "token", "payload": {"ts": 9}}), st()),
        "ctx_created_at": at(json!({"type": "token", "payload": {}}), json!({"session_id": "s", "turn_id": "t", "created_at": "ctx-time"})),
    });
    assert_eq!(got, *expected("N20_created_at_precedence"));
    let kept = event(
        json!({"type": "token", "payload": {"created_at": 8, "ts": 9}}),
        st(),
    );
    assert_eq!(kept["payload"], json!({"created_at": 8, "ts": 9}));
}

#[test]
fn r16_batch_normalization_drops_excluded_and_repeats() {
    let events = [
        json!({"type": "token", "data": "{\"text\":\"live\"}", "lastEventId": "run-1:11"}),
        json!({"event": "token", "payload": {"text": "replay"}, "event_id": "run-1:11", "seq": 11}),
        json!({"type": "metering", "payload": {}}),
        json!({"event": "reasoning", "payload": {"text": "thinking"}, "event_id": "run-1:12", "seq": 12}),
        json!({"type": "token", "payload": {"text": "no key"}}),
        json!({"type": "token", "payload": {"text": "no key"}}),
    ];
    let got: Vec<Value> = normalize_batch(&events, &crate::helpers::ctx())
        .into_iter()
        .map(|n| {
            let e = n.event.expect("non-excluded");
            json!([n.dedupe_key, e.kind.unwrap().as_str(), e.payload["text"]])
        })
        .collect();
    assert_eq!(Value::Array(got), *expected("R16_normalize_batch_dedupe"));
}
