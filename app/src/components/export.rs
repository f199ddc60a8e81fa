use leptos::prelude::*;

use super::menu::Menu;
use super::FilesButton;
use crate::state::use_chat;

/// The header's menu, for a conversation that is stored: its branch shown as Markdown, or its
/// journal as JSONL (downloaded from the server), or a read-only link to it.
#[component]
pub(crate) fn ExportMenu() -> impl IntoView {
    let chat = use_chat();
    let export = move |format: &'static str| {
        move || {
            chat.session_id.get().map(|session_id| {
                let query = crate::api::ExportQuery {
                    session_id,
                    format: Some(format.to_owned()),
                };
                crate::base::href(&crate::api::url(crate::api::paths::SESSION_EXPORT, &query))
            })
        }
    };
    // A link to the conversation being read, from where it is read (on a phone, without
    // opening the drawer).
    let share = move |_| {
        #[cfg(feature = "hydrate")]
        if let Some(session_id) = chat.session_id.get_untracked() {
            super::share(chat, session_id);
        }
    };
    let menu = move || {
        chat.session_id.with(Option::is_some).then(|| {
            view! {
                <Menu label="Share or export".to_owned() class="export-menu">
                    <a role="menuitem" href=export("md") download="">"Export Markdown"</a>
                    <a role="menuitem" href=export("jsonl") download="">"Export journal (JSONL)"</a>
                    <button type="button" role="menuitem" on:click=share>"Share a read-only link"</button>
                </Menu>
            }
        })
    };
    // The workspace's Files sit beside it, where the agent keeps files.
    view! {
        <FilesButton />
        {menu}
    }
}
