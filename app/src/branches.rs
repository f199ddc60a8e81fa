//! Retry, edit and the versions of a turn, in the browser.
//!
//! A retry answers a turn's message again and an edit sends another message in its place;
//! either way the server puts a new turn beside the old one (its other version) and the
//! conversation forks there. The page then shows the new turn where the old one was, and
//! nothing after it. Choosing another version shows that version's branch from there on;
//! the turns above stay as they are (their views are not redrawn).

use crate::api::{BranchBody, EditBody, MessageData, Started, TurnData};
use crate::client;
use crate::state::{ChatState, TurnHandle};
use leptos::prelude::*;

/// The turn a start answered (`/api/chat/start`, `/retry`, `/edit`), running.
pub fn started_turn(answer: Started) -> TurnData {
    TurnData {
        user: answer.user_message.unwrap_or_else(|| MessageData {
            id: String::new(),
            content: String::new(),
            created_at: 0.0,
            attachments: Vec::new(),
        }),
        run_id: answer.run_id,
        turn_id: answer.turn_id,
        events: Vec::new(),
        running: true,
        snapshot: None,
        versions: answer.versions.unwrap_or_default(),
        model: answer.model,
    }
}

/// A retry or an edit.
enum Fork {
    Retry(String),
    Edit(EditBody),
}

/// Runs a retry or an edit of `turn`, then shows the new turn in its place. `done` hears
/// whether it started (an edit keeps its text when it did not).
fn fork(chat: ChatState, turn: &TurnHandle, how: Fork, done: impl FnOnce(bool) + 'static) {
    let Some(session_id) = chat.session_id.get_untracked() else {
        return;
    };
    let epoch = chat.epoch.get_value();
    let run_id = turn.run_id.clone();
    chat.error.set(None);
    leptos::task::spawn_local(async move {
        let started = match fork_task(chat, session_id, epoch, run_id, how).await {
            Ok(task) => task.await,
            Err(_) => {
                crate::lazy::unavailable(chat, "That could not start");
                false
            }
        };
        done(started);
    });
}

use crate::lazy::Task;

crate::lazy::split_off!(
    branching,
    fn fork_task(
        chat: ChatState,
        session_id: String,
        epoch: u64,
        run_id: String,
        how: Fork,
    ) -> Task<bool> {
        Box::pin(run_fork(chat, session_id, epoch, run_id, how))
    }
);

/// The work of [`fork`], once its code is here: whether the new turn started.
async fn run_fork(
    chat: ChatState,
    session_id: String,
    epoch: u64,
    run_id: String,
    how: Fork,
) -> bool {
    {
        let answer = match &how {
            Fork::Retry(run_id) => client::retry(run_id).await,
            Fork::Edit(body) => client::edit(body).await,
        };
        match answer {
            Ok(answer) => {
                let new = started_turn(answer);
                chat.mark_session(&session_id, Some(new.run_id.clone()));
                if chat.shows(&session_id, epoch) {
                    chat.fork(&session_id, &run_id, &new);
                    chat.following.set(true);
                    chat.announcement.set("The assistant is responding".into());
                    // What was clicked is gone with the turn it belonged to.
                    if !crate::document::touch_only() {
                        crate::document::focus_composer();
                    }
                }
                true
            }
            Err(failure) => {
                chat.fail(&failure);
                false
            }
        }
    }
}

/// Answers the message of `turn` again (a new version of the turn).
pub fn retry(chat: ChatState, turn: &TurnHandle) {
    fork(chat, turn, Fork::Retry(turn.run_id.clone()), |_| {});
}

/// Sends `text` in place of the message of `turn`; `done` hears whether it was sent.
pub fn edit(chat: ChatState, turn: &TurnHandle, text: String, done: impl FnOnce(bool) + 'static) {
    let body = EditBody {
        run_id: turn.run_id.clone(),
        message: text,
        client_id: Some(client::client_id()),
    };
    fork(chat, turn, Fork::Edit(body), done);
}

/// Shows version `version` of the place of `turn`, and the branch that follows it.
pub fn show_version(chat: ChatState, turn: &TurnHandle, version: u32) {
    let Some(session_id) = chat.session_id.get_untracked() else {
        return;
    };
    let epoch = chat.epoch.get_value();
    let run_id = turn.run_id.clone();
    chat.error.set(None);
    crate::lazy::run(
        chat,
        "That version could not be shown",
        version_task(chat, session_id, epoch, run_id, version),
    );
}

crate::lazy::split_off!(
    branching,
    fn version_task(
        chat: ChatState,
        session_id: String,
        epoch: u64,
        run_id: String,
        version: u32,
    ) -> Task<()> {
        Box::pin(run_show_version(chat, session_id, epoch, run_id, version))
    }
);

/// The work of [`show_version`], once its code is here.
async fn run_show_version(
    chat: ChatState,
    session_id: String,
    epoch: u64,
    run_id: String,
    version: u32,
) {
    {
        let body = BranchBody {
            run_id: run_id.clone(),
            version: Some(version),
        };
        let chosen = match client::branch(&body).await {
            Ok(answer) => answer.run_id,
            Err(failure) => return chat.fail(&failure),
        };
        let page = match crate::client::session_page(Some(&session_id), None).await {
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
    }
}
