use leptos::prelude::*;
use serde_json::Value;

use crate::dynamic::flag;
use crate::state::use_chat;

/// The todo list of the turn at work, from its `todo_state` events, docked above the
/// composer: while that turn runs, and after it ends until the next message (the reader
/// watched it finish). A list of an earlier turn, or of a turn loaded finished, is not docked.
#[component]
pub(crate) fn TodoPanel() -> impl IntoView {
    let chat = use_chat();
    let todos = Memo::new(move |_| {
        chat.turns.with(|turns| {
            turns
                .last()
                .filter(|t| t.watched || t.running.get())
                .and_then(|t| t.state.with(|s| s.todos.clone()))
                .and_then(|v| v.get("todos").and_then(Value::as_array).cloned())
                .unwrap_or_default()
        })
    });
    let open = RwSignal::new(true);
    move || {
        let list = todos.get();
        (!list.is_empty()).then(|| {
            let done = list.iter().filter(|t| t["status"] == "completed").count();
            let total = list.len();
            view! {
                <section class="todos" aria-label="Todos">
                    <button
                        type="button"
                        class="todos-head"
                        aria-expanded=flag(move || open.get())
                        on:click=move |_| open.update(|o| *o = !*o)
                    >
                        {format!("Todos · {done}/{total}")}
                    </button>
                    {move || open.get().then(|| view! {
                        <ul class="todo-list">
                            {list
                                .iter()
                                .map(|t| {
                                    let status = t["status"].as_str().unwrap_or("pending").to_owned();
                                    let content = t["content"].as_str().unwrap_or("").to_owned();
                                    let mark = match status.as_str() {
                                        "completed" => "✓",
                                        "in_progress" => "◐",
                                        "cancelled" => "✗",
                                        _ => "○",
                                    };
                                    view! {
                                        <li class=format!("todo {status}")>
                                            <span class="todo-mark" aria-hidden="true">{mark}</span>
                                            <span class="todo-text">{content}</span>
                                            <span class="visually-hidden">{format!(" ({status})")}</span>
                                        </li>
                                    }
                                })
                                .collect_view()}
                        </ul>
                    })}
                </section>
            }
        })
    }
}
