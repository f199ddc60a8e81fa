//! The model's tests: a turn fed every way (live, replayed, settled, folded) shows the same.

use super::*;
use crate::api::{JournalEvent, TurnData, TurnNotices, TurnSnapshot};
use anchor::TerminalState;
use serde_json::json;
use serde_json::Value;

fn ev(seq: u64, kind: &str, payload: Value) -> JournalEvent {
    JournalEvent {
        seq,
        kind: kind.into(),
        payload,
    }
}

/// A settled-looking turn of run `run1` made of `events` (the view model's tests use it too).
pub(crate) fn turn(events: Vec<JournalEvent>) -> TurnData {
    TurnData {
        user: crate::api::MessageData {
            id: "u".into(),
            content: "hi".into(),
            created_at: 0.0,
            attachments: Vec::new(),
        },
        run_id: "run1".into(),
        turn_id: "turn-run1".into(),
        events,
        running: false,
        snapshot: None,
        versions: Default::default(),
        model: None,
    }
}

fn journal() -> Vec<JournalEvent> {
    vec![
        ev(1, "title", json!({"title": "x", "created_at": 1.0})),
        ev(
            2,
            "reasoning",
            json!({"text": "Let me ", "created_at": 1.1}),
        ),
        ev(3, "reasoning", json!({"text": "look.", "created_at": 1.2})),
        ev(
            4,
            "tool",
            json!({"name": "terminal", "tid": "c1", "args": {"command": "ls -la"}, "created_at": 1.3}),
        ),
        ev(5, "metering", json!({"tps": 1, "created_at": 1.4})),
        ev(
            6,
            "tool_complete",
            json!({"name": "terminal", "tid": "c1", "args": {"command": "ls -la"}, "preview": "a b", "is_error": false, "created_at": 1.5}),
        ),
        ev(7, "token", json!({"text": "The ", "created_at": 1.6})),
        ev(8, "token", json!({"text": "answer.", "created_at": 1.7})),
        ev(9, "done", json!({"status": "completed", "created_at": 2.0})),
        ev(
            10,
            "settled_message",
            json!({"role": "assistant", "id": "m1", "content": "The answer.", "created_at": 2.0}),
        ),
        ev(11, "stream_end", json!({"created_at": 2.0})),
    ]
}

#[test]
fn deltas_merge_tools_stand_alone_and_the_answer_stream_is_separated() {
    let state = TurnState::new("s1", &turn(journal()));
    let kinds: Vec<SegmentKind> = state.segments.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [
            SegmentKind::Thinking,
            SegmentKind::ToolStart,
            SegmentKind::ToolDone,
            SegmentKind::Prose,
            SegmentKind::Terminal
        ]
    );
    assert_eq!(state.segments[0].text, "Let me look.");
    assert_eq!(state.segments[3].text, "The answer.");
    assert_eq!(state.segments[1].tool.as_ref().unwrap().target, "ls -la");
    assert_eq!(state.segments[2].tool.as_ref().unwrap().result, "a b");
    assert_eq!(state.final_answer(), "The answer.");
    assert_eq!(state.terminal_state(), Some(TerminalState::Completed));
    assert_eq!(state.answer_stream(), 3..4);
    let process: Vec<SegmentKind> = state.process().iter().map(|s| s.kind).collect();
    assert_eq!(
        process,
        [
            SegmentKind::Thinking,
            SegmentKind::ToolStart,
            SegmentKind::ToolDone
        ]
    );
    let items = fold_tools(&state.process());
    assert_eq!(items.len(), 2);
    assert_eq!(step_count(&state.process()), 2);
    assert!(matches!(&items[1], WorkItem::Tool { done: Some(_), .. }));
    assert!(state.ended);
    assert_eq!(state.elapsed(), Some(1.0));
    assert_eq!(state.segments[0].row_id, "run1:2");
}

#[test]
fn step_count_agrees_with_fold_tools_on_unmatched_and_repeated_calls() {
    let tool = |seq, kind: &str, tid: &str| {
        ev(
            seq,
            kind,
            json!({"name": "terminal", "tid": tid, "args": {"command": "ls"}, "preview": "ok", "is_error": false, "created_at": 1.0}),
        )
    };
    let events = vec![
        tool(1, "tool", "a"),
        tool(2, "tool_complete", "b"), // an end without a start
        tool(3, "tool", "c"),
        tool(4, "tool", "c"), // the same call id started twice
        tool(5, "tool_complete", "c"),
        tool(6, "tool_complete", "c"),
        tool(7, "tool_complete", "a"),
        ev(8, "token", json!({"text": "ok", "created_at": 2.0})),
    ];
    let state = TurnState::new("s1", &turn(events));
    let process = state.process();
    let all: Vec<&Segment> = state.segments.iter().collect();
    for segments in [&process[..], &all[..], &all[2..], &all[..4]] {
        assert_eq!(step_count(segments), fold_tools(segments).len());
    }
}

