//! This browser keeping the app: the service worker (the server's `offline` module writes
//! it), "Updated" once when a new build arrives, and a kept copy of the page shown while the
//! server cannot be reached.

use leptos::prelude::*;
use wasm_bindgen::JsCast as _;

use crate::state::ChatState;

/// Where this browser remembers the build it last ran.
const BUILD_KEY: &str = "anchorage.build";

/// Registers the service worker (where the browser has them: a secure context, which
/// `localhost` is). Its first install fetches the bundle the page has just loaded, from the
/// HTTP cache.
pub(super) fn register_worker() {
    // A bundle without a build (`cargo leptos watch`) is not one to keep.
    if build_id().is_none() {
        return;
    }
    let Some(window) = web_sys::window() else {
        return;
    };
    if !window.is_secure_context() {
        return;
    }
    let navigator = window.navigator();
    let Ok(container) = js_sys::Reflect::get(&navigator, &"serviceWorker".into()) else {
        return;
    };
    if container.is_undefined() {
        return;
    }
    let register = js_sys::Reflect::get(&container, &"register".into())
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok());
    if let Some(register) = register {
        if let Ok(promise) = register.call1(
            &container,
            &crate::base::href(crate::api::paths::WORKER).into(),
        ) {
            // A refusal (a browser setting) leaves the page as it was: nothing to say.
            if let Ok(promise) = promise.dyn_into::<js_sys::Promise>() {
                leptos::task::spawn_local(async move {
                    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
                });
            }
        }
    }
}

/// The build this page runs, as the server named it (none under `cargo leptos watch`, whose
/// bundle changes under a running server).
fn build_id() -> Option<String> {
    web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| {
            d.query_selector(&format!("meta[name=\"{}\"]", crate::document::BUILD_META))
                .ok()
                .flatten()
        })
        .and_then(|meta| meta.get_attribute("content"))
}

/// Says "Updated" once when this page runs a build other than the one this browser ran last.
pub(super) fn announce_update(chat: ChatState) {
    let Some(build) = build_id() else {
        return;
    };
    let Some(storage) = crate::prefs::storage() else {
        return;
    };
    let last = storage.get_item(BUILD_KEY).ok().flatten();
    if last.as_deref() == Some(build.as_str()) {
        return;
    }
    let _ = storage.set_item(BUILD_KEY, &build);
    // A first visit has nothing to compare with. Said once the page is hydrated (in an
    // effect): a notice in the document before would not be the document the server sent.
    if last.is_some() {
        Effect::new(move |_| crate::components::show_toast(chat, "Updated", None, false));
    }
}

/// A page the service worker served from its copy (the server could not be reached) says so
/// until the server answers again; then, unless a message waits to be sent (the outbox sends
/// it and the page follows), the page loads what the server has now.
pub(super) fn watch_saved(chat: ChatState) {
    let saved = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.document_element())
        .is_some_and(|root| root.has_attribute("data-saved"));
    if !saved {
        return;
    }
    let back = move || {
        leptos::task::spawn_local(async move {
            if !chat.saved.get_untracked() || crate::client::health().await.is_err() {
                return;
            }
            chat.saved.set(false);
            if chat.outbox.with_untracked(Option::is_none) {
                crate::nav::reload(chat);
            }
        });
    };
    let online = window_event_listener(leptos::ev::online, move |_| back());
    on_cleanup(move || online.remove());
    // Once hydrated (the banner is not in the document the server sent). `online` is the
    // browser's guess; the server is asked now and then too.
    Effect::new(move |_| {
        chat.saved.set(true);
        leptos::task::spawn_local(async move {
            let mut wait = 2000;
            while chat.saved.get_untracked() {
                crate::client::sleep(wait).await;
                wait = (wait * 2).min(16_000);
                back();
            }
        });
    });
}
