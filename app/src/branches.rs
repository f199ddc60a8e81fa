//! Retry, edit and the versions of a turn, in the browser.
//!
//! A retry answers a turn's message again and an edit sends another message in its place;
//! either way the server puts a new turn beside the old one (its other version) and the
//! conversation forks there. The page then shows the new turn where the old one was, and
//! nothing after it. Choosing another version shows that version's branch from there on;
//! the turns above stay as they are (their views are not redrawn).

use leptos::prelude::*;
use serde_json::{json, Value};

use crate::api::{MessageData, TurnData, Versions};
use crate::client;
use crate::state::{ChatState, TurnHandle};

/// The turn a start answered (`/api/chat/start`, `/retry`, `/edit`), running.
pub fn started_turn(answer: &Value) -> TurnData {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let message = &answer["user_message"];
    TurnData {
        user: MessageData {
            id: text(&message["id"]),
            content: text(&message["content"]),
            created_at: message["created_at"].as_f64().unwrap_or_default(),
            attachments: serde_json::from_value(message["attachments"].clone()).unwrap_or_default(),
        },
        run_id: text(&answer["run_id"]),
        turn_id: text(&answer["turn_id"]),
        events: Vec::new(),
        running: true,
        snapshot: None,
        versions: serde_json::from_value::<Versions>(answer["versions"].clone())
            .unwrap_or_default(),
        model: answer["model"].as_str().map(str::to_owned),
    }
}

/// Runs a retry or an edit of `turn` (`path` with `body`), then shows the new turn in its
/// place. `done` hears whether it started (an edit keeps its text when it did not).
fn fork(
    chat: ChatState,
    turn: &TurnHandle,
    path: &'static str,
    body: Value,
    done: impl FnOnce(bool) + 'static,
) {
    let Some(session_id) = chat.session_id.get_untracked() else {
        return;
    };
    let epoch = chat.epoch.get_value();
    let run_id = turn.run_id.clone();
    chat.error.set(None);
    leptos::task::spawn_local(async move {
        match client::post(path, &body).await {
            Ok(answer) => {
                let new = started_turn(&answer);
                chat.mark_session(&session_id, Some(new.run_id.clone()));
                if chat.shows(&session_id, epoch) {
                    chat.fork(&session_id, &run_id, &new);
                    chat.following.set(true);
                    chat.announcement.set("The assistant is responding".into());
                    // What was clicked is gone with the turn it belonged to.
                    if !crate::components::touch_only() {
                        crate::routes::focus_composer();
                    }
                }
                done(true);
            }
            Err(failure) => {
                chat.fail(&failure);
                done(false);
            }
        }
    });
}

/// Answers the message of `turn` again (a new version of the turn).
pub fn retry(chat: ChatState, turn: &TurnHandle) {
    let body = json!({"run_id": turn.run_id});
    fork(chat, turn, "/api/chat/retry", body, |_| {});
}

/// Sends `text` in place of the message of `turn`; `done` hears whether it was sent.
pub fn edit(chat: ChatState, turn: &TurnHandle, text: String, done: impl FnOnce(bool) + 'static) {
    let body = json!({
        "run_id": turn.run_id,
        "message": text,
        "client_id": client::client_id(),
    });
    fork(chat, turn, "/api/chat/edit", body, done);
}

/// Shows version `version` of the place of `turn`, and the branch that follows it.
pub fn show_version(chat: ChatState, turn: &TurnHandle, version: u32) {
    let Some(session_id) = chat.session_id.get_untracked() else {
        return;
    };
    let epoch = chat.epoch.get_value();
    let run_id = turn.run_id.clone();
    chat.error.set(None);
    leptos::task::spawn_local(async move {
        let body = json!({"run_id": run_id, "version": version});
        let chosen = match client::post("/api/chat/branch", &body).await {
            Ok(answer) => answer["run_id"].as_str().unwrap_or_default().to_owned(),
            Err(failure) => return chat.fail(&failure),
        };
        let page = match crate::nav::fetch_page(Some(&session_id), None).await {
            Ok(page) => page,
            Err(failure) => return chat.fail(&failure),
        };
        if !chat.shows(&session_id, epoch) {
            return;
        }
        if !chat.show_branch(&run_id, &chosen, &page) {
            // The version's branch goes on beyond the window the page holds: show it whole.
            chat.load(&page);
        }
        chat.rows_for_stream();
    });
}
