//! The transcript's bottom: followed while the reader is there.

use leptos::prelude::*;

use crate::state::ChatState;

/// Keeps the transcript at its bottom while the reader is there, and only then: any scroll up
/// by the reader (a wheel step, a drag, a key) stops it, coming back to the bottom (or "Jump to
/// latest") starts it again. A transcript that gets smaller (the phone keyboard opens, a card
/// docks above the composer) keeps its bottom in view while following.
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
    // New content: follow it, or note that it is there.
    Effect::new(move |_| {
        chat.turns
            .with(|turns| turns.iter().for_each(|t| t.state.track()));
        chat.queued.track();
        if chat.following.get_untracked() {
            request_animation_frame(follow);
        } else {
            chat.unseen.set(true);
        }
    });
    // Following again (a send, Jump to latest, another conversation) goes to the bottom.
    Effect::new(move |_| {
        if chat.following.get() {
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
                if !chat.following.get_untracked() {
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
                if ev.delta_y() < 0.0 && chat.following.get_untracked() {
                    chat.following.set(false);
                }
            });
        let _ = el.add_event_listener_with_callback("wheel", on_wheel.as_ref().unchecked_ref());
        on_wheel.forget();
        let on_key =
            Closure::<dyn FnMut(web_sys::KeyboardEvent)>::new(move |ev: web_sys::KeyboardEvent| {
                if matches!(ev.key().as_str(), "ArrowUp" | "PageUp" | "Home") {
                    chat.following.set(false);
                }
            });
        let _ = el.add_event_listener_with_callback("keydown", on_key.as_ref().unchecked_ref());
        on_key.forget();
        let on_resize = Closure::<dyn FnMut()>::new(move || {
            if chat.following.get_untracked() {
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
