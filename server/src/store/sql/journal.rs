//! The run journal: batches committed in one transaction, every run's seq gapless, each row
//! stored with its SSE encoding; reads as rows or frames; settled turns' snapshots.

use super::*;

#[async_trait]
impl JournalStore for SqlStore {
    async fn commit(
        &self,
        ops: Vec<JournalOp>,
    ) -> Result<Vec<Result<Vec<Frame>, StoreError>>, StoreError> {
        let mut tx = WriteTx::begin(&self.journal, self.engine.begin_write()).await?;
        let mut results: Vec<Option<Result<Vec<Frame>, StoreError>>> =
            (0..ops.len()).map(|_| None).collect();
        // A run's appends go in together (one update, one insert), in their order; a run's
        // settling first writes what was appended to it before.
        let mut pending: Vec<(String, Vec<(usize, NewEvent)>)> = Vec::new();
        for (index, op) in ops.into_iter().enumerate() {
            match op {
                JournalOp::Append { run_id, event } => {
                    match pending.iter_mut().find(|(run, _)| *run == run_id) {
                        Some((_, events)) => events.push((index, event)),
                        None => pending.push((run_id, vec![(index, event)])),
                    }
                }
                JournalOp::Settle {
                    run_id,
                    terminal,
                    answer,
                } => {
                    if let Some(at) = pending.iter().position(|(run, _)| *run == run_id) {
                        let earlier = vec![pending.remove(at)];
                        write_appends(&mut tx, earlier, &mut results).await?;
                    }
                    results[index] = Some(
                        settle_in(&mut tx, self.engine, &run_id, &terminal, &answer)
                            .await?
                            .ok_or(StoreError::Finished),
                    );
                }
            }
        }
        if !pending.is_empty() {
            write_appends(&mut tx, pending, &mut results).await?;
        }
        let results: Vec<Result<Vec<Frame>, StoreError>> = results
            .into_iter()
            .map(|result| result.unwrap_or(Err(StoreError::Finished)))
            .collect();
        if self.engine.shared() {
            // Delivered when the transaction commits, never before: a follower on another
            // instance reads rows that are there.
            for payload in journal_notices(&results) {
                sqlx::query("SELECT pg_notify($1, $2)")
                    .bind(JOURNAL_CHANNEL)
                    .bind(payload)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        tx.commit().await?;
        Ok(results)
    }
}

#[async_trait]
impl HistoryStore for SqlStore {
    async fn events(
        &self,
        run_id: &str,
        after: u64,
        up_to: Option<u64>,
        limit: u32,
    ) -> Result<Vec<JournalRow>, StoreError> {
        let rows = self.journal_rows(run_id, after, up_to, limit).await?;
        Ok(rows.iter().map(journal_row_from).collect())
    }

    async fn frames(
        &self,
        run_id: &str,
        after: u64,
        up_to: Option<u64>,
        limit: u32,
    ) -> Result<Frames, StoreError> {
        // One aggregate over the stored encodings: one result row per page, whatever its size.
        // Sequence numbers are gapless, so a page is a seq range. The range scan walks the
        // primary key (run_id, seq) in order, which is the order the aggregate concatenates in;
        // an ORDER BY inside the aggregate would add a sort of the whole page.
        let last = up_to
            .unwrap_or(u64::MAX)
            .min(after.saturating_add(u64::from(limit)));
        let row = sqlx::query(&format!(
            "SELECT COUNT(*) AS count, COALESCE(MAX(seq), 0) AS last_seq, {} AS sse \
             FROM run_events WHERE run_id = $1 AND seq > $2 AND seq <= $3",
            self.engine.frames_concat()
        ))
        .bind(run_id)
        .bind(after as i64)
        .bind(last.min(i64::MAX as u64) as i64)
        .fetch_one(&self.pool)
        .await?;
        let count: i64 = row.get("count");
        let last_seq: i64 = row.get("last_seq");
        let sse: String = row.get::<Option<String>, _>("sse").unwrap_or_default();
        Ok(Frames {
            count: count.max(0) as u32,
            last_seq: last_seq.max(0) as u64,
            ended: crate::wire::ends_with_stream_end(&sse),
            sse: bytes::Bytes::from(sse),
        })
    }

    async fn stored_frames(
        &self,
        run_id: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<Frame>, StoreError> {
        let rows = self.journal_rows(run_id, after, None, limit).await?;
        Ok(rows
            .iter()
            .map(|r| {
                let row = journal_row_from(r);
                let stored: String = r.get("frame");
                // Rows journaled before frames were stored with them have none.
                if stored.is_empty() {
                    Frame::encode(row)
                } else {
                    Frame {
                        row,
                        sse: stored.into(),
                    }
                }
            })
            .collect())
    }

    async fn snapshots(
        &self,
        run_ids: &[String],
        version: i64,
    ) -> Result<std::collections::HashMap<String, String>, StoreError> {
        let mut found = std::collections::HashMap::new();
        // A bounded number of parameters per query.
        for chunk in run_ids.chunks(200) {
            let sql = format!(
                "SELECT run_id, data FROM turn_snapshots WHERE version = $1 AND run_id IN ({})",
                marks(2, chunk.len())
            );
            let mut query = sqlx::query(&sql).bind(version);
            for id in chunk {
                query = query.bind(id);
            }
            for row in query.fetch_all(&self.pool).await? {
                found.insert(row.get("run_id"), row.get("data"));
            }
        }
        Ok(found)
    }

    async fn put_snapshot(&self, run_id: &str, version: i64, data: &str) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO turn_snapshots (run_id, version, data) \
             SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM runs WHERE id = $1) \
             ON CONFLICT (run_id) DO UPDATE SET version = excluded.version, data = excluded.data",
        )
        .bind(run_id)
        .bind(version)
        .bind(data)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn runs_without_snapshot(
        &self,
        version: i64,
        limit: u32,
    ) -> Result<Vec<Run>, StoreError> {
        let rows = sqlx::query(
            "SELECT r.* FROM runs r LEFT JOIN turn_snapshots t ON t.run_id = r.id \
             WHERE r.status = 'finished' AND (t.run_id IS NULL OR t.version <> $1) \
             ORDER BY r.created_at, r.id LIMIT $2",
        )
        .bind(version)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(run_from).collect())
    }
}

