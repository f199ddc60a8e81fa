//! The Compact Worklog: the turn's process folded under one summary line, the answer first.

use anchor::TerminalState;
use leptos::prelude::*;

use super::{counted, fmt_duration, Steps};
use crate::components::turn::view_model::ProcessSummary;
use crate::dynamic::{dynamic, flag};
use crate::state::{use_chat, TurnHandle};

/// The Compact Worklog: the process folded under a summary line, the answer primary. A turn
/// is open while it runs and folded once it is over (errors open), watched or loaded: the
/// same shape either way. A watched turn folds at its settle with its answer kept in place on
/// screen ([`keep_in_place`]); one the reader opened or closed keeps the reader's choice. The
/// summary line is there from the first moment, in every turn.
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
    // A watched turn's settle has folded it (set by the effect below, which keeps the answer
    // where it was on screen as the steps above it go).
    let folded = RwSignal::new(false);
    let over = move || {
        if watched {
            folded.get()
        } else {
            turn_over.get()
        }
    };
    let open = Memo::new(move |_| {
        user_choice
            .get()
            .unwrap_or_else(|| !over() || error_family.get())
    });
    let has_steps = Memo::new(move |_| steps.get() > 0);
    let node = NodeRef::<leptos::html::Div>::new();
    #[cfg(feature = "hydrate")]
    fold_at_settle(watched, chat.following, turn_over, folded, node);
    let waited = Memo::new(move |_| turn.state.with(|s| s.waited));
    let summary = move || {
        let n = steps.get();
        let time = elapsed.get().map(fmt_duration);
        let line = worklog_summary(ending.get(), n, time.as_deref());
        // The agent's time, and the person's apart: a turn that waited 12 s for an approval
        // did not take 12 s of work.
        match waited.get() {
            w if w >= 0.5 => format!("{line} · waited {} for you", fmt_duration(w)),
            _ => line,
        }
    };
    let stored_turn = StoredValue::new(turn);
    view! {
                <div class="worklog" node_ref=node data-open=flag(move || open.get() && has_steps.get())>
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
}

/// Folds a watched turn's steps once it is over, moving nothing on screen: at once when the
/// transcript can scroll by what the steps took (what follows them, the answer, stays where it
/// was); else as soon as it can, the steps out of view (scrolled past, or pushed up by the next
/// turn). Until then they stay open: a fold that moved the answer under the reader's eyes
/// would break the turn's first promise.
#[cfg(feature = "hydrate")]
fn fold_at_settle(
    watched: bool,
    following: RwSignal<bool>,
    turn_over: Signal<bool>,
    folded: RwSignal<bool>,
    node: NodeRef<leptos::html::Div>,
) {
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;

    let try_fold = move || {
        if folded.try_get_untracked().unwrap_or(true) {
            return;
        }
        let Some(worklog) = node.get_untracked() else {
            return folded.set(true);
        };
        let restore = match fold_moves_nothing(&worklog, following.get_untracked()) {
            Fold::NotYet => return,
            Fold::Below => None,
            Fold::KeepingWhatFollows => keep_in_place(&worklog),
        };
        folded.set(true);
        if let Some(restore) = restore {
            // Once the steps are gone, before the frame is painted: the view's update is a
            // task of the same queue, and runs first. (Again at the next frame, should it not
            // have: a second call finds nothing to correct.)
            let restore = std::rc::Rc::new(restore);
            let first = restore.clone();
            leptos::task::spawn_local(async move { first() });
            request_animation_frame(move || restore());
        }
    };
    let waiting = StoredValue::new_local(None::<(web_sys::Element, Closure<dyn FnMut()>)>);
    let settle = move || {
        try_fold();
        if folded.try_get_untracked().unwrap_or(true) || waiting.with_value(Option::is_some) {
            return;
        }
        let Some(scroller) = node
            .get_untracked()
            .and_then(|el| el.closest(".transcript").ok().flatten())
        else {
            return;
        };
        let listener = Closure::<dyn FnMut()>::new(try_fold);
        let _ =
            scroller.add_event_listener_with_callback("scroll", listener.as_ref().unchecked_ref());
        waiting.set_value(Some((scroller, listener)));
    };
    Effect::new(move |_| {
        if watched && turn_over.get() && !folded.get_untracked() {
            // A frame on: the settled answer has its words by then (it may be another
            // element than the streamed one, drawn empty first).
            request_animation_frame(settle);
        }
    });
    on_cleanup(move || {
        if let Some((scroller, listener)) = waiting.try_update_value(Option::take).flatten() {
            let _ = scroller
                .remove_event_listener_with_callback("scroll", listener.as_ref().unchecked_ref());
        }
    });
}

