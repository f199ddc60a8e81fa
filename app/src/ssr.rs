//! The port the server implements for server-side rendering and server functions.

use std::sync::Arc;

use leptos::prelude::*;

use crate::api::SessionPage;

/// What the app needs from the server.
#[async_trait::async_trait]
pub trait ChatBackend: Send + Sync + 'static {
    /// The sidebar and the session to show (the newest when `session_id` is `None`).
    async fn page(&self, session_id: Option<&str>) -> Result<SessionPage, String>;
}

/// The backend, provided as context by the server for pages and server functions alike.
#[derive(Clone)]
pub struct Backend(pub Arc<dyn ChatBackend>);

pub(crate) fn backend() -> Result<Arc<dyn ChatBackend>, ServerFnError> {
    use_context::<Backend>()
        .map(|b| b.0)
        .ok_or_else(|| ServerFnError::new("the chat backend is not available"))
}
