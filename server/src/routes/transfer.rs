//! Conversations written whole: an import of a JSONL export, and a copy of a conversation.

use app::api::{DuplicateBody, ImportQuery, Transferred};
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::Json;

use crate::auth::{owned_session, Viewer};
use crate::error::{ApiError, ApiJson, ApiQuery};
use crate::limits::MAX_IMPORT_BYTES;
use crate::store::Session;
use crate::AppState;

/// Where the viewer's transfers write: their account, within its storage.
fn target<'a>(state: &AppState, viewer: &'a Viewer) -> crate::transfer::Target<'a> {
    crate::transfer::Target {
        owner: viewer.owner(),
        quota: state.limits.max_storage_per_user,
        now: crate::clock::now(),
    }
}

fn too_large() -> ApiError {
    ApiError::too_large(format!(
        "the file is larger than {}, the most an import may hold",
        app::api::file_size(MAX_IMPORT_BYTES as u64)
    ))
    .with("limit", "max_import_bytes")
}

/// `POST /api/session/import?title=`, a JSONL export as the body: a new conversation of the
/// viewer with every branch of the file, every id new. 400 names the line at fault; 413 past
/// the size limit. Nothing is written unless all of it is.
pub async fn import(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiQuery(q): ApiQuery<ImportQuery>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Transferred<Session>>, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_IMPORT_BYTES) {
        return Err(too_large());
    }
    // An import holds its file in memory while it is read and written: one of the few
    // transfers an account (and the server) may have going at once.
    let _transfer = match state.transfers.transfer(viewer.owner().unwrap_or_default()) {
        Ok(permit) => permit,
        Err(refused) => {
            super::unread::discard(body, MAX_IMPORT_BYTES, state.limits.import_wait).await;
            return Err(refused.into());
        }
    };
    // The file arrives within a while: a trickle holds no place of the server's for long.
    let wait = state.limits.import_wait;
    let bytes = tokio::time::timeout(wait, axum::body::to_bytes(body, MAX_IMPORT_BYTES))
        .await
        .map_err(|_| {
            ApiError::request_timeout(format!(
                "the file took longer than {} s to arrive: try again",
                wait.as_secs()
            ))
            .with("limit", "import_wait")
        })?
        .map_err(|_| too_large())?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| ApiError::bad_request(format!("the file is not UTF-8 text ({e})")))?;
    let imported = crate::transfer::import(
        &state.store,
        target(&state, &viewer),
        text,
        q.title.as_deref(),
    )
    .await?;
    Ok(Json(Transferred {
        session: imported.session,
        attachments_left_out: imported.attachments_left_out,
    }))
}

/// `POST /api/session/duplicate` `{session_id, all?}`: a copy of one of the viewer's
/// conversations, the branch it shows or (`all`) every branch, as a new conversation.
pub async fn duplicate(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<DuplicateBody>,
) -> Result<Json<Transferred<Session>>, ApiError> {
    let session = owned_session(&state, &viewer, &body.session_id).await?;
    // A copy holds the conversation's export in memory as an import holds its file.
    let _transfer = state
        .transfers
        .transfer(viewer.owner().unwrap_or_default())?;
    let copied =
        crate::transfer::duplicate(&state.store, target(&state, &viewer), &session, body.all)
            .await?;
    Ok(Json(Transferred {
        session: copied.session,
        attachments_left_out: copied.attachments_left_out,
    }))
}
