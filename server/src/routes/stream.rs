//! `GET /api/chat/stream`: a run's journal as Server-Sent Events, resumable at any seq.
//!
//! A follower subscribes to the live channel first, then reads the journal after its cursor,
//! then drains live frames above what it sent. Any gap (a late subscription, a lagging
//! follower) is filled from the journal, so every event after the cursor arrives exactly once,
//! in order. The response ends after `stream_end`. A run another instance runs is followed
//! the same way, through this instance's feed of it (see [`crate::hub`]).

use app::api::StreamQuery;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::json;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt as _;

use crate::auth::{owned_run, Viewer};
use crate::error::{ApiError, ApiQuery};
use crate::hub::Frame;
use crate::store::{Store, StoreError};
use crate::AppState;

/// How long a silent stream waits before a heartbeat comment.
pub const HEARTBEAT: Duration = Duration::from_secs(15);
/// Journal rows read per query while replaying.
const PAGE: u32 = 4_096;
/// Chunks waiting for a slow client. With [`PAGE`], what one stream holds is bounded (about
/// `(QUEUED + 1) × PAGE` frames) however long the journal: a client that stops reading stops
/// the replay, it does not make the server read the journal into memory.
const QUEUED: usize = 4;

/// The run a stream query names (by its run id, else its stream id).
fn queried_run(query: &StreamQuery) -> Result<&str, ApiError> {
    query
        .run_id
        .as_deref()
        .or(query.stream_id.as_deref())
        .filter(|r| !r.trim().is_empty())
        .ok_or_else(|| ApiError::bad_request("run_id is required"))
}

/// Where to resume: `after_seq` wins over `Last-Event-ID`. A cursor that does not parse or
/// names another run means "replay from the start", never "skip".
pub fn resume_cursor(run_id: &str, after_seq: Option<&str>, last_event_id: Option<&str>) -> u64 {
    if let Some(after) = after_seq {
        return after.trim().parse().unwrap_or(0);
    }
    if let Some(id) = last_event_id {
        if let Some((run, seq)) = id.trim().rsplit_once(':') {
            if run == run_id {
                return seq.parse().unwrap_or(0);
            }
        }
    }
    0
}

/// `GET /api/chat/stream?run_id=R[&after_seq=N]`.
pub async fn stream(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<StreamQuery>,
) -> Result<Response, ApiError> {
    let run_id = queried_run(&query)?.to_owned();
    let (run, live) = open_run(&state, &viewer, &run_id).await?;
    let high_water = run.last_seq;
    let last_event_id = headers.get("last-event-id").and_then(|v| v.to_str().ok());
    let mut after = resume_cursor(&run_id, query.after_seq.as_deref(), last_event_id);
    if after > high_water {
        // A cursor ahead of the journal was not issued by it: replay everything.
        after = 0;
    }
    let headers = [
        ("content-type", "text/event-stream; charset=utf-8"),
        ("cache-control", "no-cache"),
        ("x-accel-buffering", "no"),
    ];
    let from = Following {
        run_id,
        after,
        live,
    };
    respond_with(state, &viewer, from, SseEncoder, &headers)
}

/// How a follower writes what it sends: our own SSE frames, or another protocol's events.
#[async_trait::async_trait]
pub(crate) trait Encoder: Send {
    /// What goes first (a reconnect delay for `EventSource` clients).
    fn opening(&mut self) -> Option<Bytes>;
    /// The journal rows after `after` (up to `up_to`), at most [`PAGE`] of them, encoded.
    async fn page(
        &mut self,
        store: &dyn Store,
        run_id: &str,
        after: u64,
        up_to: Option<u64>,
    ) -> Result<Page, StoreError>;
    /// A live frame, encoded (empty: nothing to send for it).
    fn frame(&mut self, frame: &Frame) -> Bytes;
}

/// A page of the journal, encoded.
pub(crate) struct Page {
    /// How many rows it covers.
    pub count: u32,
    /// The last row's seq.
    pub last_seq: u64,
    /// Its last row is `stream_end`.
    pub ended: bool,
    /// What to send.
    pub bytes: Bytes,
}

/// Our own frames: `id: run:seq`, `event: kind`, `data: payload`.
pub(crate) struct SseEncoder;

#[async_trait::async_trait]
impl Encoder for SseEncoder {
    fn opening(&mut self) -> Option<Bytes> {
        Some(Bytes::from_static(b"retry: 1000\n\n"))
    }

