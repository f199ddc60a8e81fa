//! The Anchorage chat UI.
//!
//! One crate, two builds: with `ssr` the server renders every page to HTML; with `hydrate`
//! the browser takes that HTML over without re-rendering it. Each assistant turn is one
//! [`anchor`] registry held in one signal ([`model::TurnState`]); the Compact Worklog and the
//! Transparent Stream are two projections of it, so switching between them never fetches or
//! re-applies anything.
//!
//! The server loads the page's data first and renders synchronously; the document carries
//! the same data as JSON ([`PAGE_DATA_ID`]), from which the browser hydrates. There is no
//! client router, no suspense boundary and no type-erased view in the tree: what the page
//! shows is known before the first byte is written, and the bundle stays small.
//!
//! # Layout
//! - [`shell`] / [`not_found_shell`]: the HTML documents the server renders.
//! - [`ChatPage`]: the chat page around a loaded [`api::SessionPage`].
//! - [`api`]: the page data.
//! - [`model`]: a turn's state, fed by journal rows and live frames (pure, tested natively).
//! - [`markdown`]: safe Markdown rendering.
//! - `routes/`: pages; `components/`: what pages are made of; `live`/`client`/`nav`: the
//!   browser's stream follower, API calls and in-app navigation (hydrate only).
// Release builds keep the full view types (dev builds erase them); their layout is deep.
#![recursion_limit = "512"]

#[cfg(feature = "ssr")]
use leptos::prelude::*;

pub mod api;
pub mod base;
#[cfg(feature = "hydrate")]
mod branches;
#[cfg(feature = "hydrate")]
mod client;
mod components;
mod dynamic;
#[cfg(feature = "hydrate")]
mod effects;
#[cfg(feature = "hydrate")]
mod lazy;
#[cfg(feature = "hydrate")]
mod live;
pub mod markdown;
pub mod model;
#[cfg(feature = "hydrate")]
mod nav;
#[cfg(feature = "hydrate")]
mod outbox;
mod routes;
mod state;
mod time;

pub use components::terminal::terminal_label;
pub use routes::{ChatPage, ChatPageProps};

/// The id of the `<script type="application/json">` that carries the page data.
pub const PAGE_DATA_ID: &str = "anchorage-page";

/// The document title for a page: the open conversation's title, then the app's name.
pub fn document_title(title: &str) -> String {
    let title = title.trim();
    if title.is_empty() || title == "New chat" {
        "Anchorage".to_owned()
    } else {
        format!("{title} · Anchorage")
    }
}

/// The build whose bundle a page loads, given by the server as context of the render (see
/// its `offline` module). Without it (a document rendered outside a chat page), pages load
/// `/pkg/…`.
#[cfg(feature = "ssr")]
#[derive(Clone, Debug)]
pub struct Bundle {
    /// The address prefix: the page loads `{root}/pkg/…` (the base is part of it).
    pub root: String,
    /// The path the site lives under (see [`base`]).
    pub base: String,
    /// The build's id (empty under `cargo leptos watch`: no build to keep).
    pub build: String,
}

/// The address prefix of the bundle ("" without a [`Bundle`]).
#[cfg(feature = "ssr")]
fn bundle_root() -> String {
    use_context::<Bundle>().map(|b| b.root).unwrap_or_default()
}

/// The name of the `<meta>` that carries the build's id (the page says "Updated" once when it
/// changes).
pub const BUILD_META: &str = "anchorage-build";

/// The head elements every document shares.
#[cfg(feature = "ssr")]
fn head_common() -> impl IntoView {
    let stylesheet = format!("{}/pkg/anchorage.css", bundle_root());
    let build = use_context::<Bundle>()
        .map(|b| b.build)
        .filter(|b| !b.is_empty());
    let site_base = Some(base::base()).filter(|b| !b.is_empty());
    view! {
        <meta charset="utf-8" />
        <meta
            name="viewport"
            content="width=device-width, initial-scale=1, viewport-fit=cover, interactive-widget=resizes-content"
        />
        <meta name="color-scheme" content="light dark" />
        // The browser's bar takes the page's own background, in either theme.
        <meta
            name="theme-color"
            content="#f7f7f5"
            {..leptos::tachys::html::attribute::custom::custom_attribute(
                "media",
                "(prefers-color-scheme: light)",
            )}
        />
        <meta
            name="theme-color"
            content="#131413"
            {..leptos::tachys::html::attribute::custom::custom_attribute(
                "media",
                "(prefers-color-scheme: dark)",
            )}
        />
        <meta
            name="description"
            content="Chat with an AI agent; every turn streams, settles and survives a reload."
        />
        <link rel="stylesheet" id="leptos" href=stylesheet />
        {build.map(|build| view! { <meta name=BUILD_META content=build /> })}
        {site_base.map(|b| view! { <meta name=base::BASE_META content=b /> })}
        <link rel="icon" href=base::href("/favicon.svg") type="image/svg+xml" />
        <link rel="manifest" href=base::href("/manifest.webmanifest") />
        <link rel="apple-touch-icon" href=base::href("/icon-192.png") />
    }
}

