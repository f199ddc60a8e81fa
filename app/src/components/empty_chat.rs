use leptos::prelude::*;

use crate::state::use_chat;

/// What an empty conversation shows: what Anchorage is, prompts to try (from who answers),
/// and what the two views of a turn are.
#[component]
pub(crate) fn EmptyChat() -> impl IntoView {
    let chat = use_chat();
    let try_it = move |prompt: String| {
        crate::state::send_message(prompt);
    };
    view! {
        <div class="empty-chat">
            <h2>"Start a conversation"</h2>
            <p>
                "Anchorage is a chat with an AI agent that works in steps: it reads, runs tools and "
                "asks before it acts. Answers stream in, settle in place and are still here after a reload."
            </p>
            <div class="examples" role="group" aria-label="Try one">
                {move || chat.examples.get().into_iter().map(|example| {
                    let prompt = example.prompt.clone();
                    view! {
                        <button type="button" class="example" on:click=move |_| try_it(prompt.clone())>
                            <span class="example-label">{example.label}</span>
                            <span class="example-prompt">{example.prompt.clone()}</span>
                        </button>
                    }
                }).collect_view()}
            </div>
            <dl class="views">
                <dt class="view-worklog">"Worklog"</dt>
                <dd>"folds what the agent did under one line, with the answer below."</dd>
                <dt class="view-stream">"Stream"</dt>
                <dd>"shows every step in order, one row per tool call."</dd>
            </dl>
        </div>
    }
}
