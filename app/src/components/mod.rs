//! Presentational components: they take plain data or signals and own only UI-local state.

#[cfg(feature = "hydrate")]
mod account;
pub(crate) mod adopted;
mod attachments;
mod cards;
mod composer;
mod context_meter;
mod empty_chat;
mod export;
mod files;
pub(crate) mod menu;
mod message;
mod model_picker;
#[cfg(feature = "hydrate")]
mod passkeys;
mod prose;
#[cfg(feature = "hydrate")]
mod row_actions;
mod settings;
#[cfg(feature = "hydrate")]
mod share;
mod sidebar;
mod slash;
pub(crate) mod terminal;
mod toast;
mod todos;
#[cfg(feature = "hydrate")]
mod transfer;
mod turn;
mod turns;
mod voice;

#[cfg(feature = "hydrate")]
pub(crate) use account::{SignIns, Storage};
#[cfg(feature = "hydrate")]
pub(crate) use attachments::{attach, file_key};
pub(crate) use attachments::{drag, ComposerFiles, Drag, MessageFiles};
pub(crate) use cards::PendingCards;
pub(crate) use composer::Composer;
#[cfg(feature = "hydrate")]
pub(crate) use composer::{forget_drafts, store_draft, stored_draft};
use context_meter::ContextMeter;
pub(crate) use empty_chat::EmptyChat;
use export::ExportMenu;
use files::{FilesButton, FilesPanel};
use model_picker::ModelPicker;
#[cfg(feature = "hydrate")]
pub(crate) use passkeys::Passkeys;
use settings::Settings;
#[cfg(feature = "hydrate")]
pub(crate) use share::share;
#[cfg(feature = "hydrate")]
pub(crate) use share::SharedLinks;
use sidebar::Sidebar;
#[cfg(feature = "hydrate")]
pub(crate) use sidebar::{place_in, signed_out};
pub(crate) use slash::KeyHook;
use slash::SlashMenu;

use toast::ToastNotice;
#[cfg(feature = "hydrate")]
pub(crate) use toast::{show_link, show_toast};
pub(crate) use todos::TodoPanel;
#[cfg(feature = "hydrate")]
pub use turns::load_turn_views;
pub(crate) use turns::use_drawer;
pub use turns::TURN_PART;
use voice::VoiceButton;