/// The chat document: the page rendered from `page`, the same data as JSON for hydration,
/// and the scripts that load the bundle.
#[cfg(feature = "ssr")]
pub fn shell(options: LeptosOptions, page: api::SessionPage) -> impl IntoView {
    let data = api::page_json(&page);
    // A chosen theme is on the document from its first paint (no flash of the other one).
    let theme = page
        .theme
        .as_deref()
        .map(api::Theme::parse)
        .filter(|t| *t != api::Theme::System)
        .map(api::Theme::as_str);
    let title = document_title(
        page.session
            .as_ref()
            .map(|s| s.title.as_str())
            .unwrap_or_default(),
    );
    view! {
        <!DOCTYPE html>
        <html lang="en" data-theme=theme>
            <head>
                {head_common()}
                // Text written as markup: a text child would get a hydration marker, which
                // a <title> shows literally.
                <title inner_html=markdown::escape(&title)></title>
                <AutoReload options=options.clone() />
                <HydrationScripts options root=bundle_root() />
                <script type="application/json" id=PAGE_DATA_ID inner_html=data></script>
            </head>
            <body>
                <ChatPage page=page />
            </body>
        </html>
    }
}

/// A document without the bundle (nothing to hydrate): `title`, then `body`.
#[cfg(feature = "ssr")]
fn static_document(title: &'static str, body: impl IntoView) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                {head_common()}
                <title inner_html=markdown::escape(title)></title>
            </head>
            <body>{body}</body>
        </html>
    }
}

/// The document for an address the app does not know.
#[cfg(feature = "ssr")]
pub fn not_found_shell(_options: LeptosOptions) -> impl IntoView {
    static_document("Page not found · Anchorage", view! { <routes::NotFound /> })
}

/// The document for a page that could not be loaded.
#[cfg(feature = "ssr")]
pub fn error_shell(message: String) -> impl IntoView {
    static_document(
        "Something went wrong · Anchorage",
        view! {
            <main class="not-found">
                <h1>"Something went wrong"</h1>
                <p>{message}</p>
                <p>
                    <a href=base::href("/")>"Back to your conversations"</a>
                </p>
            </main>
        },
    )
}

/// This browser's local storage, when it has one.
#[cfg(feature = "hydrate")]
pub(crate) fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// Tells the server, through a cookie, which display mode to render this browser's pages in.
#[cfg(feature = "hydrate")]
pub(crate) fn remember_mode(mode: anchor::Mode) {
    set_preference(api::MODE_COOKIE, Some(mode.as_str()));
}

/// Sets one of this browser's preference cookies for the site (`None` removes it): the
/// server renders pages by them.
#[cfg(feature = "hydrate")]
pub(crate) fn set_preference(name: &str, value: Option<&str>) {
    use wasm_bindgen::JsCast as _;
    let Some(document) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.dyn_into::<web_sys::HtmlDocument>().ok())
    else {
        return;
    };
    let path = base::cookie_path();
    let cookie = match value {
        Some(value) => format!("{name}={value}; Path={path}; Max-Age=31536000; SameSite=Lax"),
        None => format!("{name}=; Path={path}; Max-Age=0; SameSite=Lax"),
    };
    let _ = document.set_cookie(&cookie);
}

/// Shows the colour theme `theme` now (on `<html data-theme>`) and tells the server, through
/// a cookie, to render this browser's pages in it.
#[cfg(feature = "hydrate")]
pub(crate) fn apply_theme(theme: api::Theme) {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    if let Some(root) = document.document_element() {
        let _ = match theme {
            api::Theme::System => root.remove_attribute("data-theme"),
            chosen => root.set_attribute("data-theme", chosen.as_str()),
        };
    }
    let value = (theme != api::Theme::System).then(|| theme.as_str());
    set_preference(api::THEME_COOKIE, value);
}

/// The page data the server wrote into the document, if it is there and readable.
#[cfg(feature = "hydrate")]
pub fn page_from_document() -> Result<api::SessionPage, String> {
    let text = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(PAGE_DATA_ID))
        .and_then(|el| el.text_content())
        .ok_or_else(|| format!("the document has no #{PAGE_DATA_ID}"))?;
    // Through a JSON value, as every other answer the browser reads: one deserializer for the
    // page types in the bundle instead of two.
    serde_json::from_str::<serde_json::Value>(&text)
        .and_then(serde_json::from_value)
        .map_err(|e| format!("the page data is not readable: {e}"))
}
