//! Settings' passkeys: the account's, with Remove, and "Add a passkey" (the browser's own
//! dialog makes it; the server keeps it). Shown to a signed-in account only.
//! Made in the browser only, with the rest of Settings (see `crate::lazy`).

use leptos::either::Either;
use leptos::prelude::*;

use crate::state::use_chat;

/// What the section knows.
#[derive(Clone, Debug, PartialEq)]
enum Keys {
    Loading,
    Loaded(Vec<crate::api::PasskeyData>),
}

/// The Passkeys section of Settings.
#[component]
pub(crate) fn Passkeys() -> impl IntoView {
    let chat = use_chat();
    let keys = RwSignal::new(Keys::Loading);
    let problem = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let load = move || {
        leptos::task::spawn_local(async move {
            match crate::client::passkeys().await {
                Ok(answer) => {
                    let _ = keys.try_set(Keys::Loaded(answer.passkeys));
                }
                Err(failure) => {
                    let _ = problem.try_set(Some(failure.message));
                }
            }
        });
    };
    load();
    // Adding one asks for a fresh proof (the password, or a passkey, from the last few
    // minutes): asked here when the server says so, then the adding goes on.
    let confirming = RwSignal::new(false);
    let password = RwSignal::new(String::new());
    let add_now = move || {
        busy.set(true);
        problem.set(None);
        leptos::task::spawn_local(async move {
            match webauthn::add().await {
                Ok(()) => {}
                Err(webauthn::Refused::Reauth) => {
                    let _ = confirming.try_set(true);
                }
                Err(webauthn::Refused::Said(message)) => {
                    let _ = problem.try_set(Some(message));
                }
            }
            let _ = busy.try_set(false);
            load();
        });
    };
    let add = move |_| add_now();
    // The password field takes the focus when it is asked for.
    let password_field = NodeRef::<leptos::html::Input>::new();
    Effect::new(move |_| {
        if let Some(field) = password_field.get() {
            let _ = field.focus();
        }
    });
    let proved = move |result: Result<(), String>| match result {
        Ok(()) => {
            let _ = confirming.try_set(false);
            let _ = password.try_set(String::new());
            add_now();
        }
        Err(message) => {
            let _ = problem.try_set(Some(message));
        }
    };
    let confirm = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        problem.set(None);
        let typed = password.get_untracked();
        leptos::task::spawn_local(async move {
            let result = crate::client::confirm(&typed)
                .await
                .map(drop)
                .map_err(|f| f.message);
            proved(result);
        });
    };
    let with_passkey = move |_| {
        problem.set(None);
        leptos::task::spawn_local(async move {
            proved(webauthn::confirm().await);
        });
    };
    // Removing asks first, in the row: which one, and what it ends.
    let removing = RwSignal::new(None::<String>);
    let remove = move |id: String| {
        removing.set(None);
        leptos::task::spawn_local(async move {
            match crate::client::remove_passkey(&id).await {
                Ok(_) => load(),
                Err(failure) => {
                    let _ = problem.try_set(Some(failure.message));
                }
            }
        });
    };
    // A new name, typed in the row (Enter keeps it, Escape leaves the old one).
    let renaming = RwSignal::new(None::<(String, String)>);
    let rename = move || {
        let Some((id, name)) = renaming.get_untracked() else {
            return;
        };
        renaming.set(None);
        leptos::task::spawn_local(async move {
            if let Err(failure) = crate::client::rename_passkey(&id, &name).await {
                let _ = problem.try_set(Some(failure.message));
            }
            load();
        });
    };
    // The question takes the focus when it is asked: Enter answers it, Tab reaches "Keep it".
    let removal_button = NodeRef::<leptos::html::Button>::new();
    Effect::new(move |_| {
        if let Some(button) = removal_button.get() {
            let _ = button.focus();
        }
    });
    let name_field = NodeRef::<leptos::html::Input>::new();
    Effect::new(move |_| {
        if let Some(field) = name_field.get() {
            let _ = field.focus();
            field.select();
        }
    });
    move || {
        chat.user.get().is_some().then(|| {
            view! {
                <section class="settings-section" aria-labelledby="passkeys-title">
                    <h3 id="passkeys-title">"Passkeys"</h3>
                    <p class="settings-note">
                        "Sign in with this device's lock instead of the password, which stays the way back in."
                    </p>
                    {move || match keys.get() {
                        Keys::Loading => view! { <p class="settings-note">"Loading…"</p> }.into_any(),
                        Keys::Loaded(list) if list.is_empty() => view! {
                            <p class="settings-empty">"None yet."</p>
                        }.into_any(),
                        Keys::Loaded(list) => view! {
                            <ul class="grants passkeys">
                                {list.into_iter().map(|key| {
                                    let clock = chat.clock.get_untracked();
                                    let id = key.id.clone();
                                    let used = key.last_used_at.map_or_else(
                                        || "not used yet".to_owned(),
                                        |at| format!("last used {}", crate::time::relative(at, clock)),
                                    );
                                    let when = format!(
                                        "Added {} · {used}",
                                        crate::time::relative(key.created_at, clock)
                                    );
                                    let name = key.name.clone();
                                    let in_use = key.in_use;
                                    let editing = {
                                        let id = id.clone();
                                        move || renaming.with(|r| r.as_ref().is_some_and(|(r, _)| *r == id))
                                    };
                                    let asking = {
                                        let id = id.clone();
                                        move || removing.with(|r| r.as_deref() == Some(id.as_str()))
                                    };
                                    let start_rename = {
                                        let (id, name) = (id.clone(), name.clone());
                                        move |_| renaming.set(Some((id.clone(), name.clone())))
                                    };
                                    let ask_removal = {
                                        let id = id.clone();
                                        move |_| removing.set(Some(id.clone()))
                                    };
                                    let confirm_removal = {
                                        let id = id.clone();
                                        move |_| remove(id.clone())
                                    };
                                    let title = name.clone();
                                    view! {
                                        <li class="grant passkey" data-in-use=in_use.then_some("")>
                                            <span class="grant-what">
                                                {let editing = editing.clone(); move || if editing() {
                                                    Either::Left(view! {
                                                        <input
                                                            class="rename-input"
                                                            aria-label="Passkey name"
                                                            maxlength="60"
                                                            node_ref=name_field
                                                            prop:value=move || renaming.with(|r| r.as_ref().map(|(_, n)| n.clone()).unwrap_or_default())
                                                            on:input=move |ev| {
                                                                let typed = event_target_value(&ev);
                                                                renaming.update(|r| if let Some((_, n)) = r { *n = typed });
                                                            }
                                                            on:keydown=move |ev| {
                                                                if ev.key() == "Enter" {
                                                                    ev.prevent_default();
                                                                    rename();
                                                                } else if ev.key() == "Escape" {
                                                                    // Only the field's Escape: Settings stays open.
                                                                    ev.stop_propagation();
                                                                    renaming.set(None);
                                                                }
                                                            }
                                                            on:blur=move |_| rename()
                                                        />
                                                    })
                                                } else {
                                                    Either::Right(view! {
                                                        <span class="share-title">
                                                            {title.clone()}
                                                            {in_use.then(|| view! { <span class="this-device">" · this browser signed in with it"</span> })}
                                                        </span>
                                                    })
                                                }}
                                                <span class="grant-scope">{when}</span>
                                            </span>
                                            <button type="button" aria-label=format!("Rename {name}") on:click=start_rename>
                                                "Rename"
                                            </button>
                                            <button type="button" aria-label=format!("Remove {name}") on:click=ask_removal>
                                                "Remove"
                                            </button>
                                            {let name = name.clone(); move || asking().then(|| view! {
                                                <div class="confirm-removal" role="group" aria-label=format!("Remove {name}?")>
                                                    <p>
                                                        {format!("Remove “{name}”? It will no longer sign you in. ")}
                                                        {if in_use {
                                                            "This browser signed in with it and will be signed out."
                                                        } else {
                                                            "Your password still does."
                                                        }}
                                                    </p>
                                                    <button type="button" class="settings-action danger-action" node_ref=removal_button on:click=confirm_removal.clone()>
                                                        "Remove passkey"
                                                    </button>
                                                    <button type="button" class="settings-action" on:click=move |_| removing.set(None)>
                                                        "Keep it"
                                                    </button>
                                                </div>
                                            })}
                                        </li>
                                    }
                                }).collect_view()}
                            </ul>
                        }.into_any(),
                    }}
                    {move || confirming.get().then(|| {
                        let has_keys = keys.with(|k| matches!(k, Keys::Loaded(list) if !list.is_empty()));
                        view! {
                            <form class="reauth" on:submit=confirm aria-label="Confirm it is you">
                                <p>"Confirm it is you: a passkey lasts, so adding one asks for your password again."</p>
                                <label>
                                    "Password"
                                    <input
                                        type="password"
                                        autocomplete="current-password"
                                        required
                                        node_ref=password_field
                                        prop:value=move || password.get()
                                        on:input=move |ev| password.set(event_target_value(&ev))
                                    />
                                </label>
                                <button type="submit" class="settings-action">"Confirm"</button>
                                {has_keys.then(|| view! {
                                    <button type="button" class="settings-action" on:click=with_passkey>
                                        "Use a passkey"
                                    </button>
                                })}
                                <button type="button" class="settings-action" on:click=move |_| confirming.set(false)>
                                    "Cancel"
                                </button>
                            </form>
                        }
                    })}
                    {move || problem.get().map(|p| view! { <p class="settings-problem" role="alert">{p}</p> })}
                    <button type="button" class="settings-action" disabled=move || busy.get() || confirming.get() on:click=add>
                        {move || if busy.get() { "Adding…" } else { "Add a passkey" }}
                    </button>
                </section>
            }
        })
    }
}

