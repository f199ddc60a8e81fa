use anchor::Mode;
use leptos::either::EitherOf3;
use leptos::prelude::*;

use crate::api::SessionPage;
use crate::components::adopted::{adopted, slot};
use crate::components::{use_drawer, Composer, EmptyChat};
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
    Effect::new(move |_| {
        set_hydrated.set(true);
        #[cfg(feature = "hydrate")]
        crate::effects::mark_live();
    });
    // The Markdown renderer, when the build splits it off, is fetched once the page is live.
    let (renderer_ready, set_renderer_ready) = signal(false);
    Effect::new(move |_| crate::markdown::preload(move || set_renderer_ready.set(true)));
    let (drawer_open, set_drawer_open) = signal(false);
    let transcript = NodeRef::<leptos::html::Section>::new();
    let loading_earlier = RwSignal::new(false);
    let menu_button = NodeRef::<leptos::html::Button>::new();

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
        crate::outbox::send(chat, text);
        #[cfg(not(feature = "hydrate"))]
        let _ = text;
    });
    provide_context(crate::state::Sender(on_send));
    let on_retry = Callback::new(move |_: ()| {
        #[cfg(feature = "hydrate")]
        crate::outbox::attempt(chat);
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

    let has_turns = Memo::new(move |_| chat.turns.with(|t| !t.is_empty()));
    // How turns are drawn: in a split build, a part fetched once the page is live (or before
    // it hydrates, when it has turns; see `components::turns`).
    let drawer = use_drawer(chat, has_turns);
    let retry_drawer = move |_| drawer.retry();
    let close_drawer = Callback::new(move |_: ()| set_drawer_open.set(false));
    // A conversation chosen in the sidebar before its part came opens in place too.
    let open_link = Callback::new(move |path: String| {
        set_drawer_open.set(false);
        #[cfg(feature = "hydrate")]
        crate::nav::go(chat, &path);
        #[cfg(not(feature = "hydrate"))]
        let _ = path;
    });
    let on_show_earlier = move |_| {
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            crate::effects::show_earlier(chat, transcript, loading_earlier).await;
        });
    };
    let set_mode = move |mode: Mode| {
        chat.mode.set(mode);
        chat.turns
            .with_untracked(|ts| ts.iter().for_each(|t| t.mode.set(None)));
        chat.rows_for_stream();
    };
    provide_context(crate::state::PageCommands {
        stop: on_stop,
        set_mode: Callback::new(set_mode),
    });
    #[cfg(feature = "hydrate")]
    shortcuts(chat, on_stop, Callback::new(set_mode));
    let skip_to_composer = move |ev: leptos::ev::MouseEvent| {
        ev.prevent_default();
        #[cfg(feature = "hydrate")]
        crate::document::focus_composer();
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
            // The browser's state, never the server's (whose build draws turns at once).
            data-turns=dynamic(move || (hydrated.get() && drawer.part.with(Option::is_some)).then_some("ready"))
            data-drawer=either(move || drawer_open.get(), "open", "closed")
            data-connection=dynamic(move || chat.connection.get().as_str())
            on:keydown=move |ev: leptos::ev::KeyboardEvent| {
                if ev.key() == "Escape" && drawer_open.get_untracked() {
                    set_drawer_open.set(false);
                }
            }
        >
            <a class="skip-link" href="#composer-input" on:click=skip_to_composer>"Skip to the message box"</a>
            // Drawn by the turns' part; a page that came alive before it takes it over then.
            {adopted(
                drawer.part,
                "sidebar",
                leptos::html::nav().id("sidebar").class("sidebar").aria_label("Sessions"),
                Some(open_link),
                move |p| (p.sidebar)(close_drawer),
            )}
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
                    <span class="connection" data-connection=dynamic(move || chat.connection.get().as_str()) data-quiet=dynamic(move || chat.quiet.get().is_some().then_some(""))>
                        <span class="connection-short">{dynamic(move || connection_text(chat, true))}</span>
                        <span class="connection-long">{dynamic(move || connection_text(chat, false))}</span>
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
                    {slot(drawer.part, "export-slot", |p| (p.export)())}
                </header>
                {move || chat.saved.get().then(|| view! {
                    <p class="offline-banner" role="status">"Offline — showing what was saved"</p>
                })}
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
                    {move || match (has_turns.get(), drawer.part.get()) {
                        (true, Some(part)) => EitherOf3::A(view! {
                            <For each=move || chat.turns.get() key=TurnHandle::key children=part.draw />
                        }),
                        (true, None) => EitherOf3::B(view! {
                            <div class="turns-loading" role="status">
                                <span>
                                    {either(
                                        move || drawer.failed.get(),
                                        "The conversation could not be shown: check the connection and try again.",
                                        "Loading the conversation…",
                                    )}
                                </span>
                                <button
                                    type="button"
                                    class="pill"
                                    hidden=dynamic(move || (!drawer.failed.get()).then_some(""))
                                    on:click=retry_drawer
                                >
                                    "Try again"
                                </button>
                            </div>
                        }),
                        (false, _) => EitherOf3::C(view! { <EmptyChat /> }),
                    }}
                    // Follow-ups wait on a running turn: only a page with turns has them.
                    {move || has_turns.get().then(|| drawer.part.get().map(|p| (p.queued)()))}
                    // What waits on the reader, at the end of the conversation and kept in view
                    // at the bottom edge: a card that comes or goes here moves nothing above it.
                    <div class="transcript-dock">
                        // Only where there is something to jump to: never over an empty conversation.
                        {move || (!chat.following.get() && has_turns.get()).then(|| view! {
                            <button type="button" class="jump-latest" data-unseen=flag(move || chat.unseen.get()) on:click=jump>
                                "Jump to latest ↓"
                            </button>
                        })}
                        // Drawn by the turns' part: only a page with turns has either.
                        {move || has_turns.get().then(|| drawer.part.get().map(|p| (p.dock)()))}
                        {move || chat.outbox.get().filter(|o| o.session_id == chat.session_id.get() && o.failed.is_some()).map(|o| {
                            // Another account's now (a shared device): never sent, and said so.
                            let stranded = o.stranded;
                            let said = if stranded {
                                "Not sent: someone else is signed in here now. Your message stays in the box \
                                 and will not be sent from this page."
                                    .to_owned()
                            } else {
                                format!(
                                    "Not sent yet: {} Your message is kept and goes out when the server answers again.",
                                    o.failed.unwrap_or_default()
                                )
                            };
                            view! {
                                <div class="error-banner send-failed" role="alert" data-stranded=stranded.then_some("")>
                                    <span>{said}</span>
                                    {(!stranded).then(|| view! {
                                        <button type="button" class="banner-action" on:click=move |_| on_retry.run(())>"Retry now"</button>
                                    })}
                                </div>
                            }
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
                    {slot(drawer.part, "model-slot", |p| (p.model_picker)())}
                </div>
                <div class="visually-hidden" aria-live="polite" aria-atomic="true">{dynamic(move || chat.announcement.get())}</div>
            </main>
            {slot(drawer.part, "settings-slot", move |p| (p.settings)(Callback::new(set_mode)))}
            {adopted(
                drawer.part,
                "toasts",
                leptos::html::div()
                    .id("toasts")
                    .class("toast-region")
                    .role("status")
                    .aria_live("polite"),
                None,
                |p| (p.toast)(),
            )}
        </div>
    }
}

/// What the header says of the running turn's connection (`short`: for a phone's header).
/// Live, and nothing for a while: said, so that a long pause is never taken for progress, and
/// the server's own trouble (a full disk) is never blamed on the model.
/// The short words are said only while the turn is quiet (empty otherwise: the phone's header
/// then shows the long ones, or nothing).
fn connection_text(chat: ChatState, short: bool) -> String {
    let connection = chat.connection.get();
    let live = matches!(connection.as_str(), "live" | "resumed");
    match (live, chat.quiet.get(), chat.store_trouble.get(), short) {
        (true, Some(_), Some(_), true) => "Cannot save".to_owned(),
        (true, Some(_), Some(why), false) => format!("The server cannot save now: {why}"),
        (true, Some(secs), None, true) => format!("Waiting {secs} s"),
        (true, Some(secs), None, false) => format!("Waiting for the model ({secs} s)"),
        (.., true) => String::new(),
        (.., false) => connection.label(),
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
                crate::document::focus_composer();
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
