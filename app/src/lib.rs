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
//! client router and no suspense boundary: what the page shows is known before the first
//! byte is written. Components' view types are erased in every build cargo-leptos makes
//! (`always-erase-components`): the bundle holds one copy of the code that builds and
//! hydrates a view, not one per view type.
//!
//! # Layout
//! - [`shell`] / [`not_found_shell`]: the HTML documents the server renders.
//! - [`ChatPage`]: the chat page around a loaded [`api::SessionPage`].
//! - [`api`]: the page data.
//! - [`model`]: a turn's state, fed by journal rows and live frames (pure, tested natively).
//! - [`markdown`]: safe Markdown rendering.
//! - [`base`]: the path the site lives under; `document`: the title and what the document
//!   tells the browser; `prefs`: the browser's storage and preference cookies (hydrate only).
//! - `routes/`: pages; `components/`: what pages are made of; `live`/`client`/`nav`: the
//!   browser's stream follower, API calls and in-app navigation (hydrate only).
// A build without `--cfg erase_components` (clippy's, a plain `cargo build`) keeps the full
// view types; their layout is deep.
#![recursion_limit = "512"]

#[cfg(feature = "ssr")]
use leptos::prelude::*;

pub mod api;
pub mod base;
#[cfg(feature = "hydrate")]
mod branches;
#[cfg(feature = "hydrate")]
mod client;
pub mod commands;
mod components;
mod document;
mod dynamic;
#[cfg(feature = "hydrate")]
mod effects;
pub mod highlight;
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
#[cfg(feature = "hydrate")]
mod prefs;
mod routes;
pub mod snippet;
mod state;
mod time;

#[cfg(feature = "hydrate")]
pub use components::load_turn_views;
pub use components::terminal::terminal_label;
pub use components::TURN_PART;
pub use routes::{ChatPage, ChatPageProps};

pub use document::{document_title, BUILD_META, PAGE_DATA_ID};

#[cfg(feature = "ssr")]
pub use base::Bundle;

/// The address prefix of the bundle ("" without a [`Bundle`]).
#[cfg(feature = "ssr")]
fn bundle_root() -> String {
    use_context::<Bundle>().map(|b| b.root).unwrap_or_default()
}

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
                {turn_part_preloads(&page)}
                <script type="application/json" id=PAGE_DATA_ID inner_html=data></script>
            </head>
            <body>
                <ChatPage page=page />
            </body>
        </html>
    }
}

/// For a page that opens with turns: the files of the part that draws them, fetched beside
/// the main bundle (the page needs them before it comes alive; see `components::turns`).
/// `crossorigin` makes the preload match the split loader's `fetch()`.
#[cfg(feature = "ssr")]
fn turn_part_preloads(page: &api::SessionPage) -> impl IntoView {
    let bundle = use_context::<Bundle>().filter(|_| page.has_turns());
    bundle
        .map(|b| {
            b.turn_part
                .iter()
                .map(|file| format!("{}/pkg/{file}", b.root))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
        .into_iter()
        .map(|href| {
            view! {
                <link
                    rel="preload"
                    href=href
                    crossorigin=""
                    {..leptos::tachys::html::attribute::custom::custom_attribute("as", "fetch")}
                />
            }
        })
        .collect_view()
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
