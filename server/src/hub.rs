//! Live fan-out: each running run has one broadcast channel of committed journal frames.
//!
//! A frame is published only after its row is committed, in sequence order, so a subscriber
//! that misses frames (it subscribed late, or lagged) can always fill the gap from the journal.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::broadcast;

use crate::store::JournalRow;

/// Frames a slow follower may fall behind before it re-reads from the journal.
const CHANNEL_CAPACITY: usize = 1024;

/// A committed journal row with its SSE encoding, shared by every follower.
#[derive(Debug)]
pub struct Frame {
    /// The row.
    pub row: JournalRow,
    /// `id: run:seq`, `event: type`, `data: payload` and the blank line.
    pub sse: Bytes,
}

impl Frame {
    /// Encodes a row once.
    pub fn new(row: JournalRow) -> Self {
        let data = serde_json::to_string(&row.payload).unwrap_or_else(|_| "{}".to_owned());
        let sse = crate::wire::encode_frame(&row.run_id, row.seq, &row.kind, &data);
        Frame {
            row,
            sse: Bytes::from(sse),
        }
    }
}

struct Channel {
    tx: broadcast::Sender<Arc<Frame>>,
}

/// Live channels of the runs in progress.
#[derive(Clone, Default)]
pub struct Hub {
    channels: Arc<Mutex<HashMap<String, Channel>>>,
}

impl Hub {
    fn channels(&self) -> std::sync::MutexGuard<'_, HashMap<String, Channel>> {
        // A poisoned lock only means a panic elsewhere while holding it; the map stays usable.
        self.channels.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens a run's channel (before the run can produce anything).
    pub fn open(&self, run_id: &str) {
        let (tx, _) = broadcast::channel(CHANNEL_CAPACITY);
        self.channels().insert(run_id.to_owned(), Channel { tx });
    }

    /// Publishes a committed frame to the run's followers.
    pub fn publish(&self, frame: Arc<Frame>) {
        if let Some(channel) = self.channels().get(&frame.row.run_id) {
            let _ = channel.tx.send(frame);
        }
    }

    /// Closes a run's channel; followers drain what they have, then see it closed.
    pub fn close(&self, run_id: &str) {
        self.channels().remove(run_id);
    }

    /// Follows a run, if it is live.
    pub fn subscribe(&self, run_id: &str) -> Option<broadcast::Receiver<Arc<Frame>>> {
        self.channels().get(run_id).map(|c| c.tx.subscribe())
    }

    /// Whether a run is live.
    pub fn is_live(&self, run_id: &str) -> bool {
        self.channels().contains_key(run_id)
    }

    /// Followers of a run.
    pub fn followers(&self, run_id: &str) -> usize {
        self.channels()
            .get(run_id)
            .map_or(0, |c| c.tx.receiver_count())
    }
}
