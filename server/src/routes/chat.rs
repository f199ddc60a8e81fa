//! The chat API: start, cancel, queue, and the answers to approval and clarify requests.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::{ApiError, ApiJson};
use crate::journal;
use crate::runtime::ApprovalChoice;
use crate::AppState;

/// The largest message accepted, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

fn checked_message(message: &str) -> Result<&str, ApiError> {
    if message.len() > MAX_MESSAGE_BYTES {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "message too large (the limit is 64 KiB)",
        ));
    }
    let message = message.trim();
    if message.is_empty() {
        return Err(ApiError::bad_request("message is empty"));
    }
    Ok(message)
}

/// `POST /api/chat/start` body.
#[derive(Debug, Deserialize)]
pub struct StartBody {
    session_id: String,
    message: String,
}

/// `POST /api/chat/start`: stores the user message and starts a run.
pub async fn start(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<StartBody>,
) -> Result<Json<Value>, ApiError> {
    let message = checked_message(&body.message)?;
    let started = state.runner.start(&body.session_id, message).await?;
    Ok(Json(json!({
        "session_id": started.session_id,
        "run_id": started.run_id,
        "stream_id": started.stream_id,
        "turn_id": started.turn_id,
        "user_message": started.user_message,
    })))
}

/// A body naming a run.
#[derive(Debug, Deserialize)]
pub struct RunBody {
    run_id: String,
}

/// `POST /api/chat/cancel`: journals the cancellation and stops the agent (idempotent).
pub async fn cancel(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<RunBody>,
) -> Result<Json<Value>, ApiError> {
    let cancelled = state.runner.cancel(&body.run_id).await?;
    Ok(Json(
        json!({"ok": true, "cancelled": cancelled, "run_id": body.run_id}),
    ))
}

/// `POST /api/chat/queue` body.
#[derive(Debug, Deserialize)]
pub struct QueueBody {
    session_id: String,
    message: String,
}

/// `POST /api/chat/queue`: a follow-up for when the session's run ends (started at once when
/// the session is idle).
pub async fn queue(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<QueueBody>,
) -> Result<Json<Value>, ApiError> {
    let message = checked_message(&body.message)?;
    let session = state.store.session(&body.session_id).await?;
    if session.active_run_id.is_none() {
        let started = state.runner.start(&session.id, message).await?;
        return Ok(Json(json!({"queued": false, "started": {
            "session_id": started.session_id, "run_id": started.run_id, "stream_id": started.stream_id, "turn_id": started.turn_id,
        }})));
    }
    let id = format!("q-{}", uuid::Uuid::new_v4().simple());
    let queued = state
        .store
        .queue_message(&session.id, &id, message, journal::now())
        .await?;
    // The run may have ended between the check and the insert; then nobody would drain it.
    let session = state.store.session(&session.id).await?;
    if session.active_run_id.is_none() {
        if let Some(next) = state.store.pop_queued(&session.id).await? {
            let started = state.runner.start(&session.id, &next.content).await?;
            return Ok(Json(json!({"queued": false, "started": {
                "session_id": started.session_id, "run_id": started.run_id, "stream_id": started.stream_id, "turn_id": started.turn_id,
            }})));
        }
    }
    Ok(Json(json!({"queued": true, "item": queued})))
}

/// `POST /api/approval/respond` body.
#[derive(Debug, Deserialize)]
pub struct ApprovalBody {
    run_id: String,
    approval_id: String,
    choice: String,
}

/// `POST /api/approval/respond`: answers an approval request once.
pub async fn approval(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<ApprovalBody>,
) -> Result<Json<Value>, ApiError> {
    let choice: ApprovalChoice = serde_json::from_value(Value::String(body.choice.clone()))
        .map_err(|_| ApiError::bad_request("choice must be one of once, session, always, deny"))?;
    let interaction = state
        .runner
        .respond(
            &body.run_id,
            &body.approval_id,
            "approval",
            json!({"choice": choice}),
        )
        .await?;
    Ok(Json(json!({"ok": true, "interaction": interaction})))
}

/// `POST /api/clarify/respond` body.
#[derive(Debug, Deserialize)]
pub struct ClarifyBody {
    run_id: String,
    clarify_id: String,
    response: String,
}

/// `POST /api/clarify/respond`: answers a clarify request once.
pub async fn clarify(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<ClarifyBody>,
) -> Result<Json<Value>, ApiError> {
    if body.response.len() > MAX_MESSAGE_BYTES {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "response too large (the limit is 64 KiB)",
        ));
    }
    let interaction = state
        .runner
        .respond(
            &body.run_id,
            &body.clarify_id,
            "clarify",
            json!({"response": body.response.trim()}),
        )
        .await?;
    Ok(Json(json!({"ok": true, "interaction": interaction})))
}
