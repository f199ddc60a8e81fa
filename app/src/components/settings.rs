use anchor::Mode;
use leptos::either::Either;
use leptos::prelude::*;

#[cfg(feature = "hydrate")]
use crate::api::Theme;
use crate::state::use_chat;

/// The keyboard shortcuts, as Settings lists them (the chat page handles them; ⌘ stands for
/// Ctrl on a Mac).
#[cfg(feature = "hydrate")]
pub(crate) const SHORTCUTS: [(&str, &str); 4] = [
    ("Ctrl+Shift+O", "New chat"),
    ("Shift+Esc", "Focus the message box"),
    ("Ctrl+.", "Stop the running turn"),
    ("Ctrl+Shift+E", "Switch between Worklog and Stream"),
];

/// What the Settings panel knows of the standing permissions (the browser's only: the server
/// renders the panel closed).
#[cfg(feature = "hydrate")]
#[derive(Clone, Debug, PartialEq)]
enum Grants {
    Loading,
    Loaded(Vec<crate::api::GrantData>),
    Failed(String),
}

/// Settings: the theme, the view turns open in, the standing permissions (with Revoke), the
/// passkeys, the share links (with Copy and Revoke), the keyboard shortcuts and the slash
/// commands. A modal dialog (Escape or ✕ closes it, the focus comes back to what opened it).
/// The page renders
/// the dialog and its head; what it lists is made when it opens, by code split off the first
/// load (see [`crate::lazy`]).
#[component]
pub(crate) fn Settings(#[prop(into)] set_mode: Callback<Mode>) -> impl IntoView {
    let chat = use_chat();
    let dialog = NodeRef::<leptos::html::Dialog>::new();
    let body = NodeRef::<leptos::html::Div>::new();
    // None while the sections are on their way; the problem when they could not come.
    let status = RwSignal::new(Some(None::<String>));
    #[cfg(feature = "hydrate")]
    {
        let owner = Owner::current().expect("a component has an owner");
        let slot = crate::lazy::Slot::new();
        // The dialog follows the signal (a button, a shortcut) and tells it when it closes.
        Effect::new(move |_| {
            let open = chat.settings.get();
            let (Some(el), Some(body)) = (dialog.get(), body.get()) else {
                return;
            };
            if open && !el.open() {
                // Refused (the page is mid-change): shown all the same, not as a modal.
                if let Err(refusal) = el.show_modal() {
                    leptos::logging::error!("Settings shown without a modal: {refusal:?}");
                    el.set_open(true);
                }
                status.set(Some(None));
                let owner = owner.clone();
                slot.show(sections(owner, body.into(), set_mode), move |made| {
                    let _ = status.try_set(match made {
                        Ok(()) => None,
                        Err(_) => Some(Some(crate::lazy::unavailable_message(
                            "Settings could not be loaded",
                        ))),
                    });
                });
            } else if !open && el.open() {
                el.close();
            }
            if !open {
                slot.clear();
            }
        });
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = set_mode;
    let close = move || chat.settings.set(false);
    view! {
        <dialog
            class="settings"
            node_ref=dialog
            aria-labelledby="settings-title"
            on:close=move |_| close()
        >
            <div class="settings-head">
                <h2 id="settings-title">"Settings"</h2>
                <button type="button" class="icon-button" aria-label="Close settings" on:click=move |_| close()>"✕"</button>
            </div>
            {move || status.get().map(|problem| match problem {
                None => Either::Left(view! { <p class="settings-note">"Loading…"</p> }),
                Some(problem) => Either::Right(view! { <p class="settings-problem" role="alert">{problem}</p> }),
            })}
            <div class="settings-body" node_ref=body></div>
        </dialog>
    }
}

#[cfg(feature = "hydrate")]
crate::lazy::split_off!(
    settings_sections,
    fn sections(
        owner: Owner,
        parent: web_sys::Element,
        set_mode: Callback<Mode>,
    ) -> crate::lazy::Mounter {
        Box::new(move || crate::lazy::mount(&owner, &parent, move || section_views(set_mode)))
    }
);

/// What Settings lists, made when they open.
#[cfg(feature = "hydrate")]
fn section_views(set_mode: Callback<Mode>) -> impl IntoView {
    let chat = use_chat();
    let grants = RwSignal::new(Grants::Loading);
    let load_grants = move || {
        grants.set(Grants::Loading);
        leptos::task::spawn_local(async move {
            let loaded = match crate::client::grants().await {
                Ok(answer) => Grants::Loaded(answer.grants),
                Err(failure) => Grants::Failed(failure.message),
            };
            let _ = grants.try_set(loaded);
        });
    };
    load_grants();
    let revoke = move |id: String| {
        leptos::task::spawn_local(async move {
            match crate::client::revoke_grant(&id).await {
                Ok(_) => grants.update(|g| {
                    if let Grants::Loaded(list) = g {
                        list.retain(|grant| grant.id != id);
                    }
                }),
                Err(failure) => grants.set(Grants::Failed(failure.message)),
            }
        });
    };
    let choose_theme = move |theme: Theme| {
        chat.theme.set(theme);
        crate::prefs::apply_theme(theme);
    };
    view! {
        <Choice
            legend="Theme"
            name="theme"
            options=Theme::ALL.map(|t| (t, t.as_str(), t.label())).to_vec()
            current=Signal::derive(move || chat.theme.get())
            on_choose=Callback::new(choose_theme)
        />
        <Choice
            legend="Turns open in"
            name="mode"
            options=vec![
                (Mode::CompactWorklog, Mode::CompactWorklog.as_str(), "Worklog"),
                (Mode::TransparentStream, Mode::TransparentStream.as_str(), "Stream"),
            ]
            current=Signal::derive(move || chat.mode.get())
            on_choose=set_mode
        />
        <section class="settings-section" aria-labelledby="grants-title">
            <h3 id="grants-title">"Standing permissions"</h3>
            <p class="settings-note">
                "Actions you allowed for a conversation or always go ahead without asking. "
                "Revoke one and the agent asks again."
            </p>
            {move || match grants.get() {
                Grants::Loading => view! { <p class="settings-note">"Loading…"</p> }.into_any(),
                Grants::Failed(message) => view! { <p class="settings-problem" role="alert">{message}</p> }.into_any(),
                Grants::Loaded(list) if list.is_empty() => view! {
                    <p class="settings-empty">"None: every such action asks first."</p>
                }.into_any(),
                Grants::Loaded(list) => view! {
                    <ul class="grants">
                        {list.into_iter().map(|grant| {
                            let id = grant.id.clone();
                            let scope = if grant.scope == "always" {
                                "In every conversation".to_owned()
                            } else {
                                format!("In “{}”", grant.session_title.clone().unwrap_or_default())
                            };
                            view! {
                                <li class="grant">
                                    <span class="grant-what">
                                        <code>{grant.pattern.clone()}</code>
                                        <span class="grant-scope">{scope}</span>
                                    </span>
                                    <button
                                        type="button"
                                        aria-label=format!("Revoke {}", grant.pattern)
                                        on:click=move |_| revoke(id.clone())
                                    >
                                        "Revoke"
                                    </button>
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                }.into_any(),
            }}
        </section>
        <super::Passkeys />
        <super::SignIns />
        <super::SharedLinks />
        <super::Storage />
        // A touch phone has no keyboard to speak of: the list is for pointers (style/phone.css).
        <section class="settings-section keyboard-shortcuts" aria-labelledby="keys-title">
            <h3 id="keys-title">"Keyboard shortcuts"</h3>
            <dl class="shortcuts">
                {SHORTCUTS.into_iter().map(|(keys, what)| view! {
                    <dt><kbd>{keys}</kbd></dt>
                    <dd>{what}</dd>
                }).collect_view()}
            </dl>
            <p class="settings-note">"On a Mac, ⌘ in place of Ctrl. Enter sends; Shift+Enter is a new line."</p>
        </section>
        <section class="settings-section" aria-labelledby="commands-title">
            <h3 id="commands-title">"Slash commands"</h3>
            <p class="settings-note">"Type / in the message box for the list; Tab fills one in, Enter runs it."</p>
            <dl class="shortcuts commands">
                {crate::commands::COMMANDS.into_iter().filter(|c| c.name != "demo").map(|c| view! {
                    <dt><kbd>{format!("/{} {}", c.name, c.args).trim_end().to_owned()}</kbd></dt>
                    <dd>{c.what}</dd>
                }).collect_view()}
                {move || chat.commands.get().into_iter().map(|c| view! {
                    <dt><kbd>{c.prompt}</kbd></dt>
                    <dd>{c.label}</dd>
                }).collect_view()}
            </dl>
            <p class="settings-note">"Any other text that starts with / goes to the agent as you typed it."</p>
        </section>
    }
}

#[cfg(feature = "hydrate")]
/// One setting as a group of radio buttons: `options` are (value, form value, label).
#[component]
fn Choice<T>(
    legend: &'static str,
    name: &'static str,
    options: Vec<(T, &'static str, &'static str)>,
    current: Signal<T>,
    on_choose: Callback<T>,
) -> impl IntoView
where
    T: Copy + PartialEq + Send + Sync + 'static,
{
    view! {
        <fieldset class="settings-choice">
            <legend>{legend}</legend>
            {options.into_iter().map(|(value, form_value, label)| view! {
                <label>
                    <input
                        type="radio"
                        name=name
                        value=form_value
                        prop:checked=move || current.get() == value
                        on:change=move |_| on_choose.run(value)
                    />
                    {label}
                </label>
            }).collect_view()}
        </fieldset>
    }
}
