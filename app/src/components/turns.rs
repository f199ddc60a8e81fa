//! How the page draws its turns. A turn's view ([`TurnView`]: messages, the worklog and the
//! stream, cards, prose, a turn's menu) and the engine that applies a turn's rows and frames
//! ([`crate::model::engine`]) are most of the page's code, and a new conversation has no turn
//! to draw: a release build (`--split`, feature `split`) puts them in a wasm file of their
//! own. A page that has turns fetches that file before it hydrates (it must draw what the
//! server rendered); a page that has none comes alive without it and fetches it right after,
//! so that the first answer finds it there. Other builds draw turns from the bundle.
//!
//! The part draws the sidebar, the model picker, the Export menu, Settings and toasts too: the
//! server draws them on every page, and a page that came alive without the part takes them
//! over when it comes ([`super::adopted`]).

use leptos::prelude::*;

use super::turn::TurnView;
use anchor::Mode;

use super::{
    ExportMenu, FilesPanel, MessageFiles, ModelPicker, PendingCards, Settings, Sidebar, SlashMenu,
    ToastNotice, TodoPanel, VoiceButton,
};
use crate::state::TurnHandle;

/// The name of the split-off part that draws turns, as the build's split manifest
/// (`__wasm_split_manifest.json`) lists it.
pub const TURN_PART: &str = "turn_views";

/// Draws one turn.
pub(crate) type DrawTurn = fn(TurnHandle) -> AnyView;

/// What the turns' part draws.
#[derive(Clone, Copy)]
pub(crate) struct TurnPart {
    /// One turn.
    pub draw: DrawTurn,
    /// What waits on the reader at the end of the conversation: the todo list of the turn at
    /// work and the cards of its open requests (only a page with turns has them).
    pub dock: fn() -> AnyView,
    /// The list of conversations (inside `<nav id="sidebar">`), which `on_close` dismisses
    /// on a phone. The server draws it on every page; a page that came alive before the part
    /// takes it over then (see `adopted`).
    pub sidebar: fn(Callback<()>) -> AnyView,
    /// The model picker under the composer (taken over the same way).
    pub model_picker: fn() -> AnyView,
    /// The header's Export menu.
    pub export: fn() -> AnyView,
    /// The Settings dialog (closed until the sidebar's Settings, which the part draws).
    pub settings: fn(Callback<Mode>) -> AnyView,
    /// What a toast says (inside the page's live region).
    pub toast: fn() -> AnyView,
    /// The follow-ups queued behind the running turn, after the turns.
    pub queued: fn() -> AnyView,
    /// The composer's microphone button (the page shows it once live, where the browser
    /// recognizes speech), filling `draft`.
    pub voice: fn(RwSignal<String>) -> AnyView,
    /// The message box's `/` menu, filling `draft`; the composer hands it keys first.
    pub slash: fn(RwSignal<String>, super::KeyHook) -> AnyView,
}

fn draw(turn: TurnHandle) -> AnyView {
    view! { <TurnView turn=turn /> }.into_any()
}

fn dock() -> AnyView {
    view! {
        <TodoPanel />
        <PendingCards />
    }
    .into_any()
}

fn sidebar(on_close: Callback<()>) -> AnyView {
    view! { <Sidebar on_close=on_close /> }.into_any()
}

fn model_picker() -> AnyView {
    view! { <ModelPicker /> }.into_any()
}

fn export() -> AnyView {
    view! { <ExportMenu /> }.into_any()
}

fn settings(set_mode: Callback<Mode>) -> AnyView {
    view! {
        <Settings set_mode=set_mode />
        <FilesPanel />
    }
    .into_any()
}

fn toast() -> AnyView {
    view! { <ToastNotice /> }.into_any()
}

fn queued() -> AnyView {
    let chat = crate::state::use_chat();
    view! {
        <For
            each=move || chat.queued.get()
            key=|q| q.id.clone()
            children=move |q| view! {
                <div class="queued" data-queued-id=q.id.clone()>
                    <span class="queued-label">"Queued"</span>
                    <span class="queued-text">{q.content.clone()}</span>
                    <MessageFiles files=q.attachments.clone() />
                </div>
            }
        />
    }
    .into_any()
}

fn voice(draft: RwSignal<String>) -> AnyView {
    view! { <VoiceButton draft=draft /> }.into_any()
}

fn slash(draft: RwSignal<String>, keys: super::KeyHook) -> AnyView {
    view! { <SlashMenu draft=draft keys=keys /> }.into_any()
}

#[cfg(not(all(feature = "hydrate", feature = "split")))]
const BUILT_IN: TurnPart = TurnPart {
    draw,
    dock,
    sidebar,
    model_picker,
    export,
    settings,
    toast,
    queued,
    voice,
    slash,
};

