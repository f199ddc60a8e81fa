//! Anchorage as an AG-UI agent (`POST /api/agui`, `GET /api/runs/{run_id}/agui`) and as an AI
//! SDK chat endpoint (`POST /api/ai-sdk/chat`, `GET /api/ai-sdk/chat/{id}/stream`).
//!
//! A client names its conversations itself (AG-UI's `threadId`, the AI SDK's chat `id`). A
//! name that is one of the caller's sessions is that session; any other name is a session of
//! the caller's own, made when first used, whose id is derived from the caller and the name:
//! two accounts using the same name never meet, and nobody reaches a session by naming it.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::stream::{open_run, respond_with, rows_page, Encoder, Following, Page};
use crate::auth::{owned_session, Viewer};
use crate::error::{ApiError, ApiJson};
use crate::hub::Frame;
use crate::protocols::agui_server::AguiEvents;
use crate::protocols::data_frame;
use crate::protocols::ui_stream::UiChunks;
use crate::store::{JournalRow, Session, Store, StoreError};
use crate::AppState;

/// The longest conversation name or message id accepted, in bytes.
const MAX_NAME_BYTES: usize = 128;

fn checked_name<'a>(what: &str, name: Option<&'a str>) -> Result<&'a str, ApiError> {
    match name.map(str::trim) {
        None | Some("") => Err(ApiError::bad_request(format!("{what} is required"))),
        Some(n) if n.len() > MAX_NAME_BYTES => Err(ApiError::bad_request(format!(
            "{what} is too long (the limit is {MAX_NAME_BYTES} bytes)"
        ))),
        Some(n) => Ok(n),
    }
}

/// The id of the session a client's conversation `name` is, for `owner`.
fn derived_session_id(owner: Option<&str>, name: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(b"anchorage thread\0");
    hash.update(owner.unwrap_or_default().as_bytes());
    hash.update(b"\0");
    hash.update(name.as_bytes());
    hex::encode(&hash.finalize()[..16])
}

/// The session a client's conversation `name` is for `viewer`; made when `create` (else
/// `None` when there is none yet).
async fn named_session(
    state: &AppState,
    viewer: &Viewer,
    name: &str,
    create: bool,
) -> Result<Option<Session>, ApiError> {
    for id in [name.to_owned(), derived_session_id(viewer.owner(), name)] {
        match owned_session(state, viewer, &id).await {
            Ok(session) => return Ok(Some(session)),
            Err(StoreError::NotFound) => {}
            Err(e) => return Err(e.into()),
        }
    }
    if !create {
        return Ok(None);
    }
    let id = derived_session_id(viewer.owner(), name);
    let session = state
        .store
        .create_session_as(&id, "New chat", viewer.owner(), crate::clock::now())
        .await?;
    if session.owner_id.as_deref() != viewer.owner() {
        return Err(ApiError::not_found("session"));
    }
    Ok(Some(session))
}

/// Starts a turn of `message` in `session` (the same `client_id` again answers the turn it
/// started); its run id.
async fn start_turn(
    state: &AppState,
    viewer: &Viewer,
    session: &Session,
    message: &str,
    client_id: Option<&str>,
) -> Result<String, ApiError> {
    let message = super::chat::checked_message(message)?;
    super::chat::check_running(state, viewer, &session.id, client_id).await?;
    let started = state
        .runner
        .start(
            &session.id,
            message,
            &[],
            client_id,
            Some(state.limits.max_runs_per_user),
        )
        .await?;
    Ok(started.run_id)
}

/// The text of a message's content: a string, or the text parts of a list of parts.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p["type"] == "text")
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

// ---- AG-UI ----

/// What `POST /api/agui` reads of a `RunAgentInput`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentInput {
    thread_id: Option<String>,
    run_id: Option<String>,
    #[serde(default)]
    messages: Vec<AguiMessage>,
}

/// A message of a `RunAgentInput`.
#[derive(Debug, Deserialize)]
pub struct AguiMessage {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    role: String,
    #[serde(default)]
    content: Value,
}

const AGUI_HEADERS: [(&str, &str); 3] = [
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),
];

