//! The Transparent Stream: everything the turn did, in order, one row per thing.

use leptos::prelude::*;

use super::{counted, Steps};
use crate::components::turn::view_model::ProcessSummary;
use crate::dynamic::dynamic;
use crate::state::TurnHandle;

/// The Transparent Stream: everything the turn did, in order, one row per thing (a tool call's
/// start and end are one row, with its result), windowed.
#[component]
pub(super) fn Stream(
    turn: TurnHandle,
    process: Memo<ProcessSummary>,
    turn_over: Signal<bool>,
) -> impl IntoView {
    let heading = Memo::new(move |_| process.with(|p| stream_summary(p.events, p.tools)));
    view! {
        <div class="stream">
            <div class="stream-head">
                <span>{dynamic(move || heading.get())}</span>
                {move || (!turn_over.get()).then(|| view! {
                    <span class="working" aria-hidden="true"></span>
                })}
            </div>
            <Steps turn=turn process=process turn_over=turn_over stream=true />
        </div>
    }
}

/// The Transparent Stream's heading: how many events and tool calls the turn has.
fn stream_summary(events: usize, tools: usize) -> String {
    format!(
        "Stream · {} · {}",
        counted(events, "event"),
        counted(tools, "tool")
    )
}

#[cfg(test)]
mod tests {
    use super::stream_summary;

    #[test]
    fn counts_are_singular_for_one() {
        assert_eq!(stream_summary(5, 1), "Stream · 5 events · 1 tool");
        assert_eq!(stream_summary(1, 0), "Stream · 1 event · 0 tools");
        assert_eq!(stream_summary(12, 3), "Stream · 12 events · 3 tools");
    }
}
