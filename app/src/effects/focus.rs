//! Where the focus goes.

use leptos::prelude::*;

use crate::document::focus_composer;
use crate::state::ChatState;

/// On a desktop, the message field has the focus when a conversation opens.
pub(super) fn composer_on_open(chat: ChatState) {
    // On a desktop the message field has the focus from the start, and after another
    // conversation opens (a phone would open its keyboard: not there).
    Effect::new(move |_| {
        chat.session_id.track();
        if !crate::document::touch_only() {
            focus_composer();
        }
    });
}

/// The phone's drawer is a modal: the focus goes into it, and back to the menu button after.
pub(super) fn drawer(drawer_open: ReadSignal<bool>, menu_button: NodeRef<leptos::html::Button>) {
    // The drawer is a modal on a phone: the focus goes into it and comes back to the menu
    // button when it closes (the rest of the page is inert meanwhile, see the view).
    Effect::new(move |was_open: Option<bool>| {
        let open = drawer_open.get();
        if open {
            if let Some(el) = web_sys::window()
                .and_then(|w| w.document())
                .and_then(|d| d.query_selector(".drawer-close").ok().flatten())
            {
                use wasm_bindgen::JsCast;
                if let Ok(el) = el.dyn_into::<web_sys::HtmlElement>() {
                    let _ = el.focus();
                }
            }
        } else if was_open == Some(true) {
            if let Some(button) = menu_button.get_untracked() {
                let _ = button.focus();
            }
        }
        open
    });
}
