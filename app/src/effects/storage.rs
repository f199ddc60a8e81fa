//! This browser's stored choices.

use anchor::Mode;
use leptos::prelude::*;

use crate::state::ChatState;

/// The display mode is a preference of this browser, kept in local storage and in a cookie.
pub(super) fn remember_mode(chat: ChatState) {
    // The display mode is a preference of this browser, kept in local storage and in a
    // cookie: the server renders the first HTML in it (no switch after hydration). A
    // browser that has it stored but not yet as a cookie switches once, here.
    Effect::new(move |_| {
        if let Some(mode) =
            crate::prefs::storage().and_then(|s| s.get_item("anchorage.mode").ok().flatten())
        {
            let mode = Mode::parse_or_default(&mode);
            if mode != chat.mode.get_untracked() {
                chat.mode.set(mode);
                chat.rows_for_stream();
            }
        }
    });
    Effect::new(move |prev: Option<()>| {
        let mode = chat.mode.get();
        if prev.is_some() {
            if let Some(s) = crate::prefs::storage() {
                let _ = s.set_item("anchorage.mode", mode.as_str());
            }
        }
        crate::prefs::remember_mode(mode);
    });
}
