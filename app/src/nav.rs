//! Opening another session without leaving the page: the session's data comes from
//! `GET /api/page`, then the address changes through the History API. A full load of the same
//! address renders the same page on the server, so a reload or a shared link agrees with what
//! in-app navigation showed.

use std::cell::{Cell, RefCell};

use leptos::prelude::*;

use crate::api::paths::{session_in_path, session_page};
use crate::api::SessionPage;
use crate::client;
use crate::state::ChatState;

thread_local! {
    /// The latest navigation: an answer for an earlier one is dropped.
    static LATEST: Cell<u64> = const { Cell::new(0) };
    /// The path whose data the page shows.
    static SHOWN: RefCell<Option<String>> = const { RefCell::new(None) };
}

pub use crate::api::paths::NEW_CHAT;

/// The address of what the page shows: its session, or a new conversation.
pub fn address_of(chat: ChatState) -> String {
    match chat.session_id.get_untracked() {
        Some(id) => session_page(&id),
        None => NEW_CHAT.to_owned(),
    }
}

/// Makes the address say what the page shows, without a new history entry (a link to a
/// conversation that is gone shows the newest one, and then names it).
pub fn correct_address(chat: ChatState) {
    let path = address_of(chat);
    if current_path() != path {
        if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
            let address = crate::base::href(&path);
            let _ =
                history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&address));
        }
    }
    shown_here();
}

/// Fetches the turns of the shown session that came after the last one the page has (a queued
/// follow-up the server started, a turn another tab started) and adds them, leaving the shown
/// turns as they are. While the session still has a follow-up queued and no new turn has come,
/// it asks again a few times: the server starts the follow-up just after the run ends.
pub fn catch_up(chat: ChatState, session_id: String) {
    const ATTEMPTS: u32 = 12;
    let epoch = chat.epoch.get_value();
    leptos::task::spawn_local(async move {
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                client::sleep(150 * attempt).await;
            }
            if !chat.shows(&session_id, epoch) {
                return;
            }
            let after = chat
                .turns
                .with_untracked(|ts| ts.last().map(|t| t.run_id.clone()));
            let Ok(page) = client::session_page(Some(&session_id), after.as_deref()).await else {
                continue;
            };
            if !chat.shows(&session_id, epoch) {
                return;
            }
            let (new, waiting) = page
                .session
                .as_ref()
                .map_or((0, 0), |s| (s.turns.len(), s.queued.len()));
            // A follow-up the page shows queued that is neither queued nor among the new turns
            // started between the server's read of the turns and its read of the queue (it
            // reads them in that order, so a follow-up is never in both): its turn is there by
            // the next answer. Shown as it was until then, never as neither.
            let shown = chat.queued.with_untracked(Vec::len);
            if new == 0 && waiting < shown && attempt + 1 < ATTEMPTS {
                continue;
            }
            chat.append(&page);
            if new > 0 || waiting == 0 {
                return;
            }
        }
    });
}

/// The site path of the browser's address (without the site's base).
fn current_path() -> String {
    web_sys::window()
        .and_then(|w| w.location().pathname().ok())
        .map_or_else(|| "/".to_owned(), |p| crate::base::site_path(&p))
}

/// Notes that the page shows the data of the current address (the server-rendered page, or
/// after a change made in place).
pub fn shown_here() {
    SHOWN.with(|s| *s.borrow_mut() = Some(current_path()));
}

/// Opens `path` (`/` or `/s/{id}`): loads its data, then makes it a new history entry.
pub fn go(chat: ChatState, path: &str) {
    open(chat, path.to_owned(), true);
}

/// Shows the session the address names, after Back or Forward. A change of the fragment
/// alone (a `#` link) is not another page.
pub fn load_current(chat: ChatState) {
    let path = current_path();
    if SHOWN.with(|s| s.borrow().as_deref() == Some(path.as_str())) {
        return;
    }
    open(chat, path, false);
}

/// Loads the page shown again from the server (a kept copy it showed while offline).
pub fn reload(chat: ChatState) {
    open(chat, current_path(), false);
}

fn open(chat: ChatState, path: String, push: bool) {
    let ticket = LATEST.with(|n| {
        n.set(n.get() + 1);
        n.get()
    });
    if path == NEW_CHAT {
        // Nothing to fetch: the sidebar as it is, no conversation yet.
        let page = SessionPage {
            sessions: chat.sessions.get_untracked(),
            more_sessions: chat.more_sessions.get_untracked(),
            session: None,
            missing: false,
            agent: chat.agent.get_untracked(),
            user: chat.user.get_untracked(),
            mode: None,
            examples: chat.examples.get_untracked(),
            commands: chat.commands.get_untracked(),
            files: chat.workspace.get_untracked(),
            default_model: chat.default_model.get_untracked(),
            context_meter: chat.context_meter.get_untracked(),
            theme: None,
            now: chat.clock.get_untracked().now,
            tz_offset: Some(chat.clock.get_untracked().offset),
            event_kinds: Vec::new(),
        };
        chat.loading.set(false);
        push_address(&path, push);
        SHOWN.with(|s| *s.borrow_mut() = Some(path));
        // A new conversation asks for the model the last one did, as a picker left set would.
        let model = chat.model.get_untracked();
        chat.load(&page);
        chat.model.set(model);
        return;
    }
    chat.loading.set(true);
    leptos::task::spawn_local(async move {
        let page = client::session_page(session_in_path(&path), None).await;
        if LATEST.with(Cell::get) != ticket {
            return;
        }
        chat.loading.set(false);
        match page {
            Ok(page) => {
                push_address(&path, push);
                SHOWN.with(|s| *s.borrow_mut() = Some(path));
                chat.load(&page);
                if page.missing {
                    correct_address(chat);
                }
            }
            // The page and the address still agree (a pushed entry is only made on success;
            // after Back, the reader can go forward again or reload).
            Err(e) => chat.fail(&e),
        }
    });
}

/// Makes `path` a new history entry (when `push` and the address differs).
fn push_address(path: &str, push: bool) {
    if push && current_path() != path {
        if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
            let address = crate::base::href(path);
            let _ = history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&address));
        }
    }
}