/// How a fold can happen now, moving nothing the reader sees.
#[cfg(feature = "hydrate")]
enum Fold {
    /// Not without moving what the reader sees (or reads: the steps themselves).
    NotYet,
    /// The steps are below the screen, or none is open: nothing on it moves.
    Below,
    /// What follows the steps is kept in place by scrolling the transcript.
    KeepingWhatFollows,
}

/// Whether folding `worklog` to its summary line moves nothing on screen: the steps are out of
/// view, or the reader follows the answer at the bottom (not reading the steps), the view is
/// there, and the transcript is scrolled down by at least what the fold takes away (so the
/// answer can stay).
#[cfg(feature = "hydrate")]
fn fold_moves_nothing(worklog: &web_sys::Element, following: bool) -> Fold {
    let Some(scroller) = worklog.closest(".transcript").ok().flatten() else {
        return Fold::Below;
    };
    let (view, steps) = (
        scroller.get_bounding_client_rect(),
        worklog.get_bounding_client_rect(),
    );
    if steps.top() >= view.bottom() {
        return Fold::Below;
    }
    let line = worklog
        .query_selector(".worklog-summary")
        .ok()
        .flatten()
        .map_or(0.0, |s| s.get_bounding_client_rect().height());
    let taken = steps.height() - line;
    if taken < 0.5 {
        // No steps open: folding moves nothing.
        return Fold::Below;
    }
    let top = f64::from(scroller.scroll_top());
    let room = top + 0.5 >= taken;
    // Following, and the view has caught up with the bottom (a turn whose end came in one
    // batch is not in view yet: its fold waits for the scroll that brings it).
    let at_bottom = f64::from(scroller.scroll_height() - scroller.client_height()) - top <= 2.0;
    if room && ((following && at_bottom) || steps.bottom() <= view.top()) {
        Fold::KeepingWhatFollows
    } else {
        Fold::NotYet
    }
}

/// A closure that keeps what follows `worklog` where it was on screen once the steps folded:
/// it scrolls the transcript back by what that moved, up to what the fold took from the
/// worklog's height (what else moved it meanwhile, the bottom followed, is not the fold's; a
/// view at the bottom the browser has already kept). It acts once, when it finds the fold
/// done; called before, it does nothing.
#[cfg(feature = "hydrate")]
fn keep_in_place(worklog: &web_sys::Element) -> Option<impl Fn() + 'static> {
    let worklog = worklog.clone();
    let scroller = worklog.closest(".transcript").ok()??;
    // Asked again after: a settled answer may be another element than the streamed one.
    let follows = {
        let worklog = worklog.clone();
        move || {
            Some(
                worklog
                    .next_element_sibling()?
                    .get_bounding_client_rect()
                    .top(),
            )
        }
    };
    let (height, top) = (worklog.get_bounding_client_rect().height(), follows()?);
    let done = std::cell::Cell::new(false);
    Some(move || {
        let taken = height - worklog.get_bounding_client_rect().height();
        if done.get() || taken < 0.5 {
            return;
        }
        done.set(true);
        let Some(now) = follows() else { return };
        let moved = (now - top).clamp(-taken, 0.0);
        if moved <= -0.5 {
            let top = f64::from(scroller.scroll_top()) + moved;
            scroller.set_scroll_top(top.round() as i32);
        }
    })
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
