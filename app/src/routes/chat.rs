use anchor::Mode;
use leptos::either::Either;
use leptos::prelude::*;

use crate::api::SessionPage;
use crate::components::{
    Composer, EmptyChat, ModelPicker, PendingCards, Settings, Sidebar, ToastNotice, TodoPanel,
    TurnView,
};
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
    let loading_earlier = RwSignal::new(false);
    let menu_button = NodeRef::<leptos::html::Button>::new();
    let export_menu = NodeRef::<leptos::html::Details>::new();

    // What the page does once it is live: follow the running turn and the transcript's bottom,
    // keep the tab's title, the address and this browser's choices (see `crate::effects`).
    #[cfg(feature = "hydrate")]
    crate::effects::chat_page(crate::effects::Page {
        chat,
        transcript,
        loading_earlier,
        drawer_open,
        menu_button,
    });

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
    let on_retry = Callback::new(move |_: ()| {
        #[cfg(feature = "hydrate")]
        attempt(chat);
    });
    let on_stop = Callback::new(move |_: ()| {
        #[cfg(feature = "hydrate")]
        if let Some(turn) = chat.running_turn() {
            leptos::task::spawn_local(async move {
                if let Err(e) = crate::client::cancel(&turn.run_id).await {
                    chat.fail(&e);
                }
            });
        }
    });

    let export = move |format: &'static str| {
        move || {
            chat.session_id.get().map(|session_id| {
                let query = crate::api::ExportQuery {
                    session_id,
                    format: Some(format.to_owned()),
                };
                crate::api::url(crate::api::paths::SESSION_EXPORT, &query)
            })
        }
    };
    // A download leaves the page as it was: the menu closes.
    let close_export = move |_| {
        if let Some(menu) = export_menu.get_untracked() {
            menu.set_open(false);
        }
    };
    let has_turns = Memo::new(move |_| chat.turns.with(|t| !t.is_empty()));
    let on_show_earlier = move |_| {
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            show_earlier(chat, transcript, loading_earlier).await;
        });
    };
    let set_mode = move |mode: Mode| {
        chat.mode.set(mode);
        chat.turns
            .with_untracked(|ts| ts.iter().for_each(|t| t.mode.set(None)));
        chat.rows_for_stream();
    };
    #[cfg(feature = "hydrate")]
    shortcuts(chat, on_stop, Callback::new(set_mode));
    let skip_to_composer = move |ev: leptos::ev::MouseEvent| {
        ev.prevent_default();
        #[cfg(feature = "hydrate")]
        focus_composer();
    };
    let jump = move |_| {
        chat.following.set(true);
        chat.unseen.set(false);
        if let Some(el) = transcript.get_untracked() {
            el.set_scroll_top(el.scroll_height());
        }
    };

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
            <a class="skip-link" href="#composer-input" on:click=skip_to_composer>"Skip to the message box"</a>
            <Sidebar on_close=move || set_drawer_open.set(false) />
            <div class="drawer-scrim" aria-hidden="true" on:click=move |_| set_drawer_open.set(false)></div>
            <main
                class="chat"
                inert=dynamic(move || drawer_open.get().then_some(""))
                on:dragenter=move |ev| crate::components::drag(chat, &ev, crate::components::Drag::Enter)
                on:dragover=move |ev| crate::components::drag(chat, &ev, crate::components::Drag::Over)
                on:dragleave=move |ev| crate::components::drag(chat, &ev, crate::components::Drag::Leave)
                on:drop=move |ev| crate::components::drag(chat, &ev, crate::components::Drag::Drop)
            >
                <header class="chat-header">
                    <button
                        type="button"
                        class="icon-button menu-button"
                        aria-label="Open sessions"
                        aria-controls="sidebar"
                        aria-expanded=flag(move || drawer_open.get())
                        node_ref=menu_button
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
                            title="Worklog: the work folded, the answer first"
                            aria-pressed=flag(move || chat.mode.get() == Mode::CompactWorklog)
                            on:click=move |_| set_mode(Mode::CompactWorklog)
                        >
                            <span class="mode-label">"Worklog"</span>
                        </button>
                        <button
                            type="button"
                            title="Stream: every step, in order"
                            aria-pressed=flag(move || chat.mode.get() == Mode::TransparentStream)
                            on:click=move |_| set_mode(Mode::TransparentStream)
                        >
                            <span class="mode-label">"Stream"</span>
                        </button>
                    </div>
                    {move || chat.session_id.with(Option::is_some).then(|| view! {
                        <details class="export-menu" node_ref=export_menu>
                            <summary aria-label="Export">"⋯"</summary>
                            <div class="export-links">
                                <a href=export("md") download="" on:click=close_export>"Export Markdown"</a>
                                <a href=export("jsonl") download="" on:click=close_export>"Export journal (JSONL)"</a>
                            </div>
                        </details>
                    })}
                </header>
                <section
                    class="transcript"
                    aria-label="Conversation"
                    tabindex="-1"
                    aria-busy=either(move || chat.loading.get(), "true", "false")
                    node_ref=transcript
                    on:click=on_transcript_click
                >
                    {move || chat.missing.get().then(|| view! { <p class="notice" role="alert">"That conversation does not exist (any more). Here is your newest one."</p> })}
                    {move || chat.earlier.get().then(|| view! {
                        <div class="earlier">
                            <button
                                type="button"
                                class="pill show-earlier"
                                aria-busy=either(move || loading_earlier.get(), "true", "false")
                                on:click=on_show_earlier
                            >
                                {either(move || loading_earlier.get(), "Loading earlier messages…", "Show earlier messages")}
                            </button>
                        </div>
                    })}
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
                                <crate::components::MessageFiles files=q.attachments.clone() />
                            </div>
                        }
                    />
                    // What waits on the reader, at the end of the conversation and kept in view
                    // at the bottom edge: a card that comes or goes here moves nothing above it.
                    <div class="transcript-dock">
                        {move || (!chat.following.get()).then(|| view! {
                            <button type="button" class="jump-latest" data-unseen=flag(move || chat.unseen.get()) on:click=jump>
                                "Jump to latest ↓"
                            </button>
                        })}
                        <TodoPanel />
                        <PendingCards />
                        {move || chat.outbox.get().filter(|o| o.session_id == chat.session_id.get()).and_then(|o| o.failed).map(|reason| view! {
                            <div class="error-banner send-failed" role="alert">
                                <span>
                                    "Not sent yet: " {reason}
                                    " Your message is kept and goes out when the server answers again."
                                </span>
                                <button type="button" class="banner-action" on:click=move |_| on_retry.run(())>"Retry now"</button>
                            </div>
                        })}
                        {move || chat.error.get().map(|e| view! {
                            <div class="error-banner" role="alert" data-network=either(move || e.network, "true", "false")>
                                <span>{e.message.clone()}</span>
                                <button type="button" class="icon-button small" aria-label="Dismiss" on:click=move |_| chat.error.set(None)>"✕"</button>
                            </div>
                        })}
                    </div>
                </section>
                <div class="dock">
                    <Composer on_send=on_send on_stop=on_stop on_retry=on_retry />
                    <ModelPicker />
                </div>
                <div class="visually-hidden" aria-live="polite" aria-atomic="true">{dynamic(move || chat.announcement.get())}</div>
            </main>
            <Settings set_mode=set_mode />
            <ToastNotice />
        </div>
    }
}

