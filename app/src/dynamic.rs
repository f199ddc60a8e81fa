//! Reactive values behind one type per output.
//!
//! Every `move || …` closure in a view is a type of its own, and the view code for it
//! (build, hydrate, rebuild, the render effect) is compiled once per type: about 2 KB of
//! wasm for each reactive attribute or text. Behind [`Dyn`] all values with the same output
//! share that code; only the closure bodies stay separate.

use std::sync::Arc;

/// A reactive value a view renders (attribute, property, class or text).
pub(crate) type Dyn<T> = Arc<dyn Fn() -> T + Send + Sync>;

/// `f` as a [`Dyn`].
pub(crate) fn dynamic<T: 'static>(f: impl Fn() -> T + Send + Sync + 'static) -> Dyn<T> {
    Arc::new(f)
}

/// `"true"` or `"false"`, for ARIA states and data flags.
pub(crate) fn flag(f: impl Fn() -> bool + Send + Sync + 'static) -> Dyn<&'static str> {
    either(f, "true", "false")
}

/// One of two words.
pub(crate) fn either(
    f: impl Fn() -> bool + Send + Sync + 'static,
    yes: &'static str,
    no: &'static str,
) -> Dyn<&'static str> {
    Arc::new(move || if f() { yes } else { no })
}
