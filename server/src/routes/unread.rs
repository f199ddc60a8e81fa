//! The body of a request refused before it was read.

use std::time::Duration;

use axum::body::Body;
use futures::StreamExt;

/// Reads what a refused upload is still sending and drops it chunk by chunk, so the client
/// hears the refusal: a server that answers mid-upload and closes leaves the sender with a
/// broken pipe instead of "wait" or "try again". Bounded like the upload it stands in for:
/// no more than `limit` bytes, no longer than `wait`; nothing is kept.
pub async fn discard(body: Body, limit: usize, wait: Duration) {
    let mut chunks = body.into_data_stream();
    let _ = tokio::time::timeout(wait, async {
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