/// The keyboard shortcuts (listed in Settings): Ctrl/⌘+Shift+O a new chat, Shift+Esc the
/// message box, Ctrl/⌘+. stops the running turn, Ctrl/⌘+Shift+E switches the view.
#[cfg(feature = "hydrate")]
fn shortcuts(chat: ChatState, stop: Callback<()>, set_mode: Callback<Mode>) {
    let handle = window_event_listener(leptos::ev::keydown, move |ev| {
        if ev.is_composing() || ev.alt_key() {
            return;
        }
        let command = ev.ctrl_key() || ev.meta_key();
        let key = ev.key().to_ascii_lowercase();
        let done = match (command, ev.shift_key(), key.as_str()) {
            (true, true, "o") => {
                chat.settings.set(false);
                crate::nav::go(chat, crate::nav::NEW_CHAT);
                true
            }
            (false, true, "escape") if !chat.settings.get_untracked() => {
                focus_composer();
                true
            }
            (true, false, ".") => {
                stop.run(());
                true
            }
            (true, true, "e") => {
                set_mode.run(match chat.mode.get_untracked() {
                    Mode::TransparentStream => Mode::CompactWorklog,
                    _ => Mode::TransparentStream,
                });
                true
            }
            _ => false,
        };
        if done {
            ev.prevent_default();
        }
    });
    on_cleanup(move || handle.remove());
}

/// Moves the focus to the message field.
#[cfg(feature = "hydrate")]
pub(crate) fn focus_composer() {
    use wasm_bindgen::JsCast;
    if let Some(el) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(crate::components::COMPOSER_ID))
        .and_then(|el| el.dyn_into::<web_sys::HtmlElement>().ok())
    {
        let _ = el.focus();
    }
}

