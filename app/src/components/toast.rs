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
    view! {
        <div class="toast-region" role="status" aria-live="polite">
            {move || chat.toast.get().map(|toast| view! {
                <div class="toast">
                    <span>{toast.message}</span>
                    {toast.undo.is_some().then(|| view! {
                        <button type="button" class="text-button toast-undo" on:click=undo>"Undo"</button>
                    })}
                </div>
            })}
        </div>
    }
}
