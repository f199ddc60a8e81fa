//! The agent's workspace in view: the header's Files button opens a panel (on a desktop the
//! right side, its width dragged from its edge; on a phone a sheet from the bottom) that lists
//! the account's files folder by folder, previews text (coloured by its language), Markdown
//! (rendered) and images, and downloads a file. Read-only. A tool row that read or wrote a
//! file opens the panel at it. What the panel shows comes with its first use (see
//! [`crate::lazy`]).

use leptos::prelude::*;

use crate::state::{use_chat, FilesAt};

/// The header's Files button, where the agent keeps files here.
#[component]
pub(crate) fn FilesButton() -> impl IntoView {
    let chat = use_chat();
    let toggle = move |_| {
        chat.files_at.update(|at| {
            *at = match at {
                Some(_) => None,
                None => Some(FilesAt::default()),
            }
        })
    };
    move || {
        chat.workspace.get().then(|| {
            view! {
                <button
                    type="button"
                    class="text-button files-button"
                    aria-controls="files-panel"
                    aria-expanded=move || if chat.files_at.with(Option::is_some) { "true" } else { "false" }
                    on:click=toggle
                >
                    "Files"
                </button>
            }
        })
    }
}

/// The Files panel: its head (title, close) is the page's; its list and preview are made when
/// it opens.
#[component]
pub(crate) fn FilesPanel() -> impl IntoView {
    let chat = use_chat();
    let body = NodeRef::<leptos::html::Div>::new();
    let close_button = NodeRef::<leptos::html::Button>::new();
    let status = RwSignal::new(None::<String>);
    // The panel's width on a desktop, dragged from its left edge.
    let width = RwSignal::new(380.0_f64);
    #[cfg(feature = "hydrate")]
    {
        let owner = Owner::current().expect("a component has an owner");
        let slot = crate::lazy::Slot::new();
        Effect::new(move |was_open: Option<bool>| {
            let open = chat.files_at.with(Option::is_some);
            if let (true, Some(body)) = (open && was_open != Some(true), body.get()) {
                status.set(Some("Loading…".into()));
                slot.show(body_part(owner.clone(), body.into()), move |made| {
                    let came = made.is_ok();
                    let _ = status.try_set(match made {
                        Ok(()) => None,
                        Err(_) => Some(crate::lazy::unavailable_message(
                            "The files could not be loaded",
                        )),
                    });
                    // The keyboard goes with what opened: into the panel (Escape closes it),
                    // once it is shown.
                    if came {
                        request_animation_frame(move || {
                            if let Some(button) = close_button.get_untracked() {
                                let _ = button.focus();
                            }
                        });
                    }
                });
            } else if !open {
                slot.clear();
            }
            open
        });
    }
    let close = move || chat.files_at.set(None);
    let drag = move |ev: leptos::ev::PointerEvent| {
        #[cfg(feature = "hydrate")]
        {
            use wasm_bindgen::JsCast as _;
            if let Some(handle) = ev
                .target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            {
                let _ = handle.set_pointer_capture(ev.pointer_id());
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = ev;
    };
    let dragging = move |ev: leptos::ev::PointerEvent| {
        if ev.buttons() & 1 == 1 {
            #[cfg(feature = "hydrate")]
            if let Some(w) = web_sys::window().and_then(|w| w.inner_width().ok()?.as_f64()) {
                width.set((w - f64::from(ev.client_x())).clamp(280.0, w * 0.7));
            }
        }
    };
    view! {
        <aside
            id="files-panel"
            class="files-panel"
            aria-labelledby="files-title"
            hidden=move || chat.files_at.with(Option::is_none) || status.with(Option::is_some)
            style:width=move || format!("{}px", width.get())
            on:keydown=move |ev| {
                if ev.key() == "Escape" {
                    close();
                }
            }
        >
            <div
                class="files-resize"
                role="separator"
                aria-orientation="vertical"
                aria-label="Resize the files panel"
                on:pointerdown=drag
                on:pointermove=dragging
            ></div>
            <div class="files-head">
                <h2 id="files-title">"Files"</h2>
                <button type="button" class="icon-button" aria-label="Close files" node_ref=close_button on:click=move |_| close()>"✕"</button>
            </div>
            {move || status.get().map(|s| view! { <p class="files-note">{s}</p> })}
            <div class="files-body" node_ref=body></div>
        </aside>
    }
}

#[cfg(feature = "hydrate")]
crate::lazy::split_off!(
    files_view,
    fn body_part(owner: Owner, parent: web_sys::Element) -> crate::lazy::Mounter {
        Box::new(move || crate::lazy::mount(&owner, &parent, body_view))
    }
);

/// What a file's preview shows.
#[cfg(feature = "hydrate")]
#[derive(Clone, Debug, PartialEq)]
enum Preview {
    Loading,
    /// Text, as HTML (coloured, or escaped).
    Text(String),
    /// Markdown, rendered.
    Markdown(String),
    Image,
    /// Nothing to show: why.
    Nothing(String),
}

/// The largest file previewed, in bytes (a larger one is downloaded).
#[cfg(feature = "hydrate")]
const PREVIEW_LIMIT: u64 = 512 * 1024;

#[cfg(feature = "hydrate")]
fn kind_of(path: &str) -> &'static str {
    let ext = path
        .rsplit_once('.')
        .map_or("", |(_, e)| e)
        .to_ascii_lowercase();
    match ext.as_str() {
        "png" | "jpg" | "jpeg" | "gif" | "webp" => "image",
        "md" | "markdown" => "markdown",
        "zip" | "gz" | "tar" | "pdf" | "exe" | "bin" | "so" | "dylib" | "wasm" | "ico" | "svg"
        | "mp3" | "mp4" | "mov" | "woff" | "woff2" | "ttf" | "sqlite" | "db" => "binary",
        _ => "text",
    }
}

/// The list of a directory and the preview of a file, following `files_at`.
#[cfg(feature = "hydrate")]
fn body_view() -> impl IntoView {
    use crate::api::WorkspaceListing;
    let chat = use_chat();
    let listing = RwSignal::new(None::<Result<WorkspaceListing, String>>);
    let preview = RwSignal::new(None::<Preview>);
    // The directory listed, and the file shown (a newer choice wins over an older load).
    Effect::new(move |listed: Option<Option<String>>| {
        let at = chat.files_at.get()?;
        if listed.flatten().as_deref() != Some(at.dir.as_str()) {
            listing.set(None);
            let dir = at.dir.clone();
            leptos::task::spawn_local(async move {
                let loaded = crate::client::workspace(&dir).await.map_err(|f| f.message);
                if chat
                    .files_at
                    .with_untracked(|a| a.as_ref().is_some_and(|a| a.dir == dir))
                {
                    let _ = listing.try_set(Some(loaded));
                }
            });
        }
        match at.file.clone() {
            None => preview.set(None),
            Some(file) => {
                preview.set(Some(Preview::Loading));
                let still = move |file: &str| {
                    chat.files_at.with_untracked(|a| {
                        a.as_ref().and_then(|a| a.file.as_deref()) == Some(file)
                    })
                };
                match kind_of(&file) {
                    "image" => preview.set(Some(Preview::Image)),
                    "binary" => preview.set(Some(Preview::Nothing(
                        "No preview for this kind of file.".into(),
                    ))),
                    kind => {
                        let markdown = kind == "markdown";
                        leptos::task::spawn_local(async move {
                            let shown = match crate::client::workspace_text(&file).await {
                                Err(f) => Preview::Nothing(f.message),
                                Ok(text) if text.len() as u64 > PREVIEW_LIMIT => Preview::Nothing(
                                    "Too large to preview here: download it.".into(),
                                ),
                                Ok(text) if markdown => {
                                    #[cfg(feature = "split")]
                                    let html = crate::markdown::render_later(text.clone())
                                        .await
                                        .unwrap_or_else(|| crate::markdown::plain(&text));
                                    #[cfg(not(feature = "split"))]
                                    let html = crate::markdown::render(&text);
                                    Preview::Markdown(html)
                                }
                                Ok(text) => {
                                    let escaped = crate::markdown::escape(&text);
                                    if still(&file) {
                                        let _ = preview.try_set(Some(Preview::Text(escaped)));
                                    }
                                    match crate::markdown::color_later(text, file.clone()).await {
                                        Some(coloured) => Preview::Text(coloured),
                                        None => return,
                                    }
                                }
                            };
                            if still(&file) {
                                let _ = preview.try_set(Some(shown));
                            }
                        });
                    }
                }
            }
        }
        Some(at.dir)
    });
    let open_dir = move |dir: String| chat.files_at.set(Some(FilesAt { dir, file: None }));
    let crumbs = move || {
        let dir = chat
            .files_at
            .with(|a| a.as_ref().map(|a| a.dir.clone()).unwrap_or_default());
        let mut crumbs = vec![("Workspace".to_owned(), String::new())];
        let mut so_far = String::new();
        for part in dir.split('/').filter(|p| !p.is_empty()) {
            if !so_far.is_empty() {
                so_far.push('/');
            }
            so_far.push_str(part);
            crumbs.push((part.to_owned(), so_far.clone()));
        }
        crumbs
    };
    view! {
        <nav class="files-crumbs" aria-label="Folder">
            {move || crumbs().into_iter().map(|(name, dir)| view! {
                <button type="button" class="text-button files-crumb" on:click=move |_| open_dir(dir.clone())>{name}</button>
            }).collect_view()}
        </nav>
        {move || match listing.get() {
            None => view! { <p class="files-note">"Loading…"</p> }.into_any(),
            Some(Err(problem)) => view! { <p class="files-note" role="alert">{problem}</p> }.into_any(),
            Some(Ok(list)) if list.entries.is_empty() => view! { <p class="files-note">"Nothing here yet."</p> }.into_any(),
            Some(Ok(list)) => {
                let dir = list.path.clone();
                view! {
                    <ul class="files-list">
                        {list.entries.into_iter().map(|entry| {
                            let path = entry.path.clone();
                            let dir = dir.clone();
                            let current = {
                                let path = path.clone();
                                move || chat.files_at.with(|a| a.as_ref().and_then(|a| a.file.as_deref()) == Some(path.as_str()))
                            };
                            let open = move |_| {
                                if entry.dir {
                                    open_dir(path.clone());
                                } else {
                                    chat.files_at.set(Some(FilesAt { dir: dir.clone(), file: Some(path.clone()) }));
                                }
                            };
                            view! {
                                <li>
                                    <button
                                        type="button"
                                        class="files-entry"
                                        data-dir=if entry.dir { "true" } else { "false" }
                                        aria-current=move || if current() { "true" } else { "false" }
                                        on:click=open
                                    >
                                        <span class="files-name">{if entry.dir { format!("{}/", entry.name) } else { entry.name.clone() }}</span>
                                        {(!entry.dir).then(|| view! { <span class="files-size">{crate::api::file_size(entry.size)}</span> })}
                                    </button>
                                </li>
                            }
                        }).collect_view()}
                        {list.more.then(|| view! { <li class="files-note">"More files are here than the list shows."</li> })}
                    </ul>
                }.into_any()
            }
        }}
        {move || chat.files_at.get().and_then(|a| a.file).map(|file| {
            let name = file.rsplit('/').next().unwrap_or(&file).to_owned();
            let download = crate::client::workspace_file(&file, true);
            let src = crate::client::workspace_file(&file, false);
            let label = format!("Preview of {name}");
            view! {
                <section class="files-preview" aria-label=label>
                    <div class="files-preview-head">
                        <span class="files-preview-name">{name.clone()}</span>
                        <a class="files-download" href=download download=name.clone()>"Download"</a>
                    </div>
                    {move || match preview.get() {
                        None | Some(Preview::Loading) => view! { <p class="files-note">"Loading…"</p> }.into_any(),
                        Some(Preview::Text(html)) => view! { <pre class="files-text" inner_html=html></pre> }.into_any(),
                        Some(Preview::Markdown(html)) => view! { <div class="prose files-markdown" inner_html=html></div> }.into_any(),
                        Some(Preview::Image) => view! { <img class="files-image" src=src.clone() alt="" /> }.into_any(),
                        Some(Preview::Nothing(why)) => view! { <p class="files-note">{why}</p> }.into_any(),
                    }}
                </section>
            }
        })}
    }
}
