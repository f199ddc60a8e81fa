//! Reconciliation scenarios C01–C06.

use anchor::{
    reconcile_renderer_snapshot, reconcile_scene, renderer_snapshot, JsonDomRow, Mode, Registry,
};
use serde_json::{json, Value};

use crate::helpers::{expected, reg, scalar_mismatches, to_json};

fn base() -> Registry {
    let mut r = reg(json!({"session_id": "sid-reconcile", "turn_id": "turn-reconcile"}));
    let c = json!({"run_id": "run-reconcile", "stream_id": "stream-reconcile"});
    for ev in [
        json!({"event": "reasoning", "payload": {"text": "thinking"}, "event_id": "run-reconcile:1", "seq": 1}),
        json!({"event": "tool", "payload": {"tool_call_id": "tool-1", "name": "terminal", "args": {"command": "ls"}}, "event_id": "run-reconcile:2", "seq": 2}),
        json!({"event": "tool_complete", "payload": {"tool_call_id": "tool-1", "name": "terminal", "result": "ok", "is_error": false}, "event_id": "run-reconcile:3", "seq": 3}),
        json!({"event": "done", "payload": {"status": "done"}, "event_id": "run-reconcile:4", "seq": 4}),
    ] {
        assert!(r.apply(&ev, &c).applied);
    }
    r
}

/// What a renderer reports for each scene row.
fn renderer_rows(r: &Registry) -> Vec<Value> {
    let scene = to_json(&r.scene(Mode::TransparentStream));
    scene["activity_rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            json!({"row_id": row["row_id"], "kind": row["kind"], "role": row["role"], "source_event_type": row["source_event_type"],
                "status": row["status"], "tool_call_id": row["tool_call_id"], "tool_name": row["tool"]["name"],
                "tool_done": row["tool"]["done"], "tool_is_error": row["tool"]["is_error"]})
        })
        .collect()
}

fn report(r: &Registry, rows: &[Value], fields: Option<&[&str]>) -> Value {
    let dom: Vec<JsonDomRow<'_>> = rows.iter().map(JsonDomRow).collect();
    reconcile_scene(&r.scene(Mode::TransparentStream), &dom, fields)
}

fn summary(report: &Value) -> Value {
    json!({"fields": report["fields"], "matched": report["matched"], "mismatches": scalar_mismatches(report),
        "mode": report["mode"], "summary": report["summary"], "terminal_state": report["terminal_state"], "version": report["version"]})
}

#[test]
fn c01_matching_renderer_rows() {
    let r = base();
    assert_eq!(
        summary(&report(&r, &renderer_rows(&r), None)),
        *expected("C01_reconcile_matched")
    );
}

#[test]
fn c02_missing_reordered_changed_and_extra_rows() {
    let r = base();
    let mut rows = renderer_rows(&r);
    rows.remove(0);
    rows[1]["status"] = json!("running");
    rows[1]["tool_done"] = json!(false);
    rows.push(json!({"row_id": "renderer-extra", "kind": "process_prose", "role": "prose"}));
    assert_eq!(
        summary(&report(&r, &rows, None)),
        *expected("C02_reconcile_mismatched")
    );
}

#[test]
fn c03_duplicate_renderer_ids_force_index_matching() {
    let r = base();
    let mut rows = renderer_rows(&r);
    rows[2] = rows[1].clone();
    assert_eq!(
        summary(&report(&r, &rows, None)),
        *expected("C03_reconcile_duplicate_ids")
    );
}

#[test]
fn c04_partial_ids_match_by_index() {
    let e = expected("C04_reconcile_partial_ids_index_matching");
    let r = base();
    let mut rows = renderer_rows(&r);
    rows[1].as_object_mut().unwrap().remove("row_id");
    let out = report(&r, &rows, None);
    let mut got = summary(&out);
    got["actual_row1_id"] = out["actual_rows"][1]["row_id"].clone();
    assert_eq!(got, *e);
}

#[test]
fn c05_custom_fields_and_status_normalization() {
    let r = base();
    let mut rows = renderer_rows(&r);
    rows[2]["status"] = json!("Done");
    let fields = ["status", " status ", "text", "", "row_id"];
    assert_eq!(
        summary(&report(&r, &rows, Some(&fields))),
        *expected("C05_reconcile_custom_fields_and_status_normalisation")
    );
}

#[test]
fn c06_renderer_snapshot_reads_rendered_rows_back() {
    let e = expected("C06_renderer_snapshot_rows");
    let transparent = [
        json!({"dataset": {"eventType": "thinking", "eventId": "run-reconcile:1"}, "classList": ["transparent-event-row"],
            "query": {".transparent-event-preview": "thinking"}}),
        json!({"dataset": {"eventType": "tool", "eventStatus": "Completed", "eventId": "run-reconcile:3", "toolName": "terminal", "liveTid": "tool-1"},
            "classList": ["transparent-event-row"], "query": {".transparent-event-preview": "Completed"}}),
    ];
    let dom: Vec<JsonDomRow<'_>> = transparent.iter().map(JsonDomRow).collect();
    assert_eq!(
        renderer_snapshot(&dom, Mode::TransparentStream, None),
        e["transparent_snapshot"]
    );

    let compact = [
        json!({"classList": ["wl-reason"], "dataset": {"worklogReasonSource": "reasoning"}, "textContent": "compact thinking"}),
        json!({"classList": ["tool-card-row"], "dataset": {"toolDone": "false", "liveTid": "tool-live"},
            "query": {".tool-card-name": "terminal", ".tool-card-preview": "Running"}, "textContent": "terminal Running"}),
        json!({"classList": ["tool-card-row"], "dataset": {"compressionCard": ""}, "attributes": {"data-compression-card": ""},
            "textContent": "Compression updated"}),
        json!({"classList": ["tool-card-row"], "dataset": {"compressionCard": "false"}, "attributes": {"data-compression-card": "false"},
            "query": {".tool-card-name": "terminal"}}),
        json!({"classList": ["tool-card-row", "tool-card-running"], "textContent": "plain"}),
    ];
    let dom: Vec<JsonDomRow<'_>> = compact.iter().map(JsonDomRow).collect();
    assert_eq!(
        renderer_snapshot(&dom, Mode::CompactWorklog, None),
        e["compact_snapshot"]
    );

    let r = base();
    let dom: Vec<JsonDomRow<'_>> = transparent.iter().map(JsonDomRow).collect();
    let out = reconcile_renderer_snapshot(&r.scene(Mode::TransparentStream), &dom, None, None);
    let kinds: Vec<Value> = out["reconciliation"]["mismatches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| json!([m["kind"], m["row_id"], m["field"]]))
        .collect();
    let got = json!({"matched": out["matched"], "mismatch_kinds": kinds, "mode": out["mode"], "renderer": out["renderer"],
        "summary": out["reconciliation"]["summary"], "version": out["version"]});
    assert_eq!(got, e["reconciliation"]);
}
