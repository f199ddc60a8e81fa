use anchor::Mode;
use leptos::either::Either;
use leptos::prelude::*;

use crate::api::SessionPage;
use crate::components::{Composer, EmptyChat, PendingCards, Sidebar, TodoPanel, TurnView};
use crate::dynamic::{dynamic, either, flag};
use crate::state::{ChatState, TurnHandle};

/// The chat page around a loaded [`SessionPage`]: rendered on the server with its turns as of
/// the journal, then followed live in the browser. Opening another session loads its data
/// into the same page (see `nav`).
#[component]
pub fn ChatPage(page: SessionPage) -> impl IntoView {
    let chat = ChatState::new(&page);
    provide_context(chat);

    // Set by an Effect, which runs only in the browser: the marker says "this page is live".
    let (hydrated, set_hydrated) = signal(false);
    Effect::new(move |_| set_hydrated.set(true));
    // The Markdown renderer, when the build splits it off, is fetched once the page is live.
    let (renderer_ready, set_renderer_ready) = signal(false);
    Effect::new(move |_| crate::markdown::preload(move || set_renderer_ready.set(true)));
    let (drawer_open, set_drawer_open) = signal(false);
    let transcript = NodeRef::<leptos::html::Section>::new();
    // Whether the reader is at the bottom of the transcript (then new content keeps them there).
    let pinned = StoredValue::new(true);

    #[cfg(feature = "hydrate")]
    {
        use crate::state::Connection;

        // The display mode is a preference of this browser.
        Effect::new(move |_| {
            if let Some(mode) = storage().and_then(|s| s.get_item("anchorage.mode").ok().flatten())
            {
                chat.mode.set(Mode::parse_or_default(&mode));
            }
        });
        Effect::new(move |prev: Option<()>| {
            let mode = chat.mode.get();
            if prev.is_some() {
                if let Some(s) = storage() {
                    let _ = s.set_item("anchorage.mode", mode.as_str());
                }
            }
        });

        // Follow the running turn, and only it; reconnect when the browser gives up.
        // Keyed by the turn's handle, not only its run: a reload makes a new handle to follow.
        let follower = StoredValue::new_local(None::<((String, u64), crate::live::Follower)>);
        let retry = RwSignal::new(0u32);
        Effect::new(move |_| {
            let _ = retry.get();
            let running = chat.running_turn();
            let session_id = chat.session_id.get();
            follower.update_value(|slot| {
                let current = slot.as_ref().map(|(key, _)| key.clone());
                match (running, session_id) {
                    (Some(turn), Some(session_id)) => {
                        let key = turn.key();
                        let stale = current.as_ref() != Some(&key)
                            || chat.connection.get_untracked() == Connection::Offline;
                        if stale {
                            *slot = None;
                            *slot = crate::live::follow(chat, turn.clone(), session_id)
                                .map(|f| (key, f));
                        }
                    }
                    _ => {
                        *slot = None;
                        chat.connection.set(Connection::Idle);
                    }
                }
            });
        });
        // An EventSource that gave up (the server was down) is replaced every few seconds.
        Effect::new(move |_| {
            if chat.connection.get() == Connection::Offline {
                set_timeout(
                    move || retry.update(|n| *n += 1),
                    std::time::Duration::from_secs(3),
                );
            }
        });
        on_cleanup(move || follower.update_value(|slot| *slot = None));

        // Keep a pinned reader at the bottom as turns grow; leave a reader who scrolled up alone.
        // Another session opens at its bottom.
        Effect::new(move |prev: Option<Option<String>>| {
            let session = chat.session_id.get();
            if prev.is_some_and(|p| p != session) {
                pinned.set_value(true);
            }
            chat.turns
                .with(|turns| turns.iter().for_each(|t| t.state.track()));
            if pinned.get_value() {
                request_animation_frame(move || {
                    if let Some(el) = transcript.get_untracked() {
                        el.set_scroll_top(el.scroll_height());
                    }
                });
            }
            session
        });

        // The tab says which conversation it shows.
        Effect::new(move |_| {
            let title = crate::document_title(&chat.title.get());
            if let Some(doc) = web_sys::window().and_then(|w| w.document()) {
                doc.set_title(&title);
            }
        });

        // Back and forward between sessions opened in the page.
        crate::nav::shown_here();
        let on_popstate = window_event_listener(leptos::ev::popstate, move |_| {
            crate::nav::load_current(chat);
        });
        on_cleanup(move || on_popstate.remove());
    }

    let on_scroll = move |_| {
        if let Some(el) = transcript.get_untracked() {
            let gap = el.scroll_height() - el.scroll_top() - el.client_height();
            pinned.set_value(gap < 80);
        }
    };

    // Copy buttons of code blocks (delegated: the blocks are rendered Markdown).
    let on_transcript_click = move |ev: leptos::ev::MouseEvent| {
        #[cfg(feature = "hydrate")]
        {
            use wasm_bindgen::JsCast;
            let Some(target) = ev
                .target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            else {
                return;
            };
            if target.has_attribute("data-copy-code") {
                let code = target
                    .closest(".code-block")
                    .ok()
                    .flatten()
                    .and_then(|block| block.query_selector("code").ok().flatten())
                    .and_then(|code| code.text_content())
                    .unwrap_or_default();
                if let Some(window) = web_sys::window() {
                    let _ = window.navigator().clipboard().write_text(&code);
                }
                target.set_text_content(Some("Copied"));
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = ev;
    };

    let on_send = Callback::new(move |text: String| {
        #[cfg(feature = "hydrate")]
        send(chat, text);
        #[cfg(not(feature = "hydrate"))]
        let _ = text;
    });
    let on_stop = Callback::new(move |_: ()| {
        #[cfg(feature = "hydrate")]
        if let Some(turn) = chat.running_turn() {
            leptos::task::spawn_local(async move {
                let body = serde_json::json!({"run_id": turn.run_id});
                if let Err(e) = crate::client::post("/api/chat/cancel", &body).await {
                    chat.error.set(Some(e.message));
                }
            });
        }
    });

    let export = move |format: &'static str| {
        move || {
            chat.session_id
                .get()
                .map(|id| format!("/api/session/export?session_id={id}&format={format}"))
        }
    };
    let has_turns = Memo::new(move |_| chat.turns.with(|t| !t.is_empty()));

    view! {
        <div
            class="app"
            data-hydrated=dynamic(move || hydrated.get().then_some("true"))
            data-markdown=dynamic(move || renderer_ready.get().then_some("ready"))
            data-drawer=either(move || drawer_open.get(), "open", "closed")
            data-connection=dynamic(move || chat.connection.get().as_str())
            on:keydown=move |ev: leptos::ev::KeyboardEvent| {
                if ev.key() == "Escape" && drawer_open.get_untracked() {
                    set_drawer_open.set(false);
                }
            }
        >
            <Sidebar on_close=move || set_drawer_open.set(false) />
            <div class="drawer-scrim" aria-hidden="true" on:click=move |_| set_drawer_open.set(false)></div>
            <main class="chat">
                <header class="chat-header">
                    <button
                        type="button"
                        class="icon-button menu-button"
                        aria-label="Open sessions"
                        aria-controls="sidebar"
                        aria-expanded=flag(move || drawer_open.get())
                        on:click=move |_| set_drawer_open.update(|open| *open = !*open)
                    >
                        <span aria-hidden="true">"☰"</span>
                    </button>
                    <h1 class="chat-title">{dynamic(move || chat.title.get())}</h1>
                    <span class="connection" data-connection=dynamic(move || chat.connection.get().as_str())>
                        {dynamic(move || chat.connection.get().label())}
                    </span>
                    <div class="mode-switch" role="group" aria-label="Display mode" data-mode-switch="">
                        <button
                            type="button"
                            aria-pressed=flag(move || chat.mode.get() == Mode::CompactWorklog)
                            on:click=move |_| {
                                chat.mode.set(Mode::CompactWorklog);
                                chat.turns.with_untracked(|ts| ts.iter().for_each(|t| t.mode.set(None)));
                            }
                        >
                            "Worklog"
                        </button>
                        <button
                            type="button"
                            aria-pressed=flag(move || chat.mode.get() == Mode::TransparentStream)
                            on:click=move |_| {
                                chat.mode.set(Mode::TransparentStream);
                                chat.turns.with_untracked(|ts| ts.iter().for_each(|t| t.mode.set(None)));
                            }
                        >
                            "Trace"
                        </button>
                    </div>
                    {move || chat.session_id.with(Option::is_some).then(|| view! {
                        <details class="export-menu">
                            <summary aria-label="Export">"⋯"</summary>
                            <div class="export-links">
                                <a href=export("md") download="">"Export Markdown"</a>
                                <a href=export("jsonl") download="">"Export journal (JSONL)"</a>
                            </div>
                        </details>
                    })}
                </header>
                <section
                    class="transcript"
                    aria-label="Conversation"
                    aria-busy=either(move || chat.loading.get(), "true", "false")
                    node_ref=transcript
                    on:scroll=on_scroll
                    on:click=on_transcript_click
                >
                    {move || chat.missing.get().then(|| view! { <p class="notice" role="alert">"That conversation does not exist (any more). Here is your newest one."</p> })}
                    {move || if has_turns.get() {
                        Either::Left(view! {
                            <For
                                each=move || chat.turns.get()
                                key=TurnHandle::key
                                children=move |turn| view! { <TurnView turn=turn /> }
                            />
                        })
                    } else {
                        Either::Right(view! { <EmptyChat /> })
                    }}
                    <For
                        each=move || chat.queued.get()
                        key=|q| q.id.clone()
                        children=move |q| view! {
                            <div class="queued" data-queued-id=q.id.clone()>
                                <span class="queued-label">"Queued"</span>
                                <span class="queued-text">{q.content.clone()}</span>
                            </div>
                        }
                    />
                </section>
                <div class="dock">
                    <TodoPanel />
                    <PendingCards />
                    {move || chat.error.get().map(|e| view! {
                        <div class="error-banner" role="alert">
                            <span>{e}</span>
                            <button type="button" class="icon-button small" aria-label="Dismiss" on:click=move |_| chat.error.set(None)>"✕"</button>
                        </div>
                    })}
                    <Composer on_send=on_send on_stop=on_stop />
                </div>
                <div class="visually-hidden" aria-live="polite" aria-atomic="true">{dynamic(move || chat.announcement.get())}</div>
            </main>
        </div>
    }
}

#[cfg(feature = "hydrate")]
fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// Sends a message: starts a turn (creating the session first on the empty page), or queues it
/// while a turn runs.
#[cfg(feature = "hydrate")]
fn send(chat: ChatState, text: String) {
    use crate::api::{MessageData, QueuedData, TurnData};
    use crate::client;
    use serde_json::json;

    leptos::task::spawn_local(async move {
        chat.error.set(None);
        // The reader may open another conversation while this waits for the server: what
        // comes back then goes to the server's record only, not into the page shown.
        let epoch = chat.epoch.get_value();
        let session_id = match chat.session_id.get_untracked() {
            Some(id) => id,
            None => match client::post("/api/session/new", &json!({})).await {
                Ok(answer) => {
                    let id = answer["session"]["id"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    if let Ok(summary) = serde_json::from_value(answer["session"].clone()) {
                        chat.sessions.update(|list| list.insert(0, summary));
                    }
                    // If the reader went elsewhere meanwhile, the message still goes to the
                    // new session, which stays in the background.
                    let here = chat.epoch.get_value() == epoch
                        && chat.session_id.get_untracked().is_none();
                    if here {
                        chat.session_id.set(Some(id.clone()));
                        if let Some(window) = web_sys::window() {
                            let _ = window.history().and_then(|h| {
                                h.replace_state_with_url(
                                    &wasm_bindgen::JsValue::NULL,
                                    "",
                                    Some(&format!("/s/{id}")),
                                )
                            });
                        }
                        crate::nav::shown_here();
                    }
                    id
                }
                Err(e) => {
                    chat.error.set(Some(e.message));
                    return;
                }
            },
        };
        if chat.running_turn().is_some() {
            match client::post(
                "/api/chat/queue",
                &json!({"session_id": session_id, "message": text}),
            )
            .await
            {
                Ok(answer) if answer["queued"] == true && chat.shows(&session_id, epoch) => {
                    let item = QueuedData {
                        id: answer["item"]["id"].as_str().unwrap_or_default().to_owned(),
                        content: answer["item"]["content"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                    };
                    chat.queued.update(|q| q.push(item));
                    chat.announcement.set("Message queued".into());
                }
                Ok(answer) if answer["queued"] == true => {}
                Ok(_) => reload_session(chat, &session_id, epoch).await,
                Err(e) => chat.error.set(Some(e.message)),
            }
            return;
        }
        match client::post(
            "/api/chat/start",
            &json!({"session_id": session_id, "message": text}),
        )
        .await
        {
            Ok(answer) => {
                let run_id = answer["run_id"].as_str().unwrap_or_default().to_owned();
                let turn = TurnData {
                    user: MessageData {
                        id: answer["user_message"]["id"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                        content: answer["user_message"]["content"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                        created_at: answer["user_message"]["created_at"]
                            .as_f64()
                            .unwrap_or_default(),
                    },
                    run_id: run_id.clone(),
                    turn_id: answer["turn_id"].as_str().unwrap_or_default().to_owned(),
                    events: Vec::new(),
                    running: true,
                };
                chat.mark_session(&session_id, Some(run_id.clone()));
                let known = chat
                    .turns
                    .with_untracked(|ts| ts.iter().any(|t| t.run_id == run_id));
                if chat.shows(&session_id, epoch) && !known {
                    let handle = chat.new_turn(&session_id, &turn);
                    chat.turns.update(|turns| turns.push(handle));
                    chat.announcement.set("The assistant is responding".into());
                }
            }
            Err(e) if e.status == 409 => {
                // The session is busy (another tab started a turn): show it and queue this one.
                let _ = client::post(
                    "/api/chat/queue",
                    &json!({"session_id": session_id, "message": text}),
                )
                .await;
                reload_session(chat, &session_id, epoch).await;
            }
            Err(e) => chat.error.set(Some(e.message)),
        }
    });
}

/// Reloads the open session's page data (after another tab changed it), unless the page has
/// loaded other data since `epoch`.
#[cfg(feature = "hydrate")]
async fn reload_session(chat: ChatState, session_id: &str, epoch: u64) {
    let page = crate::nav::fetch_page(Some(session_id)).await;
    if !chat.shows(session_id, epoch) {
        return;
    }
    match page {
        Ok(page) => chat.load(&page),
        Err(e) => chat.error.set(Some(e)),
    }
}