#[test]
fn the_streamed_answer_stays_the_answer_between_done_and_the_settled_message() {
    let all = journal();
    let done = all.iter().position(|e| e.kind == "done").unwrap();
    let between = TurnState::new("s1", &turn(all[..=done].to_vec()));
    assert_eq!(between.terminal_state(), Some(TerminalState::Completed));
    assert_eq!(between.final_answer(), "");
    assert_eq!(between.answer_state(), AnswerState::Settling);
    assert_eq!(between.answer_text(), "The answer.");
    assert!(between
        .process()
        .iter()
        .all(|s| s.kind != SegmentKind::Prose));
    let settled = TurnState::new("s1", &turn(all.clone()));
    assert_eq!(settled.answer_state(), AnswerState::Final);
    assert_eq!(settled.answer_text(), "The answer.");
}

/// Everything a folded turn shows, as a turn state answers it.
#[allow(clippy::type_complexity)]
fn shown(
    s: &TurnState,
) -> (
    String,
    AnswerState,
    Option<TerminalState>,
    (String, String),
    Option<(u64, u64)>,
    usize,
    (usize, usize),
    usize,
    u64,
    Option<f64>,
    bool,
) {
    (
        s.answer_text(),
        s.answer_state(),
        s.terminal_state(),
        s.terminal_note(),
        s.usage_tokens(),
        s.steps(),
        s.stream_counts(),
        s.row_count(),
        s.last_seq,
        s.elapsed(),
        s.ended,
    )
}

#[test]
fn a_settled_turn_made_from_its_snapshot_shows_what_its_journal_shows() {
    let all = journal();
    let done = all.iter().position(|e| e.kind == "done").unwrap();
    let mut failed = all[..done].to_vec();
    failed.push(ev(
        9,
        "apperror",
        json!({"message": "The provider failed.", "hint": "Try again.", "created_at": 2.5}),
    ));
    failed.push(ev(10, "stream_end", json!({"created_at": 2.5})));
    let mut used = all.clone();
    used.insert(
        8,
        ev(
            9,
            "usage",
            json!({"input_tokens": 1200, "output_tokens": 7, "created_at": 1.8}),
        ),
    );
    for (i, e) in used.iter_mut().enumerate() {
        e.seq = i as u64 + 1;
    }
    for events in [all, failed, used] {
        let full = TurnState::new("s1", &turn(events.clone()));
        assert!(!full.needs_rows());
        let snapshot = full.snapshot().expect("a settled turn has a snapshot");
        // Through JSON, as page data carries it.
        let wire: TurnSnapshot =
            serde_json::from_str(&serde_json::to_string(&snapshot).unwrap()).unwrap();
        let mut data = turn(Vec::new());
        data.snapshot = Some(wire);
        let folded = TurnState::new("s1", &data);
        assert!(folded.needs_rows());
        assert_eq!(shown(&folded), shown(&full));
        assert!(folded.process().is_empty() && folded.row_count() == full.row_count());
    }
    // Each journal says something different: the comparison is not between defaults.
    let failed_state = TurnState::new("s1", &turn(journal()[..done].to_vec()));
    assert_eq!(failed_state.snapshot(), None, "a running turn has none");
}

#[test]
fn a_snapshot_keeps_the_ending_the_usage_and_the_note_of_its_turn() {
    let mut events = journal();
    let done = events.iter().position(|e| e.kind == "done").unwrap();
    events.truncate(done);
    events.push(ev(
        9,
        "apperror",
        json!({"message": "The provider failed.", "hint": "Try again.", "created_at": 2.5}),
    ));
    let s = TurnState::new("s1", &turn(events)).snapshot().unwrap();
    assert_eq!(s.terminal, Some(TerminalState::Error));
    assert_eq!(s.note.1, "Try again.");
    assert!(!s.settled);
    assert_eq!(s.answer, "The answer.");
    assert_eq!(s.steps, 2, "the reasoning and the tool call");
    assert_eq!(s.stream.1, 1);
    assert_eq!(s.span, (Some(1.0), Some(2.5)));
}

