use leptos::prelude::*;

/// The sessions sidebar; on a phone it is a drawer that `on_close` dismisses.
#[component]
pub(crate) fn Sidebar(on_close: impl Fn() + 'static) -> impl IntoView {
    view! {
        <nav id="sidebar" class="sidebar" aria-label="Sessions">
            <div class="sidebar-header">
                <span class="brand">"Anchorage"</span>
                <button
                    type="button"
                    class="icon-button drawer-close"
                    aria-label="Close sessions"
                    on:click=move |_| on_close()
                >
                    <span aria-hidden="true">"✕"</span>
                </button>
            </div>
            <a class="new-chat" href="/">"New chat"</a>
            <p class="sidebar-empty">"No conversations yet."</p>
        </nav>
    }
}
