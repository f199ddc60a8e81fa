//! Read-only links to a conversation: its owner makes one of the branch shown (a snapshot of
//! that moment: the messages, the answers, a line on the work of each turn; never the bytes
//! of attachments, the workspace's paths, approvals or the journal), lists them in Settings
//! and revokes each. Whoever has the link reads the snapshot, signed in or not, as a page the
//! server renders with no script at all.

use anchor::TerminalState;
use app::api::{paths, Done, RevokeBody, ShareAnswer, ShareBody, ShareData, ShareList};
use app::markdown;
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};

use crate::auth::{owned_session, Viewer};
use crate::error::{ApiError, ApiJson};
use crate::store::{Role, Share, Store, StoreError};
use crate::AppState;

/// The most share links an account keeps (429 past it: revoke one first).
pub const MAX_SHARES: u32 = 100;
/// The largest snapshot kept (413 past it): a conversation longer than this is exported.
pub const MAX_SNAPSHOT_BYTES: usize = 2 * 1024 * 1024;

/// What a link shows: the conversation as it was shared.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Snapshot {
    turns: Vec<SharedTurn>,
}

/// One exchange: what was asked, what came back.
#[derive(Debug, Default, Serialize, Deserialize)]
struct SharedTurn {
    /// The user's message.
    user: String,
    /// The names of the files it carried (not their bytes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    files: Vec<String>,
    /// The answer (Markdown): the final one, or what was streamed of a turn that did not
    /// complete; empty while the turn still ran.
    answer: String,
    /// One line on the work that led to the answer ("4 steps · 2 tool calls").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    work: Option<String>,
    /// How the turn ended, when not completed ("Stopped", "Still running when shared").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ending: Option<String>,
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The snapshot of the branch `session_id` shows now.
async fn snapshot(store: &dyn Store, session_id: &str) -> Result<Snapshot, StoreError> {
    let messages = match store.branch(session_id).await?.last() {
        Some((last, _)) => store.history(&last.id).await?,
        None => Vec::new(),
    };
    let runs: Vec<String> = messages.iter().filter_map(|m| m.run_id.clone()).collect();
    // A turn that settled a moment ago may not have its snapshot yet: made here, or the
    // share would keep no line on its work.
    let folded = crate::snapshots::settled(store, &runs)
        .await
        .unwrap_or_default();
    let mut turns: Vec<SharedTurn> = Vec::new();
    for m in messages {
        match m.role {
            Role::User => turns.push(SharedTurn {
                user: m.content,
                files: m.attachments.into_iter().map(|a| a.name).collect(),
                ending: Some("Still running when shared".to_owned()),
                ..SharedTurn::default()
            }),
            Role::Assistant => {
                let Some(turn) = turns.last_mut() else {
                    continue;
                };
                turn.answer = m.content;
                turn.ending = match m.terminal_state {
                    Some(TerminalState::Completed) => None,
                    Some(state) => Some(app::terminal_label(state).to_owned()),
                    None => turn.ending.take(),
                };
                let summary = m.run_id.as_ref().and_then(|run| folded.get(run));
                turn.work = summary.filter(|s| s.steps > 0).map(|s| {
                    let mut line = plural(s.steps, "step", "steps");
                    if s.stream.1 > 0 {
                        line.push_str(" · ");
                        line.push_str(&plural(s.stream.1, "tool call", "tool calls"));
                    }
                    line
                });
            }
        }
    }
    Ok(Snapshot { turns })
}

fn data_of(share: &Share) -> ShareData {
    ShareData {
        id: share.id.clone(),
        path: paths::share_page(&share.token),
        title: share.title.clone(),
        created_at: share.created_at,
    }
}

/// 128 random bits, URL-safe: the only thing that opens a share.
fn new_token() -> String {
    use argon2::password_hash::rand_core::{OsRng, RngCore as _};
    use base64::Engine as _;
    let mut bytes = [0u8; 16];
    OsRng.fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// `POST /api/share`: a link to the branch of the viewer's conversation shown now.
pub async fn create(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<ShareBody>,
) -> Result<Json<ShareAnswer>, ApiError> {
    let session = owned_session(&state, &viewer, &body.session_id).await?;
    let snapshot = snapshot(&*state.store, &session.id).await?;
    let snapshot = serde_json::to_string(&snapshot).map_err(|e| ApiError::internal(&e))?;
    if snapshot.len() > MAX_SNAPSHOT_BYTES {
        return Err(ApiError::too_large(format!(
            "this conversation is too long to share ({} MB at most): export it instead",
            MAX_SNAPSHOT_BYTES / (1024 * 1024)
        ))
        .with("limit", "max_share_bytes"));
    }
    crate::storage::room(
        state.store.as_ref(),
        viewer.owner(),
        state.limits.max_storage_per_user,
        snapshot.len() as u64,
    )
    .await?;
    let share = Share {
        id: format!("share-{}", uuid::Uuid::new_v4().simple()),
        token: new_token(),
        owner: viewer.owner().map(str::to_owned),
        session_id: session.id,
        title: session.title,
        snapshot,
        created_at: crate::clock::now(),
    };
    state.store.create_share(&share, MAX_SHARES).await?;
    Ok(Json(ShareAnswer {
        share: data_of(&share),
    }))
}

/// `GET /api/shares`: the viewer's links, newest first.
pub async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
) -> Result<Json<ShareList>, ApiError> {
    let shares = state.store.shares(viewer.owner()).await?;
    Ok(Json(ShareList {
        shares: shares.iter().map(data_of).collect(),
    }))
}

/// `POST /api/share/revoke`: the link answers 404 from now on. 404 for a link that is not
/// the viewer's.
pub async fn revoke(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<RevokeBody>,
) -> Result<Json<Done>, ApiError> {
    state
        .store
        .revoke_share(viewer.owner(), &body.id)
        .await
        .map_err(|e| match e {
            StoreError::NotFound => ApiError::not_found("share link"),
            e => e.into(),
        })?;
    state.share_pages.forget(&body.id);
    Ok(Json(Done { ok: true }))
}

/// The headers of a shared page: no script, not indexed, not kept, and the link never sent on
/// to a site the page links.
fn page_headers(response: &mut Response) {
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; \
             form-action 'none'; frame-ancestors 'none'",
        ),
    );
    h.insert(
        "x-robots-tag",
        HeaderValue::from_static("noindex, nofollow"),
    );
    // Kept by the reader's browser only, and asked again every time (a revoked link stops).
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-cache"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
}