#[test]
fn what_a_turn_says_beside_its_answer_is_kept_folded_and_does_not_touch_the_answer() {
    let mut events = journal();
    // Earlier context left out before the work; the answer cut off at its limit.
    events.insert(
        1,
        ev(
            2,
            "context_status",
            json!({"status": "trimmed", "left_out": 4, "message": "Earlier context left out.", "created_at": 1.05}),
        ),
    );
    for (i, e) in events.iter_mut().enumerate() {
        e.seq = i as u64 + 1;
    }
    let done = events.iter().position(|e| e.kind == "done").unwrap();
    events[done].payload = json!({"status": "completed", "finish_reason": "length",
        "cut_off": {"limit": 24, "message": "The answer was cut off."}, "created_at": 2.0});
    let full = TurnState::new("s1", &turn(events.clone()));
    let notices = full.notices();
    assert_eq!(
        notices.left_out.as_deref(),
        Some("Earlier context left out.")
    );
    assert_eq!(notices.cut_off.as_deref(), Some("The answer was cut off."));
    // The answer, its ending and its rows are those of the same turn without them.
    let plain = TurnState::new("s1", &turn(journal()));
    assert_eq!(full.answer_text(), plain.answer_text());
    assert_eq!(full.terminal_state(), Some(TerminalState::Completed));
    assert_eq!(full.row_count(), plain.row_count());
    assert_eq!(plain.notices(), TurnNotices::default());
    // Folded into its snapshot (through JSON, as page data carries it), it says the same.
    let wire: TurnSnapshot =
        serde_json::from_str(&serde_json::to_string(&full.snapshot().unwrap()).unwrap()).unwrap();
    let mut data = turn(events);
    data.events.clear();
    data.snapshot = Some(wire);
    assert_eq!(TurnState::new("s1", &data).notices(), notices);
    // A snapshot stored before notices existed reads as saying nothing.
    let old: TurnSnapshot = serde_json::from_value(json!({
        "answer": "a", "settled": true, "terminal": "completed", "note": ["", ""],
        "usage": null, "steps": 0, "stream": [0, 0], "rows": 1, "last_seq": 3,
        "span": [null, null]
    }))
    .unwrap();
    assert_eq!(old.notices, TurnNotices::default());
}

#[test]
fn a_turn_that_did_not_complete_keeps_its_streamed_answer_as_partial() {
    let all = journal();
    let done = all.iter().position(|e| e.kind == "done").unwrap();
    let mut cancelled = all[..done].to_vec();
    cancelled.push(ev(
        9,
        "cancel",
        json!({"message": "Cancelled", "created_at": 2.0}),
    ));
    // Before the settled message: the streamed prose.
    let stopped = TurnState::new("s1", &turn(cancelled.clone()));
    assert_eq!(stopped.terminal_state(), Some(TerminalState::Cancelled));
    assert_eq!(stopped.answer_state(), AnswerState::Partial);
    assert_eq!(stopped.answer_text(), "The answer.");
    assert!(stopped
        .process()
        .iter()
        .all(|s| s.kind != SegmentKind::Prose));
    // The server settles it with what the journal had streamed: the same text.
    let rows: Vec<(&str, &Value)> = cancelled
        .iter()
        .map(|e| (e.kind.as_str(), &e.payload))
        .collect();
    let partial = anchor::answer::answer_tail(rows);
    assert_eq!(partial, "The answer.");
    cancelled.push(ev(
        10,
        "settled_message",
        json!({"role": "assistant", "id": "m1", "content": partial, "partial": true}),
    ));
    let settled = TurnState::new("s1", &turn(cancelled));
    assert_eq!(settled.answer_state(), AnswerState::Partial);
    assert_eq!(settled.answer_text(), "The answer.");
}

