//! Activity scene scenarios A01–A09.

use anchor::{project_historical_scene, ActivityScene, AnchorEvent, Kind, Mode, Registry};
use serde_json::{json, Value};

use crate::helpers::{expected, reg, to_json};

/// The A01 registry.
fn scene_fixture() -> Registry {
    let mut r = reg(json!({"session_id": "sid-scene", "turn_id": "turn-scene"}));
    let c = json!({"run_id": "run-scene", "stream_id": "stream-scene"});
    let tool = json!({"tool_call_id": "tool-1", "name": "terminal", "activityBurstId": 7, "activitySegmentSeq": 3, "assistant_msg_idx": 12});
    let with = |extra: Value| {
        let mut p = tool.clone();
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        p
    };
    let events = [
        json!({"event": "token", "payload": {"text": "progress"}, "event_id": "run-scene:1", "seq": 1}),
        json!({"event": "reasoning", "payload": {"text": "private thinking"}, "event_id": "run-scene:2", "seq": 2}),
        json!({"event": "tool", "payload": with(json!({"args": {"command": "rg anchor static"}, "preview": "rg anchor static", "started_at": 1781200000})), "event_id": "run-scene:3", "seq": 3}),
        json!({"event": "tool_update", "payload": with(json!({"text": "running", "preview": "searching workspace"})), "event_id": "run-scene:4", "seq": 4}),
        json!({"event": "tool_complete", "payload": with(json!({"result": "done", "output": "done", "snippet": "done", "is_error": false, "duration": 1.25})), "event_id": "run-scene:5", "seq": 5}),
        json!({"event": "done", "payload": {}, "event_id": "run-scene:6", "seq": 6}),
        json!({"source_type": "settled_message", "payload": {"role": "assistant", "id": "message-scene", "content": "final answer"}}),
    ];
    for ev in &events {
        assert!(r.apply(ev, &c).applied);
    }
    r
}

fn scene_json(scene: &ActivityScene<'_>) -> Value {
    to_json(scene)
}

#[test]
fn a01_compact_scene_rows_in_acceptance_order() {
    let e = expected("A01_scene_fixture_compact");
    let r = scene_fixture();
    let scene = scene_json(&r.scene(Mode::CompactWorklog));
    let rows = scene["activity_rows"].as_array().unwrap();
    let summary: Vec<Value> = rows
        .iter()
        .map(|row| {
            json!({"row_id": row["row_id"], "kind": row["kind"], "role": row["role"], "hint": row["display_hint"],
                "status": row["status"], "text": row["text"], "group_key": row["group"]["group_key"]})
        })
        .collect();
    assert_eq!(Value::Array(summary), e["rows"]);
    assert_eq!(rows[2], e["row2"]);
    assert_eq!(rows[1]["thinking"], e["row1_thinking"]);
    assert_eq!(rows[4]["tool"], e["row4_tool"]);
    let top = json!({
        "final_answer": scene["final_answer"], "final_message_ref": scene["final_message_ref"], "identity": scene["identity"],
        "lifecycle": scene["lifecycle"], "mode": scene["mode"], "terminal_state": scene["terminal_state"], "version": scene["version"],
    });
    assert_eq!(top, e["top"]);
    assert!(
        rows.iter().all(|row| row["text"] != "final answer"),
        "the final answer is never a row"
    );
}

#[test]
fn a02_transparent_mode_changes_only_the_hints() {
    let e = expected("A02_scene_fixture_transparent");
    let r = scene_fixture();
    let transparent = scene_json(&r.scene(Mode::TransparentStream));
    let compact = scene_json(&r.scene(Mode::CompactWorklog));
    let rows = transparent["activity_rows"].as_array().unwrap();
    let hints: Vec<&Value> = rows.iter().map(|row| &row["display_hint"]).collect();
    assert_eq!(json!(hints), e["hints"]);
    assert_eq!(rows[0]["display_hints"], e["hints_obj"]);
    assert_eq!(transparent["mode"], e["mode"]);
    // Everything but mode and display_hint is identical between the two projections.
    let strip = |v: &Value| {
        let mut v = v.clone();
        v.as_object_mut().unwrap().remove("mode");
        for row in v["activity_rows"].as_array_mut().unwrap() {
            row.as_object_mut().unwrap().remove("display_hint");
        }
        v
    };
    assert_eq!(strip(&transparent), strip(&compact));
}

