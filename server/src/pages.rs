//! The chat page: the data it renders from (assembled from the store), the HTML document
//! rendered from that data (`/` and `/s/{id}`), and the same data as JSON (`/api/page`) for
//! the browser when it opens another session in the page.

use app::api::{JournalQuery, PageQuery};
use std::sync::Arc;

use anchor::{Mode, TerminalState};
use app::api::{
    JournalEvent, JournalPage, MessageData, QueuedData, SessionDetail, SessionPage, SessionSummary,
    TurnData, UserData,
};
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use leptos::prelude::*;

use crate::auth::Viewer;
use crate::error::{ApiError, ApiQuery};
use crate::snapshots;
use crate::store::{Run, Session, Store, StoreError};
use crate::AppState;

pub use app::api::INLINE_ROWS;
/// The most turns a page (or one "Show earlier") carries.
pub const WINDOW_TURNS: usize = 20;
/// The journal rows a window may carry: older turns stay out once the newer ones have this
/// many (the newest turn of a window is always in, however long).
pub const WINDOW_ROWS: u64 = 20_000;

/// The sessions a page lists in its sidebar: the top of the list, so that a page costs the
/// same with ten sessions or thousands. The browser loads the next ones through
/// `/api/sessions?offset=&limit=` once the page is live, and more as the list is scrolled.
pub const SIDEBAR_PAGE: usize = 10;

