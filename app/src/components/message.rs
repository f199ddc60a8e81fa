//! A user's message and what can be done with it: copy it, edit it (the conversation forks
//! there, the earlier version stays), and move between its versions ("‹ 2 / 3 ›").

use leptos::either::Either;
use leptos::prelude::*;

use crate::dynamic::{dynamic, either};
use crate::state::{use_chat, TurnHandle};

/// Puts `text` on the clipboard; false when the browser has no clipboard to offer.
pub(crate) fn copy_text(text: &str) -> bool {
    #[cfg(feature = "hydrate")]
    if let Some(window) = web_sys::window() {
        let _ = window.navigator().clipboard().write_text(text);
        return true;
    }
    let _ = text;
    false
}

/// A button that copies what `text` gives and says "Copied" for a moment.
#[component]
pub(crate) fn CopyButton(text: Callback<(), String>, #[prop(into)] label: String) -> impl IntoView {
    let copied = RwSignal::new(false);
    let on_click = move |_| {
        if copy_text(&text.run(())) {
            copied.set(true);
            #[cfg(feature = "hydrate")]
            set_timeout(
                move || {
                    let _ = copied.try_set(false);
                },
                std::time::Duration::from_millis(1500),
            );
        }
    };
    view! {
        <button type="button" class="message-action" aria-label=label data-copy="" on:click=on_click>
            {either(move || copied.get(), "Copied", "Copy")}
        </button>
    }
}

/// When something was said: how long ago ("5 min ago", "Yesterday 14:05"), the exact time
/// on hover (its title) and on a tap (a phone has no hover; a second tap goes back).
#[component]
pub(crate) fn Timestamp(
    at: f64,
    /// What happened then, for screen readers ("Sent", "Answered").
    #[prop(default = "Sent")]
    verb: &'static str,
) -> impl IntoView {
    let chat = use_chat();
    let exact = RwSignal::new(false);
    let full = move || crate::time::exact(at, chat.clock.get().offset);
    let text = move || {
        if exact.get() {
            full()
        } else {
            crate::time::relative(at, chat.clock.get())
        }
    };
    view! {
        <button
            type="button"
            class="timestamp"
            title=dynamic(full)
            aria-label=dynamic(move || format!("{verb} {}", full()))
            on:click=move |_| exact.update(|e| *e = !*e)
        >
            <time datetime=crate::time::iso(at)>{dynamic(text)}</time>
        </button>
    }
}

/// The user's message of `turn`. `can_change` says whether it may be edited or another
/// version shown now (the turn is over and nothing runs).
#[component]
pub(crate) fn UserMessage(turn: TurnHandle, can_change: Signal<bool>) -> impl IntoView {
    let chat = use_chat();
    let editing = RwSignal::new(false);
    let draft = RwSignal::new(String::new());
    let sending = RwSignal::new(false);
    let field = NodeRef::<leptos::html::Textarea>::new();
    let edit_button = NodeRef::<leptos::html::Button>::new();
    let versions = turn.versions;
    let content = turn.user.content.clone();

    // The field takes the focus when it opens, with the caret at the end of the text.
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if let Some(el) = field.get() {
            let _ = el.focus();
            let end = el.value().len() as u32;
            let _ = el.set_selection_range(end, end);
        }
    });
    let content_for_edit = content.clone();
    let start_edit = move |_| {
        draft.set(content_for_edit.clone());
        editing.set(true);
    };
    let cancel = move || {
        editing.set(false);
        // Back to the button, once it is shown again.
        #[cfg(feature = "hydrate")]
        request_animation_frame(move || {
            if let Some(el) = edit_button.get_untracked() {
                let _ = el.focus();
            }
        });
    };
    let turn_for_send = turn.clone();
    let submit = move || {
        let text = draft.get_untracked();
        if text.trim().is_empty() || sending.get_untracked() || !can_change.get_untracked() {
            return;
        }
        sending.set(true);
        #[cfg(feature = "hydrate")]
        crate::branches::edit(chat, &turn_for_send, text, move |sent| {
            let _ = sending.try_set(false);
            if sent {
                let _ = editing.try_set(false);
            }
        });
        #[cfg(not(feature = "hydrate"))]
        let _ = (&turn_for_send, text, chat);
    };
    let submit_on_enter = submit.clone();
    let turn_for_versions = turn.clone();
    let step = move |to: u32| {
        #[cfg(feature = "hydrate")]
        crate::branches::show_version(chat, &turn_for_versions, to);
        #[cfg(not(feature = "hydrate"))]
        let _ = (&turn_for_versions, to);
    };
    let step_back = step.clone();
    let copy_content = content.clone();
    let sent_at = turn.user.created_at;
    view! {
        <div class="user-message">
            <super::MessageFiles files=turn.user.attachments.clone() />
            {move || if editing.get() {
                let submit = submit.clone();
                let submit_on_enter = submit_on_enter.clone();
                Either::Left(view! {
                    <form class="edit-form" on:submit=move |ev| { ev.prevent_default(); submit(); }>
                        <textarea
                            class="edit-field"
                            aria-label="Edit your message"
                            rows="3"
                            node_ref=field
                            prop:value=dynamic(move || draft.get())
                            on:input=move |ev| draft.set(event_target_value(&ev))
                            on:keydown=move |ev| {
                                if ev.key() == "Escape" {
                                    ev.prevent_default();
                                    cancel();
                                } else if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing()
                                    && !crate::document::touch_only()
                                {
                                    ev.prevent_default();
                                    submit_on_enter();
                                }
                            }
                        ></textarea>
                        <div class="card-actions edit-buttons">
                            <button type="button" on:click=move |_| cancel()>"Cancel"</button>
                            <button
                                type="submit"
                                class="primary"
                                disabled=dynamic(move || sending.get() || !can_change.get() || draft.with(|d| d.trim().is_empty()))
                            >
                                "Send"
                            </button>
                        </div>
                    </form>
                })
            } else {
                Either::Right((!content.is_empty()).then(|| view! { <div class="bubble">{content.clone()}</div> }))
            }}
            <div class="message-actions">
                {(sent_at > 0.0).then(|| view! { <Timestamp at=sent_at /> })}
                {(!versions.is_single()).then(|| view! {
                    <div class="versions" role="group" aria-label="Versions of this message">
                        <button
                            type="button"
                            class="message-action version-step"
                            aria-label="Previous version"
                            disabled=dynamic(move || versions.index <= 1 || !can_change.get())
                            on:click=move |_| step_back(versions.index - 1)
                        >
                            "‹"
                        </button>
                        <span class="version-label">{format!("{} / {}", versions.index, versions.count)}</span>
                        <button
                            type="button"
                            class="message-action version-step"
                            aria-label="Next version"
                            disabled=dynamic(move || versions.index >= versions.count || !can_change.get())
                            on:click=move |_| step(versions.index + 1)
                        >
                            "›"
                        </button>
                    </div>
                })}
                <CopyButton label="Copy message" text=Callback::new(move |_| copy_content.clone()) />
                <button
                    type="button"
                    class="message-action"
                    aria-label="Edit message"
                    node_ref=edit_button
                    hidden=dynamic(move || editing.get())
                    disabled=dynamic(move || !can_change.get())
                    on:click=start_edit
                >
                    "Edit"
                </button>
            </div>
        </div>
    }
}
