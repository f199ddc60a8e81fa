//! Status and terminal state scenarios T01–T04.

use anchor::{normalize, normalize_terminal_state};
use serde_json::{json, Map, Value};

use crate::helpers::{ctx, expected};

fn status(input: Value) -> Value {
    let n = normalize(&input, &ctx());
    n.event.map_or(Value::Null, |e| json!(e.status))
}

#[test]
fn t01_derived_status_per_source_type() {
    let types = [
        "token",
        "interim_assistant",
        "reasoning",
        "tool",
        "tool_update",
        "tool_complete",
        "compressing",
        "compressed",
        "approval",
        "clarify",
        "pending_steer_leftover",
        "goal_continue",
        "done",
        "cancel",
        "error",
        "apperror",
        "stream_end",
        "usage",
        "title",
        "settled_message",
        "state_saved",
        "artifact_reference",
    ];
    let got: Map<String, Value> = types
        .iter()
        .map(|t| ((*t).to_owned(), status(json!({"type": t, "payload": {}}))))
        .collect();
    assert_eq!(Value::Object(got), *expected("T01_status_fallbacks"));
}

#[test]
fn t02_explicit_status_handling() {
    let row = |event: &str, payload: Value| status(json!({"event": event, "payload": payload}));
    let got = json!({
        "tool_complete_is_error_true": row("tool_complete", json!({"is_error": true})),
        "tool_complete_is_error_string_false": row("tool_complete", json!({"is_error": "false"})),
        "done_weird": row("done", json!({"status": "weird"})),
        "done_terminal_state_ignored": row("done", json!({"terminal_state": "tool_limit_reached"})),
        "done_status_max_iterations": row("done", json!({"status": "max_iterations"})),
        "apperror_type_ignored": row("apperror", json!({"type": "no_response"})),
        "apperror_status": row("apperror", json!({"status": "no_response"})),
        "apperror_phase": row("apperror", json!({"phase": "Compression-Exhausted"})),
        "cancel_payload_from_server": status(json!({"type": "cancel", "data": "{\"message\":\"Cancelled\",\"type\":\"cancelled\",\"status\":\"cancelled\"}"})),
        "error_connection_lost": status(json!({"source_event_type": "error", "status": "connection_lost"})),
        "compressed_explicit": row("compressed", json!({"status": "completed", "phase": "done"})),
        "state_precedence": row("token", json!({"state": "s2", "phase": "p3"})),
        "nonstring_status_blocks": row("tool", json!({"status": 5, "state": "x"})),
    });
    assert_eq!(got, *expected("T02_explicit_status"));
}

#[test]
fn t03_terminal_alias_table() {
    let e = expected("T03_terminal_aliases").as_object().unwrap();
    for (value, want) in e {
        let got = normalize_terminal_state(value, None).map(|t| t.as_str());
        assert_eq!(json!(got), *want, "{value:?}");
    }
}

#[test]
fn t04_fallback_argument() {
    let n = |v: &str, f: &str| json!(normalize_terminal_state(v, Some(f)).map(|t| t.as_str()));
    // A non-string value has the alias key "", like the empty string.
    let got = json!({
        "unknown_with_cancel": n("zzz", "cancel"),
        "both_unknown": n("zzz", "yyy"),
        "nonstring": n("", "done"),
    });
    assert_eq!(got, *expected("T04_terminal_fallback_arg"));
}
