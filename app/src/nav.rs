//! Opening another session without leaving the page: the address changes through the
//! History API and the session's data comes from `GET /api/page`. A full load of the same
//! address renders the same page on the server, so a reload or a shared link agrees with
//! what in-app navigation showed.

use leptos::prelude::*;

use crate::api::SessionPage;
use crate::client;
use crate::state::{session_in_path, ChatState};

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

/// Opens `path` (`/` or `/s/{id}`) as a new history entry.
pub fn go(chat: ChatState, path: &str) {
    if current_path() != path {
        if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
            let _ = history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(path));
        }
    }
    load_current(chat);
}

/// Shows the session the address names (after `go`, or back and forward).
pub fn load_current(chat: ChatState) {
    let path = current_path();
    leptos::task::spawn_local(async move {
        let page = fetch_page(session_in_path(&path)).await;
        // A later navigation wins over an earlier one that answered late.
        if current_path() != path {
            return;
        }
        match page {
            Ok(page) => chat.load(&page),
            Err(e) => chat.error.set(Some(e)),
        }
    });
}
