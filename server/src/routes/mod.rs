//! HTTP routes that are not Leptos pages.

pub(crate) mod health;
