//! The chat API: start, cancel, queue, and the answers to approval and clarify requests.

use app::api::{
    ApprovalBody, BranchBody, Branched, Cancelled, ClarifyBody, EditBody, Queued, RunBody,
    SendBody, Started, Versions,
};
use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use crate::auth::{owned_run, owned_session, Viewer};
use crate::error::{ApiError, ApiJson};
use crate::runtime::ApprovalChoice;
use crate::store::StoreError;
use crate::AppState;

pub use crate::limits::MAX_MESSAGE_BYTES;

pub(crate) fn checked_message(message: &str) -> Result<&str, ApiError> {
    let message = checked_text(message)?;
    if message.is_empty() {
        return Err(ApiError::bad_request("message is empty"));
    }
    Ok(message)
}

/// The text of a message that may carry files instead (empty then).
fn checked_text(message: &str) -> Result<&str, ApiError> {
    if message.len() > MAX_MESSAGE_BYTES {
        return Err(ApiError::too_large(
            "message too large (the limit is 64 KiB)",
        ));
    }
    Ok(message.trim())
}

/// The text of a send and the files it carries, checked: text, files, or both.
async fn checked_send<'a>(
    state: &AppState,
    viewer: &Viewer,
    session_id: &str,
    body: &'a SendBody,
) -> Result<&'a str, ApiError> {
    if body.attachments.is_empty() {
        return checked_message(&body.message);
    }
    let message = checked_text(&body.message)?;
    super::attachments::checked(state, viewer, session_id, &body.attachments).await?;
    Ok(message)
}

/// The longest client id accepted, in bytes.
const MAX_CLIENT_ID_BYTES: usize = 128;

fn checked_client_id(client_id: Option<&str>) -> Result<Option<&str>, ApiError> {
    match client_id.map(str::trim) {
        None | Some("") => Ok(None),
        Some(id) if id.len() > MAX_CLIENT_ID_BYTES => Err(ApiError::bad_request(
            "client_id is too long (the limit is 128 bytes)",
        )),
        Some(id) => Ok(Some(id)),
    }
}

/// 413 when `viewer`'s storage is full (a new turn would add to it); 429 when `viewer` runs
/// as many turns as allowed, unless this send was made before (its retry answers the turn it
/// started, which is one of them).
pub(crate) async fn check_running(
    state: &AppState,
    viewer: &Viewer,
    session_id: &str,
    client_id: Option<&str>,
) -> Result<(), ApiError> {
    crate::storage::room(
        state.store.as_ref(),
        viewer.owner(),
        state.limits.max_storage_per_user,
        0,
    )
    .await?;
    let limit = state.limits.max_runs_per_user;
    if state.store.count_running(viewer.owner()).await? < limit {
        return Ok(());
    }
    if let Some(client_id) = client_id {
        let messages = state.store.messages(session_id).await?;
        if messages
            .iter()
            .any(|m| m.client_id.as_deref() == Some(client_id))
        {
            return Ok(());
        }
    }
    Err(StoreError::TooManyRunning { limit }.into())
}

/// What a start answers: the new turn, with the stored user message.
type StartedAnswer = Started<crate::store::Message>;

fn started_answer(started: crate::runner::Started) -> StartedAnswer {
    Started {
        session_id: started.session_id,
        run_id: started.run_id,
        stream_id: started.stream_id,
        turn_id: started.turn_id,
        user_message: started.user_message,
        duplicate: started.duplicate,
        model: started.model,
        versions: None,
    }
}

/// `POST /api/chat/start`: stores the user message and starts a run. The same `client_id`
/// again answers the run the first request started (a send retried after a lost answer).
pub async fn start(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<SendBody>,
) -> Result<Json<StartedAnswer>, ApiError> {
    let client_id = checked_client_id(body.client_id.as_deref())?;
    let session = owned_session(&state, &viewer, &body.session_id).await?;
    let message = sent_message(&state, &viewer, &session.id, &body, client_id, false).await?;
    let message = message.as_str();
    check_running(&state, &viewer, &body.session_id, client_id).await?;
    if body.model.is_some() {
        let model = super::models::checked_model(&state, body.model.as_deref()).await?;
        if model != session.model {
            state
                .store
                .set_session_model(&body.session_id, model.as_deref())
                .await?;
        }
    }
    let started = state
        .runner
        .start(
            &body.session_id,
            message,
            &body.attachments,
            client_id,
            Some(state.limits.max_runs_per_user),
        )
        .await?;
    Ok(Json(started_answer(started)))
}

