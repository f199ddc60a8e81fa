use leptos::prelude::*;

/// The page for any address the app does not know (the server answers it with HTTP 404).
#[component]
pub(crate) fn NotFound() -> impl IntoView {
    view! {
        <main class="not-found">
            <h1>"Page not found"</h1>
            <p>
                <a href=crate::base::href("/")>"Back to your conversations"</a>
            </p>
        </main>
    }
}
