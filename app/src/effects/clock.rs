//! The reader's clock and time zone.

use leptos::prelude::*;

use crate::state::ChatState;

/// The browser's clock and time zone take over from the server's (times and the sidebar's
/// groups then read the reader's), and keep relative times fresh; the zone goes into a
/// cookie so that the next page's first HTML is already in it.
pub(super) fn follow_clock(chat: ChatState) {
    use wasm_bindgen::JsCast as _;
    let tick = move || {
        let date = js_sys::Date::new_0();
        let clock = crate::time::Clock {
            now: date.get_time() / 1000.0,
            offset: -(date.get_timezone_offset() as i32),
        };
        let _ = chat.clock.try_set(clock);
        clock.offset
    };
    // Once the page is hydrated (an effect runs after it): hydration must find the times and
    // groups the server rendered.
    Effect::new(move |_| {
        let offset = tick();
        if let Some(document) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.dyn_into::<web_sys::HtmlDocument>().ok())
        {
            let _ = document.set_cookie(&format!(
                "{}={offset}; Path=/; Max-Age=31536000; SameSite=Lax",
                crate::api::TZ_COOKIE
            ));
        }
    });
    if let Ok(handle) = set_interval_with_handle(
        move || {
            tick();
        },
        std::time::Duration::from_secs(30),
    ) {
        on_cleanup(move || handle.clear());
    }
}
