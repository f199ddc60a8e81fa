//! Pages: each page component does the wiring, components do the drawing.

mod chat;
#[cfg(feature = "ssr")]
mod not_found;

#[cfg(feature = "hydrate")]
pub(crate) use chat::{focus_composer, send};
pub use chat::{ChatPage, ChatPageProps};
#[cfg(feature = "ssr")]
pub(crate) use not_found::NotFound;
