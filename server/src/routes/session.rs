//! The session API: create, list, read, rename, delete, search, export.

use crate::store::Session;
use app::api::{
    ExportQuery, ListQuery, NewSessionBody, PlaceBody, RenameBody, SearchQuery, SessionAnswer,
    SessionBody, SessionList, SessionQuery,
};
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::auth::{owned_session, Viewer};
use crate::error::{ok_true, ApiError, ApiJson, ApiQuery};
use crate::store::{Shelf, TitleSource};
use crate::AppState;

/// The longest title accepted, in characters.
const MAX_TITLE_CHARS: usize = 200;

fn checked_title(title: &str) -> Result<String, ApiError> {
    let title = title.trim();
    if title.is_empty() {
        return Err(ApiError::bad_request("title is empty"));
    }
    if title.chars().count() > MAX_TITLE_CHARS {
        return Err(ApiError::bad_request(
            "title is too long (the limit is 200 characters)",
        ));
    }
    Ok(title.to_owned())
}

/// `POST /api/session/new` (the body, `{title?}`, may be empty).
pub async fn create(
    State(state): State<AppState>,
    viewer: Viewer,
    body: axum::body::Bytes,
) -> Result<Json<SessionAnswer<Session>>, ApiError> {
    let body: NewSessionBody = if body.iter().all(u8::is_ascii_whitespace) {
        NewSessionBody::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::bad_request(format!("malformed JSON: {e}")))?
    };
    let title = match body.title {
        Some(t) => checked_title(&t)?,
        None => "New chat".to_owned(),
    };
    let session = state
        .store
        .create_session(&title, viewer.owner(), crate::clock::now())
        .await?;
    Ok(Json(SessionAnswer { session }))
}

/// The most sessions one answer lists (a list or search results); `more` says when others
/// follow.
pub const LIST_LIMIT: u32 = 200;

/// `GET /api/sessions`: newest first, a page at a time.
pub async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Json<SessionList<Session>>, ApiError> {
    let limit = q.limit.unwrap_or(LIST_LIMIT).clamp(1, LIST_LIMIT);
    let mut sessions = state
        .store
        .sessions_page(
            viewer.owner(),
            q.offset.unwrap_or(0),
            limit + 1,
            q.archived.unwrap_or(false),
        )
        .await?;
    let more = sessions.len() > limit as usize;
    sessions.truncate(limit as usize);
    Ok(Json(SessionList { sessions, more }))
}

/// `GET /api/session?session_id=S`: the session with its messages, active run, queued
/// follow-ups and open approval/clarify requests.
pub async fn get(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiQuery(q): ApiQuery<SessionQuery>,
) -> Result<Json<Value>, ApiError> {
    let session = owned_session(&state, &viewer, &q.session_id)
        .await
        .map_err(|e| match e {
            crate::store::StoreError::NotFound => ApiError::not_found("session"),
            e => e.into(),
        })?;
    let messages = state.store.messages(&session.id).await?;
    let queued = state.store.queued_messages(&session.id).await?;
    let pending = match &session.active_run_id {
        Some(run_id) => state
            .store
            .interactions(run_id)
            .await?
            .into_iter()
            .filter(|i| i.status == "pending")
            .collect(),
        None => Vec::new(),
    };
    let mut body = serde_json::to_value(&session).unwrap_or_default();
    body["messages"] = json!(messages);
    body["queued"] = json!(queued);
    body["pending_interactions"] = json!(pending);
    Ok(Json(json!({ "session": body })))
}

/// `POST /api/session/rename`: a manual title, which the agent never replaces.
pub async fn rename(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<RenameBody>,
) -> Result<Json<SessionAnswer<Session>>, ApiError> {
    let title = checked_title(&body.title)?;
    owned_session(&state, &viewer, &body.session_id).await?;
    let session = state
        .store
        .rename_session(
            &body.session_id,
            &title,
            TitleSource::Manual,
            crate::clock::now(),
        )
        .await?;
    Ok(Json(SessionAnswer { session }))
}

/// How long a deleted session can be brought back before it is removed with its journal.
pub const UNDO_WINDOW: std::time::Duration = std::time::Duration::from_secs(600);