#[test]
fn a_kind_this_build_does_not_know_is_shown_once_not_dropped() {
    let mut events = journal()[..3].to_vec();
    events.push(ev(4, "sandbox_snapshot", json!({"created_at": 4.0})));
    let from_page = TurnState::new("s1", &turn(events.clone()));
    let rows = from_page.row_count();
    let notes: Vec<&Segment> = from_page
        .process()
        .into_iter()
        .filter(|s| s.status.as_deref() == Some("unrecognised"))
        .collect();
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0].text.contains("sandbox_snapshot"),
        "{}",
        notes[0].text
    );
    assert_eq!(notes[0].row_id, "run1:4");

    // The same event live, then again after a reconnect: one note, as from the page.
    let mut live = TurnState::new("s1", &turn(events[..3].to_vec()));
    for _ in 0..2 {
        live.apply_frame("sandbox_snapshot", r#"{"created_at":4.0}"#, "run1:4", "s1");
    }
    let shown = |s: &TurnState| {
        s.process()
            .iter()
            .map(|seg| (seg.kind, seg.text.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(shown(&live), shown(&from_page));
    assert_eq!(live.row_count(), rows, "the anchor's rows are unchanged");
    // A known kind makes no such note.
    assert!(TurnState::new("s1", &turn(journal()))
        .process()
        .iter()
        .all(|s| s.status.as_deref() != Some("unrecognised")));
}

#[test]
fn the_process_changes_with_activity_not_with_the_answers_tokens() {
    let all = journal();
    let mut state = TurnState::new("s1", &turn(all[..6].to_vec()));
    let before = (state.process_rev, state.process().len());
    for (seq, text) in [(7, "The "), (8, "answer.")] {
        state.apply_frame(
            "token",
            &json!({ "text": text }).to_string(),
            &format!("run1:{seq}"),
            "s1",
        );
        assert_eq!(
            (state.process_rev, state.process().len()),
            before,
            "a token"
        );
    }
    state.apply_frame(
        "tool",
        &json!({"name": "terminal", "tid": "c2", "args": {"command": "ls"}}).to_string(),
        "run1:9",
        "s1",
    );
    assert!(state.process_rev > before.0, "a tool call");
    assert_eq!(
        state.process().len(),
        before.1 + 2,
        "the prose before it and the call"
    );
    let rev = state.process_rev;
    state.apply_frame(
        "done",
        &json!({"status": "completed"}).to_string(),
        "run1:10",
        "s1",
    );
    assert_eq!(state.process_rev, rev, "the terminal note is not process");
}

#[test]
fn a_compression_and_its_end_are_one_item() {
    let note = |seq, kind: &str| {
        ev(
            seq,
            kind,
            json!({"message": "Compressing context", "created_at": 1.0}),
        )
    };
    let events = vec![
        ev(1, "reasoning", json!({"text": "hm", "created_at": 1.0})),
        note(2, "compressing"),
        note(3, "compressed"),
        note(4, "compressing"),
    ];
    let state = TurnState::new("s1", &turn(events));
    let process = state.process();
    let items = fold_tools(&process);
    assert_eq!(items.len(), 3);
    assert_eq!(step_count(&process), 3);
    let sources: Vec<&str> = items
        .iter()
        .map(|i| match i {
            WorkItem::Segment(s) => s.source.as_str(),
            WorkItem::Tool { .. } => "tool",
        })
        .collect();
    assert_eq!(sources, ["reasoning", "compressed", "compressing"]);
}

#[test]
fn live_frames_continue_where_the_page_data_stopped_without_duplicates() {
    let all = journal();
    let mut live = TurnState::new("s1", &turn(all[..5].to_vec()));
    for e in &all {
        // Frames 1..=5 arrive again after a reconnect: ignored.
        live.apply_frame(
            &e.kind,
            &e.payload.to_string(),
            &format!("run1:{}", e.seq),
            "s1",
        );
    }
    let whole = TurnState::new("s1", &turn(all.clone()));
    assert_eq!(live.segments, whole.segments);
    assert_eq!(live.registry.anchor(), whole.registry.anchor());
    assert!(
        !live.apply_frame("token", "{\"text\":\"x\"}", "other-run:99", "s1"),
        "another run's frame"
    );
}

#[test]
fn approvals_wait_until_resolved_and_todos_keep_the_latest() {
    let events = vec![
        ev(
            1,
            "approval",
            json!({"approval_id": "a1", "command": "rm -rf target/", "description": "Delete"}),
        ),
        ev(
            2,
            "todo_state",
            json!({"todos": [{"id": "1", "status": "pending"}]}),
        ),
        ev(
            3,
            "todo_state",
            json!({"todos": [{"id": "1", "status": "completed"}]}),
        ),
    ];
    let mut state = TurnState::new("s1", &turn(events));
    assert_eq!(state.pending.len(), 1);
    assert_eq!(
        state.todos.as_ref().unwrap()["todos"][0]["status"],
        "completed"
    );
    state.apply_frame(
        "approval_resolved",
        "{\"approval_id\":\"a1\",\"choice\":\"once\"}",
        "run1:4",
        "s1",
    );
    assert!(state.pending.is_empty());
}

#[test]
fn answers_to_approvals_and_questions_are_kept_by_id() {
    let asked = vec![
        ev(
            1,
            "approval",
            json!({"approval_id": "a1", "command": "rm x", "description": "Remove x"}),
        ),
        ev(
            2,
            "clarify",
            json!({"clarify_id": "c1", "question": "Which?"}),
        ),
    ];
    let state = TurnState::new("s1", &turn(asked.clone()));
    let ids: Vec<Option<&str>> = state
        .segments
        .iter()
        .map(|s| s.interaction.as_deref())
        .collect();
    assert_eq!(ids, [Some("a1"), Some("c1")]);
    assert!(state.answers.is_empty());
    assert_eq!(state.pending.len(), 2);

    let mut answered = asked;
    answered.push(ev(
        3,
        "approval_resolved",
        json!({"approval_id": "a1", "choice": "session"}),
    ));
    answered.push(ev(
        4,
        "clarify_resolved",
        json!({"clarify_id": "c1", "response": "dev"}),
    ));
    let state = TurnState::new("s1", &turn(answered));
    // A request journaled without its options: the answer in general words.
    assert_eq!(state.answers["a1"], "Allowed in this conversation");
    assert_eq!(state.answers["c1"], "Answered: dev");
    assert!(state.pending.is_empty());
}

#[test]
fn an_approval_offers_what_its_card_says_and_its_answer_says_what_it_allowed() {
    let asked = vec![ev(
        1,
        "approval",
        json!({"approval_id": "a1", "command": "rm -rf target/", "description": "Delete",
               "choices": ["once", "session", "deny"],
               "options": [
                   {"choice": "once", "label": "Allow once"},
                   {"choice": "session", "label": "Allow `rm -rf target/` in this conversation"},
                   {"choice": "deny", "label": "Deny"}]}),
    )];
    let state = TurnState::new("s1", &turn(asked.clone()));
    let Pending::Approval { options, .. } = &state.pending[0] else {
        panic!("an approval");
    };
    let labels: Vec<&str> = options.iter().map(|o| o.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "Allow once",
            "Allow `rm -rf target/` in this conversation",
            "Deny"
        ]
    );
    let mut answered = asked;
    answered.push(ev(
        2,
        "approval_resolved",
        json!({"approval_id": "a1", "choice": "session"}),
    ));
    let state = TurnState::new("s1", &turn(answered));
    assert_eq!(
        state.answers["a1"],
        "Allowed rm -rf target/ in this conversation"
    );
}

/// What a person would see of a turn, and where the page would resume it.
fn seen(s: &TurnState) -> Value {
    json!({
        "answer": s.answer_text(),
        "state": s.answer_state().as_str(),
        "terminal": s.terminal_state().map(|t| format!("{t:?}")),
        "process": s.process().iter().map(|seg| (format!("{:?}", seg.kind), seg.text.clone())).collect::<Vec<_>>(),
        "rows": s.row_count(),
        "last_seq": s.last_seq,
        "ended": s.ended,
        "span": [s.first_at, s.last_at],
    })
}

#[test]
fn rows_and_frames_that_come_before_the_engine_are_held_and_then_shown_as_if_it_had_been_there() {
    let all = journal();
    let frame = |s: &mut TurnState, engine, e: &JournalEvent| {
        s.apply_frame_with(
            engine,
            &e.kind,
            &e.payload.to_string(),
            &format!("run1:{}", e.seq),
            "s1",
        )
    };
    // The engine there all along: rows from the page, then frames.
    let mut direct = TurnState::new("s1", &turn(all[..5].to_vec()));
    for e in &all[5..] {
        assert!(frame(&mut direct, engine::now(), e));
    }

    // The same with no engine: nothing is shown, but the page knows where it stands.
    let context = json!({"session_id": "s1", "stream_id": "run1"});
    let mut held = TurnState::new("s1", &turn(Vec::new()));
    for e in &all[..5] {
        assert!(held.apply_journal_with(None, e, &context));
    }
    for e in &all[5..] {
        assert!(frame(&mut held, None, e));
    }
    assert!(
        !frame(&mut held, None, &all[7]),
        "a frame seen again is not new"
    );
    assert!(held.holds());
    assert_eq!(held.answer_text(), "");
    assert_eq!(held.row_count(), 0);
    assert_eq!(
        (held.last_seq, held.ended),
        (11, true),
        "resume after 11; no more comes"
    );

    // The engine comes: the same turn, and nothing is held any more.
    held.catch_up(engine::build());
    assert!(!held.holds());
    assert_eq!(seen(&held), seen(&direct));
    assert_eq!(held.answer_text(), "The answer.");

    // Held rows are applied before the first one that finds the engine there, in order.
    let mut late = TurnState::new("s1", &turn(Vec::new()));
    for e in &all[..10] {
        late.apply_journal_with(None, e, &context);
    }
    assert!(frame(&mut late, engine::now(), &all[10]));
    assert!(!late.holds());
    assert_eq!(seen(&late), seen(&direct));
}

#[test]
fn the_time_a_turn_waited_for_the_person_is_not_the_agents() {
    let events = vec![
        ev(1, "title", json!({"title": "x", "created_at": 10.0})),
        ev(
            2,
            "approval",
            json!({"approval_id": "a1", "command": "rm x", "description": "Remove x", "created_at": 11.0}),
        ),
        // A question while the approval waits: one wait, not two.
        ev(
            3,
            "clarify",
            json!({"clarify_id": "c1", "question": "Which?", "created_at": 12.0}),
        ),
        ev(
            4,
            "approval_resolved",
            json!({"approval_id": "a1", "choice": "once", "created_at": 20.0}),
        ),
        ev(
            5,
            "clarify_resolved",
            json!({"clarify_id": "c1", "response": "that", "created_at": 23.0}),
        ),
        ev(6, "token", json!({"text": "Done.", "created_at": 24.0})),
        ev(
            7,
            "done",
            json!({"status": "completed", "created_at": 25.0}),
        ),
        ev(8, "stream_end", json!({"created_at": 25.0})),
    ];
    let replayed = TurnState::new("s1", &turn(events.clone()));
    assert_eq!(replayed.waited, 12.0);
    assert_eq!(replayed.elapsed(), Some(3.0));

    // Watched live, frame by frame: the same.
    let mut live = TurnState::new("s1", &turn(Vec::new()));
    for e in &events {
        live.apply_frame(
            &e.kind,
            &e.payload.to_string(),
            &format!("run1:{}", e.seq),
            "s1",
        );
    }
    assert_eq!((live.waited, live.elapsed()), (12.0, Some(3.0)));

    // Loaded folded, as its snapshot: the same.
    let mut data = turn(Vec::new());
    data.snapshot = replayed.snapshot();
    let folded = TurnState::new("s1", &data);
    assert_eq!((folded.waited, folded.elapsed()), (12.0, Some(3.0)));

    // Stopped while it waits: the wait ends with the turn.
    let mut stopped = events[..3].to_vec();
    stopped.push(ev(
        4,
        "done",
        json!({"status": "cancelled", "created_at": 30.0}),
    ));
    let stopped = TurnState::new("s1", &turn(stopped));
    assert_eq!((stopped.waited, stopped.elapsed()), (19.0, Some(1.0)));
}

#[test]
fn a_todo_update_says_what_changed_not_only_that_it_was_called() {
    use super::segments::target_of;
    let list = |statuses: [&str; 3]| {
        serde_json::json!({"todos": [
            {"id": "1", "content": "Read the failing test", "status": statuses[0]},
            {"id": "2", "content": "Fix the cache", "status": statuses[1]},
            {"id": "3", "content": "Run the suite again", "status": statuses[2]},
        ]})
    };
    assert_eq!(
        target_of(&list(["completed", "in_progress", "pending"])),
        "1 of 3 done · now: Fix the cache"
    );
    assert_eq!(
        target_of(&list(["completed", "pending", "pending"])),
        "1 of 3 done"
    );
    assert_eq!(
        target_of(&list(["completed", "completed", "completed"])),
        "all 3 done"
    );
    assert_eq!(
        target_of(&serde_json::json!({"todos": []})),
        "emptied the list"
    );
    // Other tools still name what they act on.
    assert_eq!(target_of(&serde_json::json!({"path": "a.txt"})), "a.txt");
}
