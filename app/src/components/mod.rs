//! Presentational components: they take plain data and own only UI-local state.

mod composer;
mod empty_chat;
mod sidebar;

pub(crate) use composer::Composer;
pub(crate) use empty_chat::EmptyChat;
pub(crate) use sidebar::Sidebar;
