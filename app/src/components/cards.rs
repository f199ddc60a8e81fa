use leptos::either::Either;
use leptos::prelude::*;

use crate::dynamic::dynamic;
use crate::model::Pending;
use crate::state::{use_chat, TurnHandle};

/// What a card answers (sent only by the browser).
#[cfg(feature = "hydrate")]
enum Answer {
    Approval(crate::api::ApprovalBody),
    Clarify(crate::api::ClarifyBody),
}

/// Sends an answer to an approval or clarify request; on success (or when someone else already
/// answered) the request leaves the card stack through the journal's `*_resolved` event.
#[cfg(feature = "hydrate")]
fn respond(answer: Answer, busy: RwSignal<bool>, failed: RwSignal<Option<String>>) {
    busy.set(true);
    failed.set(None);
    leptos::task::spawn_local(async move {
        let sent = match &answer {
            Answer::Approval(body) => crate::client::respond_approval(body).await,
            Answer::Clarify(body) => crate::client::respond_clarify(body).await,
        };
        match sent {
            Ok(_) => {}
            Err(e) if e.status == 409 => {}
            Err(e) => failed.set(Some(e.message)),
        }
        busy.set(false);
    });
}

/// A card that asks the reader something takes the focus when it appears (keyboard and
/// screen-reader users land on its first answer, inside the question); when it goes, answered, the focus goes back to
/// the message field unless the reader has moved it elsewhere meanwhile.
fn take_focus(card: NodeRef<leptos::html::Div>) {
    #[cfg(feature = "hydrate")]
    {
        // On its first answer, where Enter answers (a phone's keyboard is not opened for a
        // text field: there the first button, or the card).
        Effect::new(move |_| {
            use wasm_bindgen::JsCast;
            if let Some(el) = card.get() {
                let first = if crate::document::touch_only() {
                    "button:not([disabled])"
                } else {
                    "button:not([disabled]), input, textarea"
                };
                let target = el
                    .query_selector(first)
                    .ok()
                    .flatten()
                    .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok());
                match target {
                    Some(target) => drop(target.focus()),
                    None => drop(el.focus()),
                }
            }
        });
        // The element, kept for the cleanup (the node reference is gone by then).
        let element = StoredValue::new_local(None::<web_sys::HtmlElement>);
        Effect::new(move |_| {
            if let Some(el) = card.get() {
                let el: &web_sys::HtmlElement = &el;
                element.set_value(Some(el.clone()));
            }
        });
        on_cleanup(move || {
            let document = web_sys::window().and_then(|w| w.document());
            let active = document.as_ref().and_then(|d| d.active_element());
            let body = document.as_ref().and_then(|d| d.body());
            let inside = element
                .try_with_value(|el| {
                    el.as_ref().is_some_and(|el| {
                        let el: &web_sys::Node = el;
                        active.as_ref().is_some_and(|a| el.contains(Some(a)))
                    })
                })
                .unwrap_or(false);
            let nowhere = match (&active, &body) {
                (None, _) => true,
                (Some(a), Some(b)) => {
                    let a: &web_sys::Element = a;
                    let b: &web_sys::Element = b;
                    a == b
                }
                _ => false,
            };
            if (inside || nowhere) && !crate::document::touch_only() {
                crate::document::focus_composer();
            }
        });
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = card;
}

/// An approval request: each answer the server offers, narrowest first, saying what it
/// allows ("Allow `rm -rf target/` in this conversation"); nothing wider than that is kept.
#[component]
fn ApprovalCard(
    run_id: String,
    id: String,
    command: String,
    description: String,
    options: Vec<crate::model::ApprovalOption>,
) -> impl IntoView {
    let busy = RwSignal::new(false);
    let failed = RwSignal::new(None::<String>);
    let card = NodeRef::<leptos::html::Div>::new();
    take_focus(card);
    let choice = move |choice: String| {
        let run_id = run_id.clone();
        let id = id.clone();
        move |_| {
            let body = crate::api::ApprovalBody {
                run_id: run_id.clone(),
                approval_id: id.clone(),
                choice: choice.clone(),
            };
            #[cfg(feature = "hydrate")]
            respond(Answer::Approval(body), busy, failed);
            #[cfg(not(feature = "hydrate"))]
            let _ = body;
        }
    };
    view! {
        <div class="card approval-card" role="alertdialog" aria-labelledby="approval-title" data-pending="approval" tabindex="-1" node_ref=card>
            <div class="card-title" id="approval-title">"Approval required"</div>
            <p class="card-text">{description}</p>
            <pre class="card-command">{command}</pre>
            <div class="card-actions approval-actions">
                {options.into_iter().map(|option| {
                    let class = match option.choice.as_str() {
                        "once" => "primary",
                        "deny" => "danger",
                        _ => "",
                    };
                    // The command is on the card above, as code: the label says it plainly.
                    let label = option.label.replace('`', "");
                    view! {
                        <button
                            type="button"
                            class=class
                            data-choice=option.choice.clone()
                            disabled=dynamic(move || busy.get())
                            on:click=choice(option.choice.clone())
                        >
                            {label}
                        </button>
                    }
                }).collect_view()}
            </div>
            {move || failed.get().map(|e| view! { <p class="card-error" role="alert">{e}</p> })}
        </div>
    }
}

