use leptos::prelude::*;

/// The page for any address the router does not know; answers with HTTP 404.
#[component]
pub(crate) fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    {
        if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
            response.set_status(http::StatusCode::NOT_FOUND);
        }
    }
    view! {
        <main class="not-found">
            <h1>"Page not found"</h1>
            <p>
                <a href="/">"Back to your conversations"</a>
            </p>
        </main>
    }
}
