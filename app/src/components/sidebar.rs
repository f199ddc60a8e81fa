use leptos::either::Either;
use leptos::prelude::*;

use crate::api::SessionSummary;
use crate::dynamic::{dynamic, either};
use crate::state::use_chat;

/// One session in the list, with rename and delete.
#[component]
fn SessionRow(
    session: SessionSummary,
    #[prop(into)] on_close: Callback<()>,
    /// The sidebar's search results, which a rename or a delete updates too.
    results: RwSignal<Option<Vec<SessionSummary>>>,
) -> impl IntoView {
    let chat = use_chat();
    let id = session.id.clone();
    let current = {
        let id = id.clone();
        move || chat.session_id.with(|s| s.as_deref() == Some(id.as_str()))
    };
    let editing = RwSignal::new(false);
    let title = session.title.clone();
    let draft = RwSignal::new(title.clone());
    let running = session.active_run_id.is_some();
    // A search hit in a message opens at its turn (a page load: the window that holds it).
    let at_turn = session.hit_turn_id.is_some();
    let href = match &session.hit_turn_id {
        Some(turn) => format!("/s/{}#{turn}", session.id),
        None => format!("/s/{}", session.id),
    };
    let input = NodeRef::<leptos::html::Input>::new();
    // The title field takes the focus, its text selected, as soon as it is shown.
    Effect::new(move |_| {
        if let Some(el) = input.get() {
            let _ = el.focus();
            el.select();
        }
    });
    // Escape leaves the title as it was.
    let cancel = move || {
        editing.set(false);
        draft.set(title.clone());
    };
    let rename = {
        let id = id.clone();
        move || {
            // Only once: Enter saves and hides the field, whose blur must not save again.
            if !editing.get_untracked() {
                return;
            }
            editing.set(false);
            let title = draft.get_untracked();
            if title.trim().is_empty() {
                return;
            }
            #[cfg(feature = "hydrate")]
            {
                let id = id.clone();
                leptos::task::spawn_local(async move {
                    let body = serde_json::json!({"session_id": id, "title": title});
                    match crate::client::post("/api/session/rename", &body).await {
                        Ok(answer) => {
                            let title = answer["session"]["title"]
                                .as_str()
                                .unwrap_or_default()
                                .to_owned();
                            let retitle = |list: &mut Vec<SessionSummary>| {
                                if let Some(s) = list.iter_mut().find(|s| s.id == id) {
                                    s.title = title.clone();
                                }
                            };
                            chat.sessions.update(retitle);
                            results.update(|found| found.iter_mut().for_each(retitle));
                            if chat.session_id.get_untracked().as_deref() == Some(id.as_str()) {
                                chat.title.set(title);
                            }
                        }
                        Err(e) => chat.fail(&e),
                    }
                });
            }
            #[cfg(not(feature = "hydrate"))]
            let _ = (&id, title, results);
        }
    };
    let delete = {
        let id = id.clone();
        move |_| {
            #[cfg(feature = "hydrate")]
            {
                let confirmed = web_sys::window()
                    .and_then(|w| {
                        w.confirm_with_message("Delete this conversation and its history?")
                            .ok()
                    })
                    .unwrap_or(false);
                if !confirmed {
                    return;
                }
                let id = id.clone();
                leptos::task::spawn_local(async move {
                    match crate::client::post(
                        "/api/session/delete",
                        &serde_json::json!({"session_id": id}),
                    )
                    .await
                    {
                        Ok(_) => {
                            chat.sessions.update(|list| list.retain(|s| s.id != id));
                            results.update(|found| {
                                if let Some(list) = found {
                                    list.retain(|s| s.id != id);
                                }
                            });
                            if chat.session_id.get_untracked().as_deref() == Some(id.as_str()) {
                                crate::nav::go(chat, "/");
                            }
                        }
                        Err(e) => chat.fail(&e),
                    }
                });
            }
            #[cfg(not(feature = "hydrate"))]
            let _ = (&id, results);
        }
    };
    let rename_on_key = rename;
    let current_for_link = current.clone();
    view! {
        <li class="session-row" class:current=dynamic(current.clone()) data-session-id=session.id.clone()>
            {move || if editing.get() {
                let rename = rename_on_key.clone();
                let rename_on_blur = rename_on_key.clone();
                let cancel = cancel.clone();
                Either::Left(view! {
                    <input
                        class="rename-input"
                        aria-label="Conversation title"
                        node_ref=input
                        prop:value=dynamic(move || draft.get())
                        on:input=move |ev| draft.set(event_target_value(&ev))
                        on:keydown=move |ev| {
                            if ev.key() == "Enter" {
                                ev.prevent_default();
                                rename();
                            } else if ev.key() == "Escape" {
                                // Not the drawer's Escape: this one only leaves the field.
                                ev.stop_propagation();
                                cancel();
                            }
                        }
                        on:blur=move |_| rename_on_blur()
                    />
                })
            } else {
                let href = href.clone();
                let current = current_for_link.clone();
                Either::Right(view! {
                    <a
                        class="session-link"
                        href=href.clone()
                        aria-current=either(current, "page", "false")
                        on:click=move |ev: leptos::ev::MouseEvent| {
                            on_close.run(());
                            let plain = ev.button() == 0
                                && !at_turn
                                && !(ev.ctrl_key() || ev.meta_key() || ev.shift_key() || ev.alt_key());
                            if plain {
                                ev.prevent_default();
                                #[cfg(feature = "hydrate")]
                                crate::nav::go(chat, &href);
                            }
                        }
                    >
                        {running.then(|| view! { <span class="spinner" title="Running" aria-label="running"></span> })}
                        <span class="session-title">{dynamic(move || draft.get())}</span>
                    </a>
                })
            }}
            <div class="session-actions">
                <button type="button" class="icon-button small" aria-label="Rename" title="Rename" on:click=move |_| editing.set(true)>
                    <svg class="icon" viewBox="0 0 24 24" width="16" height="16" aria-hidden="true">
                        <path d="M4 20h4L19 9l-4-4L4 16z M13 7l4 4" />
                    </svg>
                </button>
                <button type="button" class="icon-button small" aria-label="Delete" title="Delete" disabled=running on:click=delete>
                    <svg class="icon" viewBox="0 0 24 24" width="16" height="16" aria-hidden="true">
                        <path d="M4 7h16 M10 4h4 M6 7l1 13h10l1-13 M10 11v6 M14 11v6" />
                    </svg>
                </button>
            </div>
        </li>
    }
}