/// `POST /api/session/delete`: gone at once, removed with its journal after
/// [`UNDO_WINDOW`] (`/api/session/restore` brings it back until then); refused (409) while a
/// run is active.
pub async fn delete(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<SessionBody>,
) -> Result<Json<Value>, ApiError> {
    owned_session(&state, &viewer, &body.session_id).await?;
    state
        .store
        .delete_session(&body.session_id, crate::clock::now())
        .await?;
    Ok(ok_true())
}

/// `POST /api/session/restore`: Undo of a delete, within [`UNDO_WINDOW`]. 404 for a session
/// that is not the viewer's, not deleted, or removed already.
pub async fn restore(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<SessionBody>,
) -> Result<Json<SessionAnswer<Session>>, ApiError> {
    let session = state
        .store
        .restore_session(viewer.owner(), &body.session_id)
        .await?;
    // Back in the account's storage, it must fit there again (deleting made room, which
    // something else may have taken meanwhile): if it does not, it goes back to the bin.
    if let Err(full) = crate::storage::room(
        state.store.as_ref(),
        viewer.owner(),
        state.limits.max_storage_per_user,
        0,
    )
    .await
    {
        state
            .store
            .delete_session(&session.id, crate::clock::now())
            .await?;
        return Err(full.into());
    }
    Ok(Json(SessionAnswer { session }))
}

/// `POST /api/session/pin`: to the top of the list, or back among the others.
pub async fn pin(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<PlaceBody>,
) -> Result<Json<SessionAnswer<Session>>, ApiError> {
    shelve(&state, &viewer, &body, Shelf::Pinned).await
}

/// `POST /api/session/archive`: out of the list (`GET /api/sessions?archived=true` lists
/// them, search finds them), or back into it.
pub async fn archive(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<PlaceBody>,
) -> Result<Json<SessionAnswer<Session>>, ApiError> {
    shelve(&state, &viewer, &body, Shelf::Archived).await
}

async fn shelve(
    state: &AppState,
    viewer: &Viewer,
    body: &PlaceBody,
    shelf: Shelf,
) -> Result<Json<SessionAnswer<Session>>, ApiError> {
    owned_session(state, viewer, &body.session_id).await?;
    let session = state
        .store
        .shelve(&body.session_id, shelf, body.on, crate::clock::now())
        .await?;
    Ok(Json(SessionAnswer { session }))
}

/// `GET /api/sessions/search?q=`: titles and message text.
pub async fn search(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiQuery(q): ApiQuery<SearchQuery>,
) -> Result<Json<SessionList<Session>>, ApiError> {
    if q.q.trim().is_empty() {
        return list(State(state), viewer, ApiQuery(ListQuery::default())).await;
    }
    if q.q.len() > 512 {
        return Err(ApiError::bad_request("query too long"));
    }
    let mut sessions = state
        .store
        .search_sessions(viewer.owner(), &q.q, LIST_LIMIT + 1)
        .await?;
    let more = sessions.len() > LIST_LIMIT as usize;
    sessions.truncate(LIST_LIMIT as usize);
    // The store cut each hit's message to a window around the match: a line of it.
    for session in &mut sessions {
        session.snippet = session
            .snippet
            .take()
            .map(|text| app::snippet::snippet(&text, &q.q));
    }
    Ok(Json(SessionList { sessions, more }))
}

