//! The browser entry point. It only hydrates: everything else lives in `app`.
// Release builds keep the full view types (dev builds erase them); their layout is deep.
#![recursion_limit = "512"]

use wasm_bindgen::prelude::wasm_bindgen;

/// Called by the generated JS once the wasm module is loaded.
#[wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(app::App);
}