mod webauthn {
    use js_sys::{Function, Object, Reflect, JSON};
    use wasm_bindgen::{JsCast as _, JsValue};
    use wasm_bindgen_futures::JsFuture;

    fn get(target: &JsValue, key: &str) -> JsValue {
        Reflect::get(target, &key.into()).unwrap_or(JsValue::UNDEFINED)
    }

    /// What to tell the reader of a failure of the browser's dialog.
    fn said(error: &JsValue) -> String {
        match get(error, "name").as_string().as_deref() {
            Some("NotAllowedError") => "No passkey was made (the dialog was closed).".to_owned(),
            Some("InvalidStateError") => "This device has a passkey of yours already.".to_owned(),
            _ => format!(
                "The browser did not make a passkey: {}",
                get(error, "message").as_string().unwrap_or_default()
            ),
        }
    }

    /// The two ceremonies the browser's `navigator.credentials` holds.
    #[derive(Clone, Copy)]
    enum Ceremony {
        /// `create`: a new passkey.
        Make,
        /// `get`: a passkey answers a challenge.
        Use,
    }

    /// The browser's authenticator takes part in a ceremony with the server's options; the
    /// credential it answers, in its JSON form.
    async fn with_authenticator(
        ceremony: Ceremony,
        options: &serde_json::Value,
    ) -> Result<serde_json::Value, String> {
        let (parser, method) = match ceremony {
            Ceremony::Make => ("parseCreationOptionsFromJSON", "create"),
            Ceremony::Use => ("parseRequestOptionsFromJSON", "get"),
        };
        let unable = || "This browser cannot use passkeys.".to_owned();
        let window = web_sys::window().ok_or("no window")?;
        let class = get(&window, "PublicKeyCredential");
        let parse = get(&class, parser)
            .dyn_into::<Function>()
            .map_err(|_| unable())?;
        let json = serde_json::to_string(&options["publicKey"]).map_err(|e| e.to_string())?;
        let json = JSON::parse(&json).map_err(|_| "unreadable options".to_owned())?;
        let public_key = parse.call1(&class, &json).map_err(|e| said(&e))?;
        let request = Object::new();
        let _ = Reflect::set(&request, &"publicKey".into(), &public_key);
        let credentials = get(&window.navigator(), "credentials");
        let call = get(&credentials, method)
            .dyn_into::<Function>()
            .map_err(|_| unable())?;
        let promise = call
            .call1(&credentials, &request)
            .map_err(|e| said(&e))?
            .dyn_into::<js_sys::Promise>()
            .map_err(|_| "no answer".to_owned())?;
        let credential = JsFuture::from(promise).await.map_err(|e| said(&e))?;
        let to_json = get(&credential, "toJSON")
            .dyn_into::<Function>()
            .map_err(|_| unable())?;
        let value = to_json.call0(&credential).map_err(|e| said(&e))?;
        let text = JSON::stringify(&value)
            .ok()
            .and_then(|s| s.as_string())
            .ok_or("unreadable credential")?;
        serde_json::from_str(&text).map_err(|e| e.to_string())
    }

