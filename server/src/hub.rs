//! Live fan-out: each run followed in this process has one broadcast channel of committed
//! journal frames.
//!
//! A frame is published only after its row is committed, in sequence order, so a subscriber
//! that misses frames (it subscribed late, or lagged) can always fill the gap from the journal.
//!
//! A run this process runs is fed by its journal writer. A run another instance runs (sharing
//! the database) is fed by a *feed*: one task per followed run, woken when the database
//! announces a commit of that run ([`Hub::wake`]), which reads the rows above what it has
//! published and publishes them. However many browsers follow the run here, the journal is
//! read once per commit, and the announcement never carries the event itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{broadcast, Notify};
use tokio_util::sync::CancellationToken;

pub use crate::store::Frame;
use crate::store::Store;

/// Frames a slow follower may fall behind before it re-reads from the journal.
const CHANNEL_CAPACITY: usize = 1024;
/// Rows a feed reads per query.
const FEED_PAGE: u32 = 512;
/// How often a feed looks at the journal with no announcement (one lost while the listener
/// reconnected, or a database that announces nothing).
const FEED_POLL: Duration = Duration::from_secs(1);

struct Channel {
    tx: broadcast::Sender<Arc<Frame>>,
    /// Wakes the feed of a run another instance runs (`None`: this process publishes).
    feed: Option<Arc<Notify>>,
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

    /// Opens a run's channel for this process to publish on (before the run can produce
    /// anything). A channel a feed fills is taken over, followers and all: its feed stops.
    pub fn open(&self, run_id: &str) {
        let mut channels = self.channels();
        match channels.get_mut(run_id) {
            Some(channel) => channel.feed = None,
            None => {
                let (tx, _) = broadcast::channel(CHANNEL_CAPACITY);
                channels.insert(run_id.to_owned(), Channel { tx, feed: None });
            }
        }
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

    /// Follows a run that another instance runs: the run's channel here, fed from the
    /// journal above `from` (a seq read before this call) as commits are announced. Followers
    /// here share one feed, which stops once the run has ended or nobody follows it.
    pub fn follow(
        &self,
        run_id: &str,
        from: u64,
        store: Arc<dyn Store>,
        shutdown: CancellationToken,
    ) -> broadcast::Receiver<Arc<Frame>> {
        let mut channels = self.channels();
        if let Some(channel) = channels.get(run_id) {
            return channel.tx.subscribe();
        }
        let (tx, rx) = broadcast::channel(CHANNEL_CAPACITY);
        let wake = Arc::new(Notify::new());
        channels.insert(
            run_id.to_owned(),
            Channel {
                tx,
                feed: Some(Arc::clone(&wake)),
            },
        );
        drop(channels);
        tokio::spawn(feed(
            self.clone(),
            run_id.to_owned(),
            from,
            store,
            wake,
            shutdown,
        ));
        rx
    }

    /// The database announced a commit of `run_id`: its feed here, if any, reads it.
    pub fn wake(&self, run_id: &str) {
        if let Some(Channel {
            feed: Some(wake), ..
        }) = self.channels().get(run_id)
        {
            wake.notify_one();
        }
    }

    /// Every feed looks at the journal (announcements may have been lost).
    pub fn wake_all(&self) {
        for channel in self.channels().values() {
            if let Some(wake) = &channel.feed {
                wake.notify_one();
            }
        }
    }

    /// How many runs this process follows through feeds.
    pub fn feeds(&self) -> usize {
        self.channels()
            .values()
            .filter(|c| c.feed.is_some())
            .count()
    }

    /// Whether `wake`'s feed still fills the run's channel.
    fn feeding(&self, run_id: &str, wake: &Arc<Notify>) -> bool {
        self.channels()
            .get(run_id)
            .and_then(|c| c.feed.as_ref())
            .is_some_and(|w| Arc::ptr_eq(w, wake))
    }

    /// Removes the run's channel if `wake`'s feed fills it and, unless `ended`, nobody follows
    /// it; whether it did. (Subscribing takes the same lock, so no follower joins a channel
    /// that is going away.)
    fn end_feed(&self, run_id: &str, wake: &Arc<Notify>, ended: bool) -> bool {
        let mut channels = self.channels();
        let ours = channels.get(run_id).is_some_and(|c| {
            c.feed.as_ref().is_some_and(|w| Arc::ptr_eq(w, wake))
                && (ended || c.tx.receiver_count() == 0)
        });
        if ours {
            channels.remove(run_id);
        }
        ours
    }

    /// Followers of a run.
    pub fn followers(&self, run_id: &str) -> usize {
        self.channels()
            .get(run_id)
            .map_or(0, |c| c.tx.receiver_count())
    }
}

/// Publishes the run's journal rows above `cursor` as they are committed, until the run's
/// `stream_end`, until nobody follows it here, or until this process takes the channel over.
async fn feed(
    hub: Hub,
    run_id: String,
    mut cursor: u64,
    store: Arc<dyn Store>,
    wake: Arc<Notify>,
    shutdown: CancellationToken,
) {
    loop {
        loop {
            if !hub.feeding(&run_id, &wake) {
                return;
            }
            let frames = match store.stored_frames(&run_id, cursor, FEED_PAGE).await {
                Ok(frames) => frames,
                Err(e) => {
                    tracing::warn!(run_id, "a feed could not read the journal: {e}");
                    break;
                }
            };
            let full = frames.len() == FEED_PAGE as usize;
            for frame in frames {
                let ended = frame.row.kind == anchor::EventKind::StreamEnd.name();
                cursor = frame.row.seq;
                hub.publish(Arc::new(frame));
                if ended {
                    hub.end_feed(&run_id, &wake, true);
                    return;
                }
            }
            if !full {
                break;
            }
        }
        if hub.end_feed(&run_id, &wake, false) {
            return;
        }
        tokio::select! {
            () = wake.notified() => {}
            () = tokio::time::sleep(FEED_POLL) => {}
            () = shutdown.cancelled() => return,
        }
    }
}
