//! The journal writer: every event of every run goes through one task that commits in order,
//! many writes per transaction, and publishes each committed frame to the run's followers.

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::hub::{Frame, Hub};
use crate::store::{JournalOp, NewEvent, SettledAnswer, Store, StoreError};

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

/// Seconds since the epoch.
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// An event to journal now: the timestamp goes into the payload as well, so a live frame and
/// the journal row of the same event carry the same data.
pub fn event(kind: &str, payload: Value, terminal_state: Option<&str>) -> NewEvent {
    let created_at = (now() * 1000.0).round() / 1000.0;
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
        kind: kind.to_owned(),
        payload,
        terminal_state: terminal_state.map(str::to_owned),
        created_at,
    }
}

impl Journal {
    /// Starts the writer task.
    pub fn spawn(store: Arc<dyn Store>, hub: Hub) -> Journal {
        let (tx, rx) = mpsc::channel::<Request>(4096);
        tokio::spawn(write_loop(store, hub, rx));
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

async fn write_loop(store: Arc<dyn Store>, hub: Hub, mut rx: mpsc::Receiver<Request>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let (ops, replies): (Vec<_>, Vec<_>) = batch.drain(..).map(|r| (r.op, r.reply)).unzip();
        match store.commit(ops).await {
            Ok(results) => {
                for (result, reply) in results.into_iter().zip(replies) {
                    let result = result.map(|rows| {
                        rows.into_iter()
                            .map(|row| {
                                let frame = Arc::new(Frame::new(row));
                                hub.publish(Arc::clone(&frame));
                                frame
                            })
                            .collect()
                    });
                    let _ = reply.send(result);
                }
            }
            Err(e) => {
                tracing::error!("journal commit failed: {e}");
                let message = e.to_string();
                for reply in replies {
                    let _ = reply.send(Err(StoreError::Database(sqlx::Error::Protocol(
                        message.clone(),
                    ))));
                }
            }
        }
    }
}
