//! The caller's workspace, read-only: what the agent's tools wrote and read, as a list of a
//! directory and as a file's bytes. Each account sees only its own: the workspace is the
//! viewer's (`Runner::workspace_of`), and a path never leaves it.

use app::api::{WorkspaceFileQuery, WorkspaceListing, WorkspaceQuery};
use axum::extract::State;
use axum::response::Response;
use axum::Json;

use crate::auth::Viewer;
use crate::error::{ApiError, ApiQuery};
use crate::runtime::browse::{self, Refused};
use crate::runtime::tools::Workspace;
use crate::AppState;

/// The viewer's workspace; 404 with an agent that keeps no files here.
fn workspace(state: &AppState, viewer: &Viewer) -> Result<Workspace, ApiError> {
    match state.runner.workspace_of(viewer.owner()) {
        Some(Ok(workspace)) => Ok(workspace),
        Some(Err(why)) => Err(ApiError::not_found("workspace").with("reason", why)),
        None => Err(ApiError::not_found("workspace")
            .with("reason", "This agent keeps no files on this server.")),
    }
}

fn refusal(refused: Refused) -> ApiError {
    match refused {
        Refused::Missing(_) => ApiError::not_found("file"),
        Refused::Bad(why) => ApiError::bad_request(why),
        Refused::TooLarge(size) => ApiError::too_large(format!(
            "the file is {}, more than the {} a file may be to be shown or downloaded",
            app::api::file_size(size),
            app::api::file_size(browse::FILE_LIMIT)
        )),
    }
}

/// `GET /api/workspace?path=`: a directory's entries, directories first.
pub async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiQuery(q): ApiQuery<WorkspaceQuery>,
) -> Result<Json<WorkspaceListing>, ApiError> {
    let workspace = workspace(&state, &viewer)?;
    let rel = q.path.unwrap_or_default();
    let listing = tokio::task::spawn_blocking(move || browse::list(&workspace, &rel))
        .await
        .map_err(|e| ApiError::internal(&e))?
        .map_err(refusal)?;
    Ok(Json(listing))
}

/// `GET /api/workspace/file?path=&download=`: a file's bytes. Images are served as images and
/// UTF-8 text as plain text (never as a page of the site: no HTML, no script); anything else,
/// or any file asked for as a download, comes as an attachment.
pub async fn file(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiQuery(q): ApiQuery<WorkspaceFileQuery>,
) -> Result<Response, ApiError> {
    let workspace = workspace(&state, &viewer)?;
    let rel = q.path.clone();
    let (name, bytes) = tokio::task::spawn_blocking(move || browse::read(&workspace, &rel))
        .await
        .map_err(|e| ApiError::internal(&e))?
        .map_err(refusal)?;
    let shown = if bytes.is_empty() {
        Some("text/plain; charset=utf-8")
    } else {
        match super::attachments::sniff(&bytes) {
            Ok("text/plain") => Some("text/plain; charset=utf-8"),
            Ok(image) => Some(image),
            Err(_) => None,
        }
    };
    let mime = shown.unwrap_or("application/octet-stream");
    let disposition = if q.download || shown.is_none() {
        "attachment"
    } else {
        "inline"
    };
    Ok(super::attachments::served(bytes, mime, disposition, &name))
}
