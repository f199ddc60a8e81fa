//! The tab's title.

use leptos::prelude::*;

use crate::state::ChatState;

/// The tab says which conversation it shows.
pub(super) fn name_the_tab(chat: ChatState) {
    Effect::new(move |_| {
        let title = crate::document::document_title(&chat.title.get());
        if let Some(doc) = web_sys::window().and_then(|w| w.document()) {
            doc.set_title(&title);
        }
    });
}
