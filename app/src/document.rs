//! What the document around the app says, for the server that writes it and the browser that
//! reads it: the tab's title, the `<meta>` naming the build, where the page data and the
//! message field are, and what kind of screen it is on.

/// The id of the `<script type="application/json">` that carries the page data.
pub const PAGE_DATA_ID: &str = "anchorage-page";

/// The id of the message field (the skip link and focus moves go to it).
pub const COMPOSER_ID: &str = "composer-input";

/// The name of the `<meta>` that carries the build's id (the page says "Updated" once when it
/// changes).
pub const BUILD_META: &str = "anchorage-build";

/// The document title for a page: the open conversation's title, then the app's name.
pub fn document_title(title: &str) -> String {
    let title = title.trim();
    if title.is_empty() || title == "New chat" {
        "Anchorage".to_owned()
    } else {
        format!("{title} · Anchorage")
    }
}

/// A touch-only device: Enter inserts a new line there.
pub(crate) fn touch_only() -> bool {
    #[cfg(feature = "hydrate")]
    {
        web_sys::window()
            .and_then(|w| {
                w.match_media("(hover: none) and (pointer: coarse)")
                    .ok()
                    .flatten()
            })
            .is_some_and(|m| m.matches())
    }
    #[cfg(not(feature = "hydrate"))]
    {
        false
    }
}

/// Moves the focus to the message field.
#[cfg(feature = "hydrate")]
pub(crate) fn focus_composer() {
    use wasm_bindgen::JsCast;
    if let Some(el) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(COMPOSER_ID))
        .and_then(|el| el.dyn_into::<web_sys::HtmlElement>().ok())
    {
        let _ = el.focus();
    }
}