impl SqlStore {
    /// A run's journal rows with `after < seq <= up_to`, in order, at most `limit`, as stored.
    async fn journal_rows(
        &self,
        run_id: &str,
        after: u64,
        up_to: Option<u64>,
        limit: u32,
    ) -> Result<Vec<AnyRow>, sqlx::Error> {
        sqlx::query(
            "SELECT * FROM run_events WHERE run_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4",
        )
        .bind(run_id)
        .bind(after as i64)
        .bind(up_to.map_or(i64::MAX, |u| u as i64))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
    }
}

/// Ends a running run inside `tx`: its terminal event, the settled assistant message (stored,
/// and journaled as `settled_message`), then `stream_end`; the run is marked finished, its
/// open questions closed. `None` when the run is not running. (The live journal's settle and
/// an import write a turn's end here alike.)
pub(super) async fn settle_in(
    tx: &mut AnyConnection,
    engine: Engine,
    run_id: &str,
    terminal: &NewEvent,
    answer: &SettledAnswer,
) -> Result<Option<Vec<Frame>>, StoreError> {
    let Some(terminal_row) = append_one(&mut *tx, run_id, terminal).await? else {
        return Ok(None);
    };
    let session_id = terminal_row.row.session_id.clone();
    let usage = answer.usage.as_ref().map(Value::to_string);
    // A turn that did not complete keeps what it had streamed as its answer.
    let completed = terminal.terminal_state == Some(TerminalState::Completed);
    let content = if completed || !answer.content.is_empty() {
        answer.content.clone()
    } else {
        streamed_answer(&mut *tx, run_id).await?
    };
    let partial = !completed && !content.is_empty();
    sqlx::query(
        "INSERT INTO messages (id, session_id, position, role, content, partial, run_id, terminal_state, usage, created_at, cut_off) \
         VALUES ($1, $2, (SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE session_id = $2), 'assistant', $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(&answer.message_id)
    .bind(&session_id)
    .bind(&content)
    .bind(i64::from(partial))
    .bind(run_id)
    .bind(terminal.terminal_state.map(TerminalState::as_str))
    .bind(&usage)
    .bind(terminal.created_at)
    .bind(i64::from(answer.cut_off))
    .execute(&mut *tx)
    .await?;
    let mut payload = Map::new();
    payload.insert("role".into(), Value::from("assistant"));
    payload.insert("id".into(), Value::from(answer.message_id.clone()));
    payload.insert("content".into(), Value::from(content));
    if partial {
        payload.insert("partial".into(), Value::Bool(true));
    }
    if answer.cut_off {
        payload.insert("cut_off".into(), Value::Bool(true));
    }
    if let Some(usage) = &answer.usage {
        payload.insert("usage".into(), usage.clone());
    }
    payload.insert("created_at".into(), Value::from(terminal.created_at));
    let settled = NewEvent {
        kind: EventKind::SettledMessage,
        payload,
        terminal_state: None,
        created_at: terminal.created_at,
    };
    let settled_row = append_one(&mut *tx, run_id, &settled).await?;
    let mut end_payload = Map::new();
    end_payload.insert("session_id".into(), Value::from(session_id.clone()));
    end_payload.insert("created_at".into(), Value::from(terminal.created_at));
    let end = NewEvent {
        kind: EventKind::StreamEnd,
        payload: end_payload,
        terminal_state: None,
        created_at: terminal.created_at,
    };
    let end_row = append_one(&mut *tx, run_id, &end).await?;
    sqlx::query(
        "UPDATE runs SET status = 'finished', terminal_state = $2, finished_at = $3 WHERE id = $1",
    )
    .bind(run_id)
    .bind(terminal.terminal_state.map(TerminalState::as_str))
    .bind(terminal.created_at)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "UPDATE interactions SET status = 'closed' WHERE run_id = $1 AND status = 'pending'",
    )
    .bind(run_id)
    .execute(&mut *tx)
    .await?;
    sqlx::query(&format!(
        "UPDATE sessions SET updated_at = {}(updated_at, $2) WHERE id = $1",
        engine.greatest()
    ))
    .bind(&session_id)
    .bind(terminal.created_at)
    .execute(&mut *tx)
    .await?;
    Ok(Some(
        [Some(terminal_row), settled_row, end_row]
            .into_iter()
            .flatten()
            .collect(),
    ))
}
