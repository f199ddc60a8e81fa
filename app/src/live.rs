//! Following a running turn in the browser: an `EventSource` on the run's journal, resumed
//! from the last applied seq. Every frame goes through [`crate::model::TurnState::apply_frame`],
//! which ignores what the page already has, so reconnects never duplicate anything.

use std::rc::Rc;

use anchor::EventKind;
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{EventSource, MessageEvent};

use crate::state::{ChatState, Connection, TurnHandle};

/// An open follower; closing happens on drop.
pub struct Follower {
    source: EventSource,
    _listeners: Vec<Closure<dyn FnMut(MessageEvent)>>,
    _open: Closure<dyn FnMut(web_sys::Event)>,
    _error: Closure<dyn FnMut(web_sys::Event)>,
    /// Counts the seconds the turn sends nothing (see [`QUIET_AFTER`]).
    ticker: Option<IntervalHandle>,
    chat: ChatState,
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.source.close();
        if let Some(ticker) = self.ticker.take() {
            ticker.clear();
        }
        let _ = self.chat.quiet.try_set(None);
        let _ = self.chat.store_trouble.try_set(None);
    }
}

/// Seconds without an event after which a running turn says it is waiting.
const QUIET_AFTER: f64 = 10.0;

/// While a turn is quiet, how often (seconds) the page asks whether the server can save (a
/// full disk, a database out of reach), so that it says so rather than blame the model.
const ASK_STORE_EVERY: u32 = 5;

/// Now, in seconds, by the browser's clock.
fn now_secs() -> f64 {
    js_sys::Date::now() / 1000.0
}

fn announce_end(chat: ChatState, state: Option<anchor::TerminalState>) {
    let text = match state {
        Some(anchor::TerminalState::Completed) | None => "Response complete".to_owned(),
        Some(other) => format!(
            "Turn ended: {}",
            crate::components::terminal::terminal_label(other)
        ),
    };
    chat.announcement.set(text);
}

/// Frames received since the last paint, applied together on the next animation frame.
#[derive(Default)]
struct Inbox {
    frames: Vec<(Rc<str>, String, String)>,
    scheduled: bool,
}

/// Runs `flush` before the next paint (or soon, in a hidden tab, which gets no paints).
fn schedule(flush: impl FnOnce() + 'static) {
    let hidden = web_sys::window()
        .and_then(|w| w.document())
        .is_some_and(|d| d.hidden());
    if hidden {
        set_timeout(flush, std::time::Duration::from_millis(100));
    } else {
        request_animation_frame(flush);
    }
}

/// Applies every queued frame to the turn in one signal update (so a burst of a thousand
/// events costs one render, not a thousand), then acts on the ones that need more than that.
fn flush(
    inbox: &std::cell::RefCell<Inbox>,
    chat: ChatState,
    turn: &TurnHandle,
    session_id: &str,
    source: &EventSource,
) {
    // The page may have moved on (another conversation, or a reload of this one).
    if turn.state.is_disposed() {
        return;
    }
    let frames = {
        let mut inbox = inbox.borrow_mut();
        inbox.scheduled = false;
        std::mem::take(&mut inbox.frames)
    };
    let mut notable: Vec<(EventKind, String)> = Vec::new();
    turn.state.maybe_update(|s| {
        let mut any = false;
        for (name, data, id) in frames {
            if s.apply_frame(&name, &data, &id, session_id) {
                any = true;
                if let Some(
                    kind @ (EventKind::Title
                    | EventKind::Approval
                    | EventKind::Clarify
                    | EventKind::StreamEnd),
                ) = EventKind::parse(&name)
                {
                    notable.push((kind, data));
                }
            }
        }
        any
    });
    for (kind, data) in notable {
        match kind {
            EventKind::Title => {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&data) {
                    if let Some(title) = v["title"].as_str() {
                        chat.title.set(title.to_owned());
                        chat.sessions.update(|list| {
                            if let Some(s) = list.iter_mut().find(|s| s.id == session_id) {
                                s.title = title.to_owned();
                            }
                        });
                    }
                }
            }
            EventKind::Approval => chat
                .announcement
                .set("The agent is waiting for your approval".into()),
            EventKind::Clarify => chat
                .announcement
                .set("The agent has a question for you".into()),
            EventKind::StreamEnd => {
                source.close();
                turn.running.set(false);
                chat.connection.set(Connection::Idle);
                chat.mark_session(session_id, None);
                announce_end(chat, turn.state.with_untracked(|s| s.terminal_state()));
                // A queued follow-up starts now on the server: the page shows it and follows.
                if chat.queued.with_untracked(|q| !q.is_empty()) {
                    crate::nav::catch_up(chat, session_id.to_owned());
                }
            }
            _ => {}
        }
    }
}

/// The event names to listen for: every kind this build knows and every one the server says
/// it may send (a newer server's kinds are then shown, not dropped). Never `error`: that name
/// is the `EventSource`'s own connection error, which carries no frame.
fn listened(server_kinds: &[String]) -> Vec<Rc<str>> {
    let mut names: Vec<Rc<str>> = EventKind::ALL.iter().map(|k| Rc::from(k.name())).collect();
    for name in server_kinds {
        if EventKind::parse(name).is_none() && !name.is_empty() {
            names.push(Rc::from(name.as_str()));
        }
    }
    names.retain(|n| &**n != "error");
    names
}

/// Starts following a turn.
type Follow = fn(ChatState, TurnHandle, String) -> Option<Follower>;

