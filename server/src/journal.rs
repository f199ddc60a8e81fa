//! The journal writer: every event of every run goes through one task that commits in order,
//! many writes per transaction, and publishes each committed frame to the run's followers.

use anchor::{EventKind, TerminalState};
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::hub::{Frame, Hub};
use crate::metrics::Metrics;
use crate::store::prelude::*;
use crate::store::{JournalOp, NewEvent, SettledAnswer, StoreError};

/// How many queued writes one transaction may carry.
const MAX_BATCH: usize = 512;

struct Request {
    op: JournalOp,
    reply: oneshot::Sender<Result<Vec<Arc<Frame>>, StoreError>>,
}

/// Appends to the run journal. Cheap to clone.
#[derive(Clone)]
pub struct Journal {
    tx: mpsc::Sender<Request>,
}

/// Why a write was not journaled.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The run already ended.
    #[error("the run already finished")]
    Finished,
    /// The store failed.
    #[error(transparent)]
    Store(StoreError),
    /// The writer is gone (the server is shutting down).
    #[error("the journal is closed")]
    Closed,
}

impl From<StoreError> for JournalError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Finished => JournalError::Finished,
            other => JournalError::Store(other),
        }
    }
}

/// An event to journal now: the timestamp goes into the payload as well, so a live frame and
/// the journal row of the same event carry the same data.
pub fn event(kind: EventKind, payload: Value, terminal_state: Option<TerminalState>) -> NewEvent {
    let created_at = (crate::clock::now() * 1000.0).round() / 1000.0;
    let mut payload = match payload {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        other => {
            let mut map = Map::new();
            map.insert("value".into(), other);
            map
        }
    };
    payload.insert("created_at".into(), Value::from(created_at));
    NewEvent {
        kind,
        payload,
        terminal_state,
        created_at,
    }
}

impl Journal {
    /// Starts the writer task.
    pub fn spawn(store: Arc<dyn JournalStore>, hub: Hub, metrics: Arc<Metrics>) -> Journal {
        let (tx, rx) = mpsc::channel::<Request>(4096);
        tokio::spawn(write_loop(store, hub, rx, metrics));
        Journal { tx }
    }

    async fn submit(&self, op: JournalOp) -> Result<Vec<Arc<Frame>>, JournalError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Request { op, reply })
            .await
            .map_err(|_| JournalError::Closed)?;
        Ok(answer.await.map_err(|_| JournalError::Closed)??)
    }

    /// Queues one event of a running run behind everything queued before it, and returns as
    /// soon as it is queued: an agent that streams fast does not wait for each commit, and
    /// what it queued meanwhile goes in together (one transaction for many of its events).
    /// The returned [`Queued`] tells once it is committed.
    pub async fn enqueue(&self, run_id: &str, event: NewEvent) -> Result<Queued, JournalError> {
        let (reply, answer) = oneshot::channel();
        let op = JournalOp::Append {
            run_id: run_id.to_owned(),
            event,
        };
        self.tx
            .send(Request { op, reply })
            .await
            .map_err(|_| JournalError::Closed)?;
        Ok(Queued { answer })
    }

    /// Journals one event of a running run; returns once it is committed and published.
    pub async fn append(&self, run_id: &str, event: NewEvent) -> Result<Arc<Frame>, JournalError> {
        let frames = self
            .submit(JournalOp::Append {
                run_id: run_id.to_owned(),
                event,
            })
            .await?;
        frames.into_iter().next().ok_or(JournalError::Finished)
    }

    /// Ends a run: terminal event, settled message, `stream_end`; returns once committed.
    pub async fn settle(
        &self,
        run_id: &str,
        terminal: NewEvent,
        answer: SettledAnswer,
    ) -> Result<Vec<Arc<Frame>>, JournalError> {
        self.submit(JournalOp::Settle {
            run_id: run_id.to_owned(),
            terminal,
            answer,
        })
        .await
    }
}

/// An event handed to the journal, not yet known to be committed.
pub struct Queued {
    answer: oneshot::Receiver<Result<Vec<Arc<Frame>>, StoreError>>,
}