#[cfg(all(feature = "hydrate", feature = "split"))]
mod split {
    use super::TurnPart;
    use crate::lazy::{split_off, Unavailable};
    use crate::model::engine::Engine;

    // The module is named `turn_views`: the server reads its files from the build's split
    // manifest under that name (`TURN_PART`).
    split_off!(
        turn_views,
        fn part() -> (TurnPart, Engine) {
            let part = TurnPart {
                draw: super::draw,
                dock: super::dock,
                sidebar: super::sidebar,
                model_picker: super::model_picker,
                export: super::export,
                settings: super::settings,
                toast: super::toast,
                queued: super::queued,
                voice: super::voice,
                slash: super::slash,
            };
            (part, crate::model::engine::build())
        }
    );

    thread_local! {
        static PART: std::cell::Cell<Option<TurnPart>> = const { std::cell::Cell::new(None) };
    }

    /// The part, once its file is here.
    pub(super) fn loaded() -> Option<TurnPart> {
        PART.with(std::cell::Cell::get)
    }

    /// Fetches the part's file (once; later calls answer at once).
    pub(super) async fn load() -> Result<TurnPart, Unavailable> {
        if let Some(part) = loaded() {
            return Ok(part);
        }
        let (part, engine) = part().await?;
        crate::model::engine::install(engine);
        PART.with(|p| p.set(Some(part)));
        Ok(part)
    }
}

/// The part if it is here now: always, but in a split build before its file has come.
pub(crate) fn part_now() -> Option<TurnPart> {
    #[cfg(all(feature = "hydrate", feature = "split"))]
    return split::loaded();
    #[cfg(not(all(feature = "hydrate", feature = "split")))]
    Some(BUILT_IN)
}

/// Fetches the drawer when a split build does not have it yet; `Err` says it could not come
/// (offline, a build that replaced this one), and the next call tries again.
#[cfg(feature = "hydrate")]
pub async fn load_turn_views() -> Result<(), String> {
    #[cfg(feature = "split")]
    split::load().await.map_err(|e| format!("{e:?}"))?;
    Ok(())
}

/// The drawer as the page holds it.
#[derive(Clone, Copy)]
pub(crate) struct Drawer {
    /// `None` until the part's file has come.
    pub part: ReadSignal<Option<TurnPart>>,
    /// The last fetch failed while the page had turns to draw.
    pub failed: ReadSignal<bool>,
    set_failed: WriteSignal<bool>,
    ask: Trigger,
}

impl Drawer {
    /// Fetches the drawer again (the person asked to).
    pub(crate) fn retry(self) {
        self.set_failed.set(false);
        self.ask.notify();
    }
}

/// The drawer as the page holds it. The fetch starts once the page is live, and runs again
/// while the drawer is missing when `wanted` (the page has turns to draw) becomes true, when
/// the connection changes (the network may be back) and on [`Drawer::retry`].
pub(crate) fn use_drawer(chat: crate::state::ChatState, wanted: Memo<bool>) -> Drawer {
    let (part, set_part) = signal(part_now());
    let (failed, set_failed) = signal(false);
    let ask = Trigger::new();
    #[cfg(feature = "hydrate")]
    {
        let asking = StoredValue::new_local(false);
        Effect::new(move |_| {
            wanted.track();
            chat.connection.track();
            ask.track();
            if part.get_untracked().is_some() || asking.get_value() {
                return;
            }
            asking.set_value(true);
            leptos::task::spawn_local(async move {
                let result = load_turn_views().await;
                asking.set_value(false);
                // Set only when it changes: what shows the failure (and its Try again button)
                // is not made again by each attempt the connection's changes start.
                let now_failed = result.is_err() && wanted.get_untracked();
                if failed.get_untracked() != now_failed {
                    set_failed.set(now_failed);
                }
                if result.is_ok() {
                    // Turns made before the part came apply what they held, then show.
                    chat.catch_up();
                    set_part.set(part_now());
                }
            });
        });
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (chat, wanted, set_part);
    let drawer = Drawer {
        part,
        failed,
        set_failed,
        ask,
    };
    // For the views below the page that the part draws a piece of (the composer's voice).
    provide_context(drawer);
    drawer
}

/// What the part draws, once the page is live and the part is here (never on the server,
/// nor while the page hydrates: a piece that only the browser shows).
pub(crate) fn live_part() -> impl Fn() -> Option<TurnPart> + Copy {
    let drawer = use_context::<Drawer>();
    let live = RwSignal::new(false);
    Effect::new(move |_| live.set(true));
    move || {
        live.get()
            .then(|| drawer.and_then(|d| d.part.get()))
            .flatten()
    }
}