    async fn page(
        &mut self,
        store: &dyn Store,
        run_id: &str,
        after: u64,
        up_to: Option<u64>,
    ) -> Result<Page, StoreError> {
        let frames = store.frames(run_id, after, up_to, PAGE).await?;
        Ok(Page {
            count: frames.count,
            last_seq: frames.last_seq,
            ended: frames.ended,
            bytes: frames.sse,
        })
    }

    fn frame(&mut self, frame: &Frame) -> Bytes {
        frame.sse.clone()
    }
}

/// Journal rows after `after` (up to `up_to`), a page of them, each encoded by `encode`.
pub(crate) async fn rows_page(
    store: &dyn Store,
    run_id: &str,
    after: u64,
    up_to: Option<u64>,
    mut encode: impl FnMut(&crate::store::JournalRow, &mut Vec<u8>),
) -> Result<Page, StoreError> {
    let rows = store.events(run_id, after, up_to, PAGE).await?;
    let mut bytes = Vec::new();
    for row in &rows {
        encode(row, &mut bytes);
    }
    Ok(Page {
        count: rows.len() as u32,
        last_seq: rows.last().map_or(after, |r| r.seq),
        ended: rows
            .last()
            .is_some_and(|r| r.kind == anchor::EventKind::StreamEnd.name()),
        bytes: Bytes::from(bytes),
    })
}

/// Opens the live channel of a run `viewer` may read (before its journal is read: anything
/// committed after the read is then live), or answers 404.
pub(crate) async fn open_run(
    state: &AppState,
    viewer: &Viewer,
    run_id: &str,
) -> Result<(crate::store::Run, Option<broadcast::Receiver<Arc<Frame>>>), ApiError> {
    let live = state.hub.subscribe(run_id);
    let run = match owned_run(state, viewer, run_id).await {
        Ok(run) => run,
        Err(StoreError::NotFound) => return Err(ApiError::not_found("stream")),
        Err(e) => return Err(e.into()),
    };
    let live = match live {
        Some(live) => Some(live),
        None if run.running => Some(state.hub.follow(
            run_id,
            run.last_seq,
            Arc::clone(&state.store),
            state.shutdown.clone(),
        )),
        None => None,
    };
    Ok((run, live))
}

/// Where a follower starts: a run, the seq after which it sends, its live channel.
pub(crate) struct Following {
    pub run_id: String,
    pub after: u64,
    pub live: Option<broadcast::Receiver<Arc<Frame>>>,
}

/// Streams a run from `from`, encoded by `encoder`, as a response with `headers` (a stream
/// permit of the viewer's held while it lasts).
pub(crate) fn respond_with<E: Encoder + 'static>(
    state: AppState,
    viewer: &Viewer,
    from: Following,
    mut encoder: E,
    headers: &[(&'static str, &'static str)],
) -> Result<Response, ApiError> {
    let permit = state
        .streams
        .acquire(viewer.owner().unwrap_or_default(), &state.limits)?;
    let (tx, rx) = mpsc::channel::<Bytes>(QUEUED);
    let metrics = Arc::clone(&state.metrics);
    tokio::spawn(async move {
        let Following {
            run_id,
            after,
            live,
        } = from;
        // Counted as a follower while it follows.
        let follower = state.metrics.follower();
        follow(&state, run_id, after, live, &mut encoder, tx).await;
        drop(follower);
        drop(permit);
    });
    let body = Body::from_stream(ReceiverStream::new(rx).map(move |chunk| {
        crate::metrics::Metrics::add(&metrics.stream_bytes_out, chunk.len() as u64);
        Ok::<_, Infallible>(chunk)
    }));
    let mut response = body.into_response();
    let h = response.headers_mut();
    for (name, value) in headers {
        h.insert(*name, HeaderValue::from_static(value));
    }
    Ok(response)
}

