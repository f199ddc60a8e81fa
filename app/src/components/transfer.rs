//! Conversations in whole: a copy of one (from its row's menu) and an import of a JSONL export
//! (from the sidebar). Both open the new conversation and say what was made. Browser only;
//! the code comes with the first use (see [`crate::lazy`]).

use leptos::prelude::{Set as _, Update as _};

use crate::state::ChatState;

use crate::lazy::Task;

/// Copies the conversation `session_id`: the branch it shows, or (`all`) every branch.
pub(crate) fn duplicate(chat: ChatState, session_id: String, all: bool) {
    crate::lazy::run(
        chat,
        "The conversation could not be copied",
        duplicating(chat, session_id, all),
    );
}

/// Imports the export `file` as a new conversation.
pub(crate) fn import(chat: ChatState, file: web_sys::File) {
    crate::lazy::run(
        chat,
        "The conversation could not be imported",
        importing(chat, file),
    );
}

crate::lazy::split_off!(
    transfer,
    fn duplicating(chat: ChatState, session_id: String, all: bool) -> Task {
        Box::pin(async move {
            let body = crate::api::DuplicateBody { session_id, all };
            let answer = crate::client::duplicate(&body).await;
            opened(
                chat,
                answer,
                "Copied as",
                "The conversation could not be copied",
            );
        })
    }
);

crate::lazy::split_off!(
    transfer,
    fn importing(chat: ChatState, file: web_sys::File) -> Task {
        Box::pin(async move {
            let answer = crate::client::import(&file).await;
            opened(
                chat,
                answer,
                "Imported as",
                "That file could not be imported",
            );
        })
    }
);

/// Puts the new conversation at the top of the list, opens it, and says so (and which files
/// did not come with it); or says why nothing was made.
fn opened(
    chat: ChatState,
    answer: Result<crate::api::Transferred, crate::client::Failure>,
    made: &str,
    failed: &str,
) {
    match answer {
        Ok(answer) => {
            let session = answer.session;
            let path = crate::api::paths::session_page(&session.id);
            let mut message = format!("{made} “{}”", session.title);
            match answer.attachments_left_out {
                0 => {}
                1 => message.push_str(" (1 file was not yours to bring along)"),
                n => message.push_str(&format!(" ({n} files were not yours to bring along)")),
            }
            chat.sessions.update(|list| super::place_in(list, session));
            crate::nav::go(chat, &path);
            super::show_toast(chat, &message, None, false);
        }
        Err(e) => {
            // What an earlier notice said is old news next to why this failed.
            chat.toast.set(None);
            chat.fail(&crate::client::Failure {
                message: format!("{failed}: {}", e.message),
                ..e
            });
        }
    }
}
