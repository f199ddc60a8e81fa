use leptos::either::Either;
use leptos::prelude::*;

use crate::api::{paths, SessionSummary};
use crate::components::menu::Menu;
use crate::dynamic::{dynamic, either};
use crate::state::{use_chat, Action};

/// Puts `session` in `list` where the server lists it ([`SessionSummary::sidebar_order`]).
#[cfg(feature = "hydrate")]
pub(crate) fn place_in(list: &mut Vec<SessionSummary>, session: SessionSummary) {
    let at = list
        .iter()
        .position(|s| SessionSummary::sidebar_order(&session, s).is_le())
        .unwrap_or(list.len());
    list.insert(at, session);
}

/// One session in the list, with its "⋯" (pin, rename, archive, delete).
#[component]
fn SessionRow(
    session: SessionSummary,
    #[prop(into)] on_close: Callback<()>,
    /// The sidebar's search results, which a rename or a delete updates too.
    results: RwSignal<Option<Vec<SessionSummary>>>,
    /// The archived conversations, once listed.
    archived_list: RwSignal<Vec<SessionSummary>>,
    /// What was searched for, to mark in a hit's words.
    #[prop(optional, into)]
    searched: String,
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
    // A search hit's words around the match, under its title.
    let snippet = session.snippet.clone();
    // A search hit in a message opens at its turn (a page load: the window that holds it).
    let at_turn = session.hit_turn_id.is_some();
    let href = match &session.hit_turn_id {
        Some(turn) => format!("{}#{turn}", paths::session_page(&session.id)),
        None => paths::session_page(&session.id),
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
            super::row_actions::rename(chat, results, id.clone(), title);
            #[cfg(not(feature = "hydrate"))]
            let _ = (&id, title, results);
        }
    };
    let pinned = session.pinned;
    let archived = session.archived;
    let summary = session.clone();
    // Delete, pin and archive (see `row_actions`); a delete or an archive can be undone from
    // the notice it leaves.
    let act = Callback::new(move |action: Action| {
        #[cfg(feature = "hydrate")]
        super::row_actions::act(chat, results, archived_list, summary.clone(), action);
        #[cfg(not(feature = "hydrate"))]
        let _ = (action, &summary, results, archived_list);
    });
    let rename_on_key = rename;
    let current_for_link = current.clone();
    let share_id = session.id.clone();
    let share = move |_| {
        #[cfg(feature = "hydrate")]
        super::share(chat, share_id.clone());
        #[cfg(not(feature = "hydrate"))]
        let _ = &share_id;
    };
    // A copy: the branch the conversation shows, or every version of every turn.
    let copy_id = session.id.clone();
    let copy = move |all: bool| {
        let id = copy_id.clone();
        move |_| {
            #[cfg(feature = "hydrate")]
            super::transfer::duplicate(chat, id.clone(), all);
            #[cfg(not(feature = "hydrate"))]
            let _ = (&id, all);
        }
    };
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
                        href=crate::base::href(&href)
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
                        {snippet.clone().map(|line| view! {
                            <span class="session-snippet">
                                {crate::snippet::marked(&line, &searched).into_iter().map(|(hit, text)| {
                                    if hit {
                                        Either::Left(view! { <mark>{text}</mark> })
                                    } else {
                                        Either::Right(text)
                                    }
                                }).collect_view()}
                            </span>
                        })}
                    </a>
                })
            }}
            <Menu label="More for this conversation".to_owned() class="session-menu">
                {(!archived).then(|| view! {
                    <button type="button" role="menuitem" on:click=move |_| act.run(Action::Pin(!pinned))>
                        {if pinned { "Unpin" } else { "Pin" }}
                    </button>
                })}
                <button type="button" role="menuitem" on:click=move |_| editing.set(true)>"Rename"</button>
                <button type="button" role="menuitem" on:click=share.clone()>"Share"</button>
                <button type="button" role="menuitem" on:click=copy(false)>"Duplicate"</button>
                <button type="button" role="menuitem" on:click=copy(true)>"Duplicate all versions"</button>
                <button type="button" role="menuitem" on:click=move |_| act.run(Action::Archive(!archived))>
                    {if archived { "Unarchive" } else { "Archive" }}
                </button>
                <button type="button" role="menuitem" class="danger-item" disabled=running on:click=move |_| act.run(Action::Delete)>"Delete"</button>
            </Menu>
        </li>
    }
}