/// Sends a run's frames after `after` to `tx`, then live ones, until `stream_end`.
async fn follow(
    state: &AppState,
    run_id: String,
    mut after: u64,
    mut live: Option<broadcast::Receiver<Arc<Frame>>>,
    encoder: &mut dyn Encoder,
    tx: mpsc::Sender<Bytes>,
) {
    let store = Arc::clone(&state.store);
    let metrics = &*state.metrics;
    let shutdown = state.shutdown.clone();
    let heartbeat_every = state.heartbeat;
    if let Some(opening) = encoder.opening() {
        if tx.send(opening).await.is_err() {
            return;
        }
    }
    match backfill(&*store, metrics, &run_id, &mut after, None, encoder, &tx).await {
        Backfill::Ended | Backfill::Gone => return,
        Backfill::Caught => {}
    }
    let Some(rx) = live.as_mut() else {
        return;
    };
    let mut heartbeat = tokio::time::interval_at(
        tokio::time::Instant::now() + heartbeat_every,
        heartbeat_every,
    );
    loop {
        tokio::select! {
            received = rx.recv() => match received {
                Ok(frame) => {
                    let seq = frame.row.seq;
                    if seq <= after {
                        continue;
                    }
                    if seq > after + 1 {
                        // Committed rows we did not see live: read them first.
                        match backfill(&*store, metrics, &run_id, &mut after, Some(seq - 1), encoder, &tx).await {
                            Backfill::Ended | Backfill::Gone => return,
                            Backfill::Caught => {}
                        }
                    }
                    let bytes = encoder.frame(&frame);
                    if !bytes.is_empty() && tx.send(bytes).await.is_err() {
                        return;
                    }
                    after = seq;
                    heartbeat.reset();
                    if frame.row.kind == "stream_end" {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    if !matches!(backfill(&*store, metrics, &run_id, &mut after, None, encoder, &tx).await, Backfill::Caught) {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Closed) => {
                    let _ = backfill(&*store, metrics, &run_id, &mut after, None, encoder, &tx).await;
                    return;
                }
            },
            _ = heartbeat.tick() => {
                if tx.send(Bytes::from_static(b": heartbeat\n\n")).await.is_err() {
                    return;
                }
            }
            () = shutdown.cancelled() => return,
            () = tx.closed() => return,
        }
    }
}

enum Backfill {
    /// Everything committed so far was sent.
    Caught,
    /// `stream_end` was sent: the response is complete.
    Ended,
    /// The client went away (or the store failed).
    Gone,
}

/// Sends journal rows after `*after` (up to `up_to`) and advances `*after`.
async fn backfill(
    store: &dyn Store,
    metrics: &crate::metrics::Metrics,
    run_id: &str,
    after: &mut u64,
    up_to: Option<u64>,
    encoder: &mut dyn Encoder,
    tx: &mpsc::Sender<Bytes>,
) -> Backfill {
    loop {
        let page = match encoder.page(store, run_id, *after, up_to).await {
            Ok(page) => page,
            Err(e) => {
                tracing::error!(run_id, "journal read failed: {e}");
                return Backfill::Gone;
            }
        };
        if page.count == 0 {
            return Backfill::Caught;
        }
        crate::metrics::Metrics::add(&metrics.replay_bytes_read, page.bytes.len() as u64);
        if !page.bytes.is_empty() && tx.send(page.bytes).await.is_err() {
            return Backfill::Gone;
        }
        *after = page.last_seq;
        if page.ended {
            return Backfill::Ended;
        }
        if page.count < PAGE {
            return Backfill::Caught;
        }
    }
}

/// `GET /api/chat/stream/status?run_id=R`.
pub async fn status(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiQuery(query): ApiQuery<StreamQuery>,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    let run_id = queried_run(&query)?;
    let run = match owned_run(&state, &viewer, run_id).await {
        Ok(run) => run,
        Err(StoreError::NotFound) => return Err(ApiError::not_found("stream")),
        Err(e) => return Err(e.into()),
    };
    Ok(axum::Json(json!({
        "run_id": run.id,
        "session_id": run.session_id,
        "active": run.running
            && (state.runner.is_active(&run.id)
                || run.held(state.store.clock().await.unwrap_or_else(|_| crate::clock::now()))),
        "last_seq": run.last_seq,
        "terminal_state": run.terminal_state,
    })))
}

#[cfg(test)]
mod tests {
    use super::resume_cursor;

    #[test]
    fn cursors_prefer_after_seq_and_never_skip_on_doubt() {
        assert_eq!(resume_cursor("r", Some("4"), Some("r:9")), 4);
        assert_eq!(resume_cursor("r", Some("x"), Some("r:9")), 0);
        assert_eq!(resume_cursor("r", None, Some("r:3")), 3);
        assert_eq!(resume_cursor("r", None, Some("other:5")), 0);
        assert_eq!(resume_cursor("r", None, Some("not-a-cursor")), 0);
        assert_eq!(resume_cursor("r", None, None), 0);
        assert_eq!(resume_cursor("a:b", None, Some("a:b:7")), 7);
    }
}