/// A translation of journal rows into another protocol's frames.
trait Translation: Send {
    /// What opens the stream.
    fn opening(&mut self, out: &mut Vec<u8>);
    /// What one row becomes.
    fn row(&mut self, row: &JournalRow, out: &mut Vec<u8>);
}

/// A follower's encoder that translates each row.
struct ByRow<T>(T);

#[async_trait::async_trait]
impl<T: Translation> Encoder for ByRow<T> {
    fn opening(&mut self) -> Option<Bytes> {
        let mut out = Vec::new();
        self.0.opening(&mut out);
        Some(Bytes::from(out))
    }

    async fn page(
        &mut self,
        store: &dyn Store,
        run_id: &str,
        after: u64,
        up_to: Option<u64>,
    ) -> Result<Page, StoreError> {
        rows_page(store, run_id, after, up_to, |row, out| self.0.row(row, out)).await
    }

    fn frame(&mut self, frame: &Frame) -> Bytes {
        let mut out = Vec::new();
        self.0.row(&frame.row, &mut out);
        Bytes::from(out)
    }
}

impl Translation for AguiEvents {
    fn opening(&mut self, out: &mut Vec<u8>) {
        data_frame(&AguiEvents::opening(self), out);
    }

    fn row(&mut self, row: &JournalRow, out: &mut Vec<u8>) {
        for event in AguiEvents::row(self, row) {
            data_frame(&event, out);
        }
    }
}

/// `POST /api/agui`: runs the last user message of a `RunAgentInput` as a turn of the
/// session its `threadId` names (made when new) and streams it as AG-UI events. Sending the
/// same `runId` again follows the turn it started instead of starting another.
pub async fn agui_run(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(input): ApiJson<RunAgentInput>,
) -> Result<Response, ApiError> {
    let thread = checked_name("threadId", input.thread_id.as_deref())?.to_owned();
    let client_run = match input.run_id.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(_) => Some(checked_name("runId", input.run_id.as_deref())?.to_owned()),
    };
    let Some(last) = input.messages.iter().rev().find(|m| m.role == "user") else {
        return Err(ApiError::bad_request("messages holds no user message"));
    };
    let message = text_of(&last.content);
    if let Some(id) = &last.id {
        checked_name("messages[].id", Some(id.as_str()))?;
    }
    let session = named_session(&state, &viewer, &thread, true)
        .await?
        .ok_or_else(|| ApiError::not_found("session"))?;
    let client_id = client_run.as_deref().or(last.id.as_deref());
    let run_id = start_turn(&state, &viewer, &session, &message, client_id).await?;
    let (_, live) = open_run(&state, &viewer, &run_id).await?;
    let known_as = client_run.unwrap_or_else(|| run_id.clone());
    let encoder = ByRow(AguiEvents::new(thread, known_as, run_id.clone()));
    let from = Following {
        run_id,
        after: 0,
        live,
    };
    respond_with(state, &viewer, from, encoder, &AGUI_HEADERS)
}

/// `GET /api/runs/{run_id}/agui`: a run of the viewer's as AG-UI events, from its start
/// (whatever a client joining mid-run missed, then live) to its end.
pub async fn agui_follow(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(run_id): Path<String>,
) -> Result<Response, ApiError> {
    let (run, live) = open_run(&state, &viewer, &run_id).await?;
    let encoder = ByRow(AguiEvents::new(
        run.session_id.clone(),
        run.id.clone(),
        run.id.clone(),
    ));
    let from = Following {
        run_id: run.id,
        after: 0,
        live,
    };
    respond_with(state, &viewer, from, encoder, &AGUI_HEADERS)
}

// ---- AI SDK ----

/// What `POST /api/ai-sdk/chat` reads of the AI SDK's default chat transport's body.
#[derive(Debug, Deserialize)]
pub struct ChatRequest {
    id: Option<String>,
    #[serde(default)]
    messages: Vec<UiMessage>,
    #[serde(default)]
    trigger: Option<String>,
}

/// A `UIMessage`.
#[derive(Debug, Deserialize)]
pub struct UiMessage {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    role: String,
    #[serde(default)]
    parts: Value,
}

const UI_STREAM_HEADERS: [(&str, &str); 4] = [
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),
    ("x-vercel-ai-ui-message-stream", "v1"),
];

