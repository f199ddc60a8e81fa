//! What the document around the app says, for the server that writes it and the browser that
//! reads it: the tab's title, the `<meta>` naming the build, and where the page data is.

/// The id of the `<script type="application/json">` that carries the page data.
pub const PAGE_DATA_ID: &str = "anchorage-page";

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
