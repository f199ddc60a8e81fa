//! Files attached to messages: the chips under the composer while a message is written, and
//! on the user's message once it is sent (images as small pictures, text files by name).

use leptos::prelude::*;

use crate::api::{file_size, AttachmentData};
use crate::state::{use_chat, FileState, PendingFile};

/// A fresh key for a composer chip.
#[cfg(feature = "hydrate")]
pub(crate) fn file_key() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Attaches `files` (picked, pasted or dropped): each shows at once as a chip that says how it
/// goes, and is uploaded. Past [`crate::api::MAX_ATTACHMENTS`] a file is refused on its chip.
/// The code that uploads comes with the first use (see [`crate::lazy`]); meanwhile the chips
/// say "uploading", so a message sent then waits for them like for any upload.
#[cfg(feature = "hydrate")]
pub(crate) fn attach(chat: crate::state::ChatState, files: &web_sys::FileList) {
    use crate::api::MAX_ATTACHMENTS;
    let session = chat.session_id.get_untracked();
    let mut to_upload = Vec::new();
    for i in 0..files.length() {
        let Some(file) = files.get(i) else { continue };
        let key = file_key();
        let taken = chat.files.with_untracked(|f| {
            f.iter()
                .filter(|p| !matches!(p.state, FileState::Failed(_)))
                .count()
        });
        let full = taken >= MAX_ATTACHMENTS;
        chat.files.update(|f| {
            f.push(PendingFile {
                key,
                name: file.name(),
                size: file.size() as u64,
                state: if full {
                    FileState::Failed(format!(
                        "A message can carry at most {MAX_ATTACHMENTS} files."
                    ))
                } else {
                    FileState::Uploading
                },
            });
        });
        if !full {
            to_upload.push((key, file));
        }
    }
    if to_upload.is_empty() {
        return;
    }
    leptos::task::spawn_local(async move {
        match uploader(chat, session).await {
            Ok(upload) => {
                for (key, file) in to_upload {
                    upload(key, file);
                }
            }
            Err(_) => {
                let problem = crate::lazy::unavailable_message("The file could not be attached");
                for (key, _) in to_upload {
                    settle(chat, key, FileState::Failed(problem.clone()));
                }
            }
        }
    });
}

#[cfg(feature = "hydrate")]
crate::lazy::split_off!(
    attaching,
    fn uploader(
        chat: crate::state::ChatState,
        session: Option<String>,
    ) -> Box<dyn Fn(u64, web_sys::File)> {
        Box::new(move |key, file| upload(chat, session.clone(), key, file))
    }
);

/// Uploads `file` to the conversation `session` (or for the next new one); its chip `key`
/// then says how it went.
#[cfg(feature = "hydrate")]
fn upload(chat: crate::state::ChatState, session: Option<String>, key: u64, file: web_sys::File) {
    leptos::task::spawn_local(async move {
        let state = match crate::client::upload(&file, session.as_deref()).await {
            Ok(answer) => FileState::Ready(answer.attachment),
            Err(e) if e.status == 0 => FileState::Failed("The server cannot be reached.".into()),
            Err(e) => FileState::Failed(sentence(&e.message)),
        };
        settle(chat, key, state);
    });
}

/// The chip `key` says `state` (removed meanwhile: nothing to update).
#[cfg(feature = "hydrate")]
fn settle(chat: crate::state::ChatState, key: u64, state: FileState) {
    let _ = chat.files.try_update(|f| {
        if let Some(p) = f.iter_mut().find(|p| p.key == key) {
            p.state = state;
        }
    });
}

/// What a drag of something over the conversation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Drag {
    Enter,
    Over,
    Leave,
    Drop,
}

