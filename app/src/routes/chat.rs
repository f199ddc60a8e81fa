use leptos::prelude::*;

use crate::components::{Composer, EmptyChat, Sidebar};

/// The chat page: the sessions sidebar, the transcript and the composer.
#[component]
pub(crate) fn ChatPage() -> impl IntoView {
    // Set by an Effect, which runs only in the browser: the marker says "this page is live".
    let (hydrated, set_hydrated) = signal(false);
    Effect::new(move |_| set_hydrated.set(true));

    let (drawer_open, set_drawer_open) = signal(false);

    view! {
        <div
            class="app"
            data-hydrated=move || hydrated.get().then_some("true")
            data-drawer=move || if drawer_open.get() { "open" } else { "closed" }
        >
            <Sidebar on_close=move || set_drawer_open.set(false) />
            <div class="drawer-scrim" aria-hidden="true" on:click=move |_| set_drawer_open.set(false)></div>
            <main class="chat">
                <header class="chat-header">
                    <button
                        type="button"
                        class="icon-button menu-button"
                        aria-label="Open sessions"
                        aria-controls="sidebar"
                        aria-expanded=move || if drawer_open.get() { "true" } else { "false" }
                        on:click=move |_| set_drawer_open.update(|open| *open = !*open)
                    >
                        <span aria-hidden="true">"☰"</span>
                    </button>
                    <h1 class="chat-title">"New chat"</h1>
                </header>
                <section class="transcript" aria-label="Conversation">
                    <EmptyChat />
                </section>
                <Composer />
            </main>
        </div>
    }
}