/// The message a send carries, checked. A send retried with the same `client_id` after its
/// answer was lost no longer checks (its files went with the first request): it finds the
/// message that request sent, in the transcript or (`queued`) among the follow-ups waiting.
async fn sent_message(
    state: &AppState,
    viewer: &Viewer,
    session_id: &str,
    body: &SendBody,
    client_id: Option<&str>,
    queued: bool,
) -> Result<String, ApiError> {
    let refused = match checked_send(state, viewer, session_id, body).await {
        Ok(message) => return Ok(message.to_owned()),
        Err(e @ ApiError::BadRequest(_)) => e,
        Err(e) => return Err(e),
    };
    let Some(client_id) = client_id else {
        return Err(refused);
    };
    let sent = state
        .store
        .messages(session_id)
        .await?
        .into_iter()
        .find(|m| m.client_id.as_deref() == Some(client_id))
        .map(|m| m.content);
    if let Some(message) = sent {
        return Ok(message);
    }
    if queued {
        let waiting = state.store.queued_messages(session_id).await?;
        if let Some(q) = waiting
            .into_iter()
            .find(|q| q.client_id.as_deref() == Some(client_id))
        {
            return Ok(q.content);
        }
    }
    Err(refused)
}

/// What a retry or an edit answers: the start, with the new turn's versions.
async fn fork_json(
    state: &AppState,
    started: crate::runner::Started,
) -> Result<Json<StartedAnswer>, ApiError> {
    let count = state.store.versions(&started.run_id).await?.len().max(1);
    let count = u32::try_from(count).unwrap_or(u32::MAX);
    Ok(Json(Started {
        versions: Some(Versions {
            index: count,
            count,
        }),
        ..started_answer(started)
    }))
}

/// `POST /api/chat/retry`: answers the user message of `run_id` again, as a new version of
/// that turn (the session then shows it; the earlier version stays). 409 while a turn runs.
pub async fn retry(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<RunBody>,
) -> Result<Json<StartedAnswer>, ApiError> {
    let run = owned_run(&state, &viewer, &body.run_id).await?;
    check_running(&state, &viewer, &run.session_id, None).await?;
    let limit = Some(state.limits.max_runs_per_user);
    let started = state.runner.retry(&run.session_id, &run.id, limit).await?;
    fork_json(&state, started).await
}

/// `POST /api/chat/edit`: sends `message` in place of the user message of `run_id`; the
/// conversation forks there (the earlier version stays, beside it). 409 while a turn runs.
pub async fn edit(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<EditBody>,
) -> Result<Json<StartedAnswer>, ApiError> {
    let message = checked_message(&body.message)?;
    let client_id = checked_client_id(body.client_id.as_deref())?;
    let run = owned_run(&state, &viewer, &body.run_id).await?;
    check_running(&state, &viewer, &run.session_id, client_id).await?;
    let started = state
        .runner
        .edit(
            &run.session_id,
            &run.id,
            message,
            client_id,
            Some(state.limits.max_runs_per_user),
        )
        .await?;
    fork_json(&state, started).await
}

/// `POST /api/chat/branch`: the session shows another version of a turn, and below it the
/// newest turns that follow that version. 409 while a turn runs, 400 for a version that
/// does not exist.
pub async fn branch(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<BranchBody>,
) -> Result<Json<Branched>, ApiError> {
    let run = owned_run(&state, &viewer, &body.run_id).await?;
    let Some(version) = body.version else {
        // A link to a turn (a search hit): its branch, unless it is the one shown.
        let shown = state.store.branch(&run.session_id).await?;
        let changed = !shown.iter().any(|(r, _)| r.id == run.id);
        let head = if changed {
            state.store.show_branch(&run.session_id, &run.id).await?
        } else {
            shown.last().map(|(r, _)| r.id.clone()).unwrap_or_default()
        };
        return Ok(Json(Branched {
            ok: true,
            run_id: run.id,
            turn_id: run.turn_id,
            head_run_id: head,
            changed,
        }));
    };
    let versions = state.store.versions(&run.id).await?;
    let Some(chosen) = (version as usize)
        .checked_sub(1)
        .and_then(|i| versions.get(i))
    else {
        return Err(ApiError::bad_request(format!(
            "version must be between 1 and {}",
            versions.len()
        )));
    };
    let head = state.store.show_branch(&run.session_id, &chosen.id).await?;
    Ok(Json(Branched {
        ok: true,
        run_id: chosen.id.clone(),
        turn_id: chosen.turn_id.clone(),
        head_run_id: head,
        changed: true,
    }))
}

/// `POST /api/chat/cancel`: journals the cancellation and stops the agent (idempotent).
pub async fn cancel(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<RunBody>,
) -> Result<Json<Cancelled>, ApiError> {
    owned_run(&state, &viewer, &body.run_id).await?;
    let cancelled = state.runner.cancel(&body.run_id).await?;
    Ok(Json(Cancelled {
        ok: true,
        cancelled,
        run_id: body.run_id,
    }))
}