impl Queued {
    /// How it went, if the journal has answered yet.
    pub fn try_outcome(&mut self) -> Option<Result<(), JournalError>> {
        match self.answer.try_recv() {
            Ok(result) => Some(appended(result)),
            Err(oneshot::error::TryRecvError::Empty) => None,
            Err(oneshot::error::TryRecvError::Closed) => Some(Err(JournalError::Closed)),
        }
    }

    /// Waits until it is committed (or refused).
    pub async fn outcome(self) -> Result<(), JournalError> {
        match self.answer.await {
            Ok(result) => appended(result),
            Err(_) => Err(JournalError::Closed),
        }
    }
}

fn appended(result: Result<Vec<Arc<Frame>>, StoreError>) -> Result<(), JournalError> {
    match result {
        Ok(frames) if frames.is_empty() => Err(JournalError::Finished),
        Ok(_) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Pauses before each new try of a batch that failed.
const RETRY_AFTER: [std::time::Duration; 3] = [
    std::time::Duration::from_millis(50),
    std::time::Duration::from_millis(250),
    std::time::Duration::from_secs(1),
];

/// Commits a batch; a batch that fails (a busy database, a database out of reach for a
/// moment) is tried again. A failure of one write (not of the whole store) is then found op by
/// op, so that it fails alone and not every run in its batch. A full disk is tried once more
/// only: waiting does not free space, and the runs must learn at once that they cannot write.
async fn commit_with_retry(
    store: &dyn JournalStore,
    ops: Vec<JournalOp>,
    metrics: &Metrics,
) -> Vec<Result<Vec<Frame>, StoreError>> {
    let mut last = match commit(store, ops.clone(), metrics).await {
        Ok(results) => return results,
        Err(e) => e,
    };
    let tries = if last.disk_full() {
        1
    } else {
        RETRY_AFTER.len()
    };
    for pause in &RETRY_AFTER[..tries] {
        tracing::warn!("journal commit failed ({last}); trying again in {pause:?}");
        Metrics::add(&metrics.journal_retries, 1);
        tokio::time::sleep(*pause).await;
        match commit(store, ops.clone(), metrics).await {
            Ok(results) => return results,
            Err(e) => last = e,
        }
    }
    if ops.len() == 1 {
        tracing::error!("journal commit failed: {last}");
        return vec![Err(last)];
    }
    if last.shared().is_some() {
        // Every write of the batch met it: each is told at once.
        tracing::error!("journal commit of {} writes failed: {last}", ops.len());
        let mut results: Vec<_> = (1..ops.len())
            .filter_map(|_| last.shared().map(Err))
            .collect();
        results.push(Err(last));
        return results;
    }
    let mut results = Vec::with_capacity(ops.len());
    for op in ops {
        results.push(match commit(store, vec![op], metrics).await {
            Ok(mut one) => one.pop().unwrap_or(Err(StoreError::Finished)),
            Err(e) => {
                tracing::error!("journal commit failed: {e}");
                Err(e)
            }
        });
    }
    results
}

/// Commits a batch; while the disk is full, the ends of runs go first and alone, so that the
/// little room there is (the room kept back, given up for them) ends runs rather than
/// lengthening runs that cannot finish anyway.
async fn commit_batch(
    store: &dyn JournalStore,
    ops: Vec<JournalOp>,
    metrics: &Metrics,
) -> Vec<Result<Vec<Frame>, StoreError>> {
    let full = metrics.store.said() == crate::metrics::store::Said::DiskFull;
    let settles = ops
        .iter()
        .filter(|op| matches!(op, JournalOp::Settle { .. }))
        .count();
    if !full || settles == 0 || settles == ops.len() {
        return commit_with_retry(store, ops, metrics).await;
    }
    let (ends, writes): (Vec<_>, Vec<_>) = ops
        .into_iter()
        .enumerate()
        .partition(|(_, op)| matches!(op, JournalOp::Settle { .. }));
    let mut results: Vec<Option<Result<Vec<Frame>, StoreError>>> =
        (0..ends.len() + writes.len()).map(|_| None).collect();
    for part in [ends, writes] {
        let (at, ops): (Vec<_>, Vec<_>) = part.into_iter().unzip();
        for (i, result) in at
            .into_iter()
            .zip(commit_with_retry(store, ops, metrics).await)
        {
            results[i] = Some(result);
        }
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or(Err(StoreError::Finished)))
        .collect()
}

/// One commit, its outcome told to the store's health (`/healthz`, the failures' metric).
async fn commit(
    store: &dyn JournalStore,
    ops: Vec<JournalOp>,
    metrics: &Metrics,
) -> Result<Vec<Result<Vec<Frame>, StoreError>>, StoreError> {
    use crate::metrics::store::Failure;
    let result = store.commit(ops).await;
    match &result {
        Ok(_) => metrics.store.ok(),
        Err(e) if e.disk_full() => metrics.store.failed(Failure::DiskFull),
        Err(e) if e.unreachable() => metrics.store.failed(Failure::Unreachable),
        Err(_) => metrics.store.failed(Failure::Other),
    }
    result
}

async fn write_loop(
    store: Arc<dyn JournalStore>,
    hub: Hub,
    mut rx: mpsc::Receiver<Request>,
    metrics: Arc<Metrics>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let (ops, replies): (Vec<_>, Vec<_>) = batch.drain(..).map(|r| (r.op, r.reply)).unzip();
        Metrics::add(&metrics.journal_batches, 1);
        let events = ops.len();
        let began = std::time::Instant::now();
        let results = commit_batch(&*store, ops, &metrics).await;
        metrics
            .journal_commit
            .observe(&[], began.elapsed().as_secs_f64());
        metrics.journal_batch.observe(&[], events as f64);
        for (result, reply) in results.into_iter().zip(replies) {
            let result = result.map(|rows| {
                rows.into_iter()
                    .map(|frame| {
                        let frame = Arc::new(frame);
                        hub.publish(Arc::clone(&frame));
                        frame
                    })
                    .collect()
            });
            let _ = reply.send(result);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    use async_trait::async_trait;
    use serde_json::{json, Value};

    use super::*;
    use crate::store::sql::SqlStore;
    use crate::store::{Lease, NewTurn, TurnAt};

    /// The journal part of the real SQLite store, whose next `failures` commits fail as a busy
    /// database does, or as a full disk does with `full` (the writer uses nothing else).
    struct Flaky {
        inner: SqlStore,
        failures: AtomicU32,
        full: std::sync::atomic::AtomicBool,
        commits: AtomicU32,
    }

    impl Flaky {
        /// A store in `dir` that fails nothing until told to.
        async fn open(dir: &std::path::Path) -> Arc<Self> {
            Arc::new(Flaky {
                inner: SqlStore::open_sqlite(&dir.join("a.db")).await.unwrap(),
                failures: AtomicU32::new(0),
                full: std::sync::atomic::AtomicBool::new(false),
                commits: AtomicU32::new(0),
            })
        }
    }

    #[async_trait]
    impl JournalStore for Flaky {
        async fn commit(
            &self,
            ops: Vec<JournalOp>,
        ) -> Result<Vec<Result<Vec<Frame>, StoreError>>, StoreError> {
            self.commits.fetch_add(1, Ordering::SeqCst);
            if self.failures.load(Ordering::SeqCst) > 0 {
                self.failures.fetch_sub(1, Ordering::SeqCst);
                if self.full.load(Ordering::SeqCst) {
                    return Err(StoreError::DiskFull);
                }
                return Err(StoreError::Database(sqlx::Error::Protocol(
                    "database is locked".into(),
                )));
            }
            self.inner.commit(ops).await
        }
    }

    async fn running_run(store: &Flaky) -> String {
        let session = store.inner.create_session("t", None, 0.0).await.unwrap();
        let run = uuid::Uuid::new_v4().simple().to_string();
        store
            .inner
            .start_run(NewTurn {
                session_id: &session.id,
                run_id: &run,
                turn_id: "turn",
                user_message_id: &format!("m-{run}"),
                message: "hi",
                attachments: &[],
                client_id: None,
                queued_id: None,
                place: TurnAt::Next,
                default_model: None,
                lease: Lease {
                    instance: "test",
                    until: f64::MAX,
                },
                max_running: None,
                now: 0.0,
            })
            .await
            .unwrap();
        run
    }

    #[tokio::test]
    async fn a_failed_batch_is_tried_again_and_nothing_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        let store = Flaky::open(dir.path()).await;
        let run = running_run(&store).await;
        let metrics = Arc::new(Metrics::default());
        let journal = Journal::spawn(
            Arc::clone(&store) as Arc<dyn JournalStore>,
            Hub::default(),
            Arc::clone(&metrics),
        );
        // Two failures: the third try commits.
        store.failures.store(2, Ordering::SeqCst);
        let writes: Vec<_> = (0..20)
            .map(|i| {
                let journal = journal.clone();
                let run = run.clone();
                tokio::spawn(async move {
                    journal
                        .append(
                            &run,
                            event(EventKind::Token, json!({"text": format!("w{i} ")}), None),
                        )
                        .await
                })
            })
            .collect();
        for write in writes {
            write
                .await
                .unwrap()
                .expect("journaled despite the failures");
        }
        assert_eq!(Metrics::get(&metrics.journal_retries), 2);
        let rows = store.inner.events(&run, 0, None, 100).await.unwrap();
        assert_eq!(rows.len(), 20);
        let seqs: Vec<u64> = rows.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, (1..=20).collect::<Vec<_>>(), "gapless, once each");
    }

    #[tokio::test]
    async fn a_batch_of_many_runs_journals_each_in_order_and_answers_each_op() {
        let dir = tempfile::tempdir().unwrap();
        let store = Flaky::open(dir.path()).await;
        let (a, b, c) = (
            running_run(&store).await,
            running_run(&store).await,
            running_run(&store).await,
        );
        let append = |run: &str, i: i32| JournalOp::Append {
            run_id: run.to_owned(),
            event: event(EventKind::Token, json!({ "text": i }), None),
        };
        let settle = |run: &str| JournalOp::Settle {
            run_id: run.to_owned(),
            terminal: event(EventKind::Done, json!({}), Some(TerminalState::Completed)),
            answer: SettledAnswer {
                message_id: format!("m-{run}-answer"),
                content: "done".into(),
                usage: None,
                cut_off: false,
            },
        };
        // Interleaved; b settles in the middle, and an append to b after that is refused.
        let ops = vec![
            append(&a, 1),
            append(&b, 1),
            append(&c, 1),
            append(&a, 2),
            append(&b, 2),
            settle(&b),
            append(&b, 3),
            append(&a, 3),
        ];
        let results = store.commit(ops).await.unwrap();
        let seqs: Vec<Vec<(String, u64)>> = results
            .iter()
            .map(|r| match r {
                Ok(frames) => frames
                    .iter()
                    .map(|f| (f.row.kind.clone(), f.row.seq))
                    .collect(),
                Err(_) => Vec::new(),
            })
            .collect();
        let token = |seq| vec![("token".to_owned(), seq)];
        assert_eq!(seqs[0], token(1));
        assert_eq!(seqs[1], token(1));
        assert_eq!(seqs[2], token(1));
        assert_eq!(seqs[3], token(2));
        assert_eq!(seqs[4], token(2));
        assert_eq!(
            seqs[5],
            vec![
                ("done".to_owned(), 3),
                ("settled_message".to_owned(), 4),
                ("stream_end".to_owned(), 5)
            ]
        );
        assert!(matches!(results[6], Err(StoreError::Finished)));
        assert_eq!(seqs[7], token(3));
        for (run, count) in [(&a, 3), (&b, 5), (&c, 1)] {
            let rows = store.inner.events(run, 0, None, 100).await.unwrap();
            let found: Vec<u64> = rows.iter().map(|r| r.seq).collect();
            assert_eq!(found, (1..=count).collect::<Vec<_>>(), "{run}: gapless");
            let texts: Vec<&Value> = rows
                .iter()
                .filter(|r| r.kind == "token")
                .map(|r| &r.payload["text"])
                .collect();
            let expected = if *run == c { 1 } else { 2 };
            assert!(texts.len() >= expected);
            assert!(
                texts.windows(2).all(|w| w[0].as_i64() < w[1].as_i64()),
                "{run}: in order"
            );
            let frames = store.inner.frames(run, 0, None, 100).await.unwrap();
            assert_eq!(frames.count, count as u32, "{run}: each row has its frame");
            // A feed publishes the frames stored at commit, byte for byte those a replay sends.
            let stored = store.inner.stored_frames(run, 0, 100).await.unwrap();
            let seqs: Vec<u64> = stored.iter().map(|f| f.row.seq).collect();
            assert_eq!(
                seqs,
                (1..=count).collect::<Vec<_>>(),
                "{run}: stored frames in order"
            );
            let joined: Vec<u8> = stored.iter().flat_map(|f| f.sse.iter().copied()).collect();
            assert_eq!(
                joined,
                frames.sse.to_vec(),
                "{run}: the same bytes as a replay"
            );
            let tail = store.inner.stored_frames(run, 1, 1).await.unwrap();
            let second: Vec<u64> = (2..=count.min(2)).collect();
            assert_eq!(tail.iter().map(|f| f.row.seq).collect::<Vec<_>>(), second);
        }
    }

    #[tokio::test]
    async fn a_batch_that_keeps_failing_fails_op_by_op() {
        let dir = tempfile::tempdir().unwrap();
        let store = Flaky::open(dir.path()).await;
        let run = running_run(&store).await;
        let ops: Vec<JournalOp> = (0..3)
            .map(|i| JournalOp::Append {
                run_id: run.clone(),
                event: event(EventKind::Token, Value::from(i), None),
            })
            .collect();
        // The batch and its three retries fail; then each op alone, the first of which fails.
        store.failures.store(5, Ordering::SeqCst);
        let metrics = Metrics::default();
        let results = commit_batch(&*store, ops, &metrics).await;
        assert_eq!(results.len(), 3);
        assert!(results[0].is_err());
        assert!(
            results[1].is_ok() && results[2].is_ok(),
            "the others are kept"
        );
        assert_eq!(
            store.inner.events(&run, 0, None, 10).await.unwrap().len(),
            2
        );
    }

    #[tokio::test]
    async fn a_full_disk_fails_the_whole_batch_at_once_and_ends_go_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = Flaky::open(dir.path()).await;
        let run = running_run(&store).await;
        let ended = running_run(&store).await;
        let append = |i: i64| JournalOp::Append {
            run_id: run.clone(),
            event: event(EventKind::Token, Value::from(i), None),
        };
        // Full: the batch and one retry fail, and every write is told at once, op by op
        // never tried (each would fail the same).
        store.full.store(true, Ordering::SeqCst);
        store.failures.store(u32::MAX, Ordering::SeqCst);
        let metrics = Metrics::default();
        let results = commit_batch(&*store, (0..3).map(append).collect(), &metrics).await;
        assert_eq!(results.len(), 3);
        assert!(results.iter().all(|r| matches!(r, Err(e) if e.disk_full())));
        assert_eq!(store.commits.load(Ordering::SeqCst), 2);
        assert_eq!(metrics.store.said(), crate::metrics::store::Said::DiskFull);
        // While it is full, a run's end goes alone and first: it gets the room there is even
        // when the writes queued with it still fail.
        store.commits.store(0, Ordering::SeqCst);
        let settle = JournalOp::Settle {
            run_id: ended.clone(),
            terminal: event(
                EventKind::Apperror,
                json!({"message": "The server could not save this turn: the disk is full."}),
                Some(anchor::TerminalState::Error),
            ),
            answer: SettledAnswer {
                message_id: format!("a-{ended}"),
                content: String::new(),
                usage: None,
                cut_off: false,
            },
        };
        store.failures.store(0, Ordering::SeqCst);
        let results = commit_batch(&*store, vec![append(7), settle, append(8)], &metrics).await;
        assert_eq!(
            store.commits.load(Ordering::SeqCst),
            2,
            "the end, then the rest"
        );
        assert!(results.iter().all(Result::is_ok));
        let end = store.inner.events(&ended, 0, None, 10).await.unwrap();
        assert_eq!(
            end.last().map(|e| e.kind.as_str()),
            Some("stream_end"),
            "{end:?}"
        );
    }
}