/// `GET /api/session/export?session_id=S&format=md|jsonl`: the transcript as Markdown, or the
/// journal of every run as JSON Lines.
pub async fn export(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiQuery(q): ApiQuery<ExportQuery>,
) -> Result<Response, ApiError> {
    let session = owned_session(&state, &viewer, &q.session_id).await?;
    let format = q.format.as_deref().unwrap_or("md");
    let (body, content_type, extension) = match format {
        "md" => (
            Body::from(crate::transfer::markdown::markdown(&*state.store, &session).await?),
            "text/markdown; charset=utf-8",
            "md",
        ),
        "jsonl" => (
            {
                let runs = state.store.session_runs(&session.id).await?;
                let lines = crate::transfer::export::lines(
                    std::sync::Arc::clone(&state.store),
                    &session,
                    runs,
                );
                // Fused: a layer around the body (compression) may ask again once it has
                // ended.
                Body::from_stream(futures::StreamExt::fuse(lines))
            },
            "application/x-ndjson; charset=utf-8",
            "jsonl",
        ),
        other => {
            return Err(ApiError::bad_request(format!(
                "unknown format {other:?} (use md or jsonl)"
            )))
        }
    };
    let mut response = (StatusCode::OK, body).into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(value) = HeaderValue::from_str(&attachment(&session, extension)) {
        h.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

/// The civil date (UTC) of a time in seconds since the epoch, as `YYYY-MM-DD`.
pub(crate) fn date_of(seconds: f64) -> String {
    // Days to a proleptic Gregorian date (Howard Hinnant's days_from_civil, inverted).
    let days = (seconds / 86_400.0).floor() as i64 + 719_468;
    let era = days.div_euclid(146_097);
    let doe = days.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// `Content-Disposition` of an export: the conversation's title and date, as a readable UTF-8
/// name (`filename*`) and an ASCII one for older clients.
fn attachment(session: &crate::store::Session, extension: &str) -> String {
    let date = date_of(session.updated_at);
    // Characters no file system takes (and controls) become spaces; runs of spaces one.
    let title: String = session
        .title
        .chars()
        .map(|c| {
            if c.is_control() || "/\\:*?\"<>|".contains(c) {
                ' '
            } else {
                c
            }
        })
        .collect();
    let mut title = title.split_whitespace().collect::<Vec<_>>().join(" ");
    title = title.trim_matches('.').trim().chars().take(80).collect();
    if title.is_empty() {
        title = "Conversation".to_owned();
    }
    let readable = format!("{title} {date}.{extension}");
    let mut ascii = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            ascii.push(c.to_ascii_lowercase());
        } else if !ascii.is_empty() && !ascii.ends_with('-') {
            ascii.push('-');
        }
    }
    let ascii = ascii.trim_end_matches('-');
    let ascii = if ascii.is_empty() {
        "conversation"
    } else {
        ascii
    };
    let encoded = encode_rfc5987(&readable);
    format!("attachment; filename=\"{ascii}-{date}.{extension}\"; filename*=UTF-8''{encoded}")
}

/// A file name as the value of `filename*=UTF-8''…` (RFC 5987: bytes beyond the unreserved
/// ones percent-encoded).
pub(crate) fn encode_rfc5987(name: &str) -> String {
    let mut encoded = String::new();
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::{attachment, date_of};
    use crate::store::TitleSource;

    #[test]
    fn dates_are_civil_utc_days() {
        assert_eq!(date_of(0.0), "1970-01-01");
        assert_eq!(date_of(1_796_083_200.0), "2026-12-01");
        assert_eq!(date_of(951_868_740.0), "2000-02-29");
        assert_eq!(date_of(951_868_740.0 + 60.0), "2000-03-01");
    }

    fn session(title: &str) -> crate::store::Session {
        crate::store::Session {
            id: "abc".into(),
            title: title.into(),
            title_source: TitleSource::Manual,
            created_at: 0.0,
            updated_at: 1_796_083_200.0,
            active_run_id: None,
            owner_id: None,
            model: None,
            pinned: false,
            pinned_at: None,
            archived: false,
            hit_turn_id: None,
            snippet: None,
            bytes: 0,
        }
    }

    #[test]
    fn exports_are_named_after_the_title_and_date() {
        assert_eq!(
            attachment(&session("Fix: the cache / v2"), "md"),
            "attachment; filename=\"fix-the-cache-v2-2026-12-01.md\"; \
             filename*=UTF-8''Fix%20the%20cache%20v2%202026-12-01.md"
        );
        let unicode = attachment(&session("Résumé \"draft\""), "jsonl");
        assert!(
            unicode.starts_with("attachment; filename=\"r-sum-draft-2026-12-01.jsonl\""),
            "{unicode}"
        );
        assert!(
            unicode.ends_with("UTF-8''R%C3%A9sum%C3%A9%20draft%202026-12-01.jsonl"),
            "{unicode}"
        );
        assert!(
            attachment(&session("../.."), "md").contains("filename=\"conversation-2026-12-01.md\""),
            "nothing but dots is no name"
        );
    }
}