#[test]
fn a03_modes_and_empty_input() {
    let e = expected("A03_scene_modes");
    assert_eq!(
        scene_json(&ActivityScene::empty(Mode::TransparentStream)),
        e["empty"]
    );
    assert_eq!(Mode::parse_or_default("fancy").as_str(), e["invalid"]);
    assert_eq!(
        ActivityScene::empty(Mode::CompactWorklog).rows().len(),
        e["non_anchor_object"].as_u64().unwrap() as usize
    );
    let r = scene_fixture();
    let hide = scene_json(&r.scene(Mode::HideAllActivity));
    let hints: Vec<&Value> = hide["activity_rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| &row["display_hint"])
        .collect();
    assert_eq!(json!({"hints": hints, "mode": hide["mode"]}), e["hide_all"]);
}

#[test]
fn a04_row_id_rules() {
    let mut r = reg(json!({"session_id": "sid-seqless", "turn_id": "turn-seqless"}));
    for ev in [
        json!({"type": "tool", "payload": {"tool_call_id": "tool-same"}}),
        json!({"type": "tool_update", "payload": {"tool_call_id": "tool-same"}}),
        json!({"type": "tool_complete", "payload": {"tool_call_id": "tool-same"}}),
        json!({"event": "token", "run_id": "R", "seq": 0}),
        json!({"type": "token", "payload": {}}),
    ] {
        assert!(r.apply(&ev, &Value::Null).applied);
    }
    // A hand-made event with no identity at all, which no input can produce.
    let mut anchor = r.anchor().clone();
    anchor.activity_events.push(AnchorEvent {
        kind: Some(Kind::ProcessProse),
        ..AnchorEvent::default()
    });
    let got: Vec<Value> = ActivityScene::of(&anchor, Mode::CompactWorklog)
        .rows()
        .iter()
        .map(|row| {
            json!([
                row.row_id().to_string(),
                row.order_index(),
                row.group().key.to_string()
            ])
        })
        .collect();
    assert_eq!(Value::Array(got), *expected("A04_row_id_rules"));
}

#[test]
fn a05_group_rules() {
    let mut r = reg(json!({"session_id": "s", "turn_id": "t"}));
    for (i, payload) in [
        json!({"activityBurstId": 0, "activitySegmentSeq": 0, "assistant_msg_idx": 0}),
        json!({"burst_id": "B2", "segment_seq": ""}),
        json!({"assistant_message_index": 4}),
        json!({}),
    ]
    .into_iter()
    .enumerate()
    {
        assert!(
            r.apply(
                &json!({"type": "token", "seq": i + 1, "payload": payload}),
                &Value::Null
            )
            .applied
        );
    }
    let got: Vec<Value> = r
        .scene(Mode::CompactWorklog)
        .rows()
        .iter()
        .map(|row| to_json(&row.group()))
        .collect();
    assert_eq!(Value::Array(got), *expected("A05_group_rules"));
}

#[test]
fn a06_thinking_projection() {
    let e = expected("A06_thinking_projection").as_array().unwrap();
    let mut r = reg(json!({"session_id": "s", "turn_id": "t"}));
    let long = e[2]["text"].as_str().unwrap();
    for payload in [
        json!({"text": "  Mixed   CASE\n thinking  "}),
        json!({"thinking": "from thinking key", "text": "t"}),
        json!({"text": long}),
        json!({}),
    ] {
        let _ = r.apply(
            &json!({"type": "reasoning", "payload": payload}),
            &Value::Null,
        );
    }
    let got: Vec<Value> = r
        .scene(Mode::CompactWorklog)
        .rows()
        .iter()
        .map(|row| json!({"text": row.text(), "thinking": to_json(&row.thinking())}))
        .collect();
    assert_eq!(got, *e);
    assert_eq!(
        e[2]["thinking"]["preview"]
            .as_str()
            .unwrap()
            .chars()
            .count(),
        180
    );
}

#[test]
fn a07_tool_projection_edge_cases() {
    let mut r = reg(json!({"session_id": "s", "turn_id": "t"}));
    for ev in [
        json!({"type": "tool", "payload": {"function": {"name": "fn_name"}, "arguments": "{\"a\":1}", "tool_use_id": "u1", "is_diff": true}}),
        json!({"type": "tool", "payload": {"tool_call_id": 7, "tid": "t2", "input": {"b": 2, "a": 1}}}),
        json!({"type": "tool_complete", "payload": {"name": "x", "done": false, "is_error": "yes", "status": "failed", "summary": "sum",
            "output": "out", "duration_seconds": 3, "startedAt": 9}}),
        json!({"type": "tool_complete", "payload": {"name": "y", "args": 0, "result": {"rows": [1, 2]}}}),
    ] {
        let _ = r.apply(&ev, &Value::Null);
    }
    let got: Vec<Value> = r
        .scene(Mode::CompactWorklog)
        .rows()
        .iter()
        .map(|row| json!({"status": row.status(), "text": row.text(), "tool": to_json(&row.tool()), "tool_call_id": row.tool_call_id()}))
        .collect();
    assert_eq!(Value::Array(got), *expected("A07_tool_projection"));
}

#[test]
fn a08_artifacts_and_side_effects_ride_along_usage_does_not() {
    let e = expected("A08_scene_outcomes_not_activity");
    let mut r = scene_fixture();
    let c = json!({"run_id": "run-scene", "stream_id": "stream-scene"});
    for ev in [
        json!({"event": "state_saved", "payload": {"kind": "memory", "action": "saved"}, "event_id": "run-scene:7", "seq": 7}),
        json!({"event": "artifact_reference", "payload": {"path": "out.md"}, "event_id": "run-scene:8", "seq": 8}),
        json!({"event": "usage", "payload": {"input_tokens": 1}, "event_id": "run-scene:9", "seq": 9}),
    ] {
        assert!(r.apply(&ev, &c).applied);
    }
    let scene = scene_json(&r.scene(Mode::CompactWorklog));
    assert_eq!(
        scene["activity_rows"].as_array().unwrap().len() as u64,
        e["row_count"].as_u64().unwrap()
    );
    assert_eq!(scene["artifacts"], e["artifacts"]);
    assert_eq!(scene["side_effects"], e["side_effects"]);
    let mut ours: Vec<&String> = scene.as_object().unwrap().keys().collect();
    let mut theirs: Vec<&str> = e["scene_keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    ours.sort();
    theirs.sort();
    assert_eq!(ours, theirs);
}

#[test]
fn a09_historical_transcript_scene() {
    let e = expected("A09_historical_scene");
    let input = json!({"session_id": "s", "turn_id": "historical:s:m1:m3", "local_id": "m3", "source_message_refs": [" m1 ", "", "m3"],
        "activity_events": [{"source_type": "tool_complete", "seq": 1, "local_id": "historical:m1:tool:c1", "payload": {"id": "c1", "tid": "c1",
            "tool_call_id": "c1", "name": "terminal", "args": {"command": "ls"}, "snippet": "a b", "done": true, "is_error": false,
            "is_diff": false, "assistant_msg_idx": 1}}],
        "settled_message": {"role": "assistant", "id": "m3", "content": "done listing"}});
    let hist = project_historical_scene(&input, Some("transparent_stream")).expect("a scene");
    let scene = to_json(&hist.scene());
    let rows: Vec<Value> = scene["activity_rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| json!({"row_id": row["row_id"], "kind": row["kind"], "role": row["role"], "hint": row["display_hint"],
            "status": row["status"], "text": row["text"], "group_key": row["group"]["group_key"]}))
        .collect();
    let got = json!({"final_answer": scene["final_answer"], "final_message_ref": scene["final_message_ref"], "identity": scene["identity"],
        "lifecycle": scene["lifecycle"], "mode": scene["mode"], "rows": rows, "terminal_state": scene["terminal_state"]});
    assert_eq!(got, e["ok"]);

    let without = |key: &str| {
        let mut v = input.clone();
        v.as_object_mut().unwrap().remove(key);
        v
    };
    assert!(project_historical_scene(&without("local_id"), None).is_none());
    assert_eq!(e["missing_local_id"], Value::Null);
    let mut titled = input.clone();
    titled["activity_events"] = json!([{"source_type": "title", "payload": {"title": "x"}}]);
    assert!(project_historical_scene(&titled, None).is_none());
    let mut dup = input.clone();
    let event = json!({"source_type": "tool_complete", "event_id": "r:1", "payload": {"tool_call_id": "c1"}});
    dup["activity_events"] = json!([event, event]);
    assert!(project_historical_scene(&dup, None).is_none());
    let mut with_mode = input.clone();
    with_mode["mode"] = json!("transparent_stream");
    let from_item = project_historical_scene(&with_mode, None).unwrap();
    assert_eq!(from_item.mode.as_str(), e["mode_from_item"]);
}