struct UiEncoder {
    chunks: UiChunks,
    session_id: String,
}

impl Translation for UiEncoder {
    fn opening(&mut self, out: &mut Vec<u8>) {
        data_frame(&self.chunks.opening(&self.session_id), out);
    }

    fn row(&mut self, row: &JournalRow, out: &mut Vec<u8>) {
        for chunk in self.chunks.row(row) {
            data_frame(&chunk, out);
        }
        if row.kind == anchor::EventKind::StreamEnd.name() {
            out.extend_from_slice(b"data: [DONE]\n\n");
        }
    }
}

fn ui_stream(
    state: AppState,
    viewer: &Viewer,
    session_id: String,
    run_id: String,
    live: Option<tokio::sync::broadcast::Receiver<std::sync::Arc<Frame>>>,
) -> Result<Response, ApiError> {
    let encoder = UiEncoder {
        chunks: UiChunks::new(run_id.clone()),
        session_id,
    };
    let from = Following {
        run_id,
        after: 0,
        live,
    };
    respond_with(state, viewer, from, ByRow(encoder), &UI_STREAM_HEADERS)
}

/// `POST /api/ai-sdk/chat`: sends the last user message of `messages` as a turn of the
/// session `id` names (made when new) and answers its UI message stream. `trigger:
/// "regenerate-message"` answers the last user message again instead.
pub async fn ai_sdk_chat(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<ChatRequest>,
) -> Result<Response, ApiError> {
    let name = checked_name("id", body.id.as_deref())?;
    let session = named_session(&state, &viewer, name, true)
        .await?
        .ok_or_else(|| ApiError::not_found("session"))?;
    let run_id = if body.trigger.as_deref() == Some("regenerate-message") {
        let runs = state.store.session_runs(&session.id).await?;
        let Some(last) = runs.last() else {
            return Err(ApiError::bad_request("there is no answer to regenerate"));
        };
        super::chat::check_running(&state, &viewer, &session.id, None).await?;
        state
            .runner
            .retry(&session.id, &last.id, Some(state.limits.max_runs_per_user))
            .await?
            .run_id
    } else {
        let Some(last) = body.messages.iter().rev().find(|m| m.role == "user") else {
            return Err(ApiError::bad_request("messages holds no user message"));
        };
        let message_id = match last.id.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(_) => Some(checked_name("messages[].id", last.id.as_deref())?),
        };
        let message = text_of(&last.parts);
        start_turn(&state, &viewer, &session, &message, message_id).await?
    };
    let (_, live) = open_run(&state, &viewer, &run_id).await?;
    ui_stream(state, &viewer, session.id, run_id, live)
}

/// `GET /api/ai-sdk/chat/{id}/stream`: the running turn of the session `id` names, from its
/// start; 204 when none runs (or there is no such conversation of the viewer's).
pub async fn ai_sdk_resume(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let name = checked_name("id", Some(name.as_str()))?;
    let Some(session) = named_session(&state, &viewer, name, false).await? else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    let Some(run_id) = session.active_run_id.clone() else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    let (run, live) = open_run(&state, &viewer, &run_id).await?;
    if !run.running {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    ui_stream(state, &viewer, session.id, run.id, live)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_name_is_a_different_session_for_each_account() {
        let a = derived_session_id(Some("alice"), "thread-1");
        assert_eq!(a, derived_session_id(Some("alice"), "thread-1"));
        assert_ne!(a, derived_session_id(Some("bob"), "thread-1"));
        assert_ne!(a, derived_session_id(None, "thread-1"));
        assert_ne!(a, derived_session_id(Some("alice"), "thread-2"));
        // No account and name run together into another's.
        assert_ne!(
            derived_session_id(Some("ab"), "c"),
            derived_session_id(Some("a"), "bc")
        );
        assert_eq!(a.len(), 32);
    }

    #[test]
    fn message_text_is_a_string_or_the_text_parts() {
        assert_eq!(text_of(&json!("hi")), "hi");
        assert_eq!(
            text_of(
                &json!([{"type": "text", "text": "a"}, {"type": "file", "url": "x"}, {"type": "text", "text": "b"}])
            ),
            "a\nb"
        );
        assert_eq!(text_of(&json!(null)), "");
    }
}
