//! What both views of a turn (the Compact Worklog and the Transparent Stream) show of its
//! process, computed from the turn's state with no signals: the views read it through one memo
//! per turn (see `process_memo` in `mod.rs`), redone when the process changes, never per token
//! of the answer.

use crate::model::{fold_tools, TurnState, WorkItem};

/// How many process items a view shows before "Show earlier".
pub const WINDOW: usize = 200;

/// The counts both views show, and the revision that says the process changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessSummary {
    /// Bumped whenever the process changes (see `TurnState::process_rev`): the windowed items
    /// are redone when it moves, even if no count did (a thought that grew).
    pub rev: u64,
    /// The turn shows its snapshot: its rows are not loaded.
    pub needs_rows: bool,
    /// The steps the worklog counts (a tool call's start and end are one).
    pub steps: usize,
    /// The rows the stream shows.
    pub events: usize,
    /// How many of those are tool calls.
    pub tools: usize,
}

impl ProcessSummary {
    /// The summary of `state`'s process (the turn's own counts: the snapshot's while its rows
    /// are not loaded).
    pub fn of(state: &TurnState) -> Self {
        let (events, tools) = state.stream_counts();
        ProcessSummary {
            rev: state.process_rev,
            needs_rows: state.needs_rows(),
            steps: state.steps(),
            events,
            tools,
        }
    }
}

/// The latest items of the process, covering at most its last `limit` segments (a tool
/// call's start and end fold into one item), and how many segments come before them.
pub fn window(state: &TurnState, limit: usize) -> (Vec<WorkItem>, usize) {
    let process = state.process();
    let start = process.len().saturating_sub(limit);
    (fold_tools(&process[start..]), start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::JournalEvent;
    use serde_json::json;

    fn turn(tools: u64) -> TurnState {
        let mut events = Vec::new();
        let mut seq = 0;
        let mut push = |kind: &str, payload: serde_json::Value| {
            seq += 1;
            events.push(JournalEvent {
                seq,
                kind: kind.into(),
                payload,
            });
        };
        for i in 0..tools {
            let call = json!({"name": "read_file", "tid": format!("c{i}"), "args": {"path": format!("f{i}")}});
            push("tool", call.clone());
            let mut done = call;
            done["preview"] = json!("ok");
            push("tool_complete", done);
        }
        push("token", json!({"text": "Done."}));
        let mut data = crate::model::tests::turn(events);
        data.running = true;
        TurnState::new("s1", &data)
    }

    #[test]
    fn both_views_count_the_same_process() {
        let state = turn(3);
        let summary = ProcessSummary::of(&state);
        // Start and end are one step, and one row of the stream, of a tool each.
        assert_eq!(
            (summary.steps, summary.events, summary.tools),
            (3, 6, 3),
            "{summary:?}"
        );
        assert!(!summary.needs_rows);
        let (items, hidden) = window(&state, WINDOW);
        assert_eq!((items.len(), hidden), (3, 0));
    }

    #[test]
    fn a_long_process_shows_its_latest_items_and_says_how_many_came_before() {
        let state = turn(150);
        let (items, hidden) = window(&state, WINDOW);
        assert_eq!(hidden, 300 - WINDOW);
        assert_eq!(items.len(), WINDOW / 2);
        let (all, none) = window(&state, 300);
        assert_eq!((all.len(), none), (150, 0));
    }
}
