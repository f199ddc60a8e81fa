//! Opening another session without leaving the page: the session's data comes from
//! `GET /api/page`, then the address changes through the History API. A full load of the same
//! address renders the same page on the server, so a reload or a shared link agrees with what
//! in-app navigation showed.

use std::cell::{Cell, RefCell};

use leptos::prelude::*;

use crate::api::SessionPage;
use crate::client;
use crate::state::{session_in_path, ChatState};

thread_local! {
    /// The latest navigation: an answer for an earlier one is dropped.
    static LATEST: Cell<u64> = const { Cell::new(0) };
    /// The path whose data the page shows.
    static SHOWN: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The page data for a session (`None`: the newest).
pub async fn fetch_page(session_id: Option<&str>) -> Result<SessionPage, String> {
    let path = format!(
        "/api/page?session_id={}",
        client::encode(session_id.unwrap_or_default())
    );
    let answer = client::get(&path).await.map_err(|e| e.message)?;
    serde_json::from_value(answer).map_err(|e| format!("The page data is not readable ({e})."))
}

fn current_path() -> String {
    web_sys::window()
        .and_then(|w| w.location().pathname().ok())
        .unwrap_or_else(|| "/".to_owned())
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

fn open(chat: ChatState, path: String, push: bool) {
    let ticket = LATEST.with(|n| {
        n.set(n.get() + 1);
        n.get()
    });
    chat.loading.set(true);
    leptos::task::spawn_local(async move {
        let page = fetch_page(session_in_path(&path)).await;
        if LATEST.with(Cell::get) != ticket {
            return;
        }
        chat.loading.set(false);
        match page {
            Ok(page) => {
                if push && current_path() != path {
                    if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
                        let _ = history.push_state_with_url(
                            &wasm_bindgen::JsValue::NULL,
                            "",
                            Some(&path),
                        );
                    }
                }
                SHOWN.with(|s| *s.borrow_mut() = Some(path));
                chat.load(&page);
            }
            // The page and the address still agree (a pushed entry is only made on success;
            // after Back, the reader can go forward again or reload).
            Err(e) => chat.error.set(Some(e)),
        }
    });
}
