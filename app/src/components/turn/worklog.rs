//! The Compact Worklog: the turn's process folded under one summary line, the answer first.

use anchor::TerminalState;
use leptos::prelude::*;

use super::{counted, fmt_duration, Steps};
use crate::components::turn::view_model::ProcessSummary;
use crate::dynamic::{dynamic, flag};
use crate::state::{use_chat, TurnHandle};

/// The Compact Worklog: the process folded under a summary line, the answer primary. A turn
/// the reader watched run keeps what it showed when it settles (nothing folds under the
/// reader); a turn loaded settled comes folded (errors open).
#[component]
pub(super) fn Worklog(
    turn: TurnHandle,
    process: Memo<ProcessSummary>,
    turn_over: Signal<bool>,
) -> impl IntoView {
    let chat = use_chat();
    let user_choice = RwSignal::new(None::<bool>);
    let steps = Memo::new(move |_| process.with(|p| p.steps));
    let elapsed = Memo::new(move |_| turn.state.with(|s| s.elapsed()));
    let ending = Memo::new(move |_| turn.state.with(|s| s.terminal_state()));
    let error_family = Memo::new(move |_| {
        ending
            .get()
            .is_some_and(|t| !matches!(t, TerminalState::Completed | TerminalState::Cancelled))
    });
    let watched = turn.watched;
    let open = Memo::new(move |_| {
        user_choice
            .get()
            .unwrap_or_else(|| watched || !turn_over.get() || error_family.get())
    });
    let has_steps = Memo::new(move |_| steps.get() > 0);
    // While a turn runs (and afterwards, for one the reader watched) the summary line holds its
    // place from the first moment, so the process and the answer never push each other down.
    let shown = Memo::new(move |_| has_steps.get() || watched || !turn_over.get());
    let summary = move || {
        let n = steps.get();
        let time = elapsed.get().map(fmt_duration);
        worklog_summary(ending.get(), n, time.as_deref())
    };
    let stored_turn = StoredValue::new(turn);
    move || {
        shown.get().then(|| {
            view! {
                <div class="worklog" data-open=flag(move || open.get() && has_steps.get())>
                    <button
                        type="button"
                        class="worklog-summary"
                        disabled=dynamic(move || !has_steps.get())
                        aria-expanded=flag(move || open.get() && has_steps.get())
                        on:click=move |_| {
                            let opening = !open.get_untracked();
                            user_choice.set(Some(opening));
                            if opening {
                                stored_turn.with_value(|t| chat.load_rows(t));
                            }
                        }
                    >
                        // The chevron leads and the dots keep to the far end: a summary that
                        // changes its length moves neither.
                        <span class="chevron" aria-hidden="true"></span>
                        <span class="worklog-text">{summary}</span>
                        {move || (!turn_over.get()).then(|| view! {
                            <span class="working" aria-hidden="true"></span>
                        })}
                    </button>
                    {move || (open.get() && has_steps.get()).then(|| view! {
                        <Steps turn=stored_turn.get_value() process=process turn_over=turn_over stream=false />
                    })}
                </div>
            }
        })
    }
}

/// The worklog's summary line.
fn worklog_summary(ending: Option<TerminalState>, steps: usize, time: Option<&str>) -> String {
    match (ending, steps, time) {
        (None, 0, _) => "Working".to_owned(),
        (None, n, _) => format!("Working · {}", counted(n, "step")),
        (Some(TerminalState::Completed), 0, Some(t)) => format!("Answered in {t}"),
        (Some(TerminalState::Completed), 0, None) => "Answered".to_owned(),
        (Some(TerminalState::Cancelled), 0, Some(t)) => format!("Stopped after {t}"),
        (Some(TerminalState::Cancelled), 0, None) => "Stopped".to_owned(),
        (Some(_), 0, Some(t)) => format!("Ended after {t}"),
        (Some(_), 0, None) => "Ended".to_owned(),
        (Some(_), n, Some(t)) => format!("Processed {t} · {}", counted(n, "step")),
        (Some(_), n, None) => format!("Processed · {}", counted(n, "step")),
    }
}

#[cfg(test)]
mod tests {
    use super::worklog_summary;

    #[test]
    fn the_summary_says_what_the_turn_did_in_its_tense() {
        use anchor::TerminalState::*;
        assert_eq!(worklog_summary(None, 0, None), "Working");
        assert_eq!(worklog_summary(None, 2, Some("3s")), "Working · 2 steps");
        assert_eq!(
            worklog_summary(Some(Completed), 0, Some("3s")),
            "Answered in 3s"
        );
        assert_eq!(
            worklog_summary(Some(Cancelled), 0, Some("3s")),
            "Stopped after 3s"
        );
        assert_eq!(
            worklog_summary(Some(Error), 0, Some("3s")),
            "Ended after 3s"
        );
        assert_eq!(
            worklog_summary(Some(Completed), 1, Some("4s")),
            "Processed 4s · 1 step"
        );
    }
}