/// A line of the list: a heading, or a conversation.
#[derive(Clone, Debug)]
enum Entry {
    Heading(&'static str),
    /// A conversation, and what was searched for when it is a hit ("" in the list).
    Session(SessionSummary, String),
}

impl Entry {
    /// What makes a line new for the list (a conversation renamed, started, pinned…).
    fn key(
        &self,
    ) -> (
        String,
        String,
        Option<String>,
        Option<String>,
        bool,
        bool,
        String,
    ) {
        match self {
            Entry::Heading(label) => (
                format!("heading:{label}"),
                String::new(),
                None,
                None,
                false,
                false,
                String::new(),
            ),
            Entry::Session(s, searched) => (
                s.id.clone(),
                s.title.clone(),
                s.active_run_id.clone(),
                s.hit_turn_id.clone(),
                s.pinned,
                s.archived,
                searched.clone(),
            ),
        }
    }
}

/// What the sessions sidebar holds (the page draws `<nav id="sidebar">` around it); on a phone
/// the sidebar is a drawer that `on_close` dismisses.
#[component]
pub(crate) fn Sidebar(#[prop(into)] on_close: Callback<()>) -> impl IntoView {
    let chat = use_chat();
    let query = RwSignal::new(String::new());
    let results = RwSignal::new(None::<Vec<SessionSummary>>);
    // The hits among archived conversations are counted, and listed once asked for.
    let archived_hits_shown = RwSignal::new(false);
    let archived_hits = move || {
        results.with(|r| {
            r.iter()
                .flatten()
                .filter(|f| f.archived)
                .cloned()
                .collect::<Vec<_>>()
        })
    };
    let archived_hit_count =
        Memo::new(move |_| results.with(|r| r.iter().flatten().filter(|f| f.archived).count()));
    let search = move |q: String| {
        query.set(q.clone());
        archived_hits_shown.set(false);
        if q.trim().is_empty() {
            results.set(None);
        } else {
            #[cfg(feature = "hydrate")]
            leptos::task::spawn_local(async move {
                if let Ok(answer) = crate::client::search(&q).await {
                    if query.get_untracked() == q {
                        results.set(Some(answer.sessions));
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
                .filter(|f| !f.archived)
                .filter_map(|f| {
                    all.iter()
                        .find(|s| s.id == f.id)
                        .map(|s| SessionSummary {
                            hit_turn_id: f.hit_turn_id.clone(),
                            snippet: f.snippet.clone(),
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
            let query = crate::api::ListQuery {
                offset: Some(offset as u64),
                limit: Some(50),
                archived: None,
            };
            let answer = crate::client::sessions(&query).await;
            loading_more.set(false);
            match answer {
                Ok(answer) => {
                    chat.sessions.update(|list| {
                        for s in answer.sessions {
                            if !list.iter().any(|known| known.id == s.id) {
                                list.push(s);
                            }
                        }
                    });
                    chat.more_sessions.set(answer.more);
                }
                Err(e) => chat.fail(&e),
            }
        });
    };
    let show_more = move |_| load_more();
    // The page carries the first few sessions; the next ones come when the reader asks or
    // scrolls near the end of the list (never by themselves: a list that grew under the page
    // would move what is below it). Scrolls, that is, of a wheel or a finger: a scroll that
    // only brings the "Show more" button into view (the focus moving to it, a click on it)
    // loads nothing, so the button does not run away from the pointer or the focus on its way.
    let reader_scrolls = StoredValue::new(false);
    let wheel = move |_: leptos::ev::WheelEvent| reader_scrolls.set_value(true);
    let finger = move |_: leptos::ev::TouchEvent| reader_scrolls.set_value(true);
    let near_end = move |_ev: leptos::ev::Event| {
        #[cfg(feature = "hydrate")]
        {
            if !reader_scrolls.get_value() {
                return;
            }
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
    // The archived conversations, listed on request in place of the others.
    let showing_archived = RwSignal::new(false);
    let archived_list = RwSignal::new(Vec::<SessionSummary>::new());
    let open_archived = move || {
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            let query = crate::api::ListQuery {
                archived: Some(true),
                ..Default::default()
            };
            match crate::client::sessions(&query).await {
                Ok(answer) => {
                    archived_list.set(answer.sessions);
                    showing_archived.set(true);
                }
                Err(e) => chat.fail(&e),
            }
        });
    };
    // What the list shows: search results as found; otherwise the pinned conversations,
    // then the others under the day they were last active (Today, Yesterday, …).
    let entries = move || -> Vec<Entry> {
        if showing_archived.get() {
            return archived_list
                .get()
                .into_iter()
                .map(|s| Entry::Session(s, String::new()))
                .collect();
        }
        let sessions = list();
        if results.with(Option::is_some) {
            let searched = query.get();
            let hit = |s| Entry::Session(s, searched.clone());
            let mut entries: Vec<Entry> = sessions.into_iter().map(hit).collect();
            // The archived hits, once asked for, under their own heading.
            if archived_hits_shown.get() {
                let archived = archived_hits();
                if !archived.is_empty() {
                    entries.push(Entry::Heading("Archived"));
                    entries.extend(archived.into_iter().map(hit));
                }
            }
            return entries;
        }
        let clock = chat.clock.get();
        let mut entries = Vec::with_capacity(sessions.len() + 5);
        let mut heading = None;
        for session in sessions {
            let this = if session.pinned {
                "Pinned"
            } else {
                crate::time::group(session.updated_at, clock).label()
            };
            if heading != Some(this) {
                entries.push(Entry::Heading(this));
                heading = Some(this);
            }
            entries.push(Entry::Session(session, String::new()));
        }
        entries
    };
    let has_entries = Memo::new(move |_| {
        if showing_archived.get() {
            archived_list.with(|l| !l.is_empty())
        } else {
            !list().is_empty() || (archived_hits_shown.get() && archived_hit_count.get() > 0)
        }
    });
    let sign_out = move |_| {
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            match crate::client::logout().await {
                Ok(_) => signed_out(chat),
                // Signed out already (the answer went to the sign-in page).
                Err(e) if e.status == 401 => crate::components::forget_drafts(),
                Err(e) if e.status == 0 => {
                    // What this device keeps goes anyway (the service worker has dropped its
                    // saved pages as the request left); the sign-in itself stays on the
                    // server, and this browser holds its cookie: said, not hidden.
                    crate::components::forget_drafts();
                    chat.draft.set(String::new());
                    // Said where it is seen: the drawer (on a phone) gives way to it.
                    on_close.run(());
                    chat.error.set(Some(crate::state::Problem {
                        message: "Not signed out: the server could not be reached, so this \
                                  device is still signed in. Its drafts and saved pages are \
                                  gone. Sign out again once it is back, or from another \
                                  device (Settings → Signed-in devices)."
                            .to_owned(),
                        network: false,
                    }));
                }
                Err(e) => chat.fail(&e),
            }
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
        <>
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
            {move || showing_archived.get().then(|| view! {
                <div class="archived-head">
                    <button type="button" class="text-button back-to-list" on:click=move |_| showing_archived.set(false)>
                        "‹ Conversations"
                    </button>
                    <h2 class="archived-title">"Archived"</h2>
                </div>
            })}
            // Only the conversations scroll: what is above stays, and so does the foot below,
            // however the list grows (more come as it nears its end) — Settings never moves away
            // from a pointer or a finger on its way to it.
            <div class="sidebar-scroll" on:scroll=near_end on:wheel=wheel on:touchmove=finger>
            {move || if has_entries.get() {
                Either::Left(view! {
                    <ul class="session-list">
                        <For
                            each=entries
                            key=Entry::key
                            children=move |entry| match entry {
                                Entry::Heading(label) => Either::Left(view! {
                                    <li class="session-group"><h2>{label}</h2></li>
                                }),
                                Entry::Session(s, searched) => Either::Right(view! {
                                    <SessionRow session=s on_close=on_close results=results archived_list=archived_list searched=searched />
                                }),
                            }
                        />
                    </ul>
                })
            } else {
                Either::Right(view! {
                    <p class="sidebar-empty">
                        {move || if showing_archived.get() {
                            "Nothing archived."
                        } else if query.with(|q| q.is_empty()) {
                            "No conversations yet."
                        } else if archived_hit_count.get() > 0 {
                            "Only archived conversations match."
                        } else {
                            "Nothing matches."
                        }}
                    </p>
                })
            }}
            // Search looks in the archive too, and says so rather than leave its hits out.
            {move || (archived_hit_count.get() > 0 && !archived_hits_shown.get() && !showing_archived.get()).then(|| view! {
                <button
                    type="button"
                    class="text-button show-archived-hits"
                    on:click=move |_| archived_hits_shown.set(true)
                >
                    {format!("Also in archived: {}", archived_hit_count.get())}
                </button>
            })}
            {move || (chat.more_sessions.get() && results.with(Option::is_none) && !showing_archived.get()).then(|| view! {
                <button
                    type="button"
                    class="show-more-sessions"
                    aria-busy=either(move || loading_more.get(), "true", "false")
                    on:click=show_more
                >
                    {either(move || loading_more.get(), "Loading…", "Show more conversations")}
                </button>
            })}
            {move || (results.with(Option::is_none) && !showing_archived.get()).then(|| view! {
                <button type="button" class="text-button show-archived" on:click=move |_| open_archived()>
                    "Archived conversations"
                </button>
                <label class="text-button import-conversation">
                    "Import a conversation…"
                    <input
                        type="file"
                        class="visually-hidden"
                        accept=".jsonl,.ndjson,application/x-ndjson"
                        on:change=move |ev| {
                            #[cfg(feature = "hydrate")]
                            {
                                use wasm_bindgen::JsCast as _;
                                let input = ev
                                    .target()
                                    .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok());
                                if let Some(input) = input {
                                    if let Some(file) = input.files().and_then(|f| f.get(0)) {
                                        on_close.run(());
                                        super::transfer::import(chat, file);
                                    }
                                    // The same file may be chosen again.
                                    input.set_value("");
                                }
                            }
                            #[cfg(not(feature = "hydrate"))]
                            let _ = ev;
                        }
                    />
                </label>
            })}
            </div>
            <div class="sidebar-foot">
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
            </div>
        </>
    }
}

/// This browser was signed out (here, or from Settings): what it kept of the account's goes,
/// and the sign-in page comes.
#[cfg(feature = "hydrate")]
pub(crate) fn signed_out(chat: crate::state::ChatState) {
    crate::components::forget_drafts();
    chat.draft.set(String::new());
    crate::client::to_login(false);
}
