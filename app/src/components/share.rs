//! Share links: made from a conversation's menu (the notice at the bottom shows the link, with
//! Copy), listed in Settings with Revoke.
//! Browser only: the server renders neither.

use leptos::prelude::*;

/// The address of the site path `path` on this server, as a person would paste it.
pub(crate) fn absolute(path: &str) -> String {
    let origin = web_sys::window()
        .and_then(|w| w.location().origin().ok())
        .unwrap_or_default();
    format!("{origin}{}", crate::base::href(path))
}

/// Puts `text` on the clipboard, where the browser lets the page.
pub(crate) fn copy(text: &str) {
    if let Some(window) = web_sys::window() {
        let promise = window.navigator().clipboard().write_text(text);
        // A refusal (no permission, no focus) leaves the link on screen to be copied by hand.
        leptos::task::spawn_local(async move {
            let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
        });
    }
}

/// Makes a read-only link to the conversation `session_id` (the branch it shows) and shows it.
pub(crate) fn share(chat: crate::state::ChatState, session_id: String) {
    leptos::task::spawn_local(async move {
        match crate::client::share(&session_id).await {
            Ok(answer) => super::show_link(
                chat,
                "Anyone with this link can read the conversation as it is now",
                absolute(&answer.share.path),
            ),
            Err(e) => chat.fail(&e),
        }
    });
}

/// What Settings knows of the share links.
#[derive(Clone, Debug, PartialEq)]
enum Links {
    Loading,
    Loaded(Vec<crate::api::ShareData>),
    Failed(String),
}

/// Settings' list of share links, loaded when Settings opens, each with Copy and Revoke (made
/// in the browser only, with the rest of Settings).
#[component]
pub(crate) fn SharedLinks() -> impl IntoView {
    let links = RwSignal::new(Links::Loading);
    leptos::task::spawn_local(async move {
        let loaded = match crate::client::shares().await {
            Ok(answer) => Links::Loaded(answer.shares),
            Err(failure) => Links::Failed(failure.message),
        };
        let _ = links.try_set(loaded);
    });
    let revoke = move |id: String| {
        leptos::task::spawn_local(async move {
            match crate::client::revoke_share(&id).await {
                Ok(_) => links.update(|l| {
                    if let Links::Loaded(list) = l {
                        list.retain(|link| link.id != id);
                    }
                }),
                Err(failure) => links.set(Links::Failed(failure.message)),
            }
        });
    };
    view! {
        <section class="settings-section" aria-labelledby="shares-title">
            <h3 id="shares-title">"Shared links"</h3>
            <p class="settings-note">
                "Read-only copies of conversations, as they were when you shared them. "
                "Anyone with a link can read it until you revoke it."
            </p>
            {move || match links.get() {
                Links::Loading => view! { <p class="settings-note">"Loading…"</p> }.into_any(),
                Links::Failed(message) => view! { <p class="settings-problem" role="alert">{message}</p> }.into_any(),
                Links::Loaded(list) if list.is_empty() => view! {
                    <p class="settings-empty">"None: share a conversation from its ⋯ menu."</p>
                }.into_any(),
                Links::Loaded(list) => view! {
                    <ul class="grants shares">
                        {list.into_iter().map(|link| {
                            let id = link.id.clone();
                            let address = absolute(&link.path);
                            let to_copy = address.clone();
                            view! {
                                <li class="grant share">
                                    <span class="grant-what">
                                        <span class="share-title">{link.title.clone()}</span>
                                        <a class="grant-scope" href=address.clone() target="_blank" rel="noopener noreferrer">{address.clone()}</a>
                                    </span>
                                    <button type="button" aria-label=format!("Copy the link to {}", link.title) on:click=move |_| copy(&to_copy)>"Copy"</button>
                                    <button
                                        type="button"
                                        aria-label=format!("Revoke the link to {}", link.title)
                                        on:click=move |_| revoke(id.clone())
                                    >
                                        "Revoke"
                                    </button>
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                }.into_any(),
            }}
        </section>
    }
}