/// The document around a shared page's `body`; its addresses are under `base`, the site's
/// path.
fn document(title: &str, base: &str, stylesheet: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <meta name=\"robots\" content=\"noindex, nofollow\">\n\
         <title>{title}</title>\n<link rel=\"stylesheet\" href=\"{stylesheet}\">\n\
         <link rel=\"icon\" href=\"{base}/favicon.svg\" type=\"image/svg+xml\">\n</head>\n\
         <body class=\"shared-body\">\n{body}\n</body>\n</html>\n",
        title = markdown::escape(title),
    )
}

/// A shared page's answer: `status` and `html`, with the headers of a shared page.
fn shared_page(status: StatusCode, html: impl Into<axum::body::Body>) -> Response {
    let mut response = (status, html.into()).into_response();
    page_headers(&mut response);
    response
}

/// A page that says why a shared conversation is not shown (`message`).
fn refusal(state: &AppState, status: StatusCode, heading: &str, message: &str) -> Response {
    let base = state.base();
    let stylesheet = format!("{base}{}/anchorage.css", state.bundle.pkg_path());
    let body = format!(
        "<main class=\"not-found\"><h1>{}</h1><p>{}</p></main>",
        markdown::escape(heading),
        markdown::escape(message)
    );
    shared_page(
        status,
        document(&format!("{heading} · Anchorage"), base, &stylesheet, &body),
    )
}

