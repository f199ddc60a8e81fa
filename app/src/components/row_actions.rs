//! What a conversation's row in the sidebar does to it: rename, and the actions of its "⋯"
//! (delete, pin, archive). The server is told, then the lists and the header follow its
//! answer; a delete or an archive can be undone from the notice it leaves. The code comes with the first use (see
//! [`crate::lazy`]): rows are in every first load, their actions in few.

use leptos::prelude::*;

use crate::api::SessionSummary;
use crate::state::{Action, ChatState};

use crate::lazy::Task;

/// Renames the conversation `id` to `title`, in the list, the search results and the header.
pub(crate) fn rename(
    chat: ChatState,
    results: RwSignal<Option<Vec<SessionSummary>>>,
    id: String,
    title: String,
) {
    crate::lazy::run(
        chat,
        "The conversation could not be renamed",
        renaming(chat, results, id, title),
    );
}

/// Does `action` to the conversation `summary`, in the lists and on the server.
pub(crate) fn act(
    chat: ChatState,
    results: RwSignal<Option<Vec<SessionSummary>>>,
    archived_list: RwSignal<Vec<SessionSummary>>,
    summary: SessionSummary,
    action: Action,
) {
    crate::lazy::run(
        chat,
        "That could not be done",
        acting(chat, results, archived_list, summary, action),
    );
}

crate::lazy::split_off!(
    row_actions,
    fn renaming(
        chat: ChatState,
        results: RwSignal<Option<Vec<SessionSummary>>>,
        id: String,
        title: String,
    ) -> Task {
        Box::pin(rename_now(chat, results, id, title))
    }
);

crate::lazy::split_off!(
    row_actions,
    fn acting(
        chat: ChatState,
        results: RwSignal<Option<Vec<SessionSummary>>>,
        archived_list: RwSignal<Vec<SessionSummary>>,
        summary: SessionSummary,
        action: Action,
    ) -> Task {
        Box::pin(act_now(chat, results, archived_list, summary, action))
    }
);

async fn rename_now(
    chat: ChatState,
    results: RwSignal<Option<Vec<SessionSummary>>>,
    id: String,
    title: String,
) {
    let body = crate::api::RenameBody {
        session_id: id.clone(),
        title,
    };
    match crate::client::rename(&body).await {
        Ok(answer) => {
            let title = answer.session.title;
            let retitle = |list: &mut Vec<SessionSummary>| {
                if let Some(s) = list.iter_mut().find(|s| s.id == id) {
                    s.title = title.clone();
                }
            };
            chat.sessions.update(retitle);
            results.update(|found| found.iter_mut().for_each(retitle));
            if chat.session_id.get_untracked().as_deref() == Some(id.as_str()) {
                chat.title.set(title);
            }
        }
        Err(e) => chat.fail(&e),
    }
}

async fn act_now(
    chat: ChatState,
    results: RwSignal<Option<Vec<SessionSummary>>>,
    archived_list: RwSignal<Vec<SessionSummary>>,
    summary: SessionSummary,
    action: Action,
) {
    let id = summary.id.clone();
    let place = |on| crate::api::PlaceBody {
        session_id: id.clone(),
        on,
    };
    // What the session is now (a deleted one is gone).
    let answer = match action {
        Action::Delete => crate::client::delete(&id).await.map(|_| None),
        Action::Pin(on) => crate::client::pin(&place(on))
            .await
            .map(|a| Some(a.session)),
        Action::Archive(on) => crate::client::archive(&place(on))
            .await
            .map(|a| Some(a.session)),
    };
    match answer {
        Ok(updated) => {
            let was_shown = chat.session_id.get_untracked().as_deref() == Some(id.as_str());
            let gone = matches!(action, Action::Delete | Action::Archive(true));
            chat.sessions.update(|list| {
                list.retain(|s| s.id != id);
                if let Some(updated) = updated.clone().filter(|u| !u.archived) {
                    super::place_in(list, updated);
                }
            });
            archived_list.update(|list| {
                list.retain(|s| s.id != id);
                if let Some(updated) = updated.clone().filter(|u| u.archived) {
                    list.insert(0, updated);
                }
            });
            results.update(|found| {
                if let (Some(list), true) = (found.as_mut(), action == Action::Delete) {
                    list.retain(|s| s.id != id);
                }
            });
            if gone {
                let message = if action == Action::Delete {
                    "Conversation deleted"
                } else {
                    "Conversation archived"
                };
                super::show_toast(chat, message, Some((action, summary)), was_shown);
                if was_shown {
                    crate::nav::go(chat, "/");
                }
            }
        }
        Err(e) => chat.fail(&e),
    }
}
