//! HTTP routes that are not Leptos pages.

pub(crate) mod chat;
pub(crate) mod health;
pub(crate) mod session;
pub(crate) mod stream;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;

use crate::AppState;

/// The JSON and SSE API.
pub(crate) fn api() -> Router<AppState> {
    Router::new()
        .route("/api/session/new", post(session::create))
        .route("/api/sessions", get(session::list))
        .route("/api/session", get(session::get))
        .route("/api/session/rename", post(session::rename))
        .route("/api/session/delete", post(session::delete))
        .route("/api/sessions/search", get(session::search))
        .route("/api/session/export", get(session::export))
        .route("/api/chat/start", post(chat::start))
        .route("/api/chat/cancel", post(chat::cancel))
        .route("/api/chat/queue", post(chat::queue))
        .route("/api/chat/stream", get(stream::stream))
        .route("/api/chat/stream/status", get(stream::status))
        .route("/api/approval/respond", post(chat::approval))
        .route("/api/clarify/respond", post(chat::clarify))
        // Messages are limited to 64 KiB (413 beyond); the body may carry a little more.
        .layer(DefaultBodyLimit::max(256 * 1024))
}
