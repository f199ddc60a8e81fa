//! The choice of model: what the provider offers, what a conversation asks for, and how much
//! of the model's context it uses.

use app::api::{ContextQuery, ContextUse, ModelBody, ModelChosen, ModelList, ModelsQuery};
use axum::extract::State;
use axum::Json;

use crate::auth::{owned_session, Viewer};
use crate::error::{ApiError, ApiJson, ApiQuery};
use crate::runtime::MAX_MODEL_ID_BYTES;
use crate::AppState;

/// The models offered: the provider's list with the default first when it does not list it
/// (a server may serve its model under another name than the one it is asked by).
fn offered(default: &str, listed: Vec<String>) -> Vec<app::api::ModelInfo> {
    let mut ids = listed;
    if !ids.iter().any(|id| id == default) {
        ids.insert(0, default.to_owned());
    }
    ids.iter().map(|id| app::api::ModelInfo::new(id)).collect()
}

/// `GET /api/models`: the models a conversation may ask for, and the default. A backend
/// with no choice answers `{"default": null, "models": []}`; a provider that cannot be
/// asked answers the default alone, with `error` saying why.
pub async fn list(
    State(state): State<AppState>,
    _viewer: Viewer,
    ApiQuery(query): ApiQuery<ModelsQuery>,
) -> Result<Json<ModelList>, ApiError> {
    let Some(default) = state.runner.default_model() else {
        return Ok(Json(ModelList {
            default: None,
            models: Vec::new(),
            error: None,
        }));
    };
    let (listed, error) = match state.runner.models(query.refresh).await {
        Ok(listed) => (listed, None),
        Err(error) => (Vec::new(), Some(error)),
    };
    Ok(Json(ModelList {
        models: offered(&default, listed),
        default: Some(default),
        error,
    }))
}

/// A model a conversation asks for: `None` for the default (empty or absent), else one the
/// provider lists (or the default). 400 for anything else, 502 when the list cannot be had.
pub(crate) async fn checked_model(
    state: &AppState,
    model: Option<&str>,
) -> Result<Option<String>, ApiError> {
    let Some(model) = model.map(str::trim).filter(|m| !m.is_empty()) else {
        return Ok(None);
    };
    let Some(default) = state.runner.default_model() else {
        return Err(ApiError::bad_request(
            "who answers here offers no choice of model",
        ));
    };
    if model.len() > MAX_MODEL_ID_BYTES {
        return Err(ApiError::bad_request(format!(
            "model is too long (the limit is {MAX_MODEL_ID_BYTES} bytes)"
        )));
    }
    if model == default {
        return Ok(Some(model.to_owned()));
    }
    match state.runner.models(false).await {
        Ok(listed) if listed.iter().any(|id| id == model) => Ok(Some(model.to_owned())),
        Ok(_) => Err(ApiError::bad_request(format!(
            "the provider offers no model named {model:?}"
        ))),
        Err(error) => Err(ApiError::upstream(error)),
    }
}

/// `POST /api/session/model`: the model the conversation's next turns ask for (turns already
/// answered keep theirs).
pub async fn choose(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<ModelBody>,
) -> Result<Json<ModelChosen>, ApiError> {
    owned_session(&state, &viewer, &body.session_id).await?;
    let model = checked_model(&state, body.model.as_deref()).await?;
    state
        .store
        .set_session_model(&body.session_id, model.as_deref())
        .await?;
    Ok(Json(ModelChosen { model }))
}

/// `GET /api/session/context?session_id=&draft_bytes=`: how much of the model's context the
/// conversation's next turn would use with a message of `draft_bytes` bytes (counted up to a
/// message's limit), and which of its earlier messages it would leave out; `window: null`
/// where the window is not known.
pub async fn context(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiQuery(query): ApiQuery<ContextQuery>,
) -> Result<Json<ContextUse>, ApiError> {
    let session = owned_session(&state, &viewer, &query.session_id).await?;
    let draft = usize::try_from(query.draft_bytes)
        .unwrap_or(usize::MAX)
        .min(crate::limits::MAX_MESSAGE_BYTES);
    Ok(Json(state.runner.context_use(&session, draft).await?))
}
