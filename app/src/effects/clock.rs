//! The reader's clock and time zone.

use leptos::prelude::*;

use crate::state::ChatState;

/// The browser's clock and time zone take over from the server's (times and the sidebar's
/// groups then read the reader's), and keep relative times fresh; the zone goes into a
/// cookie so that the next page's first HTML is already in it.
pub(super) fn follow_clock(chat: ChatState) {
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
        crate::prefs::set_preference(crate::api::TZ_COOKIE, Some(&offset.to_string()));
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
