//! The transcript's bottom: followed while the reader is there.

use leptos::prelude::*;

use crate::state::ChatState;

/// Keeps the transcript at its bottom while the reader is there, and only then: any scroll up
/// by the reader (a wheel step, a drag, a key) stops it, coming back to the bottom (or "Jump to
/// latest") starts it again; the browser lowering the scroll position to keep what is on
/// screen in place, as rows leave the top of a long turn, is not the reader ([`Seen`]). A transcript that gets smaller (the phone keyboard opens, a card
/// docks above the composer) keeps its bottom in view while following.
///
/// A turn the address links to ([`ChatState::pinned`]) comes first: while it is pinned the
/// bottom is never followed (not even when a scroll of the page's own lands there), new
/// content or a resize puts the turn back where it was shown, and the reader's first touch,
/// wheel, key or pointer lets it go.
pub(super) fn follow_bottom(chat: ChatState, transcript: NodeRef<leptos::html::Section>) {
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;

    // Where the view was at the last scroll, the reader's or the page's own.
    let seen = StoredValue::new_local(Seen::default());
    let to_bottom = move || {
        if let Some(el) = transcript.get_untracked() {
            el.set_scroll_top(el.scroll_height());
            seen.set_value(Seen::of(&el));
        }
    };
    // Scheduled for the next frame: by then the reader may have scrolled away.
    let follow = move || {
        if chat.following.get_untracked() {
            to_bottom();
        }
    };
    let pinned = move || chat.pinned.with_value(Option::is_some);
    let keep_pinned = move || super::history::show_pinned(chat, transcript);
    // New content: follow it, or note that it is there (a pinned turn stays where it is).
    Effect::new(move |_| {
        chat.turns
            .with(|turns| turns.iter().for_each(|t| t.state.track()));
        chat.queued.track();
        if pinned() {
            request_animation_frame(keep_pinned);
        } else if chat.following.get_untracked() {
            request_animation_frame(follow);
        } else {
            chat.unseen.set(true);
        }
    });
    // Following again (a send, Jump to latest, another conversation) goes to the bottom.
    Effect::new(move |_| {
        if chat.following.get() {
            chat.pinned.set_value(None);
            chat.unseen.set(false);
            request_animation_frame(follow);
        }
    });
    // The listeners go on the element once it exists (after hydration).
    Effect::new(move |done: Option<bool>| {
        if done == Some(true) {
            return true;
        }
        let Some(el) = transcript.get() else {
            return false;
        };
        seen.set_value(Seen::of(&el));
        let scroller = el.clone();
        let on_scroll = Closure::<dyn FnMut()>::new(move || {
            let top = scroller.scroll_top();
            let gap = scroller.scroll_height() - top - scroller.client_height();
            if gap <= 2 {
                if !chat.following.get_untracked() && !pinned() {
                    chat.following.set(true);
                }
            } else if chat.following.get_untracked()
                && seen.with_value(|seen| seen.reader_scrolled_up(&scroller))
            {
                chat.following.set(false);
            }
            seen.set_value(Seen::of(&scroller));
        });
        let _ = el.add_event_listener_with_callback("scroll", on_scroll.as_ref().unchecked_ref());
        on_scroll.forget();
        let on_wheel =
            Closure::<dyn FnMut(web_sys::WheelEvent)>::new(move |ev: web_sys::WheelEvent| {
                chat.pinned.set_value(None);
                if ev.delta_y() < 0.0 && chat.following.get_untracked() {
                    chat.following.set(false);
                }
            });
        let _ = el.add_event_listener_with_callback("wheel", on_wheel.as_ref().unchecked_ref());
        on_wheel.forget();
        let on_key =
            Closure::<dyn FnMut(web_sys::KeyboardEvent)>::new(move |ev: web_sys::KeyboardEvent| {
                let key = ev.key();
                if matches!(key.as_str(), "ArrowUp" | "PageUp" | "Home") {
                    chat.following.set(false);
                }
                if matches!(
                    key.as_str(),
                    "ArrowUp" | "ArrowDown" | "PageUp" | "PageDown" | "Home" | "End" | " "
                ) {
                    chat.pinned.set_value(None);
                }
            });
        let _ = el.add_event_listener_with_callback("keydown", on_key.as_ref().unchecked_ref());
        on_key.forget();
        // A finger or a pointer on the transcript: the reader takes over from the link.
        // (Passive: it never holds a scroll back.)
        let on_touch = Closure::<dyn FnMut()>::new(move || chat.pinned.set_value(None));
        let passive = web_sys::AddEventListenerOptions::new();
        passive.set_passive(true);
        for event in ["touchstart", "pointerdown"] {
            let _ = el.add_event_listener_with_callback_and_add_event_listener_options(
                event,
                on_touch.as_ref().unchecked_ref(),
                &passive,
            );
        }
        on_touch.forget();
        let on_resize = Closure::<dyn FnMut()>::new(move || {
            if pinned() {
                keep_pinned();
            } else if chat.following.get_untracked() {
                to_bottom();
            }
        });
        if let Ok(observer) = web_sys::ResizeObserver::new(on_resize.as_ref().unchecked_ref()) {
            observer.observe(&el);
        }
        on_resize.forget();
        true
    });
}

/// Where the view was at a scroll: its scroll position, and an element in its middle with
/// its distance from the view's top.
#[derive(Default)]
struct Seen {
    top: i32,
    landmark: Option<(web_sys::Element, f64)>,
}

impl Seen {
    fn of(scroller: &web_sys::HtmlElement) -> Seen {
        Seen {
            top: scroller.scroll_top(),
            landmark: landmark(scroller),
        }
    }

    /// Lower than it was, and what is on screen moved with it: the reader scrolled up. Rows
    /// that leave the top of a long turn lower it too, but the browser's scroll anchoring then
    /// keeps what is on screen where it was. (A landmark gone since, its rows replaced, says
    /// nothing: the reader's scrolls come one after another, and the next one tells.)
    fn reader_scrolled_up(&self, scroller: &web_sys::HtmlElement) -> bool {
        if scroller.scroll_top() >= self.top {
            return false;
        }
        let Some((element, offset)) = &self.landmark else {
            return true;
        };
        let view_top = scroller.get_bounding_client_rect().top();
        element.is_connected()
            && (element.get_bounding_client_rect().top() - view_top - offset).abs() > 1.0
    }
}

/// Blocks that keep their element while a turn streams (an answer's text, a row, a message;
/// not a chunk of the text, made anew with each word).
const STEADY_BLOCKS: &str =
    ".prose, .tool-card, .stream-row, .user-message, .terminal-card, .worklog-summary";

/// The steady block in the middle of the view (or a little off it, between two turns), and
/// its distance from the view's top.
fn landmark(scroller: &web_sys::HtmlElement) -> Option<(web_sys::Element, f64)> {
    let view = scroller.get_bounding_client_rect();
    let document = scroller.owner_document()?;
    let x = (view.left() + view.width() / 2.0) as f32;
    [0.5, 0.6, 0.4].into_iter().find_map(|at| {
        let y = (view.top() + view.height() * at) as f32;
        let element = document
            .element_from_point(x, y)?
            .closest(STEADY_BLOCKS)
            .ok()??;
        let offset = element.get_bounding_client_rect().top() - view.top();
        scroller
            .contains(Some(&element))
            .then_some((element, offset))
    })
}
