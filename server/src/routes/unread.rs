//! The body of a request refused before it was read.

use std::time::Duration;

use axum::body::Body;
use futures::StreamExt;
use tokio::sync::Semaphore;

/// The longest a refused upload is read on: long enough for a file on its way over a fair
/// link, short enough that a trickle holds nothing for long.
pub const LINGER: Duration = Duration::from_secs(10);

/// How many refused uploads are read on at once, in all: past it, a refusal closes at once
/// (its sender may see a reset connection rather than the answer), so that refusals cannot
/// hold connections open without a bound.
pub const MAX_LINGERING: usize = 16;

static LINGERING: Semaphore = Semaphore::const_new(MAX_LINGERING);

/// Reads what a refused upload is still sending and drops it chunk by chunk, so the client
/// hears the refusal: a server that answers mid-upload and closes leaves the sender with a
/// broken pipe instead of "wait" or "try again". Bounded: no more than `limit` bytes, no
/// longer than `wait` (at most [`LINGER`]), no more than [`MAX_LINGERING`] at once; nothing
/// is kept.
pub async fn discard(body: Body, limit: usize, wait: Duration) {
    let Ok(_place) = LINGERING.try_acquire() else {
        return;
    };
    let mut chunks = body.into_data_stream();
    let _ = tokio::time::timeout(wait.min(LINGER), async {
        let mut read = 0usize;
        while let Some(Ok(chunk)) = chunks.next().await {
            read += chunk.len();
            if read > limit {
                break;
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn refusals_read_on_are_bounded_in_number_and_the_rest_close_at_once() {
        // Bodies that never end, each read on until its wait.
        let never =
            || Body::from_stream(futures::stream::pending::<Result<Vec<u8>, std::io::Error>>());
        let held: Vec<_> = (0..MAX_LINGERING)
            .map(|_| tokio::spawn(discard(never(), 1 << 20, Duration::from_secs(60))))
            .collect();
        // Each takes its place (they start in turn on this runtime).
        for _ in 0..100 {
            if LINGERING.available_permits() == 0 {
                break;
            }
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(LINGERING.available_permits(), 0);
        // One more: no place, so it does not wait at all.
        tokio::time::timeout(Duration::from_secs(5), discard(never(), 1 << 20, LINGER))
            .await
            .expect("a refusal past the bound closes at once");
        assert!(held.iter().all(|h| !h.is_finished()));
        for h in held {
            h.abort();
        }
        // A body that ends is read to its end and let go.
        discard(Body::from(vec![b'x'; 4096]), 1 << 20, LINGER).await;
    }
}
