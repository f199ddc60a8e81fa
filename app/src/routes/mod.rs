//! Pages: each page component does the wiring, components do the drawing.

mod chat;
#[cfg(feature = "ssr")]
mod not_found;

pub use chat::{ChatPage, ChatPageProps};
#[cfg(feature = "ssr")]
pub(crate) use not_found::NotFound;
