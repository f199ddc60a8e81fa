//! The address: links to a turn, back and forward between conversations.

use leptos::prelude::*;

use crate::lazy::Task;
use crate::state::ChatState;

/// A link to a turn (`/s/{id}#turn-…`), on arrival or when the fragment changes, is followed.
pub(super) fn reveal_linked_turns(
    chat: ChatState,
    transcript: NodeRef<leptos::html::Section>,
    loading_earlier: RwSignal<bool>,
) {
    // A search hit in the conversation shown changes the fragment: the windows up to the turn
    // load, then it is shown.
    leptos::task::spawn_local(reveal(chat, transcript, loading_earlier));
    let on_hash = window_event_listener(leptos::ev::hashchange, move |_| {
        leptos::task::spawn_local(reveal(chat, transcript, loading_earlier));
    });
    on_cleanup(move || on_hash.remove());
}

// Following a link to a turn and loading earlier windows are work only a page with turns
// does: in a split build their code comes with the turns' part (`components::turns`).
crate::lazy::split_off!(
    turn_views,
    fn revealer(
        chat: ChatState,
        transcript: NodeRef<leptos::html::Section>,
        loading: RwSignal<bool>,
    ) -> Task {
        Box::pin(reveal_linked_turn(chat, transcript, loading))
    }
);
crate::lazy::split_off!(
    turn_views,
    fn earlier(
        chat: ChatState,
        transcript: NodeRef<leptos::html::Section>,
        loading: RwSignal<bool>,
    ) -> Task<bool> {
        Box::pin(load_earlier(chat, transcript, loading))
    }
);

/// The turn the address's fragment names (`#turn-…`), if it names one: its element's id.
fn linked_turn() -> Option<String> {
    web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .map(|h| h.trim_start_matches('#').to_owned())
        .filter(|h| h.starts_with("turn-"))
}

/// Follows the address's link to a turn, if it has one.
async fn reveal(
    chat: ChatState,
    transcript: NodeRef<leptos::html::Section>,
    loading: RwSignal<bool>,
) {
    if linked_turn().is_some() {
        // Without the part there is no turn to show: the page says so where its turns go.
        if let Ok(task) = revealer(chat, transcript, loading).await {
            task.await;
        }
    }
}

/// Loads the window of turns before the first one shown (see [`load_earlier`]); false when
/// nothing was loaded.
pub(crate) async fn show_earlier(
    chat: ChatState,
    transcript: NodeRef<leptos::html::Section>,
    loading: RwSignal<bool>,
) -> bool {
    match earlier(chat, transcript, loading).await {
        Ok(task) => task.await,
        Err(_) => {
            crate::lazy::unavailable(chat, "Earlier messages could not be loaded");
            false
        }
    }
}

/// Back and forward between conversations opened in the page.
pub(super) fn follow_history(chat: ChatState) {
    // A link to a conversation that is gone names the one shown instead.
    crate::nav::shown_here();
    if chat.missing.get_untracked() {
        crate::nav::correct_address(chat);
    }
    let on_popstate = window_event_listener(leptos::ev::popstate, move |_| {
        crate::nav::load_current(chat);
    });
    on_cleanup(move || on_popstate.remove());
}

/// Shows the turn the address's fragment names (`#turn-…`), loading earlier windows until it
/// is there.
async fn reveal_linked_turn(
    chat: ChatState,
    transcript: NodeRef<leptos::html::Section>,
    loading: RwSignal<bool>,
) {
    let Some(target) = linked_turn() else {
        return;
    };
    let find = || {
        web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id(&target))
    };
    // From now on the bottom is not followed: the turn is what the reader asked to see.
    chat.pinned.set_value(Some(target.clone()));
    chat.following.set(false);
    // Not among the turns shown: it may be on another branch (a search hit in an earlier
    // version). The server shows its branch then, and the page loads again: asked once, so
    // a link never walks the whole conversation to find a turn it does not show.
    if find().is_none() {
        let run_id = target.trim_start_matches("turn-").to_owned();
        let Some(session) = chat.session_id.get_untracked() else {
            return;
        };
        let epoch = chat.epoch.get_value();
        let body = crate::api::BranchBody {
            run_id,
            version: None,
        };
        match crate::client::branch(&body).await {
            Ok(answer) if answer.changed => {
                match crate::client::session_page(Some(&session), None).await {
                    Ok(page) if chat.shows(&session, epoch) => {
                        chat.load(&page);
                        chat.pinned.set_value(Some(target.clone()));
                        chat.following.set(false);
                        crate::client::next_frame().await;
                    }
                    Ok(_) => return,
                    Err(failure) => return chat.fail(&failure),
                }
            }
            Ok(_) => {}
            // No such turn (any more): the conversation as it is.
            Err(_) => return,
        }
    }
    while find().is_none() && chat.earlier.get_untracked() {
        if !load_earlier(chat, transcript, loading).await {
            return;
        }
    }
    // Once the window that holds it is laid out (the frame after it went in).
    crate::client::next_frame().await;
    if chat.pinned.get_value().as_deref() == Some(target.as_str()) {
        show_pinned(chat, transcript);
    }
}

/// Puts the turn the address links to at the top of the transcript (as far as the
/// transcript scrolls), when it is not there already.
pub(super) fn show_pinned(chat: ChatState, transcript: NodeRef<leptos::html::Section>) {
    let (Some(id), Some(scroller)) = (chat.pinned.get_value(), transcript.get_untracked()) else {
        return;
    };
    let Some(el) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(&id))
    else {
        return;
    };
    // A little below the top edge, as the transcript's own padding leaves the first turn.
    let at = el.get_bounding_client_rect().top() - scroller.get_bounding_client_rect().top() - 12.0;
    if at.abs() > 1.0 {
        let top = f64::from(scroller.scroll_top()) + at;
        scroller.set_scroll_top(top.round() as i32);
    }
}

/// Loads the window of turns before the first one shown and puts it above, keeping what the
/// reader looks at where it is on screen. False when nothing was loaded.
async fn load_earlier(
    chat: ChatState,
    transcript: NodeRef<leptos::html::Section>,
    loading: RwSignal<bool>,
) -> bool {
    if loading.get_untracked() {
        return false;
    }
    let (Some(session), Some(first)) = (
        chat.session_id.get_untracked(),
        chat.turns
            .with_untracked(|t| t.first().map(|t| t.run_id.clone())),
    ) else {
        return false;
    };
    let epoch = chat.epoch.get_value();
    loading.set(true);
    let page = crate::client::earlier_turns(&session, &first).await;
    loading.set(false);
    let page = match page {
        Ok(page) => page,
        Err(failure) => {
            chat.fail(&failure);
            return false;
        }
    };
    if !chat.shows(&session, epoch) {
        return false;
    }
    // The reader's first turn, and where it is on screen before the older ones go above it.
    let anchor = web_sys::window().and_then(|w| w.document()).and_then(|d| {
        d.query_selector(&format!("article.turn[data-run-id='{first}']"))
            .ok()
            .flatten()
    });
    let before = anchor.as_ref().map(|a| a.get_bounding_client_rect().top());
    let count = chat.turns.with_untracked(Vec::len);
    chat.prepend(&page);
    let added = chat.turns.with_untracked(Vec::len) > count;
    crate::client::next_frame().await;
    if let (Some(anchor), Some(before), Some(el)) = (anchor, before, transcript.get_untracked()) {
        let moved = anchor.get_bounding_client_rect().top() - before;
        if moved.abs() >= 0.5 {
            el.set_scroll_top(el.scroll_top() + moved.round() as i32);
        }
    }
    added
}
