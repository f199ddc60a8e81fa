//! Settings' account sections: where the account is signed in (each browser with when, from
//! where and how; "Sign out" on each, "Sign out everywhere"), and what it keeps (its
//! conversations, links and files against its quota). Shown to a signed-in account; made in
//! the browser only, with the rest of Settings (see `crate::lazy`).

use leptos::prelude::*;

use crate::api::{SignInData, StorageData};
use crate::state::use_chat;

/// What a section knows.
#[derive(Clone, Debug, PartialEq)]
enum Known<T> {
    Loading,
    Loaded(T),
    Failed(String),
}

/// The Signed-in devices section.
#[component]
pub(crate) fn SignIns() -> impl IntoView {
    let chat = use_chat();
    let list = RwSignal::new(Known::<Vec<SignInData>>::Loading);
    let load = move || {
        leptos::task::spawn_local(async move {
            let loaded = match crate::client::sign_ins().await {
                Ok(answer) => Known::Loaded(answer.sign_ins),
                Err(failure) => Known::Failed(failure.message),
            };
            let _ = list.try_set(loaded);
        });
    };
    load();
    let end = move |sign_in: SignInData| {
        leptos::task::spawn_local(async move {
            match crate::client::end_sign_in(&sign_in.id).await {
                // This browser's own: signed out here too.
                Ok(_) if sign_in.current => crate::components::signed_out(chat),
                Ok(_) => load(),
                Err(failure) => {
                    let _ = list.try_set(Known::Failed(failure.message));
                }
            }
        });
    };
    let everywhere = move |_| {
        leptos::task::spawn_local(async move {
            match crate::client::end_sign_ins().await {
                Ok(_) => crate::components::signed_out(chat),
                Err(failure) => {
                    let _ = list.try_set(Known::Failed(failure.message));
                }
            }
        });
    };
    move || {
        chat.user.get().is_some().then(|| {
            view! {
                <section class="settings-section" aria-labelledby="sign-ins-title">
                    <h3 id="sign-ins-title">"Signed-in devices"</h3>
                    <p class="settings-note">
                        "Every browser signed in to your account. Sign out one you do not know, "
                        "or all of them, this one too."
                    </p>
                    {move || match list.get() {
                        Known::Loading => view! { <p class="settings-note">"Loading…"</p> }.into_any(),
                        Known::Failed(message) => view! {
                            <p class="settings-problem" role="alert">{message}</p>
                        }.into_any(),
                        Known::Loaded(sign_ins) => view! {
                            <ul class="grants sign-ins">
                                {sign_ins.into_iter().map(|sign_in| {
                                    let clock = chat.clock.get_untracked();
                                    let how = sign_in.passkey.as_ref().map_or_else(
                                        || "with the password".to_owned(),
                                        |name| format!("with the passkey “{name}”"),
                                    );
                                    let detail = format!(
                                        "Signed in {} from {} {how} · seen {}",
                                        crate::time::relative(sign_in.created_at, clock),
                                        sign_in.ip,
                                        crate::time::relative(sign_in.last_seen_at, clock),
                                    );
                                    let label = if sign_in.current {
                                        "Sign out this device".to_owned()
                                    } else {
                                        format!("Sign out {}", sign_in.device)
                                    };
                                    let current = sign_in.current;
                                    let device = sign_in.device.clone();
                                    view! {
                                        <li class="grant sign-in" data-current=current.then_some("")>
                                            <span class="grant-what">
                                                <span class="share-title">
                                                    {device}
                                                    {current.then(|| view! { <span class="this-device">" · this device"</span> })}
                                                </span>
                                                <span class="grant-scope">{detail}</span>
                                            </span>
                                            <button type="button" aria-label=label on:click=move |_| end(sign_in.clone())>
                                                "Sign out"
                                            </button>
                                        </li>
                                    }
                                }).collect_view()}
                            </ul>
                        }.into_any(),
                    }}
                    <button type="button" class="settings-action danger-action" on:click=everywhere>
                        "Sign out everywhere"
                    </button>
                </section>
            }
        })
    }
}

/// The Storage section: what the account keeps, against its quota.
#[component]
pub(crate) fn Storage() -> impl IntoView {
    let kept = RwSignal::new(Known::<StorageData>::Loading);
    leptos::task::spawn_local(async move {
        let loaded = match crate::client::storage().await {
            Ok(storage) => Known::Loaded(storage),
            Err(failure) => Known::Failed(failure.message),
        };
        let _ = kept.try_set(loaded);
    });
    view! {
        <section class="settings-section" aria-labelledby="storage-title">
            <h3 id="storage-title">"Storage"</h3>
            {move || match kept.get() {
                Known::Loading => view! { <p class="settings-note">"Loading…"</p> }.into_any(),
                Known::Failed(message) => view! {
                    <p class="settings-problem" role="alert">{message}</p>
                }.into_any(),
                Known::Loaded(s) => {
                    let used = s.conversations + s.shares + s.files;
                    let size = crate::api::file_size;
                    let percent = used.saturating_mul(100).checked_div(s.quota).map_or(100, |p| p.min(100));
                    let full = used >= s.quota;
                    view! {
                        <p class="settings-note storage-total">
                            {format!("{} of {} used", size(used), size(s.quota))}
                        </p>
                        <meter
                            class="storage-meter"
                            min="0"
                            max=s.quota.to_string()
                            value=used.min(s.quota).to_string()
                            high=(s.quota / 10 * 9).to_string()
                            aria-label=format!("Storage used: {percent}%")
                        ></meter>
                        <p class="settings-note">
                            {format!(
                                "Conversations {} · shared links {} · files {}",
                                size(s.conversations),
                                size(s.shares),
                                size(s.files)
                            )}
                        </p>
                        {full.then(|| view! {
                            <p class="settings-problem" role="alert">
                                "Your storage is full: new messages, imports, copies, links and files wait "
                                "until you delete some."
                            </p>
                        })}
                    }.into_any()
                }
            }}
        </section>
    }
}
