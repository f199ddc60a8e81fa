use leptos::prelude::*;

use crate::state::use_chat;

/// The model the conversation asks for, under the composer, with the context meter: the
/// picker only when who answers offers a choice (`--backend openai`), the meter wherever it
/// knows its window (the demo agent's is a pretend one). The list comes from the provider through the server
/// (which keeps it a while); ↻ asks the provider again. A change applies to the next turns of
/// the open conversation (stored with it), or to the first turn of a new one.
#[component]
pub(crate) fn ModelPicker() -> impl IntoView {
    let chat = use_chat();
    let problem = RwSignal::new(None::<String>);
    let loading = RwSignal::new(false);
    // What the conversation asks for: its choice, else the default.
    let current = Memo::new(move |_| {
        chat.model
            .get()
            .or_else(|| chat.default_model.get())
            .unwrap_or_default()
    });
    // The options: the list once loaded; until then the model in use alone.
    let options = Memo::new(move |_| {
        let mut list = chat.models.get();
        let current = current.get();
        if !current.is_empty() && !list.iter().any(|m| m.id == current) {
            list.insert(0, crate::api::ModelInfo::new(&current));
        }
        list
    });
    let load = move |refresh: bool| {
        #[cfg(feature = "hydrate")]
        {
            if loading.get_untracked() {
                return;
            }
            loading.set(true);
            leptos::task::spawn_local(async move {
                match model_list(chat, problem, refresh).await {
                    Ok(task) => task.await,
                    Err(_) => {
                        let _ = problem.try_set(Some(crate::lazy::unavailable_message(
                            "The list of models could not be loaded",
                        )));
                    }
                }
                let _ = loading.try_set(false);
            });
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = refresh;
    };
    // The list is asked for once the page runs (the server answers from what it keeps).
    #[cfg(feature = "hydrate")]
    Effect::new(move |asked: Option<bool>| {
        if asked == Some(true) {
            return true;
        }
        let wanted = chat.default_model.with(Option::is_some) && chat.models.with(Vec::is_empty);
        if wanted {
            load(false);
        }
        wanted
    });
    let choose = move |id: String| choose(chat, problem, id);
    move || {
        if !chat.default_model.with(Option::is_some) {
            // No choice of model, but a known window: the meter alone, in a row whose height
            // is there from the first HTML on (the meter comes once the page runs).
            return chat.context_meter.get().then(|| {
                view! {
                    <div class="model-picker meter-only">
                        <super::ContextMeter />
                    </div>
                }
                .into_any()
            });
        }
        Some({
            view! {
                <div class="model-picker">
                    <label for="model-select">"Model"</label>
                    <select
                        id="model-select"
                        on:change=move |ev| choose(event_target_value(&ev))
                    >
                        {move || options.get().into_iter().map(|model| {
                            let id = model.id.clone();
                            let selected = move || current.get() == id;
                            view! { <option value=model.id.clone() prop:selected=selected>{model.name}</option> }
                        }).collect_view()}
                    </select>
                    <button
                        type="button"
                        class="message-action"
                        aria-label="Refresh the list of models"
                        title="Ask the provider for its models again"
                        disabled=move || loading.get()
                        on:click=move |_| load(true)
                    >
                        "↻"
                    </button>
                    {move || problem.get().map(|p| view! { <span class="model-problem" role="status">{p}</span> })}
                    <super::ContextMeter />
                </div>
            }
            .into_any()
        })
    }
}

/// Asks for model `id` from now on: in the open conversation (the server stores the choice),
/// or for the first turn of a new one. A refusal puts the choice back and says why in
/// `problem`.
pub(crate) fn choose(chat: crate::state::ChatState, problem: RwSignal<Option<String>>, id: String) {
    let before = chat.model.get_untracked();
    chat.model.set(Some(id.clone()));
    problem.set(None);
    #[cfg(feature = "hydrate")]
    if let Some(session) = chat.session_id.get_untracked() {
        leptos::task::spawn_local(async move {
            let chosen = choosing(chat, problem, session.clone(), id, before.clone()).await;
            match chosen {
                Ok(task) => task.await,
                Err(_) => refused(
                    chat,
                    problem,
                    &session,
                    before,
                    crate::lazy::unavailable_message("The model could not be changed"),
                ),
            }
        });
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = before;
}

#[cfg(feature = "hydrate")]
crate::lazy::split_off!(
    models,
    fn model_list(
        chat: crate::state::ChatState,
        problem: RwSignal<Option<String>>,
        refresh: bool,
    ) -> crate::lazy::Task {
        Box::pin(load_models(chat, problem, refresh))
    }
);

#[cfg(feature = "hydrate")]
crate::lazy::split_off!(
    models,
    fn choosing(
        chat: crate::state::ChatState,
        problem: RwSignal<Option<String>>,
        session: String,
        id: String,
        before: Option<String>,
    ) -> crate::lazy::Task {
        Box::pin(choose_model(chat, problem, session, id, before))
    }
);

/// Asks the server for the provider's models (`refresh`: the provider itself, again).
#[cfg(feature = "hydrate")]
async fn load_models(
    chat: crate::state::ChatState,
    problem: RwSignal<Option<String>>,
    refresh: bool,
) {
    match crate::client::models(refresh).await {
        Ok(answer) => {
            let _ = chat.models.try_set(answer.models);
            let _ = problem.try_set(
                answer
                    .error
                    .map(|e| format!("The list of models is not available: {e}")),
            );
        }
        Err(failure) => {
            let _ = problem.try_set(Some(failure.message));
        }
    }
}

/// Tells the server that the conversation `session` asks for `id` from now on.
#[cfg(feature = "hydrate")]
async fn choose_model(
    chat: crate::state::ChatState,
    problem: RwSignal<Option<String>>,
    session: String,
    id: String,
    before: Option<String>,
) {
    let body = crate::api::ModelBody {
        session_id: session.clone(),
        model: Some(id),
    };
    if let Err(failure) = crate::client::choose_model(&body).await {
        refused(chat, problem, &session, before, failure.message);
    }
}

/// A choice that did not take: back to what the conversation still asks for, and why.
#[cfg(feature = "hydrate")]
fn refused(
    chat: crate::state::ChatState,
    problem: RwSignal<Option<String>>,
    session: &str,
    before: Option<String>,
    why: String,
) {
    if chat.session_id.get_untracked().as_deref() == Some(session) {
        let _ = chat.model.try_set(before);
    }
    let _ = problem.try_set(Some(why));
}
