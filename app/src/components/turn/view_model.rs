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

/// The latest items of the process, covering its last `limit` segments or so (a tool call's
/// start and end fold into one item), and the segment they start at. `shown` is where the
/// window shown before started, and how many segments the process had then (see
/// [`window_start`]).
pub fn window(
    state: &TurnState,
    limit: usize,
    shown: Option<(usize, usize)>,
) -> (Vec<WorkItem>, usize) {
    let process = state.process();
    let start = window_start(process.len(), limit, shown);
    (fold_tools(&process[start..]), start)
}

/// Where the window over a process of `len` segments starts. It moves on as the process grows,
/// keeping its last `limit`; but one update never drops the newest half window of what was
/// shown before (`shown`: its start and the length then), unless the window would then hold
/// more than twice `limit`. A burst of rows that arrives in one update (a busy page draws
/// one frame for many events) so leaves the rows on screen in place, and they scroll away as
/// the reader follows, instead of being swapped for others under the reader's eyes; the next
/// update trims the window back.
pub fn window_start(len: usize, limit: usize, shown: Option<(usize, usize)>) -> usize {
    let target = len.saturating_sub(limit);
    let Some((start, before)) = shown else {
        return target;
    };
    let keep_from = before.saturating_sub(limit / 2).max(start);
    target.min(keep_from).max(len.saturating_sub(2 * limit))
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
        let (items, hidden) = window(&state, WINDOW, None);
        assert_eq!((items.len(), hidden), (3, 0));
    }

    #[test]
    fn a_long_process_shows_its_latest_items_and_says_how_many_came_before() {
        let state = turn(150);
        let (items, hidden) = window(&state, WINDOW, None);
        assert_eq!(hidden, 300 - WINDOW);
        assert_eq!(items.len(), WINDOW / 2);
        let (all, none) = window(&state, 300, Some((hidden, 300)));
        assert_eq!(
            (all.len(), none),
            (150, 0),
            "Show earlier shows more at once"
        );
    }

    #[test]
    fn a_burst_of_rows_keeps_what_was_on_screen_for_one_update() {
        let limit = 200;
        // Rows arrive a few at a time: the window slides by as many.
        assert_eq!(window_start(150, limit, Some((0, 140))), 0);
        assert_eq!(window_start(230, limit, Some((0, 220))), 30);
        assert_eq!(window_start(240, limit, Some((30, 230))), 40);
        // 250 more in one update: the newest half window of what was shown stays (its rows on
        // screen), the next update trims back to `limit`.
        let burst = window_start(400, limit, Some((0, 150)));
        assert_eq!(burst, 50);
        assert!(400 - burst <= 2 * limit);
        assert_eq!(window_start(401, limit, Some((burst, 400))), 201);
        // A burst larger than the bound drops them all the same: never more than twice `limit`.
        assert_eq!(window_start(1_000, limit, Some((0, 150))), 600);
        // The reader asked for more: the window grows at once.
        assert_eq!(window_start(400, 400, Some((200, 400))), 0);
        // A process that got shorter (its rows replaced by a snapshot) starts again at 0.
        assert_eq!(window_start(0, limit, Some((200, 400))), 0);
    }
}
