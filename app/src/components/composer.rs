use leptos::prelude::*;

use crate::dynamic::dynamic;
use crate::state::use_chat;

/// The message composer: Send when idle, Stop while a turn runs, Queue when there is text
/// while a turn runs. Enter sends (Shift+Enter for a new line); on touch screens Enter is a new
/// line and the button sends.
#[component]
pub(crate) fn Composer(
    #[prop(into)] on_send: Callback<String>,
    #[prop(into)] on_stop: Callback<()>,
) -> impl IntoView {
    let chat = use_chat();
    let (draft, set_draft) = signal(String::new());
    let blank = move || draft.with(|text| text.trim().is_empty());
    // Which turn runs (a reload makes a new handle for the same run).
    let running_turn = Memo::new(move |_| chat.running_turn().map(|t| t.key()));
    let running = Memo::new(move |_| running_turn.with(Option::is_some));
    let stopping = RwSignal::new(false);
    // A draft belongs to its conversation: opening another one puts it aside, coming back
    // brings it back.
    let drafts = StoredValue::new(Vec::<(Option<String>, String)>::new());
    Effect::new(move |previous: Option<Option<String>>| {
        let session = chat.session_id.get();
        if let Some(previous) = previous.filter(|p| *p != session) {
            let text = draft.get_untracked();
            let restored = drafts
                .try_update_value(|d| {
                    d.retain(|(s, _)| *s != previous);
                    if !text.is_empty() {
                        d.push((previous, text));
                    }
                    let i = d.iter().position(|(s, _)| *s == session)?;
                    Some(d.swap_remove(i).1)
                })
                .flatten()
                .unwrap_or_default();
            set_draft.set(restored);
        }
        session
    });
    let submit = move || {
        let text = draft.get_untracked();
        if !text.trim().is_empty() {
            on_send.run(text);
            set_draft.set(String::new());
        } else if running.get_untracked() {
            stopping.set(true);
            on_stop.run(());
        }
    };
    // Stopping… lasts until the turn it was for ends (or another turn is shown).
    Effect::new(move |_| {
        running_turn.track();
        stopping.set(false);
    });
    let label = move || {
        if !blank() {
            if running.get() {
                "Queue"
            } else {
                "Send"
            }
        } else if running.get() {
            if stopping.get() {
                "Stopping…"
            } else {
                "Stop"
            }
        } else {
            "Send"
        }
    };
    view! {
        <form
            class="composer"
            on:submit=move |ev| {
                ev.prevent_default();
                submit();
            }
        >
            <label for="composer-input" class="visually-hidden">"Message"</label>
            <textarea
                id="composer-input"
                name="message"
                rows="1"
                placeholder="Message Anchorage…"
                enterkeyhint="send"
                prop:value=dynamic(move || draft.get())
                on:input=move |ev| set_draft.set(event_target_value(&ev))
                on:keydown=move |ev| {
                    if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() && !crate::components::composer::touch_only() {
                        ev.prevent_default();
                        submit();
                    }
                }
            ></textarea>
            <button
                type="submit"
                class="composer-send"
                data-action=dynamic(move || label().to_lowercase())
                disabled=dynamic(move || (blank() && !running.get()) || stopping.get())
            >
                {label}
            </button>
        </form>
    }
}

/// A touch-only device: Enter inserts a new line there.
pub(crate) fn touch_only() -> bool {
    #[cfg(feature = "hydrate")]
    {
        web_sys::window()
            .and_then(|w| {
                w.match_media("(hover: none) and (pointer: coarse)")
                    .ok()
                    .flatten()
            })
            .is_some_and(|m| m.matches())
    }
    #[cfg(not(feature = "hydrate"))]
    {
        false
    }
}
