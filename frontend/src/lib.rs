//! The browser entry point. It only hydrates: everything else lives in `app`. (Built for the
//! host, it is empty.)
// Release builds keep the full view types (dev builds erase them); their layout is deep.
#![recursion_limit = "512"]
#![cfg(target_arch = "wasm32")]

use wasm_bindgen::prelude::wasm_bindgen;

/// Called by the generated JS once the wasm module is loaded: hydrates the chat page from
/// the data the server wrote into it.
#[wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    match app::page_from_document() {
        // The turns the server rendered are drawn by a part of the bundle fetched apart (in a
        // split build): it must be here before they are taken over.
        Ok(page) if page.has_turns() => {
            wasm_bindgen_futures::spawn_local(async move {
                match app::load_turn_views().await {
                    Ok(()) => take_over(page),
                    // The page stays as the server rendered it: readable, not live.
                    Err(e) => leptos::logging::error!(
                        "Anchorage: not hydrating: the turns' part did not come: {e}"
                    ),
                }
            });
        }
        Ok(page) => take_over(page),
        // Not a chat page (nothing to take over): it stays the static page it is.
        Err(e) => leptos::logging::error!("Anchorage: not hydrating: {e}"),
    }
}

fn take_over(page: app::api::SessionPage) {
    leptos::mount::hydrate_body(move || app::ChatPage(app::ChatPageProps { page }));
}
