//! What the chat page does once it is live in the browser, each concern a named function in
//! a module of its own: following the running turn (`following`), the transcript's bottom
//! (`scroll`), the tab's title (`title`), the address and its history (`history`), this
//! browser's stored choices (`storage`), the clock (`clock`), where the focus goes (`focus`)
//! and what the browser keeps of the app to open offline (`offline`).
//! None of it runs on the server: effects run only once the page is hydrated.

mod clock;
mod focus;
mod following;
mod history;
mod offline;
mod scroll;
mod storage;
mod title;

pub(crate) use history::show_earlier;

use leptos::prelude::*;

use crate::state::ChatState;

/// What the chat page hands to its effects.
pub(crate) struct Page {
    /// The page's state.
    pub chat: ChatState,
    /// The scrolling transcript.
    pub transcript: NodeRef<leptos::html::Section>,
    /// An earlier window of turns is being loaded.
    pub loading_earlier: RwSignal<bool>,
    /// The phone's drawer is open.
    pub drawer_open: ReadSignal<bool>,
    /// The phone's menu button, which gets the focus back when the drawer closes.
    pub menu_button: NodeRef<leptos::html::Button>,
}

/// Sets up every effect of the chat page.
pub(crate) fn chat_page(page: Page) {
    let Page {
        chat,
        transcript,
        loading_earlier,
        drawer_open,
        menu_button,
    } = page;
    storage::remember_mode(chat);
    following::follow_running_turn(chat);
    following::watch_server(chat);
    scroll::follow_bottom(chat, transcript);
    clock::follow_clock(chat);
    history::reveal_linked_turns(chat, transcript, loading_earlier);
    history::follow_history(chat);
    title::name_the_tab(chat);
    focus::composer_on_open(chat);
    focus::drawer(drawer_open, menu_button);
    offline::watch_saved(chat);
    offline::announce_update(chat);
    offline::register_worker();
}

/// The name of the moment the page came alive on the browser's performance timeline.
pub(crate) const LIVE_MARK: &str = "anchorage-live";

/// Marks [`LIVE_MARK`] now: what was fetched before it is the first load
/// (`end2end/tests/first_load.spec.ts` holds it to its budget), and a person's browser can
/// tell how long a page took to come alive.
pub(crate) fn mark_live() {
    if let Some(performance) = web_sys::window().and_then(|w| w.performance()) {
        let _ = performance.mark(LIVE_MARK);
    }
}
