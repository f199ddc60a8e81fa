//! Standing permissions ("this session", "always"), as Settings lists and revokes them.

use app::api::{Done, GrantList, RevokeBody};
use axum::extract::State;
use axum::Json;

use crate::auth::Viewer;
use crate::error::{ApiError, ApiJson};
use crate::AppState;

/// The most grants listed.
const GRANTS_LIMIT: u32 = 200;

/// `GET /api/grants`: the viewer's standing permissions, newest first.
pub async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
) -> Result<Json<GrantList<crate::store::Grant>>, ApiError> {
    let grants = state.store.grants(viewer.owner(), GRANTS_LIMIT).await?;
    Ok(Json(GrantList { grants }))
}

/// `POST /api/grants/revoke`: the next such action asks again. 404 for a grant that is not
/// the viewer's (or no longer exists).
pub async fn revoke(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<RevokeBody>,
) -> Result<Json<Done>, ApiError> {
    state
        .store
        .revoke_grant(viewer.owner(), &body.id)
        .await
        .map_err(|e| match e {
            crate::store::StoreError::NotFound => ApiError::not_found("grant"),
            e => e.into(),
        })?;
    Ok(Json(Done { ok: true }))
}