/// Which turns of a session a page carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turns<'a> {
    /// The latest window (what a page opens on).
    Latest,
    /// Every turn after this run (a page catching up on turns started since it loaded).
    After(&'a str),
    /// The window before this run ("Show earlier").
    Before(&'a str),
}

/// The names of every event kind this server sends, for the page's listeners.
fn event_kinds() -> Vec<String> {
    anchor::EventKind::ALL
        .iter()
        .map(|k| k.name().to_owned())
        .collect()
}

/// Whether a settled turn's worklog opens by itself (it ended in an error of some kind).
fn opens_folded_work(run: &Run) -> bool {
    !matches!(
        run.terminal_state,
        Some(TerminalState::Completed | TerminalState::Cancelled) | None
    )
}

/// The part of `runs` (oldest first; `rows` says how many journal rows each carries) a window
/// ending before index `end` takes, and whether older turns are left out.
pub fn window(rows: &[u64], end: usize) -> (std::ops::Range<usize>, bool) {
    let end = end.min(rows.len());
    let mut start = end;
    let mut total = 0u64;
    while start > 0 && end - start < WINDOW_TURNS {
        let next = rows[start - 1];
        if start < end && total + next > WINDOW_ROWS {
            break;
        }
        total += next;
        start -= 1;
    }
    (start..end, start > 0)
}

/// Implements the app's port over the store.
pub struct PageBackend {
    store: Arc<dyn Store>,
    agent: String,
    viewer: Viewer,
    mode: Option<Mode>,
    examples: Vec<app::api::Example>,
    commands: Vec<app::api::Example>,
    files: bool,
    default_model: Option<String>,
    context_meter: bool,
}

impl PageBackend {
    /// A backend over `store` showing what `viewer` owns; `agent` says who answers (shown in
    /// the sidebar).
    pub fn new(store: Arc<dyn Store>, agent: String, viewer: Viewer) -> Self {
        PageBackend {
            store,
            agent,
            viewer,
            mode: None,
            examples: Vec::new(),
            commands: Vec::new(),
            files: false,
            default_model: None,
            context_meter: false,
        }
    }

    /// Whether the agent keeps files here (the Files panel is offered).
    pub fn with_files(mut self, files: bool) -> Self {
        self.files = files;
        self
    }

    /// The model conversations get unless they ask for another (`None`: no choice of model).
    pub fn with_default_model(mut self, model: Option<String>) -> Self {
        self.default_model = model;
        self
    }

    /// Whether who answers knows its model's context window (the composer shows a meter).
    pub fn with_context_meter(mut self, shown: bool) -> Self {
        self.context_meter = shown;
        self
    }

    /// The prompts an empty conversation offers.
    pub fn with_examples(mut self, examples: Vec<app::api::Example>) -> Self {
        self.examples = examples;
        self
    }

    /// The agent's own slash commands.
    pub fn with_commands(mut self, commands: Vec<app::api::Example>) -> Self {
        self.commands = commands;
        self
    }

    /// The display mode the reader chose (the page then carries what it shows first).
    pub fn with_mode(mut self, mode: Option<Mode>) -> Self {
        self.mode = mode;
        self
    }

    fn user(&self) -> Option<UserData> {
        self.viewer.user().map(|u| UserData {
            name: u.name.clone(),
            admin: u.admin,
            account: crate::auth::account_tag(Some(u)),
        })
    }

    async fn detail(
        &self,
        session: &Session,
        which: Turns<'_>,
    ) -> Result<SessionDetail, StoreError> {
        // The branch the session shows (retries and edits leave other versions beside it). Read
        // before the queue (below): a follow-up that starts meanwhile leaves the queue as its
        // turn begins, so it is in one of the two reads or, started between them, in neither
        // (a page catching up asks again, `app::nav::catch_up`) — never in both.
        let (mut runs, mut versions): (Vec<Run>, Vec<app::api::Versions>) =
            self.store.branch(&session.id).await?.into_iter().unzip();
        let stream = self.mode == Some(Mode::TransparentStream);
        let catching_up = matches!(which, Turns::After(_));
        // Which turns come with their journal: those that run, those a page catches up on
        // (it may have watched them start), and small ones whose rows the first view shows.
        let carries_rows = |run: &Run| {
            run.running
                || catching_up
                || (run.last_seq <= INLINE_ROWS && (stream || opens_folded_work(run)))
        };
        let position = |id: &str| runs.iter().position(|r| r.id == id);
        let end = match which {
            Turns::After(_) | Turns::Latest => runs.len(),
            // A run it does not know: nothing earlier to show.
            Turns::Before(id) => position(id).unwrap_or(0),
        };
        // A window takes at most WINDOW_TURNS turns before its end. Those of them that come
        // folded and have a stored snapshot cost a row; any other turn costs its journal (a
        // missing snapshot is made from it here).
        let candidates: Vec<String> = runs[end.saturating_sub(WINDOW_TURNS)..end]
            .iter()
            .filter(|r| !carries_rows(r))
            .map(|r| r.id.clone())
            .collect();
        let mut stored = snapshots::stored(self.store.as_ref(), &candidates).await?;
        let costs: Vec<u64> = runs
            .iter()
            .map(|r| {
                if !carries_rows(r) && stored.contains_key(&r.id) {
                    1
                } else {
                    r.last_seq
                }
            })
            .collect();
        let (range, earlier) = match which {
            // Only the turns after one the page has, at most a window of them: when more came,
            // the latest window, said to leave turns out (the page then shows it afresh). A run
            // of the session on another branch: the latest window.
            Turns::After(id) => {
                let (latest, earlier) = window(&costs, end);
                match position(id) {
                    Some(i) => {
                        let start = (i + 1).max(latest.start);
                        (start..runs.len(), start > i + 1)
                    }
                    None => (latest, earlier),
                }
            }
            Turns::Latest => window(&costs, end),
            Turns::Before(id) => match position(id) {
                Some(_) => window(&costs, end),
                None => (0..0, false),
            },
        };
        runs.truncate(range.end);
        runs.drain(..range.start);
        versions.truncate(range.end);
        versions.drain(..range.start);
        let wanted: Vec<String> = runs.iter().map(|r| r.user_message_id.clone()).collect();
        let messages = self.store.messages_by_id(&wanted).await?;
        let mut turns = Vec::with_capacity(runs.len());
        for (run, versions) in runs.into_iter().zip(versions) {
            let Some(user) = messages.iter().find(|m| m.id == run.user_message_id) else {
                continue;
            };
            let (snapshot, events) = match stored.remove(&run.id) {
                Some(s) if !carries_rows(&run) => (Some(s), Vec::new()),
                _ => {
                    let events = snapshots::journal(self.store.as_ref(), &run.id).await?;
                    if carries_rows(&run) {
                        (None, events)
                    } else {
                        // Missing (the turn settled a moment ago) or of an older version: made
                        // from the rows read, and kept for the next page (which a failure to
                        // store it does not fail).
                        let (snapshot, events) = snapshots::fold(&run, events);
                        match snapshot {
                            Some(s) => {
                                if let Err(e) =
                                    snapshots::save(self.store.as_ref(), &run.id, &s).await
                                {
                                    tracing::warn!(run_id = %run.id, "snapshot not stored: {e}");
                                }
                                (Some(s), Vec::new())
                            }
                            None => (None, events),
                        }
                    }
                }
            };
            turns.push(TurnData {
                user: MessageData {
                    id: user.id.clone(),
                    content: user.content.clone(),
                    created_at: user.created_at,
                    attachments: user.attachments.clone(),
                },
                run_id: run.id.clone(),
                turn_id: run.turn_id.clone(),
                events,
                running: run.running,
                snapshot,
                versions,
                model: run.model.clone(),
            });
        }
        let mut queued = Vec::new();
        for q in self.store.queued_messages(&session.id).await? {
            // The files it will carry, as far as they are still there.
            let mut attachments = Vec::with_capacity(q.attachments.len());
            for id in &q.attachments {
                if let Ok(a) = self.store.attachment(id).await {
                    attachments.push(a.data());
                }
            }
            queued.push(QueuedData {
                id: q.id,
                content: q.content,
                attachments,
            });
        }
        Ok(SessionDetail {
            id: session.id.clone(),
            title: session.title.clone(),
            turns,
            queued,
            earlier,
            model: session.model.clone(),
        })
    }
}

fn summary(s: &Session) -> SessionSummary {
    SessionSummary {
        id: s.id.clone(),
        title: s.title.clone(),
        updated_at: s.updated_at,
        active_run_id: s.active_run_id.clone(),
        hit_turn_id: s.hit_turn_id.clone(),
        snippet: s.snippet.clone(),
        pinned: s.pinned,
        pinned_at: s.pinned_at,
        archived: s.archived,
    }
}

impl PageBackend {
    /// The first page of the sidebar, and whether more sessions follow.
    async fn sidebar(&self) -> Result<(Vec<Session>, bool), StoreError> {
        let mut sessions = self
            .store
            .sessions_page(self.viewer.owner(), 0, SIDEBAR_PAGE as u32 + 1, false)
            .await?;
        let more = sessions.len() > SIDEBAR_PAGE;
        sessions.truncate(SIDEBAR_PAGE);
        Ok((sessions, more))
    }

    /// The sidebar and the session to show (the newest when `session_id` is `None` or names
    /// no session, which `missing` then says).
    pub async fn page(&self, session_id: Option<&str>) -> Result<SessionPage, String> {
        self.page_with(session_id, Turns::Latest).await
    }

    /// The sidebar around a new conversation (none shown).
    pub async fn new_page(&self) -> Result<SessionPage, String> {
        let (sessions, more_sessions) = self.sidebar().await.map_err(|e| e.to_string())?;
        Ok(self.assemble(&sessions, more_sessions, None, false))
    }

    /// As [`PageBackend::page`], with the turns `which` says.
    pub async fn page_with(
        &self,
        session_id: Option<&str>,
        which: Turns<'_>,
    ) -> Result<SessionPage, String> {
        let (sessions, more_sessions) = self.sidebar().await.map_err(|e| e.to_string())?;
        let mut missing = false;
        let chosen = match session_id {
            // Any of the viewer's sessions, listed in the first page of the sidebar or not.
            Some(id) => match self.store.session(id).await {
                Ok(s) if s.owner_id.as_deref() == self.viewer.owner() => Some(s),
                Ok(_) | Err(StoreError::NotFound) => {
                    missing = true;
                    sessions.first().cloned()
                }
                Err(e) => return Err(e.to_string()),
            },
            None => sessions.first().cloned(),
        };
        let session = match chosen {
            Some(s) => Some(self.detail(&s, which).await.map_err(|e| e.to_string())?),
            None => None,
        };
        Ok(self.assemble(&sessions, more_sessions, session, missing))
    }

    /// The one place a page is made: the sidebar, what is shown, and what the server says
    /// of itself and of now. (The browser's cookies fill `mode`, `theme` and `tz_offset`.)
    fn assemble(
        &self,
        sessions: &[Session],
        more_sessions: bool,
        session: Option<SessionDetail>,
        missing: bool,
    ) -> SessionPage {
        SessionPage {
            sessions: sessions.iter().map(summary).collect(),
            more_sessions,
            session,
            missing,
            agent: self.agent.clone(),
            user: self.user(),
            mode: None,
            examples: self.examples.clone(),
            commands: self.commands.clone(),
            files: self.files,
            default_model: self.default_model.clone(),
            context_meter: self.context_meter,
            theme: None,
            now: crate::clock::now(),
            tz_offset: None,
            event_kinds: event_kinds(),
        }
    }
}

impl PageBackend {
    /// The page backend of a running server, for `viewer`.
    pub fn of(state: &AppState, viewer: Viewer) -> Self {
        PageBackend::new(
            Arc::clone(&state.store),
            state.runner.adapter_label(),
            viewer,
        )
        .with_examples(state.runner.adapter_examples())
        .with_commands(state.runner.adapter_commands())
        .with_files(state.runner.keeps_files())
        .with_default_model(state.runner.default_model())
        .with_context_meter(state.runner.knows_context())
    }
}

/// `GET /`: the newest session (or the empty state).
pub async fn newest(State(state): State<AppState>, viewer: Viewer, req: Request<Body>) -> Response {
    let saved_as = saved_as(&viewer);
    let page = PageBackend::of(&state, viewer)
        .with_mode(mode_cookie(req.headers()))
        .page(None)
        .await;
    render(state, page, req, saved_as).await
}

/// `GET /s/{session_id}`: that session (or the newest, with a notice, when it is gone).
pub async fn session(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(session_id): Path<String>,
    req: Request<Body>,
) -> Response {
    let saved_as = saved_as(&viewer);
    let page = PageBackend::of(&state, viewer)
        .with_mode(mode_cookie(req.headers()))
        .page(Some(&session_id))
        .await;
    render(state, page, req, saved_as).await
}

/// `GET /new`: a new conversation, not stored until its first message is sent.
pub async fn new_chat(
    State(state): State<AppState>,
    viewer: Viewer,
    req: Request<Body>,
) -> Response {
    let saved_as = saved_as(&viewer);
    let page = PageBackend::of(&state, viewer).new_page().await;
    render(state, page, req, saved_as).await
}

/// Whose browser may keep a chat page to show offline (the service worker keeps each
/// account's pages apart and drops them at sign-out).
fn saved_as(viewer: &Viewer) -> String {
    viewer.owner().unwrap_or("open").to_owned()
}

async fn render(
    state: AppState,
    page: Result<SessionPage, String>,
    req: Request<Body>,
    saved_as: String,
) -> Response {
    let mut page = match page {
        Ok(page) => page,
        Err(e) => {
            tracing::error!("cannot load the chat page: {e}");
            // Under an owner that knows the site's base, as every page.
            let bundle = state.bundle.for_pages(state.base());
            let html = Owner::new().with(|| {
                provide_context(bundle);
                app::error_shell("The conversations could not be loaded.".into()).to_html()
            });
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                html,
            )
                .into_response();
        }
    };
    // A page for a conversation that is not there (deleted, another's) shows the newest
    // instead: not what its address names, so no browser keeps it under that address.
    let saveable = !page.missing;
    page.mode = mode_cookie(req.headers()).map(|m| m.as_str().to_owned());
    page.theme = crate::auth::cookie(req.headers(), app::api::THEME_COOKIE)
        .map(app::api::Theme::parse)
        .filter(|t| *t != app::api::Theme::System)
        .map(|t| t.as_str().to_owned());
    page.tz_offset = crate::auth::cookie(req.headers(), app::api::TZ_COOKIE)
        .and_then(|v| v.parse::<i32>().ok())
        .filter(|m| m.abs() <= 18 * 60);
    let options = state.leptos_options.clone();
    // A fresh nonce per page: the hydration script carries it, the policy admits it.
    let nonce = leptos::nonce::Nonce::new();
    let policy = crate::security::page_policy(Some(&nonce));
    // Everything the page shows is loaded: the render has nothing to wait for.
    let bundle = state.bundle.for_pages(state.base());
    let handler = leptos_axum::render_app_async_with_context(
        move || {
            provide_context(nonce.clone());
            provide_context(bundle.clone());
        },
        move || app::shell(options.clone(), page.clone()),
    );
    let mut response = handler(req).await;
    if let Ok(value) = header::HeaderValue::from_str(&policy) {
        response
            .headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, value);
    }
    if let (true, Ok(value)) = (saveable, header::HeaderValue::from_str(&saved_as)) {
        response
            .headers_mut()
            .insert(crate::offline::SAVE_HEADER, value);
    }
    response
}

