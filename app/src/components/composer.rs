use leptos::prelude::*;

use crate::document::{touch_only, COMPOSER_ID};
use crate::dynamic::dynamic;
use crate::state::use_chat;

/// The message composer: Send when idle, Stop while a turn runs, Queue when there is text
/// while a turn runs. Enter sends (Shift+Enter for a new line); on touch screens Enter is a new
/// line and the button sends. Enter never stops a turn: Stop is the button.
///
/// The text stays in the field until the server has taken it: a send that cannot reach the
/// server leaves it there (and retries, see the chat page). The draft of each conversation is
/// kept in this browser, so a reload or a visit to another conversation does not lose it.
#[component]
pub(crate) fn Composer(
    #[prop(into)] on_send: Callback<String>,
    #[prop(into)] on_stop: Callback<()>,
    /// Sends the waiting message again now.
    #[prop(into)]
    on_retry: Callback<()>,
) -> impl IntoView {
    let chat = use_chat();
    let draft = chat.draft;
    // The microphone comes with the turns' part.
    let voice_part = super::turns::live_part();
    // Nothing to send: no text and no file kept by the server.
    let blank = move || {
        draft.with(|text| text.trim().is_empty())
            && chat.files.with(|f| f.iter().all(|p| p.ready().is_none()))
    };
    let uploading = Memo::new(move |_| {
        chat.files.with(|f| {
            f.iter()
                .any(|p| p.state == crate::state::FileState::Uploading)
        })
    });
    let picker = NodeRef::<leptos::html::Input>::new();
    // The `/` menu (with the part) is asked first about keys and sends.
    let keys: super::KeyHook = StoredValue::new(None);
    let menu_took = move |key: Option<leptos::ev::KeyboardEvent>| {
        keys.get_value().is_some_and(|hook| hook.run(key))
    };
    // Which turn runs (a reload makes a new handle for the same run).
    let running_turn = Memo::new(move |_| chat.running_turn().map(|t| t.key()));
    let running = Memo::new(move |_| running_turn.with(Option::is_some));
    let stopping = RwSignal::new(false);
    let sending = Memo::new(move |_| chat.outbox.with(|o| o.as_ref().map(|o| o.failed.is_some())));

    #[cfg(feature = "hydrate")]
    {
        // A draft belongs to its conversation, in this browser's storage: opening another one
        // puts it aside, coming back (or reloading) brings it back.
        Effect::new(move |previous: Option<Option<String>>| {
            let session = chat.session_id.get();
            if previous.as_ref() != Some(&session) {
                draft.set(stored_draft(session.as_deref()));
                // Files attached there and not sent do not follow to another conversation.
                if previous.is_some() {
                    chat.files.set(Vec::new());
                }
            }
            session
        });
        // Kept as it changes (not on the first run: that would overwrite the stored draft
        // with the empty field before it was read back).
        Effect::new(move |first: Option<()>| {
            let text = draft.get();
            if first.is_some() {
                store_draft(chat.session_id.get_untracked().as_deref(), &text);
            }
        });
    }

    let submit = move || {
        let text = draft.get_untracked();
        if blank() || uploading.get_untracked() {
            return;
        }
        match sending.get_untracked() {
            // Sent already and waiting for the server: the button retries now.
            Some(true) => on_retry.run(()),
            Some(false) => {}
            // A page's command (`/mode stream`) acts here and is not sent.
            None if menu_took(None) => {}
            None => on_send.run(text),
        }
    };
    // Stopping… lasts until the turn it was for ends (or another turn is shown).
    Effect::new(move |_| {
        running_turn.track();
        stopping.set(false);
    });
    // Refused as another account's (a shared device): nothing sends it from this page.
    let stranded = Memo::new(move |_| chat.outbox.with(|o| o.as_ref().is_some_and(|o| o.stranded)));
    let label = move || match (blank(), sending.get(), running.get()) {
        _ if stranded.get() => "Not sent",
        (false, Some(false), _) => "Sending…",
        (false, Some(true), _) => "Retry",
        (false, None, true) => "Queue",
        (false, None, false) => "Send",
        (true, _, true) if stopping.get() => "Stopping…",
        (true, _, true) => "Stop",
        (true, _, false) => "Send",
    };
    let on_button = move |ev: leptos::ev::MouseEvent| {
        // Stop is this button, clicked, and nothing else (never Enter in the field).
        if blank() && running.get_untracked() {
            ev.prevent_default();
            stopping.set(true);
            on_stop.run(());
        }
    };
    let on_picked = move |ev: leptos::ev::Event| {
        #[cfg(feature = "hydrate")]
        {
            use wasm_bindgen::JsCast;
            if let Some(input) = ev
                .target()
                .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
            {
                if let Some(files) = input.files() {
                    super::attach(chat, &files);
                }
                // The same file may be picked again.
                input.set_value("");
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = ev;
    };
    let on_paste = move |ev: leptos::ev::ClipboardEvent| {
        #[cfg(feature = "hydrate")]
        if let Some(files) = ev.clipboard_data().and_then(|d| d.files()) {
            if files.length() > 0 {
                ev.prevent_default();
                super::attach(chat, &files);
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = ev;
    };
    view! {
        <form
            class="composer"
            class:dragging=move || chat.dragging.get()
            on:submit=move |ev| {
                ev.prevent_default();
                submit();
            }
        >
            {move || voice_part().map(|p| (p.slash)(draft, keys))}
            <super::ComposerFiles />
            <input
                type="file"
                multiple
                class="visually-hidden"
                tabindex="-1"
                aria-hidden="true"
                node_ref=picker
                on:change=on_picked
            />
            <button
                type="button"
                class="composer-attach"
                aria-label="Attach files"
                title="Attach files (or paste, or drop them here)"
                on:click=move |_| {
                    if let Some(input) = picker.get_untracked() {
                        input.click();
                    }
                }
            >
                <svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" focusable="false">
                    <path
                        d="M16.5 6.5 8.4 14.6a2 2 0 0 0 2.8 2.8l8.1-8.1a4 4 0 0 0-5.7-5.7L5.5 11.7a6 6 0 0 0 8.5 8.5l6.1-6.1"
                        fill="none"
                        stroke="currentColor"
                        stroke-width="1.8"
                        stroke-linecap="round"
                        stroke-linejoin="round"
                    />
                </svg>
            </button>
            <label for=COMPOSER_ID class="visually-hidden">"Message"</label>
            <textarea
                id=COMPOSER_ID
                name="message"
                rows="1"
                placeholder="Message Anchorage…"
                enterkeyhint="send"
                prop:value=dynamic(move || draft.get())
                on:input=move |ev| {
                    draft.set(event_target_value(&ev));
                    // A changed text is a new message: the waiting one is not sent any more.
                    if chat.outbox.with_untracked(|o| o.as_ref().is_some_and(|o| o.failed.is_some())) {
                        chat.outbox.set(None);
                    }
                }
                on:paste=on_paste
                on:keydown=move |ev| {
                    if menu_took(Some(ev.clone())) {
                        return;
                    }
                    if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() && !touch_only() {
                        ev.prevent_default();
                        submit();
                    }
                }
            ></textarea>
            {move || voice_part().map(|p| (p.voice)(draft))}
            <button
                type="submit"
                class="composer-send"
                data-action=dynamic(move || action(label()))
                disabled=dynamic(move || {
                    (blank() && !running.get()) || stopping.get() || sending.get() == Some(false)
                        || (!blank() && uploading.get()) || stranded.get()
                })
                on:click=on_button
            >
                {label}
            </button>
        </form>
    }
}

/// The `data-action` of the button for its label.
fn action(label: &str) -> &'static str {
    match label {
        "Queue" => "queue",
        "Stop" => "stop",
        "Stopping…" => "stopping",
        "Sending…" => "sending",
        "Retry" => "retry",
        _ => "send",
    }
}

/// What every draft's key begins with.
#[cfg(feature = "hydrate")]
const DRAFTS: &str = "anchorage.draft.";

/// Whose drafts the page keeps: the account it was shown to (`open` in open mode), so that
/// on a shared device nobody finds another's unsent words in their message box.
#[cfg(feature = "hydrate")]
fn drafts_of() -> String {
    crate::client::account()
        .filter(|tag| !tag.is_empty())
        .unwrap_or_else(|| "open".to_owned())
}

/// Where a conversation's draft is kept (`None`: a new conversation), for this page's
/// account.
#[cfg(feature = "hydrate")]
fn draft_key(session: Option<&str>) -> String {
    format!("{DRAFTS}{}.{}", drafts_of(), session.unwrap_or("new"))
}

/// Forgets every draft of this page's account (signing out), and those kept before drafts
/// were an account's (whose they were is not known).
#[cfg(feature = "hydrate")]
pub(crate) fn forget_drafts() {
    let Some(storage) = crate::prefs::storage() else {
        return;
    };
    let mine = format!("{DRAFTS}{}.", drafts_of());
    let count = storage.length().unwrap_or(0);
    let keys: Vec<String> = (0..count)
        .filter_map(|i| storage.key(i).ok().flatten())
        .collect();
    for key in keys {
        let unowned = key
            .strip_prefix(DRAFTS)
            .is_some_and(|rest| !rest.contains('.'));
        if key.starts_with(&mine) || unowned {
            let _ = storage.remove_item(&key);
        }
    }
}

/// The draft kept for `session`.
#[cfg(feature = "hydrate")]
pub(crate) fn stored_draft(session: Option<&str>) -> String {
    crate::prefs::storage()
        .and_then(|s| s.get_item(&draft_key(session)).ok().flatten())
        .unwrap_or_default()
}

/// Keeps `text` as the draft of `session` (an empty text removes it).
#[cfg(feature = "hydrate")]
pub(crate) fn store_draft(session: Option<&str>, text: &str) {
    if let Some(storage) = crate::prefs::storage() {
        let key = draft_key(session);
        let _ = if text.is_empty() {
            storage.remove_item(&key)
        } else {
            storage.set_item(&key, text)
        };
    }
}