    /// Why a passkey was not added.
    pub(super) enum Refused {
        /// The server asks for a fresh proof first (403 `reauth`).
        Reauth,
        /// What to tell the reader.
        Said(String),
    }

    /// Adds a passkey: the server's options, the browser's dialog, the server keeps it.
    pub(super) async fn add() -> Result<(), Refused> {
        let start = crate::client::passkey_start().await.map_err(|f| {
            if f.reauth {
                Refused::Reauth
            } else {
                Refused::Said(f.message)
            }
        })?;
        let credential = with_authenticator(Ceremony::Make, &start.options)
            .await
            .map_err(Refused::Said)?;
        let body = crate::api::PasskeyFinishBody {
            ceremony: start.ceremony,
            credential,
            name: None,
        };
        crate::client::passkey_finish(&body)
            .await
            .map(drop)
            .map_err(|f| Refused::Said(f.message))
    }

    /// A passkey of the account answers: the fresh proof, instead of the password.
    pub(super) async fn confirm() -> Result<(), String> {
        let start = crate::client::passkey_sign_in_start()
            .await
            .map_err(|f| f.message)?;
        let credential = with_authenticator(Ceremony::Use, &start.options).await?;
        let body = crate::api::PasskeyFinishBody {
            ceremony: start.ceremony,
            credential,
            name: None,
        };
        crate::client::confirm_passkey(&body)
            .await
            .map(drop)
            .map_err(|f| f.message)
    }
}
