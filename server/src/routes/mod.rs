//! HTTP routes that are not Leptos pages.

pub(crate) mod attachments;
pub(crate) mod chat;
pub(crate) mod grants;
pub(crate) mod health;
pub(crate) mod models;
pub(crate) mod session;
pub use session::LIST_LIMIT;
pub(crate) mod stream;

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
        ("POST", "/api/session/new", post(session::create)),
        ("GET", "/api/sessions", get(session::list)),
        ("GET", "/api/session", get(session::get)),
        ("POST", "/api/session/rename", post(session::rename)),
        ("POST", "/api/session/delete", post(session::delete)),
        ("POST", "/api/session/restore", post(session::restore)),
        ("POST", "/api/session/pin", post(session::pin)),
        ("POST", "/api/session/archive", post(session::archive)),
        ("GET", "/api/sessions/search", get(session::search)),
        ("GET", "/api/session/export", get(session::export)),
        ("POST", "/api/session/model", post(models::choose)),
        ("GET", "/api/models", get(models::list)),
        ("GET", "/api/grants", get(grants::list)),
        ("POST", "/api/grants/revoke", post(grants::revoke)),
        ("POST", "/api/attachments", post(attachments::upload)),
        ("GET", "/api/attachment", get(attachments::download)),
        ("POST", "/api/chat/start", post(chat::start)),
        ("POST", "/api/chat/cancel", post(chat::cancel)),
        ("POST", "/api/chat/queue", post(chat::queue)),
        ("POST", "/api/chat/retry", post(chat::retry)),
        ("POST", "/api/chat/edit", post(chat::edit)),
        ("POST", "/api/chat/branch", post(chat::branch)),
        ("GET", "/api/chat/stream", get(stream::stream)),
        ("GET", "/api/chat/stream/status", get(stream::status)),
        ("POST", "/api/approval/respond", post(chat::approval)),
        ("POST", "/api/clarify/respond", post(chat::clarify)),
        ("GET", "/api/page", get(crate::pages::data)),
        ("GET", "/api/chat/journal", get(crate::pages::journal)),
        ("POST", "/api/auth/logout", post(crate::auth::logout)),
        ("GET", "/api/auth/me", get(crate::auth::me)),
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
        let handler = if path == "/api/attachments" {
            handler.layer(DefaultBodyLimit::disable())
        } else {
            handler.layer(DefaultBodyLimit::max(256 * 1024))
        };
        router = router.route(path, handler);
    }
    router
}