/// `POST /api/chat/queue`: a follow-up for when the session's run ends (started at once when
/// the session is idle). A `client_id` sent before finds what the first request did.
pub async fn queue(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<SendBody>,
) -> Result<Json<Queued<crate::store::QueuedMessage, crate::store::Message>>, ApiError> {
    let client_id = checked_client_id(body.client_id.as_deref())?;
    let session = owned_session(&state, &viewer, &body.session_id).await?;
    let message = sent_message(&state, &viewer, &session.id, &body, client_id, true).await?;
    let message = message.as_str();
    let started = |started: crate::runner::Started| {
        Json(Queued {
            queued: false,
            item: None,
            started: Some(started_answer(started)),
        })
    };
    // This message as a turn of its own, now.
    let start_now = || {
        let max_running = Some(state.limits.max_runs_per_user);
        state.runner.start(
            &session.id,
            message,
            &body.attachments,
            client_id,
            max_running,
        )
    };
    let waiting = state.store.queued_messages(&session.id).await?;
    if session.active_run_id.is_none() {
        check_running(&state, &viewer, &session.id, client_id).await?;
        // A retry of a follow-up queued before, whose turn ended since: that follow-up, not
        // a second one beside it (the queue worker may be about to start it too).
        let queued_before =
            client_id.and_then(|c| waiting.iter().find(|q| q.client_id.as_deref() == Some(c)));
        if let Some(queued) = queued_before {
            // It waited its turn: it takes the place of the one that ended.
            match state.runner.start_queued(queued, None).await {
                // Sent before: the answer of a retry.
                Ok(run) => {
                    return Ok(started(crate::runner::Started {
                        duplicate: true,
                        ..run
                    }))
                }
                // Started meanwhile: the start below answers the turn it became.
                Err(crate::runner::RunError::Store(
                    crate::store::StoreError::NotFound | crate::store::StoreError::Busy { .. },
                )) => {}
                Err(e) => return Err(e.into()),
            }
        }
        return Ok(started(start_now().await?));
    }
    let again =
        client_id.is_some_and(|c| waiting.iter().any(|q| q.client_id.as_deref() == Some(c)));
    if !again {
        crate::storage::room(
            state.store.as_ref(),
            viewer.owner(),
            state.limits.max_storage_per_user,
            0,
        )
        .await?;
    }
    let limit = state.limits.max_queued;
    if waiting.len() >= limit && !again {
        return Err(StoreError::QueueFull { limit }.into());
    }
    let item = crate::store::QueuedMessage {
        id: format!("q-{}", uuid::Uuid::new_v4().simple()),
        session_id: session.id.clone(),
        content: message.to_owned(),
        client_id: client_id.map(str::to_owned),
        created_at: crate::clock::now(),
        attachments: body.attachments.clone(),
    };
    let queued = match state.store.queue_message(&item, limit).await {
        Ok(queued) => queued,
        // Sent before and started since: the run it became.
        Err(crate::store::StoreError::Duplicate { .. }) => {
            return Ok(started(start_now().await?));
        }
        Err(e) => return Err(e.into()),
    };
    // The run may have ended between the check and the insert; then nobody would drain it.
    let session = state.store.session(&session.id).await?;
    if session.active_run_id.is_none() {
        if let Some(next) = state.store.next_queued(&session.id).await? {
            match state.runner.start_queued(&next, None).await {
                Ok(run) if next.id == queued.id => return Ok(started(run)),
                Ok(_) => {}
                // The queue worker started it meanwhile.
                Err(crate::runner::RunError::Store(
                    crate::store::StoreError::NotFound | crate::store::StoreError::Busy { .. },
                )) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(Json(Queued {
        queued: true,
        item: Some(queued),
        started: None,
    }))
}

/// `POST /api/approval/respond`: answers an approval request once.
pub async fn approval(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<ApprovalBody>,
) -> Result<Json<Value>, ApiError> {
    let choice: ApprovalChoice = serde_json::from_value(Value::String(body.choice.clone()))
        .map_err(|_| ApiError::bad_request("that is not an answer a card offers"))?;
    owned_run(&state, &viewer, &body.run_id).await?;
    // Only an answer the card offered: a permission is never wider than the card said.
    let asked = state.store.interactions(&body.run_id).await?;
    let offered = asked
        .iter()
        .find(|i| i.id == body.approval_id && i.kind == "approval")
        .and_then(|i| i.request["choices"].as_array())
        .is_none_or(|choices| {
            choices
                .iter()
                .any(|c| c.as_str() == Some(body.choice.as_str()))
        });
    if !offered {
        return Err(ApiError::bad_request(
            "that answer was not offered for this request",
        ));
    }
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

/// `POST /api/clarify/respond`: answers a clarify request once.
pub async fn clarify(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<ClarifyBody>,
) -> Result<Json<Value>, ApiError> {
    if body.response.len() > MAX_MESSAGE_BYTES {
        return Err(ApiError::too_large(
            "response too large (the limit is 64 KiB)",
        ));
    }
    owned_run(&state, &viewer, &body.run_id).await?;
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
