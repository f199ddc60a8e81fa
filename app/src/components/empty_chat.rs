use leptos::prelude::*;

/// What an empty conversation shows: a greeting and what to try.
#[component]
pub(crate) fn EmptyChat() -> impl IntoView {
    view! {
        <div class="empty-chat">
            <h2>"Start a conversation"</h2>
            <p>
                "Ask anything. Answers stream in, settle in place and are still here after a reload."
            </p>
        </div>
    }
}