/// The sessions sidebar; on a phone it is a drawer that `on_close` dismisses.
#[component]
pub(crate) fn Sidebar(#[prop(into)] on_close: Callback<()>) -> impl IntoView {
    let chat = use_chat();
    let query = RwSignal::new(String::new());
    let results = RwSignal::new(None::<Vec<SessionSummary>>);
    let search = move |q: String| {
        query.set(q.clone());
        if q.trim().is_empty() {
            results.set(None);
        } else {
            #[cfg(feature = "hydrate")]
            leptos::task::spawn_local(async move {
                let path = format!("/api/sessions/search?q={}", crate::client::encode(&q));
                if let Ok(answer) = crate::client::get(&path).await {
                    if query.get_untracked() == q {
                        let list =
                            serde_json::from_value(answer["sessions"].clone()).unwrap_or_default();
                        results.set(Some(list));
                    }
                }
            });
        }
    };
    // A new conversation is stored with its first message, not before: an empty one never
    // lands in the list.
    let new_chat = move |_| {
        on_close.run(());
        #[cfg(feature = "hydrate")]
        crate::nav::go(chat, crate::nav::NEW_CHAT);
    };
    // Search results as the sidebar knows them now: renamed, running or deleted since (one
    // the sidebar has not listed yet, in a later page, as the search found it).
    let list = move || match results.get() {
        Some(found) => chat.sessions.with(|all| {
            let partial = chat.more_sessions.get();
            found
                .iter()
                .filter_map(|f| {
                    all.iter()
                        .find(|s| s.id == f.id)
                        .map(|s| SessionSummary {
                            hit_turn_id: f.hit_turn_id.clone(),
                            ..s.clone()
                        })
                        .or_else(|| partial.then(|| f.clone()))
                })
                .collect()
        }),
        None => chat.sessions.get(),
    };
    let loading_more = RwSignal::new(false);
    // The next 50 of the list, after those shown (the page came with the first few).
    let load_more = move || {
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            if loading_more.get_untracked() || !chat.more_sessions.get_untracked() {
                return;
            }
            loading_more.set(true);
            let offset = chat.sessions.with_untracked(Vec::len);
            let path = format!("/api/sessions?offset={offset}&limit=50");
            let answer = crate::client::get(&path).await;
            loading_more.set(false);
            match answer {
                Ok(answer) => {
                    let more: Vec<SessionSummary> =
                        serde_json::from_value(answer["sessions"].clone()).unwrap_or_default();
                    chat.sessions.update(|list| {
                        for s in more {
                            if !list.iter().any(|known| known.id == s.id) {
                                list.push(s);
                            }
                        }
                    });
                    chat.more_sessions
                        .set(answer["more"].as_bool().unwrap_or(false));
                }
                Err(e) => chat.fail(&e),
            }
        });
    };
    let show_more = move |_| load_more();
    // The page carries the first few sessions; the next ones come when the reader asks or
    // scrolls near the end of the list (never by themselves: a list that grew under the page
    // would move what is below it).
    let near_end = move |_ev: leptos::ev::Event| {
        #[cfg(feature = "hydrate")]
        {
            use wasm_bindgen::JsCast;
            let Some(el) = _ev
                .target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            else {
                return;
            };
            if el.scroll_top() + el.client_height() + 200 >= el.scroll_height()
                && results.with_untracked(Option::is_none)
            {
                load_more();
            }
        }
    };
    let has_sessions = Memo::new(move |_| !list().is_empty());
    let sign_out = move |_| {
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            let _ = crate::client::post("/api/auth/logout", &serde_json::json!({})).await;
            crate::client::to_login(false);
        });
    };
    let account = move || {
        chat.user.get().map(|user| {
            view! {
                <div class="account" data-account="">
                    <span class="account-name" title="Signed in">
                        <span class="visually-hidden">"Signed in as "</span>
                        {user.name}
                    </span>
                    <button type="button" class="sign-out" on:click=sign_out>"Sign out"</button>
                </div>
            }
        })
    };
    view! {
        <nav id="sidebar" class="sidebar" aria-label="Sessions" on:scroll=near_end>
            <div class="sidebar-header">
                <span class="brand">"Anchorage"</span>
                <button
                    type="button"
                    class="icon-button drawer-close"
                    aria-label="Close sessions"
                    on:click=move |_| on_close.run(())
                >
                    <span aria-hidden="true">"✕"</span>
                </button>
            </div>
            <button type="button" class="new-chat" on:click=new_chat>"New chat"</button>
            <label class="visually-hidden" for="session-search">"Search conversations"</label>
            <input
                id="session-search"
                class="session-search"
                type="search"
                placeholder="Search"
                prop:value=dynamic(move || query.get())
                on:input=move |ev| search(event_target_value(&ev))
            />
            {move || if has_sessions.get() {
                Either::Left(view! {
                    <ul class="session-list">
                        <For
                            each=list
                            key=|s| (s.id.clone(), s.title.clone(), s.active_run_id.clone(), s.hit_turn_id.clone())
                            children=move |s| view! { <SessionRow session=s on_close=on_close results=results /> }
                        />
                    </ul>
                })
            } else {
                Either::Right(view! {
                    <p class="sidebar-empty">
                        {either(move || query.with(|q| q.is_empty()), "No conversations yet.", "Nothing matches.")}
                    </p>
                })
            }}
            {move || (chat.more_sessions.get() && results.with(Option::is_none)).then(|| view! {
                <button
                    type="button"
                    class="show-more-sessions"
                    aria-busy=either(move || loading_more.get(), "true", "false")
                    on:click=show_more
                >
                    {either(move || loading_more.get(), "Loading…", "Show more conversations")}
                </button>
            })}
            <button
                type="button"
                class="settings-button"
                aria-haspopup="dialog"
                on:click=move |_| {
                    on_close.run(());
                    chat.settings.set(true);
                }
            >
                "Settings"
            </button>
            <p class="agent-label" data-agent="" title="Who answers in this app">
                {dynamic(move || chat.agent.get())}
            </p>
            {account}
        </nav>
    }
}
