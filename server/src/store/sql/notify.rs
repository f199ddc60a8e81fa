//! What the store says on PostgreSQL's channels when it commits (LISTEN/NOTIFY), and what
//! an instance hears there.

use super::*;

/// The channel committed journal rows are announced on (`run_id seq`, space-separated pairs).
pub(super) const JOURNAL_CHANNEL: &str = "anchorage_journal";
/// The channel that tells an instance it has commands waiting (its id).
pub(super) const COMMAND_CHANNEL: &str = "anchorage_commands";
/// The most a notification carries (PostgreSQL's limit is 8,000 bytes).
const NOTIFY_BYTES: usize = 7_000;

/// The payloads that announce a commit: each run's new high-water mark, a line `run_id seq`
/// each, as few notifications as fit.
pub(super) fn journal_notices(results: &[Result<Vec<Frame>, StoreError>]) -> Vec<String> {
    let mut high: Vec<(&str, u64)> = Vec::new();
    for row in results
        .iter()
        .flatten()
        .filter_map(|frames| frames.last().map(|f| &f.row))
    {
        match high.iter_mut().find(|(run, _)| *run == row.run_id) {
            Some((_, seq)) => *seq = (*seq).max(row.seq),
            None => high.push((&row.run_id, row.seq)),
        }
    }
    let mut payloads = Vec::new();
    let mut payload = String::new();
    for (run, seq) in high {
        let line = format!("{run} {seq}");
        if !payload.is_empty() && payload.len() + 1 + line.len() > NOTIFY_BYTES {
            payloads.push(std::mem::take(&mut payload));
        }
        if !payload.is_empty() {
            payload.push('\n');
        }
        payload.push_str(&line);
    }
    if !payload.is_empty() {
        payloads.push(payload);
    }
    payloads
}

/// What a notification on one of the store's channels says.
fn parse_notice(channel: &str, payload: &str) -> Vec<Notice> {
    match channel {
        JOURNAL_CHANNEL => payload
            .lines()
            .filter_map(|line| {
                let (run_id, seq) = line.rsplit_once(' ')?;
                Some(Notice::Journal {
                    run_id: run_id.to_owned(),
                    seq: seq.parse().ok()?,
                })
            })
            .collect(),
        COMMAND_CHANNEL => vec![Notice::Commands {
            instance: payload.to_owned(),
        }],
        _ => Vec::new(),
    }
}

/// Forwards what `listener` hears to `tx` until `tx` is dropped; after a lost connection,
/// once it is back, [`Notice::Resync`].
pub(super) async fn forward_notices(
    mut listener: sqlx::postgres::PgListener,
    tx: tokio::sync::mpsc::Sender<Notice>,
) {
    loop {
        let next = tokio::select! {
            next = listener.try_recv() => next,
            () = tx.closed() => return,
        };
        match next {
            Ok(Some(notification)) => {
                for notice in parse_notice(notification.channel(), notification.payload()) {
                    if tx.send(notice).await.is_err() {
                        return;
                    }
                }
            }
            // Lost, and already connected again.
            Ok(None) => {
                if tx.send(Notice::Resync).await.is_err() {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!("listening to the database failed: {e}; trying again");
                // Until a LISTEN goes through again (it reconnects first).
                loop {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                        () = tx.closed() => return,
                    }
                    if listener.listen(JOURNAL_CHANNEL).await.is_ok() {
                        break;
                    }
                }
                if tx.send(Notice::Resync).await.is_err() {
                    return;
                }
            }
        }
    }
}
