//! Following the running turn live, and the server while it cannot be reached.

use leptos::prelude::*;

use crate::state::{ChatState, Connection};

/// Follows the running turn, and only it, replacing a connection the browser gave up on.
pub(super) fn follow_running_turn(chat: ChatState) {
    // Follow the running turn, and only it; reconnect when the browser gives up.
    // Keyed by the turn's handle, not only its run: a reload makes a new handle to follow.
    let follower = StoredValue::new_local(None::<((String, u64), crate::live::Follower)>);
    let retry = RwSignal::new(0u32);
    // What follows a run may have to be fetched first (a split build's turns' part).
    let can_follow = RwSignal::new(crate::live::can_follow());
    Effect::new(move |_| {
        let _ = retry.get();
        let running = chat.running_turn();
        let session_id = chat.session_id.get();
        if running.is_some() && !can_follow.get() {
            leptos::task::spawn_local(async move {
                match crate::live::prepare().await {
                    Ok(()) => can_follow.set(true),
                    // Not followed, as when the server cannot be reached: the page says so,
                    // and tries again in a few seconds (below).
                    Err(_) => chat.connection.set(Connection::Offline),
                }
            });
            return;
        }
        follower.update_value(|slot| {
            let current = slot.as_ref().map(|(key, _)| key.clone());
            match (running, session_id) {
                (Some(turn), Some(session_id)) => {
                    let key = turn.key();
                    let stale =
                        current.as_ref() != Some(&key) || chat.connection.get_untracked().down();
                    if stale {
                        *slot = None;
                        *slot =
                            crate::live::follow(chat, turn.clone(), session_id).map(|f| (key, f));
                    }
                }
                _ => {
                    *slot = None;
                    chat.connection.set(Connection::Idle);
                }
            }
        });
    });
    // An EventSource that gave up (the server was down), or that is still reconnecting a
    // few seconds on (the browser backs off), is replaced: the page never waits on the
    // browser's schedule for long.
    Effect::new(move |_| {
        let down = chat.connection.get();
        if down.down() {
            set_timeout(
                move || {
                    if chat.connection.get_untracked() == down {
                        retry.update(|n| *n += 1);
                    }
                },
                std::time::Duration::from_secs(4),
            );
        }
    });
    on_cleanup(move || follower.update_value(|slot| *slot = None));
}

/// While the server cannot be reached (a send waits, or a problem says so), asks it every few
/// seconds (and at once when the browser is back online); once it answers, the waiting message
/// goes out and the problem is cleared.
pub(super) fn watch_server(chat: ChatState) {
    let unreachable = Memo::new(move |_| {
        chat.outbox.with(|o| {
            o.as_ref()
                .is_some_and(|o| o.failed.is_some() && !o.stranded)
        }) || chat.error.with(|e| e.as_ref().is_some_and(|e| e.network))
    });
    let online = window_event_listener(leptos::ev::online, move |_| {
        if unreachable.get_untracked() {
            leptos::task::spawn_local(probe(chat));
        }
    });
    on_cleanup(move || online.remove());
    // One asking loop at a time: a newer one ends the older.
    let generation = StoredValue::new(0u32);
    Effect::new(move |_| {
        if !unreachable.get() {
            return;
        }
        generation.update_value(|g| *g += 1);
        let mine = generation.get_value();
        leptos::task::spawn_local(async move {
            let mut wait = 1000;
            while unreachable.get_untracked() && generation.get_value() == mine {
                crate::client::sleep(wait).await;
                wait = (wait * 2).min(8000);
                probe(chat).await;
            }
        });
    });
}

/// Asks the server whether it answers; if it does, clears what only said it did not and sends
/// the waiting message.
async fn probe(chat: ChatState) {
    if crate::client::health().await.is_err() {
        return;
    }
    if chat
        .error
        .with_untracked(|e| e.as_ref().is_some_and(|e| e.network))
    {
        chat.error.set(None);
    }
    if chat.outbox.with_untracked(|o| {
        o.as_ref()
            .is_some_and(|o| o.failed.is_some() && !o.stranded)
    }) {
        crate::outbox::attempt(chat);
    }
}
