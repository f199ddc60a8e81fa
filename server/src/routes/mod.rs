//! HTTP routes that are not Leptos pages.

pub(crate) mod artifact;
pub(crate) mod attachments;
pub(crate) mod chat;
pub(crate) mod devices;
pub(crate) mod grants;
pub(crate) mod guard;
pub(crate) mod health;
pub(crate) mod models;
pub(crate) mod passkeys;
pub(crate) mod protocols;
pub(crate) mod session;
pub(crate) mod share;
pub(crate) mod sign_in;
pub(crate) mod storage;
pub use passkeys::MAX_PASSKEYS;
pub use session::LIST_LIMIT;
pub use share::MAX_SHARES;
pub(crate) mod stream;
pub(crate) mod transfer;
mod unread;
pub(crate) mod workspace;

use app::api::paths;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;

use crate::AppState;

type Handler = axum::routing::MethodRouter<AppState>;

/// Every API route behind the sign-in gate: its method, its path, its handler. Each one must
/// check that what it names belongs to the viewer (the isolation test walks this list and
/// fails on a route it has no case for).
fn table() -> Vec<(&'static str, &'static str, Handler)> {
    vec![
        ("POST", paths::SESSION_NEW, post(session::create)),
        ("GET", paths::SESSIONS, get(session::list)),
        ("GET", paths::SESSION, get(session::get)),
        ("POST", paths::SESSION_RENAME, post(session::rename)),
        ("POST", paths::SESSION_DELETE, post(session::delete)),
        ("POST", paths::SESSION_RESTORE, post(session::restore)),
        ("POST", paths::SESSION_PIN, post(session::pin)),
        ("POST", paths::SESSION_ARCHIVE, post(session::archive)),
        ("GET", paths::SESSIONS_SEARCH, get(session::search)),
        ("GET", paths::SESSION_EXPORT, get(session::export)),
        ("POST", paths::SESSION_IMPORT, post(transfer::import)),
        ("POST", paths::SESSION_DUPLICATE, post(transfer::duplicate)),
        ("POST", paths::SESSION_MODEL, post(models::choose)),
        ("GET", paths::MODELS, get(models::list)),
        ("GET", paths::SESSION_CONTEXT, get(models::context)),
        ("GET", paths::WORKSPACE, get(workspace::list)),
        ("GET", paths::WORKSPACE_FILE, get(workspace::file)),
        ("GET", paths::GRANTS, get(grants::list)),
        ("POST", paths::GRANTS_REVOKE, post(grants::revoke)),
        ("POST", paths::SHARE, post(share::create)),
        ("GET", paths::SHARES, get(share::list)),
        ("POST", paths::SHARE_REVOKE, post(share::revoke)),
        ("GET", paths::PASSKEYS, get(passkeys::list)),
        (
            "POST",
            paths::PASSKEY_REGISTER_START,
            post(passkeys::register_start),
        ),
        (
            "POST",
            paths::PASSKEY_REGISTER_FINISH,
            post(passkeys::register_finish),
        ),
        ("POST", paths::PASSKEY_REMOVE, post(passkeys::remove)),
        ("POST", paths::PASSKEY_RENAME, post(passkeys::rename)),
        ("GET", paths::ARTIFACT, get(artifact::download)),
        ("POST", paths::ATTACHMENTS, post(attachments::upload)),
        ("GET", paths::ATTACHMENT, get(attachments::download)),
        ("POST", paths::CHAT_START, post(chat::start)),
        ("POST", paths::CHAT_CANCEL, post(chat::cancel)),
        ("POST", paths::CHAT_QUEUE, post(chat::queue)),
        ("POST", paths::CHAT_RETRY, post(chat::retry)),
        ("POST", paths::CHAT_EDIT, post(chat::edit)),
        ("POST", paths::CHAT_BRANCH, post(chat::branch)),
        ("GET", paths::CHAT_STREAM, get(stream::stream)),
        ("GET", paths::CHAT_STREAM_STATUS, get(stream::status)),
        ("POST", paths::APPROVAL_RESPOND, post(chat::approval)),
        ("POST", paths::CLARIFY_RESPOND, post(chat::clarify)),
        ("GET", paths::PAGE, get(crate::pages::data)),
        ("GET", paths::CHAT_JOURNAL, get(crate::pages::journal)),
        ("POST", paths::AGUI, post(protocols::agui_run)),
        ("GET", paths::AGUI_RUN, get(protocols::agui_follow)),
        ("POST", paths::AI_SDK_CHAT, post(protocols::ai_sdk_chat)),
        ("GET", paths::AI_SDK_RESUME, get(protocols::ai_sdk_resume)),
        ("POST", paths::AUTH_LOGOUT, post(sign_in::logout)),
        ("GET", paths::AUTH_ME, get(sign_in::me)),
        ("POST", paths::AUTH_CONFIRM, post(devices::confirm)),
        ("POST", paths::AUTH_CONFIRM_PASSKEY, post(passkeys::confirm)),
        ("GET", paths::STORAGE, get(storage::get)),
        ("GET", paths::SIGN_INS, get(devices::list)),
        ("POST", paths::SIGN_IN_END, post(devices::end)),
        ("POST", paths::SIGN_INS_END_ALL, post(devices::end_all)),
    ]
}

/// The method and path of every gated API route.
pub fn api_routes() -> Vec<(&'static str, &'static str)> {
    table()
        .into_iter()
        .map(|(method, path, _)| (method, path))
        .collect()
}

/// The JSON and SSE API.
pub(crate) fn api() -> Router<AppState> {
    let mut router = Router::new();
    // Messages are limited to 64 KiB (413 beyond); the body may carry a little more. An
    // upload reads its body itself, up to `--max-attachment-mb`.
    for (_, path, handler) in table() {
        // An import reads its body itself too, up to `limits::MAX_IMPORT_BYTES`.
        let handler = if path == paths::ATTACHMENTS || path == paths::SESSION_IMPORT {
            handler.layer(DefaultBodyLimit::disable())
        } else {
            handler.layer(DefaultBodyLimit::max(256 * 1024))
        };
        router = router.route(path, handler);
    }
    router
}

#[cfg(test)]
mod tests {
    use app::api::paths;

    #[test]
    fn the_routes_that_take_other_bodies_are_the_ones_the_write_check_admits() {
        assert_eq!(crate::security::UPLOAD_PATH, paths::ATTACHMENTS);
        assert_eq!(crate::security::IMPORT_PATH, paths::SESSION_IMPORT);
    }
}
