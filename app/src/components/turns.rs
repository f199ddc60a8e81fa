//! How the page draws its turns. A turn's view ([`TurnView`]: messages, the worklog and the
//! stream, cards, prose, a turn's menu) and the engine that applies a turn's rows and frames
//! ([`crate::model::engine`]) are most of the page's code, and a new conversation has no turn
//! to draw: a release build (`--split`, feature `split`) puts them in a wasm file of their
//! own. A page that has turns fetches that file before it hydrates (it must draw what the
//! server rendered); a page that has none comes alive without it and fetches it right after,
//! so that the first answer finds it there. Other builds draw turns from the bundle.

use leptos::prelude::*;

use super::turn::TurnView;
use crate::state::TurnHandle;

/// The name of the split-off part that draws turns, as the build's split manifest
/// (`__wasm_split_manifest.json`) lists it.
pub const TURN_PART: &str = "turn_views";

/// Draws one turn.
pub(crate) type DrawTurn = fn(TurnHandle) -> AnyView;

fn draw(turn: TurnHandle) -> AnyView {
    view! { <TurnView turn=turn /> }.into_any()
}

#[cfg(all(feature = "hydrate", feature = "split"))]
mod split {
    use super::DrawTurn;
    use crate::lazy::{split_off, Unavailable};
    use crate::model::engine::Engine;

    // The module is named `turn_views`: the server reads its files from the build's split
    // manifest under that name (`TURN_PART`).
    split_off!(
        turn_views,
        fn part() -> (DrawTurn, Engine) {
            let draw: DrawTurn = super::draw;
            (draw, crate::model::engine::build())
        }
    );

    thread_local! {
        static DRAW: std::cell::Cell<Option<DrawTurn>> = const { std::cell::Cell::new(None) };
    }

    /// The drawer, once its file is here.
    pub(super) fn loaded() -> Option<DrawTurn> {
        DRAW.with(std::cell::Cell::get)
    }

    /// Fetches the drawer's file (once; later calls answer at once).
    pub(super) async fn load() -> Result<DrawTurn, Unavailable> {
        if let Some(draw) = loaded() {
            return Ok(draw);
        }
        let (draw, engine) = part().await?;
        crate::model::engine::install(engine);
        DRAW.with(|d| d.set(Some(draw)));
        Ok(draw)
    }
}

/// The drawer if it is here now: always, but in a split build before its file has come.
pub(crate) fn drawer_now() -> Option<DrawTurn> {
    #[cfg(all(feature = "hydrate", feature = "split"))]
    return split::loaded();
    #[cfg(not(all(feature = "hydrate", feature = "split")))]
    Some(draw)
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
    /// `None` until the drawer's file has come.
    pub draw: ReadSignal<Option<DrawTurn>>,
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
    let (draw, set_draw) = signal(drawer_now());
    let (failed, set_failed) = signal(false);
    let ask = Trigger::new();
    #[cfg(feature = "hydrate")]
    {
        let asking = StoredValue::new_local(false);
        Effect::new(move |_| {
            wanted.track();
            chat.connection.track();
            ask.track();
            if draw.get_untracked().is_some() || asking.get_value() {
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
                    set_draw.set(drawer_now());
                }
            });
        });
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (chat, wanted, set_draw);
    Drawer {
        draw,
        failed,
        set_failed,
        ask,
    }
}
