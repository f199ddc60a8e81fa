//! A file an agent made and handed over whole in its journal (an `artifact_reference` that
//! carries its `content`), as a download: the way to open what it made where the agent keeps
//! no files on this server.

use app::api::ArtifactQuery;
use axum::extract::State;
use axum::response::Response;
use serde_json::Value;

use crate::auth::{owned_run, Viewer};
use crate::error::{ApiError, ApiQuery};
use crate::AppState;

/// `GET /api/artifact?run_id=&seq=`: the file of the journal row `seq` of one of the viewer's
/// runs, as an attachment (never shown as a page). 404 for a run that is not theirs, a row
/// that is no artifact, or an artifact the agent did not hand over.
pub async fn download(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiQuery(q): ApiQuery<ArtifactQuery>,
) -> Result<Response, ApiError> {
    owned_run(&state, &viewer, &q.run_id).await?;
    let row = state
        .store
        .events(&q.run_id, q.seq.saturating_sub(1), Some(q.seq), 1)
        .await?
        .into_iter()
        .find(|row| row.seq == q.seq && row.kind == "artifact_reference")
        .ok_or_else(|| ApiError::not_found("artifact"))?;
    let content = row
        .payload
        .get("content")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            ApiError::not_found("artifact").with(
                "reason",
                "The agent keeps this file: it did not hand it over.",
            )
        })?;
    let path = row
        .payload
        .get("path")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let name = super::attachments::clean_name(path.rsplit('/').next().unwrap_or_default());
    Ok(super::attachments::served(
        content.as_bytes().to_vec(),
        "text/plain; charset=utf-8",
        "attachment",
        &name,
    ))
}
