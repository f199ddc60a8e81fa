//! Appending events to running runs: their seqs taken in one update, their rows (each with
//! its SSE frame, encoded once) written in as few INSERTs as fit.

use super::*;

/// Rows one INSERT of journal rows carries at most (ten parameters each: under SQLite's and
/// PostgreSQL's limits on parameters per statement).
const INSERT_ROWS: usize = 500;

/// Appends events to a running run inside `tx`, in order: one update takes their seqs, and
/// the rows go in as few INSERTs as fit; `None` when the run is not running.
async fn append_in(
    tx: &mut AnyConnection,
    run_id: &str,
    events: &[&NewEvent],
) -> Result<Option<Vec<Frame>>, StoreError> {
    let mut rows = append_runs(tx, &[(run_id, events.to_vec())]).await?;
    Ok(rows.pop().flatten())
}

/// Appends events to several running runs inside `tx`, each run's in order, in one update
/// (which takes their seqs) and as few INSERTs as fit, whatever the number of runs: a batch of
/// many runs' appends costs a few statements, not two per event. Per run, its rows, or `None`
/// when it is not running.
async fn append_runs(
    tx: &mut AnyConnection,
    runs: &[(&str, Vec<&NewEvent>)],
) -> Result<Vec<Option<Vec<Frame>>>, StoreError> {
    // What each running run's new last seq is, and its session.
    let mut taken: std::collections::HashMap<String, (i64, String)> =
        std::collections::HashMap::with_capacity(runs.len());
    for chunk in runs.chunks(INSERT_ROWS) {
        let values = (0..chunk.len())
            .map(|i| format!("(${}, ${})", 2 * i + 1, 2 * i + 2))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "UPDATE runs SET last_seq = runs.last_seq + v.column2 FROM (VALUES {values}) AS v \
             WHERE runs.id = v.column1 AND runs.status = 'running' \
             RETURNING id, last_seq, session_id"
        );
        let mut query = sqlx::query(&sql);
        for (run_id, events) in chunk {
            query = query.bind(*run_id).bind(events.len() as i64);
        }
        for row in query.fetch_all(&mut *tx).await? {
            taken.insert(row.get("id"), (row.get("last_seq"), row.get("session_id")));
        }
    }
    // Per run, how many rows it wrote (`None`: not running); the rows, each with its payload
    // and its frame encoded once: stored, and handed back to be sent as they are.
    let mut counts = Vec::with_capacity(runs.len());
    let mut rows: Vec<(JournalRow, String, String)> = Vec::new();
    for (run_id, events) in runs {
        let Some((last, session_id)) = taken.get(*run_id) else {
            counts.push(None);
            continue;
        };
        let first = (last - events.len() as i64 + 1).max(1) as u64;
        for (i, event) in events.iter().enumerate() {
            let row = JournalRow {
                run_id: (*run_id).to_owned(),
                seq: first + i as u64,
                session_id: session_id.clone(),
                kind: event.kind.name().to_owned(),
                created_at: event.created_at,
                terminal: event.terminal_state.is_some(),
                terminal_state: event.terminal_state.map(|t| t.as_str().to_owned()),
                payload: event.payload.clone(),
            };
            let payload = serde_json::to_string(&event.payload).unwrap_or_else(|_| "{}".to_owned());
            let frame = crate::wire::encode_frame(&row.run_id, row.seq, &row.kind, &payload);
            rows.push((row, payload, frame));
        }
        counts.push(Some(events.len()));
    }
    for chunk in rows.chunks(INSERT_ROWS) {
        let stored: Vec<Stored<'_>> = chunk
            .iter()
            .map(|(row, payload, frame)| Stored {
                run_id: &row.run_id,
                seq: row.seq,
                session_id: &row.session_id,
                kind: &row.kind,
                created_at: row.created_at,
                terminal_state: row.terminal_state.as_deref(),
                payload,
                frame,
            })
            .collect();
        insert_rows(tx, &stored).await?;
    }
    add_bytes(
        tx,
        rows.iter()
            .map(|(row, payload, frame)| (row.session_id.as_str(), payload.len() + frame.len())),
    )
    .await?;
    let mut written = rows.into_iter().map(|(row, _, frame)| Frame {
        row,
        sse: frame.into(),
    });
    Ok(counts
        .into_iter()
        .map(|count| count.map(|n| written.by_ref().take(n).collect()))
        .collect())
}

/// Journals the appends of the runs in `pending` (each event with its op's index) and puts
/// each op's result in its place.
pub(super) async fn write_appends(
    tx: &mut AnyConnection,
    pending: Vec<(String, Vec<(usize, NewEvent)>)>,
    results: &mut [Option<Result<Vec<Frame>, StoreError>>],
) -> Result<(), StoreError> {
    let runs: Vec<(&str, Vec<&NewEvent>)> = pending
        .iter()
        .map(|(run, events)| (run.as_str(), events.iter().map(|(_, e)| e).collect()))
        .collect();
    let written = append_runs(tx, &runs).await?;
    for ((_, events), rows) in pending.iter().zip(written) {
        match rows {
            Some(rows) => {
                for ((index, _), row) in events.iter().zip(rows) {
                    results[*index] = Some(Ok(vec![row]));
                }
            }
            None => {
                for (index, _) in events {
                    results[*index] = Some(Err(StoreError::Finished));
                }
            }
        }
    }
    Ok(())
}

