//! What the viewer's account keeps, as Settings shows it beside its quota.

use app::api::StorageData;
use axum::extract::State;
use axum::Json;

use crate::auth::Viewer;
use crate::error::ApiError;
use crate::AppState;

/// `GET /api/storage`: the viewer's conversations, links' snapshots and files, in bytes,
/// and the quota they share.
pub async fn get(
    State(state): State<AppState>,
    viewer: Viewer,
) -> Result<Json<StorageData>, ApiError> {
    let used = state
        .store
        .storage(viewer.owner(), crate::clock::now())
        .await?;
    Ok(Json(StorageData {
        conversations: used.conversations,
        shares: used.shares,
        files: used.files,
        quota: state.limits.max_storage_per_user,
    }))
}