// Following a run is needed only once there is a turn: in a split build its code comes with
// the turns' part (`components::turns`).
crate::lazy::split_off!(
    turn_views,
    fn follower() -> Follow {
        let follow: Follow = follow_now;
        follow
    }
);

#[cfg(feature = "split")]
thread_local! {
    static FOLLOW: std::cell::Cell<Option<Follow>> = const { std::cell::Cell::new(None) };
}

/// Whether [`follow`] can follow now (in a split build: the turns' part has come).
pub fn can_follow() -> bool {
    #[cfg(feature = "split")]
    return FOLLOW.with(std::cell::Cell::get).is_some();
    #[cfg(not(feature = "split"))]
    true
}

/// Fetches what follows a turn, when it is not here yet ([`can_follow`]); `Err` says it could
/// not come, and the next call tries again.
pub async fn prepare() -> Result<(), crate::lazy::Unavailable> {
    if can_follow() {
        return Ok(());
    }
    let follow = follower().await?;
    #[cfg(feature = "split")]
    FOLLOW.with(|f| f.set(Some(follow)));
    #[cfg(not(feature = "split"))]
    let _ = follow;
    Ok(())
}

/// Follows `turn` from its last applied seq; `None` when that cannot start (see
/// [`can_follow`]).
pub fn follow(chat: ChatState, turn: TurnHandle, session_id: String) -> Option<Follower> {
    #[cfg(feature = "split")]
    return FOLLOW.with(std::cell::Cell::get)?(chat, turn, session_id);
    #[cfg(not(feature = "split"))]
    follow_now(chat, turn, session_id)
}

/// Follows `turn` from its last applied seq.
fn follow_now(chat: ChatState, turn: TurnHandle, session_id: String) -> Option<Follower> {
    let after = turn.state.with_untracked(|s| s.last_seq);
    let source = EventSource::new(&crate::client::stream_url(&turn.run_id, after)).ok()?;
    let errored = std::rc::Rc::new(std::cell::Cell::new(false));
    // Set as `stream_end` arrives (its frame is applied at the next paint): the server then
    // closes the stream, and that close is the end, not a dropped connection.
    let got_end = std::rc::Rc::new(std::cell::Cell::new(false));
    let inbox = std::rc::Rc::new(std::cell::RefCell::new(Inbox::default()));
    let names = listened(&chat.event_kinds.get_value());
    // When the turn last sent something.
    let heard = Rc::new(std::cell::Cell::new(now_secs()));
    let mut listeners = Vec::with_capacity(names.len());
    for name in names {
        let turn = turn.clone();
        let session_id = session_id.clone();
        let source_for_flush = source.clone();
        let inbox = inbox.clone();
        let got_end = got_end.clone();
        let kind = name.clone();
        let heard = heard.clone();
        let listener = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            heard.set(now_secs());
            let _ = chat.quiet.try_set(None);
            let _ = chat.store_trouble.try_set(None);
            let data = event.data().as_string().unwrap_or_default();
            let id = event.last_event_id();
            if &*kind == EventKind::StreamEnd.name() {
                got_end.set(true);
            }
            let mut queue = inbox.borrow_mut();
            queue.frames.push((kind.clone(), data, id));
            if !queue.scheduled {
                queue.scheduled = true;
                let (inbox, turn, session_id, source) = (
                    inbox.clone(),
                    turn.clone(),
                    session_id.clone(),
                    source_for_flush.clone(),
                );
                schedule(move || flush(&inbox, chat, &turn, &session_id, &source));
            }
        });
        let _ = source.add_event_listener_with_callback(&name, listener.as_ref().unchecked_ref());
        listeners.push(listener);
    }
    let open_flag = errored.clone();
    let open_turn = turn.clone();
    let open = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
        if open_flag.get() {
            let seq = open_turn.state.with_untracked(|s| s.last_seq);
            chat.connection.set(Connection::Resumed(seq));
        } else {
            chat.connection.set(Connection::Live);
        }
    });
    source.set_onopen(Some(open.as_ref().unchecked_ref()));
    let error_source = source.clone();
    let error = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
        if got_end.get() || turn.state.with_untracked(|s| s.ended) {
            return;
        }
        errored.set(true);
        let state = if error_source.ready_state() == EventSource::CLOSED {
            Connection::Offline
        } else {
            Connection::Reconnecting
        };
        chat.connection.set(state);
    });
    source.set_onerror(Some(error.as_ref().unchecked_ref()));
    chat.connection.set(Connection::Idle);
    let state = turn.state;
    let ticker = set_interval_with_handle(
        move || {
            // A turn that waits for the person (an approval, a question) is not waiting for
            // the model: its quiet counts from their answer.
            if state
                .try_with_untracked(|s| !s.pending.is_empty())
                .unwrap_or(false)
            {
                heard.set(now_secs());
            }
            let quiet = now_secs() - heard.get();
            let said = (quiet >= QUIET_AFTER).then_some(quiet as u32);
            if chat.quiet.get_untracked() != said {
                let _ = chat.quiet.try_set(said);
            }
            if said.is_some_and(|secs| {
                secs.saturating_sub(QUIET_AFTER as u32)
                    .is_multiple_of(ASK_STORE_EVERY)
            }) {
                leptos::task::spawn_local(async move {
                    if let Ok(trouble) = crate::client::store_trouble().await {
                        if chat.quiet.get_untracked().is_some() {
                            let _ = chat.store_trouble.try_set(trouble);
                        }
                    }
                });
            }
        },
        std::time::Duration::from_secs(1),
    )
    .ok();
    Some(Follower {
        source,
        _listeners: listeners,
        _open: open,
        _error: error,
        ticker,
        chat,
    })
}