/// `GET /share/{token}`: the conversation as it was shared; 404 once revoked, or when its
/// conversation was deleted. Rendered once and kept (a snapshot never changes), answered
/// with a strong ETag (its share and this build, whose stylesheet it names: 304 to a browser
/// that has it). Every view is counted per address (429 past the limit).
pub async fn page(
    State(state): State<AppState>,
    crate::auth::ClientIp(ip): crate::auth::ClientIp,
    headers: axum::http::HeaderMap,
    Path(token): Path<String>,
) -> Response {
    let address = [crate::throttle::address_key(&ip)];
    if let Err(refused) = state
        .throttle
        .share_views
        .reserve(&address, std::time::Instant::now())
    {
        let wait = match refused {
            crate::throttle::Refused::TooMany(wait) | crate::throttle::Refused::Busy(wait) => wait,
        };
        let secs = wait.as_secs().max(1);
        let mut response = refusal(
            &state,
            StatusCode::TOO_MANY_REQUESTS,
            "Too many views",
            &format!("This address opened shared conversations too often: try again in {secs} s."),
        );
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        return response;
    }
    // Whether the link still leads anywhere: asked every time (a revoked link stops at once),
    // without reading the snapshot.
    let head = match state.store.shared_head(&token).await {
        Ok(head) => head,
        Err(StoreError::NotFound) => {
            return refusal(
                &state,
                StatusCode::NOT_FOUND,
                "Not here",
                "This link does not lead anywhere: it was revoked, or never existed.",
            )
        }
        Err(other) => {
            tracing::error!("cannot read a share: {other}");
            return refusal(
                &state,
                StatusCode::INTERNAL_SERVER_ERROR,
                "Not here",
                "This conversation cannot be shown now.",
            );
        }
    };
    let etag = format!("\"{}-{}\"", head.id, state.bundle.build);
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut response = if fresh {
        shared_page(StatusCode::NOT_MODIFIED, axum::body::Body::empty())
    } else {
        let html = match state.share_pages.get(&head.id) {
            Some(html) => html,
            None => match state.store.shared(&token).await {
                Ok(share) => state.share_pages.put(&share.id, render(&state, &share)),
                Err(e) => {
                    tracing::error!("cannot read a share: {e}");
                    return refusal(
                        &state,
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "Not here",
                        "This conversation cannot be shown now.",
                    );
                }
            },
        };
        shared_page(StatusCode::OK, html.to_string())
    };
    if let Ok(value) = HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, value);
    }
    response
}

/// The page of `share`.
fn render(state: &AppState, share: &Share) -> String {
    let base = state.base();
    let stylesheet = format!("{base}{}/anchorage.css", state.bundle.pkg_path());
    let snapshot: Snapshot = serde_json::from_str(&share.snapshot).unwrap_or_default();
    let mut body = format!(
        "<main class=\"shared\">\n<header class=\"shared-head\"><h1>{}</h1>\
         <p class=\"shared-note\">A conversation shared from Anchorage, as it was on {}. \
         Read only.</p></header>\n",
        markdown::escape(&share.title),
        crate::routes::session::date_of(share.created_at),
    );
    for turn in &snapshot.turns {
        body.push_str(
            "<article class=\"shared-turn\">\n<div class=\"user-message\"><div class=\"bubble\">",
        );
        body.push_str(&markdown::escape(&turn.user));
        body.push_str("</div></div>\n");
        if !turn.files.is_empty() {
            body.push_str("<ul class=\"shared-files\">");
            for name in &turn.files {
                body.push_str(&format!("<li>{}</li>", markdown::escape(name)));
            }
            body.push_str("</ul>\n");
        }
        if let Some(work) = &turn.work {
            body.push_str(&format!(
                "<p class=\"shared-work\">{}</p>\n",
                markdown::escape(work)
            ));
        }
        if !turn.answer.is_empty() {
            body.push_str("<div class=\"prose\">");
            body.push_str(&markdown::render(&turn.answer));
            body.push_str("</div>\n");
        }
        if let Some(ending) = &turn.ending {
            body.push_str(&format!(
                "<p class=\"shared-ending\">{}</p>\n",
                markdown::escape(ending)
            ));
        }
        body.push_str("</article>\n");
    }
    body.push_str("</main>");
    let title = format!("{} · Anchorage", share.title);
    document(&title, base, &stylesheet, &body)
}
