//! The Anchorage chat UI.
//!
//! One crate, two builds: with `ssr` the server renders every page to HTML; with `hydrate`
//! the browser takes that HTML over without re-rendering it. Each assistant turn is one
//! [`anchor`] registry held in one signal ([`model::TurnState`]); the Compact Worklog and the
//! Transparent Stream are two projections of it, so switching between them never fetches or
//! re-applies anything.
//!
//! # Layout
//! - [`shell`]: the HTML document around the app, used by the server.
//! - [`App`]: meta context, stylesheet and the route table.
//! - [`api`]: the page data and the server function that loads it; [`ssr`]: the port the
//!   server implements.
//! - [`model`]: a turn's state, fed by journal rows and live frames (pure, tested natively).
//! - [`markdown`]: safe Markdown rendering.
//! - `routes/`: pages; `components/`: what pages are made of; `live`/`client`: the browser's
//!   stream follower and API calls (hydrate only).
// Release builds keep the full view types (dev builds erase them); their layout is deep.
#![recursion_limit = "512"]

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, Link, Meta, MetaTags, Stylesheet, Title};
use leptos_router::{
    components::{Route, Router, Routes},
    path, SsrMode,
};

pub mod api;
#[cfg(feature = "hydrate")]
mod client;
mod components;
#[cfg(feature = "hydrate")]
mod live;
pub mod markdown;
pub mod model;
mod routes;
#[cfg(feature = "ssr")]
pub mod ssr;
mod state;

/// The HTML document the server renders around [`App`].
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta
                    name="viewport"
                    content="width=device-width, initial-scale=1, viewport-fit=cover, interactive-widget=resizes-content"
                />
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
        <Meta name="theme-color" content="#2f6f62" />
        <Meta
            name="description"
            content="Chat with an AI agent; every turn streams, settles and survives a reload."
        />
        <Link rel="icon" href="/favicon.svg" type_="image/svg+xml" />
        <Link rel="manifest" href="/manifest.webmanifest" />
        <Link rel="apple-touch-icon" href="/icon-192.png" />
        <Router>
            <Routes fallback=routes::NotFound>
                <Route path=path!("/") view=routes::ChatPage ssr=SsrMode::Async />
                <Route path=path!("/s/:session_id") view=routes::ChatPage ssr=SsrMode::Async />
            </Routes>
        </Router>
    }
}