/// A journal row as it is written.
struct Stored<'a> {
    run_id: &'a str,
    seq: u64,
    session_id: &'a str,
    kind: &'a str,
    created_at: f64,
    terminal_state: Option<&'a str>,
    payload: &'a str,
    frame: &'a str,
}

/// Writes `rows` in one INSERT (at most [`INSERT_ROWS`]).
async fn insert_rows(tx: &mut AnyConnection, rows: &[Stored<'_>]) -> Result<(), StoreError> {
    let values = (0..rows.len())
        .map(|i| format!("({})", marks(i * 10 + 1, 10)))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "INSERT INTO run_events (run_id, seq, event_id, session_id, type, created_at, terminal, \
         terminal_state, payload, frame) VALUES {values}"
    );
    let mut query = sqlx::query(&sql);
    for row in rows {
        query = query
            .bind(row.run_id)
            .bind(row.seq as i64)
            .bind(format!("{}:{}", row.run_id, row.seq))
            .bind(row.session_id)
            .bind(row.kind)
            .bind(row.created_at)
            .bind(i64::from(row.terminal_state.is_some()))
            .bind(row.terminal_state)
            .bind(row.payload)
            .bind(row.frame);
    }
    query.execute(&mut *tx).await?;
    Ok(())
}

/// Adds what rows take (their payload and frame, in bytes) to their sessions' storage, one
/// statement for however many sessions.
pub(super) async fn add_bytes<'a>(
    tx: &mut AnyConnection,
    rows: impl Iterator<Item = (&'a str, usize)>,
) -> Result<(), StoreError> {
    let mut per_session: Vec<(&str, i64)> = Vec::new();
    for (session, bytes) in rows {
        match per_session.iter_mut().find(|(s, _)| *s == session) {
            Some((_, sum)) => *sum += bytes as i64,
            None => per_session.push((session, bytes as i64)),
        }
    }
    for chunk in per_session.chunks(INSERT_ROWS) {
        let values = (0..chunk.len())
            .map(|i| format!("(${}, ${})", 2 * i + 1, 2 * i + 2))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "UPDATE sessions SET bytes = sessions.bytes + v.column2 FROM (VALUES {values}) AS v \
             WHERE sessions.id = v.column1"
        );
        let mut query = sqlx::query(&sql);
        for (session, bytes) in chunk {
            query = query.bind(*session).bind(*bytes);
        }
        query.execute(&mut *tx).await?;
    }
    Ok(())
}

/// Appends the events of an imported run (running, written by this transaction) inside
/// `tx`: as [`append_in`] writes them, but a few hundred rows encoded at a time and nothing
/// handed back, so that a long run costs no copy of its whole journal; `false` when the run
/// is not running.
pub(super) async fn append_imported(
    tx: &mut AnyConnection,
    run_id: &str,
    events: &[NewEvent],
) -> Result<bool, StoreError> {
    let taken = sqlx::query(
        "UPDATE runs SET last_seq = last_seq + $2 WHERE id = $1 AND status = 'running' \
         RETURNING last_seq, session_id",
    )
    .bind(run_id)
    .bind(events.len() as i64)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(taken) = taken else {
        return Ok(false);
    };
    let last: i64 = taken.get("last_seq");
    let session_id: String = taken.get("session_id");
    let first = (last - events.len() as i64 + 1).max(1) as u64;
    let mut bytes = 0;
    for (at, chunk) in events.chunks(INSERT_ROWS).enumerate() {
        let encoded: Vec<(u64, String, String)> = chunk
            .iter()
            .enumerate()
            .map(|(i, event)| {
                let seq = first + (at * INSERT_ROWS + i) as u64;
                let payload =
                    serde_json::to_string(&event.payload).unwrap_or_else(|_| "{}".to_owned());
                let frame = crate::wire::encode_frame(run_id, seq, event.kind.name(), &payload);
                (seq, payload, frame)
            })
            .collect();
        let stored: Vec<Stored<'_>> = chunk
            .iter()
            .zip(&encoded)
            .map(|(event, (seq, payload, frame))| Stored {
                run_id,
                seq: *seq,
                session_id: &session_id,
                kind: event.kind.name(),
                created_at: event.created_at,
                terminal_state: event.terminal_state.map(|t| t.as_str()),
                payload,
                frame,
            })
            .collect();
        insert_rows(tx, &stored).await?;
        bytes += encoded
            .iter()
            .map(|(_, payload, frame)| payload.len() + frame.len())
            .sum::<usize>();
    }
    add_bytes(tx, std::iter::once((session_id.as_str(), bytes))).await?;
    Ok(true)
}

/// Appends one event (see [`append_in`]).
pub(super) async fn append_one(
    tx: &mut AnyConnection,
    run_id: &str,
    event: &NewEvent,
) -> Result<Option<Frame>, StoreError> {
    Ok(append_in(tx, run_id, &[event])
        .await?
        .and_then(|mut rows| rows.pop()))
}