/// A question from the agent: pick a choice or type an answer.
#[component]
fn ClarifyCard(
    run_id: String,
    id: String,
    question: String,
    choices: Vec<String>,
) -> impl IntoView {
    let busy = RwSignal::new(false);
    let failed = RwSignal::new(None::<String>);
    let answer = RwSignal::new(String::new());
    let card = NodeRef::<leptos::html::Div>::new();
    take_focus(card);
    let send = {
        let run_id = run_id.clone();
        let id = id.clone();
        move |text: String| {
            if !text.trim().is_empty() {
                let body = crate::api::ClarifyBody {
                    run_id: run_id.clone(),
                    clarify_id: id.clone(),
                    response: text,
                };
                #[cfg(feature = "hydrate")]
                respond(Answer::Clarify(body), busy, failed);
                #[cfg(not(feature = "hydrate"))]
                let _ = body;
            }
        }
    };
    let send_choice = send.clone();
    view! {
        <div class="card clarify-card" role="dialog" aria-labelledby="clarify-title" data-pending="clarify" tabindex="-1" node_ref=card>
            <div class="card-title" id="clarify-title">"Question"</div>
            <p class="card-text">{question}</p>
            <div class="card-actions">
                {choices
                    .into_iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let send = send_choice.clone();
                        let label = c.clone();
                        view! {
                            <button type="button" disabled=dynamic(move || busy.get()) on:click=move |_| send(c.clone())>
                                <span class="choice-number">{i + 1}</span>
                                {label}
                            </button>
                        }
                    })
                    .collect_view()}
            </div>
            <form
                class="clarify-form"
                on:submit=move |ev| {
                    ev.prevent_default();
                    send(answer.get_untracked());
                }
            >
                <label class="visually-hidden" for="clarify-input">"Your answer"</label>
                <input
                    id="clarify-input"
                    type="text"
                    placeholder="Type your answer…"
                    prop:value=dynamic(move || answer.get())
                    on:input=move |ev| answer.set(event_target_value(&ev))
                />
                <button type="submit" disabled=dynamic(move || busy.get() || answer.with(|a| a.trim().is_empty()))>"Send answer"</button>
            </form>
            {move || failed.get().map(|e| view! { <p class="card-error" role="alert">{e}</p> })}
        </div>
    }
}

/// The open requests of the running turn, above the composer. They come from the journal, so
/// they survive reloads and disappear everywhere once answered.
#[component]
pub(crate) fn PendingCards() -> impl IntoView {
    let chat = use_chat();
    let pending = Memo::new(move |_| {
        chat.turns.with(|turns: &Vec<TurnHandle>| {
            turns
                .iter()
                .flat_map(|t| {
                    let run = t.run_id.clone();
                    t.state.with(|s| {
                        s.pending
                            .iter()
                            .map(|p| (run.clone(), p.clone()))
                            .collect::<Vec<_>>()
                    })
                })
                .collect::<Vec<_>>()
        })
    });
    view! {
        <For
            each=move || pending.get()
            key=|(run, p)| (run.clone(), p.id().to_owned())
            children=move |(run, p)| match p {
                Pending::Approval { id, command, description, options } => Either::Left(view! {
                    <ApprovalCard run_id=run id=id command=command description=description options=options />
                }),
                Pending::Clarify { id, question, choices } => Either::Right(view! {
                    <ClarifyCard run_id=run id=id question=question choices=choices />
                }),
            }
        />
    }
}
