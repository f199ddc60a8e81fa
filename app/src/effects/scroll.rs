//! The transcript's bottom: followed while the reader is there.

use leptos::prelude::*;

use crate::state::ChatState;

/// Keeps the transcript at its bottom while the reader is there, and only then: any scroll up
/// by the reader (a wheel step, a drag, a key) stops it, coming back to the bottom (or "Jump to
/// latest") starts it again. A transcript that gets smaller (the phone keyboard opens, a card
/// docks above the composer) keeps its bottom in view while following.
///
/// A turn the address links to ([`ChatState::pinned`]) comes first: while it is pinned the
/// bottom is never followed (not even when a scroll of the page's own lands there), new
/// content or a resize puts the turn back where it was shown, and the reader's first touch,
/// wheel, key or pointer lets it go.
pub(super) fn follow_bottom(chat: ChatState, transcript: NodeRef<leptos::html::Section>) {
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;

    let to_bottom = move || {
        if let Some(el) = transcript.get_untracked() {
            el.set_scroll_top(el.scroll_height());
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
        let last_top = std::rc::Rc::new(std::cell::Cell::new(el.scroll_top()));
        let scroller = el.clone();
        let on_scroll = Closure::<dyn FnMut()>::new(move || {
            let top = scroller.scroll_top();
            let gap = scroller.scroll_height() - top - scroller.client_height();
            if gap <= 2 {
                if !chat.following.get_untracked() && !pinned() {
                    chat.following.set(true);
                }
            } else if top < last_top.get() && chat.following.get_untracked() {
                chat.following.set(false);
            }
            last_top.set(top);
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