/// Files dragged over the conversation: the composer shows it takes them while they are over
/// it (entering and leaving each element inside are counted, so moving across them does not
/// flicker), and a drop anywhere attaches them. Other drags (text, links) are left alone.
pub(crate) fn drag(chat: crate::state::ChatState, ev: &leptos::ev::DragEvent, what: Drag) {
    #[cfg(feature = "hydrate")]
    {
        let Some(data) = ev.data_transfer() else {
            return;
        };
        let types = data.types();
        if !(0..types.length()).any(|i| types.get(i).as_string().as_deref() == Some("Files")) {
            return;
        }
        match what {
            Drag::Enter => {
                ev.prevent_default();
                chat.drag_depth.update_value(|d| *d += 1);
                chat.dragging.set(true);
            }
            Drag::Over => {
                ev.prevent_default();
                data.set_drop_effect("copy");
                if !chat.dragging.get_untracked() {
                    chat.dragging.set(true);
                }
            }
            Drag::Leave => {
                chat.drag_depth.update_value(|d| *d = d.saturating_sub(1));
                if chat.drag_depth.get_value() == 0 {
                    chat.dragging.set(false);
                }
            }
            Drag::Drop => {
                ev.prevent_default();
                chat.drag_depth.set_value(0);
                chat.dragging.set(false);
                if let Some(files) = data.files() {
                    attach(chat, &files);
                    crate::document::focus_composer();
                }
            }
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (chat, ev, what);
}

/// The server's message as a sentence.
#[cfg(feature = "hydrate")]
fn sentence(message: &str) -> String {
    let mut chars = message.chars();
    let mut out: String = chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default();
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}

/// The files attached in the composer, each with a way to take it off.
#[component]
pub(crate) fn ComposerFiles() -> impl IntoView {
    let chat = use_chat();
    let any = Memo::new(move |_| chat.files.with(|f| !f.is_empty()));
    move || {
        any.get().then(|| {
            view! {
                <ul class="composer-files" aria-label="Attached files">
                    <For
                        each=move || chat.files.get()
                        key=|p| (p.key, p.state.clone())
                        let:file
                    >
                        <ComposerChip file=file />
                    </For>
                </ul>
            }
        })
    }
}

#[component]
fn ComposerChip(file: PendingFile) -> impl IntoView {
    let chat = use_chat();
    let key = file.key;
    let (status, failed) = match &file.state {
        FileState::Uploading => ("Uploading…".to_owned(), false),
        FileState::Ready(_) => (file_size(file.size), false),
        FileState::Failed(why) => (why.clone(), true),
    };
    let preview = file
        .ready()
        .filter(|a| a.is_image())
        .map(AttachmentData::url);
    let remove_label = format!("Remove {}", file.name);
    view! {
        <li
            class="file-chip composer-chip"
            class:failed=failed
            class:uploading=matches!(file.state, FileState::Uploading)
        >
            <FileIcon preview=preview name=file.name.clone() />
            <span class="file-text">
                <span class="file-name" title=file.name.clone()>{file.name.clone()}</span>
                <span class="file-status" role=failed.then_some("alert")>{status}</span>
            </span>
            <button
                type="button"
                class="file-remove"
                aria-label=remove_label
                on:click=move |_| chat.files.update(|f| f.retain(|p| p.key != key))
            >
                "×"
            </button>
        </li>
    }
}

/// An image's small picture, or a file's mark.
#[component]
fn FileIcon(preview: Option<String>, name: String) -> impl IntoView {
    match preview {
        Some(src) => view! {
            <img class="file-thumb" src=src alt=name width="40" height="40" />
        }
        .into_any(),
        None => {
            view! { <span class="file-thumb file-glyph" aria-hidden="true">"≡"</span> }.into_any()
        }
    }
}

/// The files a sent message carries: images as pictures, text files as chips; each opens
/// the file in a new tab.
#[component]
pub(crate) fn MessageFiles(files: Vec<AttachmentData>) -> impl IntoView {
    (!files.is_empty()).then(|| {
        view! {
            <ul class="message-files" aria-label="Attached files">
                {files
                    .into_iter()
                    .map(|a| {
                        let label = format!("{} ({})", a.name, file_size(a.size));
                        if a.is_image() {
                            view! {
                                <li class="message-image">
                                    <a href=a.url() target="_blank" rel="noopener" title=label.clone()>
                                        <img src=a.url() alt=a.name.clone() width="120" height="90" loading="lazy" />
                                    </a>
                                </li>
                            }
                            .into_any()
                        } else {
                            view! {
                                <li class="file-chip message-chip">
                                    <a href=a.url() target="_blank" rel="noopener" title=label>
                                        <span class="file-thumb file-glyph" aria-hidden="true">"≡"</span>
                                        <span class="file-text">
                                            <span class="file-name">{a.name.clone()}</span>
                                            <span class="file-status">{file_size(a.size)}</span>
                                        </span>
                                    </a>
                                </li>
                            }
                            .into_any()
                        }
                    })
                    .collect_view()}
            </ul>
        }
    })
}