/// Loads the window of turns before the first one shown and puts it above, keeping what the
/// reader looks at where it is on screen. False when nothing was loaded.
#[cfg(feature = "hydrate")]
pub(crate) async fn show_earlier(
    chat: ChatState,
    transcript: NodeRef<leptos::html::Section>,
    loading: RwSignal<bool>,
) -> bool {
    if loading.get_untracked() {
        return false;
    }
    let (Some(session), Some(first)) = (
        chat.session_id.get_untracked(),
        chat.turns
            .with_untracked(|t| t.first().map(|t| t.run_id.clone())),
    ) else {
        return false;
    };
    let epoch = chat.epoch.get_value();
    loading.set(true);
    let page = crate::nav::fetch_earlier(&session, &first).await;
    loading.set(false);
    let page = match page {
        Ok(page) => page,
        Err(failure) => {
            chat.fail(&failure);
            return false;
        }
    };
    if !chat.shows(&session, epoch) {
        return false;
    }
    // The reader's first turn, and where it is on screen before the older ones go above it.
    let anchor = web_sys::window().and_then(|w| w.document()).and_then(|d| {
        d.query_selector(&format!("article.turn[data-run-id='{first}']"))
            .ok()
            .flatten()
    });
    let before = anchor.as_ref().map(|a| a.get_bounding_client_rect().top());
    let count = chat.turns.with_untracked(Vec::len);
    chat.prepend(&page);
    let added = chat.turns.with_untracked(Vec::len) > count;
    crate::client::next_frame().await;
    if let (Some(anchor), Some(before), Some(el)) = (anchor, before, transcript.get_untracked()) {
        let moved = anchor.get_bounding_client_rect().top() - before;
        if moved.abs() >= 0.5 {
            el.set_scroll_top(el.scroll_top() + moved.round() as i32);
        }
    }
    added
}

/// Sends a message: starts a turn (creating the session first on a new conversation), or
/// queues it while a turn runs. The text stays in the composer until the server has it.
#[cfg(feature = "hydrate")]
pub(crate) fn send(chat: ChatState, text: String) {
    if chat.outbox.with_untracked(Option::is_some) {
        return;
    }
    // The files go with the message: they leave the composer with it (and come back if the
    // server refuses it).
    let attachments: Vec<crate::api::AttachmentData> = chat
        .files
        .with_untracked(|f| f.iter().filter_map(|p| p.ready().cloned()).collect());
    chat.files
        .update(|f| f.retain(|p| p.state == crate::state::FileState::Uploading));
    let out = crate::state::Outgoing {
        session_id: chat.session_id.get_untracked(),
        text,
        client_id: crate::client::client_id(),
        failed: None,
        model: chat.model.get_untracked(),
        attachments,
    };
    chat.outbox.set(Some(out.clone()));
    dispatch(chat, out);
}

/// Sends the waiting message again, unless an attempt is on its way. A retry carries the same
/// client id, so a first attempt that reached the server but whose answer was lost does not
/// start a second turn.
#[cfg(feature = "hydrate")]
pub(crate) fn attempt(chat: ChatState) {
    let Some(mut out) = chat.outbox.get_untracked() else {
        return;
    };
    if out.failed.take().is_none() {
        return;
    }
    chat.outbox.set(Some(out.clone()));
    dispatch(chat, out);
}

/// One attempt of `out`, marked in flight in the outbox.
#[cfg(feature = "hydrate")]
fn dispatch(chat: ChatState, mut out: crate::state::Outgoing) {
    chat.error.set(None);
    leptos::task::spawn_local(async move {
        let result = deliver(chat, &out).await;
        let still_ours = chat
            .outbox
            .with_untracked(|o| o.as_ref().is_some_and(|o| o.client_id == out.client_id));
        match result {
            Ok(session) => {
                if still_ours {
                    chat.outbox.set(None);
                }
                // The text leaves the field (or the kept draft of a conversation the reader
                // has left meanwhile) once the server has it.
                if chat.session_id.get_untracked().as_deref() == Some(session.as_str()) {
                    if chat.draft.with_untracked(|d| *d == out.text) {
                        chat.draft.set(String::new());
                    }
                    chat.following.set(true);
                } else if crate::components::stored_draft(Some(&session)) == out.text {
                    crate::components::store_draft(Some(&session), "");
                }
            }
            Err(e) if e.status == 0 => {
                if still_ours {
                    out.failed = Some("the server cannot be reached.".to_owned());
                    chat.outbox.set(Some(out));
                }
            }
            Err(e) => {
                // Refused (too long, say): the text stays to be changed, and the files with
                // it; nothing retries it.
                if still_ours {
                    chat.outbox.set(None);
                    let back = out.attachments.iter().map(|a| crate::state::PendingFile {
                        key: crate::components::file_key(),
                        name: a.name.clone(),
                        size: a.size,
                        state: crate::state::FileState::Ready(a.clone()),
                    });
                    chat.files.update(|f| {
                        let mut all: Vec<_> = back.collect();
                        all.append(f);
                        *f = all;
                    });
                }
                chat.fail(&e);
            }
        }
    });
}

