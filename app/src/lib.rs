//! The Anchorage chat UI.
//!
//! One crate, two builds: with `ssr` the server renders every page to HTML; with `hydrate`
//! the browser takes that HTML over without re-rendering it. Components are projections of
//! plain data; the only state they own is UI-local (a draft, an open drawer).
//!
//! # Layout
//! - [`shell`]: the HTML document around the app, used by the server.
//! - [`App`]: meta context, stylesheet and the route table.
//! - `routes/`: one module per page; `components/`: the pieces pages are made of.

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, Meta, MetaTags, Stylesheet, Title};
use leptos_router::{
    components::{Route, Router, Routes},
    StaticSegment,
};

mod components;
mod routes;

/// The HTML document the server renders around [`App`].
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1, viewport-fit=cover, interactive-widget=resizes-content" />
                <AutoReload options=options.clone() />
                <HydrationScripts options />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

/// The application root: page metadata and the route table.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();

    view! {
        <Stylesheet id="leptos" href="/pkg/anchorage.css" />
        <Title text="Anchorage" />
        <Meta name="color-scheme" content="light dark" />
        <Meta name="description" content="Chat with an AI agent; every turn streams, settles and survives a reload." />
        <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
        <Router>
            <Routes fallback=routes::NotFound>
                <Route path=StaticSegment("") view=routes::ChatPage />
            </Routes>
        </Router>
    }
}