/// The display mode a browser chose, from its cookie (a known mode only).
fn mode_cookie(headers: &axum::http::HeaderMap) -> Option<Mode> {
    crate::auth::cookie(headers, app::api::MODE_COOKIE).and_then(Mode::parse)
}

/// `GET /api/page?session_id=&after_run_id=`: what the chat page renders from, as JSON (an
/// empty or unknown id gives the newest session, as the page does); with `after_run_id`, only
/// the session's turns after that run (a page catching up on turns started since it loaded).
pub async fn data(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: axum::http::HeaderMap,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> Result<Json<SessionPage>, ApiError> {
    let id = q.session_id.as_deref().filter(|s| !s.is_empty());
    // Turns after a run must be after one of the viewer's, in the session asked for: any
    // other id answers 404 (never the whole history).
    if let Some(after) = q.after_run_id.as_deref().filter(|s| !s.is_empty()) {
        let run = crate::auth::owned_run(&state, &viewer, after).await?;
        if id.is_some_and(|id| id != run.session_id) {
            return Err(ApiError::not_found("run"));
        }
    }
    let which = match (
        q.after_run_id.as_deref().filter(|s| !s.is_empty()),
        q.before_run_id.as_deref().filter(|s| !s.is_empty()),
    ) {
        (Some(after), _) => Turns::After(after),
        (None, Some(before)) => Turns::Before(before),
        (None, None) => Turns::Latest,
    };
    PageBackend::of(&state, viewer)
        .with_mode(mode_cookie(&headers))
        .page_with(id, which)
        .await
        .map(Json)
        .map_err(|e| ApiError::internal(&format!("cannot load page data: {e}")))
}

/// Journal rows per `/api/chat/journal` answer.
pub const JOURNAL_PAGE: u32 = 5_000;

/// `GET /api/chat/journal?run_id=&after=`: a page of a run's journal rows, for a settled turn
/// the page shows as its snapshot when the reader opens its steps or its Stream.
pub async fn journal(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiQuery(q): ApiQuery<JournalQuery>,
) -> Result<Json<JournalPage>, ApiError> {
    let run = crate::auth::owned_run(&state, &viewer, &q.run_id).await?;
    let rows = state
        .store
        .events(&run.id, q.after, None, JOURNAL_PAGE)
        .await?;
    let full = rows.len() as u32 == JOURNAL_PAGE;
    let events: Vec<JournalEvent> = rows
        .into_iter()
        .map(|row| JournalEvent {
            seq: row.seq,
            kind: row.kind,
            payload: serde_json::Value::Object(row.payload),
        })
        .collect();
    let next = events.last().map(|e| e.seq).filter(|_| full);
    Ok(Json(JournalPage {
        run_id: run.id,
        events,
        next,
    }))
}

#[cfg(test)]
mod tests {
    use super::{window, WINDOW_ROWS, WINDOW_TURNS};

    #[test]
    fn a_window_takes_the_latest_turns_within_its_budgets() {
        // Few turns: all of them.
        assert_eq!(window(&[10, 10, 10], 3), (0..3, false));
        // Many: the last WINDOW_TURNS.
        let many = vec![10; 45];
        assert_eq!(window(&many, 45), (25..45, true));
        assert_eq!(window(&many, 25), (5..25, true));
        assert_eq!(window(&many, 5), (0..5, false));
        assert_eq!(window(&many, 0), (0..0, false));
        assert_eq!(WINDOW_TURNS, 20);
        // Rows: a long turn before short ones stays out of their window...
        let rows = [WINDOW_ROWS, 10, 10];
        assert_eq!(window(&rows, 3), (1..3, true));
        // ...and is a window of its own, however long.
        assert_eq!(window(&rows, 1), (0..1, false));
        assert_eq!(window(&[3 * WINDOW_ROWS], 1), (0..1, false));
    }
}