/// One attempt at getting a message to the server; the session it went to.
#[cfg(feature = "hydrate")]
async fn deliver(
    chat: ChatState,
    out: &crate::state::Outgoing,
) -> Result<String, crate::client::Failure> {
    use crate::api::{QueuedData, SendBody};
    use crate::client;

    // The reader may open another conversation while this waits for the server: what
    // comes back then goes to the server's record only, not into the page shown.
    let epoch = chat.epoch.get_value();
    let session_id = match out.session_id.clone() {
        Some(id) => id,
        None => {
            let summary = client::new_session().await?.session;
            let id = summary.id.clone();
            chat.sessions.update(|list| list.insert(0, summary));
            // If the reader went elsewhere meanwhile, the message still goes to the new
            // session, which stays in the background.
            let here = chat.epoch.get_value() == epoch && chat.session_id.get_untracked().is_none();
            // Retries go to this session from now on.
            chat.outbox.update(|o| {
                if let Some(o) = o.as_mut().filter(|o| o.client_id == out.client_id) {
                    o.session_id = Some(id.clone());
                }
            });
            if here {
                // The draft moves with it: it is this conversation's until the server has it.
                crate::components::store_draft(Some(&id), &chat.draft.get_untracked());
                crate::components::store_draft(None, "");
                chat.session_id.set(Some(id.clone()));
                crate::nav::correct_address(chat);
            }
            id
        }
    };
    let body = SendBody {
        session_id: session_id.clone(),
        message: out.text.clone(),
        client_id: Some(out.client_id.clone()),
        attachments: out.attachments.iter().map(|a| a.id.clone()).collect(),
        // The turn carries the model picked (a new conversation's first turn sets it; for an
        // open one it was stored when picked, and the server changes nothing).
        model: out.model.clone(),
    };
    let shown = chat.shows(&session_id, epoch);
    if shown && chat.running_turn().is_some() {
        let answer = client::queue(&body).await?;
        if !chat.shows(&session_id, epoch) {
            return Ok(session_id);
        }
        if let (true, Some(item)) = (answer.queued, answer.item) {
            let item = QueuedData {
                id: item.id,
                content: item.content,
                attachments: out.attachments.clone(),
            };
            let known = chat
                .queued
                .with_untracked(|q| q.iter().any(|q| q.id == item.id));
            if !known {
                chat.queued.update(|q| q.push(item));
            }
            chat.announcement.set("Message queued".into());
        } else {
            // The run ended meanwhile and this started at once: show it.
            crate::nav::catch_up(chat, session_id.clone());
        }
        return Ok(session_id);
    }
    let answer = match client::start(&body).await {
        Ok(answer) => answer,
        Err(e) if e.status == 409 => {
            // The session is busy (another tab started a turn): queue this one, and show both.
            client::queue(&body).await?;
            if chat.shows(&session_id, epoch) {
                crate::nav::catch_up(chat, session_id.clone());
            }
            return Ok(session_id);
        }
        Err(e) => return Err(e),
    };
    let duplicate = answer.duplicate;
    let turn = crate::branches::started_turn(answer);
    let run_id = turn.run_id.clone();
    if duplicate {
        // An earlier attempt started it: the page learns of it as of the journal.
        if chat.shows(&session_id, epoch) {
            crate::nav::catch_up(chat, session_id.clone());
        }
        return Ok(session_id);
    }
    chat.mark_session(&session_id, Some(run_id.clone()));
    let known = chat
        .turns
        .with_untracked(|ts| ts.iter().any(|t| t.run_id == run_id));
    if chat.shows(&session_id, epoch) && !known {
        let handle = chat.new_turn(&session_id, &turn);
        chat.turns.update(|turns| turns.push(handle));
        chat.announcement.set("The assistant is responding".into());
    }
    Ok(session_id)
}
