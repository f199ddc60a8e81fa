//! Pages: each route component does the wiring, components do the drawing.

mod chat;
mod not_found;

pub(crate) use chat::ChatPage;
pub(crate) use not_found::NotFound;
