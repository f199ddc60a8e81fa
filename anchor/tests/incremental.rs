//! The incremental interface: what one application tells a renderer.

use anchor::{Change, Mode, Registry, RowChange, Seed, TerminalState};
use serde_json::{json, Value};

fn turn() -> Registry {
    Registry::new(&Seed::new("s").stream("run-1")).unwrap()
}

fn token(seq: u64, text: &str) -> Value {
    json!({"type": "token", "data": json!({"text": text}).to_string(), "lastEventId": format!("run-1:{seq}")})
}

#[test]
fn a_new_row_reports_its_index_and_a_duplicate_reports_nothing() {
    let mut r = turn();
    let first = r.apply(&token(1, "Hel"), &Value::Null);
    assert_eq!(first.change.row, Some(RowChange::Appended(0)));
    assert!(
        first.change.identity,
        "the run id was learned from the event id"
    );
    let second = r.apply(&token(2, "lo"), &Value::Null);
    assert_eq!(second.change.row, Some(RowChange::Appended(1)));
    assert!(!second.change.identity);
    let dup = r.apply(&token(2, "lo"), &Value::Null);
    assert!(!dup.applied);
    assert!(dup.change.is_empty());
    assert_eq!(r.row(1).unwrap().text(), "lo");
    assert!(r.row(2).is_none());
}

#[test]
fn lifecycle_content_and_usage_changes_are_flagged() {
    let mut r = turn();
    let tool = r.apply(&json!({"type": "tool", "data": "{\"name\":\"terminal\",\"tid\":\"c1\"}", "lastEventId": "run-1:1"}), &Value::Null);
    assert!(tool.change.lifecycle, "created -> running");
    let done = r.apply(
        &json!({"type": "done", "data": "{}", "lastEventId": "run-1:2"}),
        &Value::Null,
    );
    assert!(done.change.lifecycle);
    assert_eq!(done.change.row, Some(RowChange::Appended(1)));
    assert_eq!(
        r.anchor().lifecycle.terminal_state,
        Some(TerminalState::Completed)
    );
    let settled = r.apply(&json!({"source_type": "settled_message", "event_id": "run-1:3",
        "payload": {"role": "assistant", "id": "m1", "content": "Done.", "usage": {"input_tokens": 4}}}), &Value::Null);
    assert!(settled.change.content && settled.change.usage && settled.change.stored);
    assert_eq!(settled.change.row, None, "the final answer is never a row");
    let end = r.apply(
        &json!({"type": "stream_end", "data": "{}", "lastEventId": "run-1:4"}),
        &Value::Null,
    );
    assert_eq!(
        end.change,
        Change {
            stored: true,
            ..Change::default()
        },
        "stream_end is transport only"
    );
    assert_eq!(r.anchor().lifecycle.status, "completed");
}

#[cfg(feature = "parity")]
#[test]
fn live_prose_upserts_replace_one_row_in_place() {
    let mut r = turn();
    let ctx = json!({"session_id": "s", "stream_id": "run-1"});
    let prose = |text: &str, status: &str| json!({"source_event_type": "token", "local_id": "live-prose:run-1:1", "text": text, "status": status});
    let first = r.upsert_by_local_id(&prose("Hel", "running"), &ctx);
    assert_eq!(first.change.row, Some(RowChange::Appended(0)));
    let _ = r.apply(&json!({"type": "tool", "data": "{\"name\":\"t\",\"tid\":\"c1\"}", "lastEventId": "run-1:1"}), &Value::Null);
    let second = r.upsert_by_local_id(&prose("Hello", "completed"), &ctx);
    assert_eq!(second.change.row, Some(RowChange::Updated(0)));
    assert_eq!(r.row_count(), 2);
    let row = r.row(0).unwrap();
    assert_eq!(row.text(), "Hello");
    assert_eq!(row.status(), Some("completed"));
    assert_eq!(row.order_index(), 0);
}

#[cfg(feature = "parity")]
#[test]
fn removing_a_row_shifts_later_rows_and_keeps_the_identity_remembered() {
    let mut r = turn();
    let _ = r.apply(&json!({"source_event_type": "reasoning", "local_id": "live-reasoning:run-1:1", "text": "echo", "seq": 1}), &Value::Null);
    let _ = r.apply(&token(2, "answer"), &Value::Null);
    let change = r
        .remove_by_local_id("reasoning", "live-reasoning:run-1:1")
        .unwrap();
    assert_eq!(change.row, Some(RowChange::Removed(0)));
    assert_eq!(r.row_count(), 1);
    assert_eq!(r.row(0).unwrap().order_index(), 0);
    assert_eq!(r.row(0).unwrap().text(), "answer");
    assert!(r
        .remove_by_local_id("reasoning", "live-reasoning:run-1:1")
        .is_none());
}

#[test]
fn switching_modes_reuses_the_same_rows() {
    let mut r = turn();
    let _ = r.apply(&token(1, "a"), &Value::Null);
    let _ = r.apply(
        &json!({"type": "reasoning", "data": "{\"text\":\"b\"}", "lastEventId": "run-1:2"}),
        &Value::Null,
    );
    let compact = r.scene(Mode::CompactWorklog);
    let transparent = compact.clone().with_mode(Mode::TransparentStream);
    assert_eq!(compact.rows().len(), transparent.rows().len());
    for (a, b) in compact.rows().iter().zip(transparent.rows()) {
        assert!(
            std::ptr::eq(a.event(), b.event()),
            "the same events, not copies"
        );
        assert_eq!(
            b.display_hint(Mode::TransparentStream),
            "chronological_activity"
        );
    }
    assert_eq!(
        compact.rows()[1].display_hint(Mode::CompactWorklog),
        "collapsed_thinking"
    );
}
