use leptos::prelude::*;

use crate::state::use_chat;

/// The notice at the bottom of the page ("Conversation deleted · Undo"). Undo restores the
/// conversation (or brings it back from the archive) where it was in the list, and opens it
/// again if it was the one shown.
#[component]
pub(crate) fn ToastNotice() -> impl IntoView {
    let chat = use_chat();
    let undo = move |_| {
        #[cfg(feature = "hydrate")]
        {
            use crate::state::Action;
            let Some(toast) = chat.toast.get_untracked() else {
                return;
            };
            let Some((action, summary)) = toast.undo else {
                return;
            };
            chat.toast.set(None);
            leptos::task::spawn_local(async move {
                let id = summary.id.clone();
                let result = match action {
                    Action::Delete => crate::client::restore(&id).await,
                    Action::Archive(_) => {
                        let body = crate::api::PlaceBody {
                            session_id: id.clone(),
                            on: false,
                        };
                        crate::client::archive(&body).await
                    }
                    Action::Pin(_) => return,
                };
                match result {
                    Ok(answer) => {
                        let restored = answer.session;
                        chat.sessions.update(|list| {
                            list.retain(|s| s.id != id);
                            super::place_in(list, restored);
                        });
                        if toast.was_shown {
                            crate::nav::go(chat, &crate::api::paths::session_page(&id));
                        }
                    }
                    Err(e) => chat.fail(&e),
                }
            });
        }
    };
    // The page draws the region around it (`toast-region`, a live region: there before
    // anything is said in it).
    view! {
        {move || chat.toast.get().map(|toast| view! {
                <div class="toast">
                    <span>{toast.message}</span>
                    {toast.link.map(|link| {
                        let to_copy = link.clone();
                        let href = link.clone();
                        view! {
                            <a class="toast-link" href=href target="_blank" rel="noopener noreferrer">{link}</a>
                            <button
                                type="button"
                                class="text-button toast-undo"
                                on:click=move |ev: leptos::ev::MouseEvent| {
                                    #[cfg(feature = "hydrate")]
                                    {
                                        super::share::copy(&to_copy);
                                        if let Some(button) = ev.target().and_then(|t| {
                                            use wasm_bindgen::JsCast as _;
                                            t.dyn_into::<web_sys::HtmlElement>().ok()
                                        }) {
                                            button.set_text_content(Some("Copied"));
                                        }
                                    }
                                    #[cfg(not(feature = "hydrate"))]
                                    let _ = (ev, &to_copy);
                                }
                            >
                                "Copy"
                            </button>
                        }
                    })}
                    {toast.undo.is_some().then(|| view! {
                        <button type="button" class="text-button toast-undo" on:click=undo>"Undo"</button>
                    })}
                </div>
            })}
    }
}

/// Shows a notice at the bottom of the page for a few seconds (a newer one replaces it).
#[cfg(feature = "hydrate")]
pub(crate) fn show_toast(
    chat: crate::state::ChatState,
    message: &str,
    undo: Option<(crate::state::Action, crate::api::SessionSummary)>,
    was_shown: bool,
) {
    notice(chat, message, undo, None, was_shown, 8);
}

/// Shows a notice with an address to open or copy, long enough to do either.
#[cfg(feature = "hydrate")]
pub(crate) fn show_link(chat: crate::state::ChatState, message: &str, link: String) {
    notice(chat, message, None, Some(link), false, 30);
}

#[cfg(feature = "hydrate")]
fn notice(
    chat: crate::state::ChatState,
    message: &str,
    undo: Option<(crate::state::Action, crate::api::SessionSummary)>,
    link: Option<String>,
    was_shown: bool,
    seconds: u64,
) {
    let id = chat
        .toast
        .with_untracked(|t| t.as_ref().map_or(0, |t| t.id))
        + 1;
    chat.toast.set(Some(crate::state::Toast {
        id,
        message: message.to_owned(),
        undo,
        link,
        was_shown,
    }));
    set_timeout(
        move || {
            if chat
                .toast
                .with_untracked(|t| t.as_ref().is_some_and(|t| t.id == id))
            {
                chat.toast.set(None);
            }
        },
        std::time::Duration::from_secs(seconds),
    );
}
