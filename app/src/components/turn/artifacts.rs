//! The files a turn made, under its answer: each opens in the Files panel where the agent
//! keeps files here, or downloads where it handed the file over whole, or says where it is.

use leptos::either::EitherOf3;
use leptos::prelude::*;

use crate::api::ArtifactRef;
use crate::state::use_chat;

/// The verb of what was done to a file.
fn verb(action: &str) -> &'static str {
    match action {
        "created" | "create" | "written" => "Created",
        "updated" | "modified" | "edited" => "Updated",
        "deleted" | "removed" => "Deleted",
        _ => "Made",
    }
}

/// The list of the turn's files (nothing when it made none).
#[component]
pub(super) fn TurnFiles(
    /// The files, as the turn says them.
    files: Memo<Vec<ArtifactRef>>,
    /// The turn's run (a handed-over file is downloaded from its journal).
    run_id: String,
) -> impl IntoView {
    let chat = use_chat();
    move || {
        let list = files.get();
        (!list.is_empty()).then(|| {
            let run_id = run_id.clone();
            view! {
                <ul class="turn-files" aria-label="Files this turn made">
                    {list.into_iter().map(|file| {
                        let gone = verb(&file.action) == "Deleted";
                        let open = if chat.workspace.get_untracked() && !gone {
                            let path = file.path.clone();
                            EitherOf3::A(view! {
                                <button
                                    type="button"
                                    class="text-button"
                                    on:click=move |_| chat.files_at.set(Some(crate::state::FilesAt::file(&path)))
                                >
                                    "Open in Files"
                                </button>
                            })
                        } else if file.handed_over && !gone {
                            let query = crate::api::ArtifactQuery {
                                run_id: run_id.clone(),
                                seq: file.seq,
                            };
                            let href = crate::base::href(&crate::api::url(crate::api::paths::ARTIFACT, &query));
                            EitherOf3::B(view! {
                                <a class="text-button" href=href download="">"Download"</a>
                            })
                        } else {
                            EitherOf3::C(view! {
                                <span class="turn-file-note">"kept by the agent"</span>
                            })
                        };
                        view! {
                            <li class="turn-file">
                                <span class="turn-file-what">
                                    {verb(&file.action)}" "<code>{file.path.clone()}</code>
                                </span>
                                {open}
                            </li>
                        }
                    }).collect_view()}
                </ul>
            }
        })
    }
}
