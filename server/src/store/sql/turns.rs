//! Turns and branches: a message and the run answering it, started in one transaction (with the
//! limits on running turns), and the tree of versions a retry or an edit makes.

use super::*;

#[async_trait]
impl TurnStore for SqlStore {
    async fn messages(&self, session_id: &str) -> Result<Vec<Message>, StoreError> {
        let rows = sqlx::query("SELECT * FROM messages WHERE session_id = $1 ORDER BY position")
            .bind(session_id)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(message_from).collect())
    }

    async fn session_runs(&self, session_id: &str) -> Result<Vec<Run>, StoreError> {
        let rows = sqlx::query("SELECT * FROM runs WHERE session_id = $1 ORDER BY created_at, id")
            .bind(session_id)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(run_from).collect())
    }

    async fn messages_by_id(&self, ids: &[String]) -> Result<Vec<Message>, StoreError> {
        let mut found = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(200) {
            let sql = format!(
                "SELECT * FROM messages WHERE id IN ({})",
                marks(1, chunk.len())
            );
            let mut query = sqlx::query(&sql);
            for id in chunk {
                query = query.bind(id);
            }
            found.extend(query.fetch_all(&self.pool).await?.iter().map(message_from));
        }
        Ok(found)
    }

    async fn start_run(&self, turn: NewTurn<'_>) -> Result<(Run, Message), StoreError> {
        let NewTurn {
            session_id,
            run_id,
            turn_id,
            user_message_id,
            message,
            attachments,
            client_id,
            queued_id,
            place,
            default_model,
            lease,
            max_running,
            now,
        } = turn;
        let mut tx = self.write_tx().await?;
        if !lock_session(&mut tx, self.engine, session_id).await? {
            return Err(StoreError::NotFound);
        }
        if let Some(run_id) = sent_before(&mut tx, session_id, client_id).await? {
            return Err(StoreError::Duplicate { run_id });
        }
        if let Some(active_run_id) = running_run(&mut tx, session_id).await? {
            return Err(StoreError::Busy { active_run_id });
        }
        if let Some(limit) = max_running {
            let owner: Option<String> = sqlx::query("SELECT owner_id FROM sessions WHERE id = $1")
                .bind(session_id)
                .fetch_one(&mut *tx)
                .await?
                .get("owner_id");
            if running_count(&mut tx, self.engine, owner.as_deref()).await? >= limit {
                return Err(StoreError::TooManyRunning { limit });
            }
        }
        // Where the turn goes: after the turn shown last, or beside the one it retries or
        // edits (which must be a turn of this session).
        let (parent, replaced_message): (Option<String>, Option<String>) = match place {
            TurnAt::Next => {
                let head = sqlx::query(&format!("SELECT {HEAD_SQL} AS head"))
                    .bind(session_id)
                    .fetch_one(&mut *tx)
                    .await?;
                (head.get("head"), None)
            }
            TurnAt::Retry(of) | TurnAt::Edit(of) => {
                let row = sqlx::query(
                    "SELECT parent_run_id, user_message_id FROM runs WHERE id = $1 AND session_id = $2",
                )
                .bind(of)
                .bind(session_id)
                .fetch_optional(&mut *tx)
                .await?
                .ok_or(StoreError::NotFound)?;
                (row.get("parent_run_id"), Some(row.get("user_message_id")))
            }
        };
        if let Some(queued_id) = queued_id {
            let taken =
                sqlx::query("DELETE FROM queued_messages WHERE id = $1 AND session_id = $2")
                    .bind(queued_id)
                    .bind(session_id)
                    .execute(&mut *tx)
                    .await?;
            if taken.rows_affected() == 0 {
                return Err(StoreError::NotFound);
            }
        }
        // A retry answers the same message again; anything else stores a new one.
        let retried_message = replaced_message
            .as_ref()
            .filter(|_| matches!(place, TurnAt::Retry(_)));
        let user_message_id = match retried_message {
            Some(id) => id.clone(),
            None => {
                sqlx::query(
                    "INSERT INTO messages (id, session_id, position, role, content, run_id, client_id, created_at) \
                     VALUES ($1, $2, (SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE session_id = $2), 'user', $3, $4, $5, $6)",
                )
                .bind(user_message_id)
                .bind(session_id)
                .bind(message)
                .bind(run_id)
                .bind(client_id)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                // An edit keeps the files of the message it replaces.
                let carried = match (&replaced_message, attachments.is_empty()) {
                    (Some(from), true) => {
                        copy_attachments(&mut tx, from, user_message_id, now).await?
                    }
                    _ => {
                        link_attachments(&mut tx, session_id, user_message_id, attachments).await?
                    }
                };
                if let Some(json) = carried_json(&carried) {
                    sqlx::query("UPDATE messages SET attachments = $2 WHERE id = $1")
                        .bind(user_message_id)
                        .bind(json)
                        .execute(&mut *tx)
                        .await?;
                }
                user_message_id.to_owned()
            }
        };
        let inserted = sqlx::query(
            "INSERT INTO runs (id, session_id, turn_id, user_message_id, status, created_at, parent_run_id, model, \
               owner_instance, lease_expires_at) \
             VALUES ($1, $2, $3, $4, 'running', $5, $6, \
               CASE WHEN $7 IS NULL THEN NULL \
                 ELSE COALESCE((SELECT model FROM sessions WHERE id = $2), $7) END, $8, $9)",
        )
        .bind(run_id)
        .bind(session_id)
        .bind(turn_id)
        .bind(&user_message_id)
        .bind(now)
        .bind(&parent)
        .bind(default_model)
        .bind(lease.instance)
        .bind(lease.until)
        .execute(&mut *tx)
        .await;
        if let Err(sqlx::Error::Database(e)) = &inserted {
            if e.is_unique_violation() {
                // Lost a race with another start: report the winner.
                drop(tx);
                let active =
                    sqlx::query("SELECT id FROM runs WHERE session_id = $1 AND status = 'running'")
                        .bind(session_id)
                        .fetch_optional(&self.pool)
                        .await?;
                return Err(StoreError::Busy {
                    active_run_id: active.map(|r| r.get("id")).unwrap_or_default(),
                });
            }
        }
        inserted?;
        // The new turn is what the session shows last.
        sqlx::query(&format!(
            "UPDATE sessions SET updated_at = {}(updated_at, $2), head_run_id = $3 WHERE id = $1",
            self.engine.greatest()
        ))
        .bind(session_id)
        .bind(now)
        .bind(run_id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        let run = self.run(run_id).await?;
        let message = sqlx::query("SELECT * FROM messages WHERE id = $1")
            .bind(&user_message_id)
            .fetch_one(&self.pool)
            .await
            .map(|row| message_from(&row))?;
        Ok((run, message))
    }

    async fn branch(&self, session_id: &str) -> Result<Vec<(Run, Versions)>, StoreError> {
        let sql = format!(
            "WITH RECURSIVE path(id, depth) AS ( \
               SELECT {HEAD_SQL}, 0 \
               UNION ALL \
               SELECT r.parent_run_id, path.depth + 1 FROM runs r JOIN path ON r.id = path.id \
               WHERE r.parent_run_id IS NOT NULL) \
             SELECT r.*, {VERSIONS_SQL} FROM path JOIN runs r ON r.id = path.id \
             WHERE r.session_id = $1 ORDER BY path.depth DESC"
        );
        let rows = sqlx::query(&sql)
            .bind(session_id)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .iter()
            .map(|r| (run_from(r), versions_from(r)))
            .collect())
    }

    async fn history(&self, run_id: &str) -> Result<Vec<Message>, StoreError> {
        let sql = format!(
            "{PATH_SQL} \
             SELECT m.* FROM path JOIN runs r ON r.id = path.id \
             JOIN messages m ON m.id = r.user_message_id OR (m.run_id = r.id AND m.role = 'assistant') \
             ORDER BY path.depth DESC, m.role = 'assistant'"
        );
        let rows = sqlx::query(&sql).bind(run_id).fetch_all(&self.pool).await?;
        Ok(rows.iter().map(message_from).collect())
    }

    async fn versions(&self, run_id: &str) -> Result<Vec<Run>, StoreError> {
        let rows = sqlx::query(
            "SELECT x.* FROM runs r JOIN runs x \
               ON x.session_id = r.session_id AND x.parent_run_id IS NOT DISTINCT FROM r.parent_run_id \
             WHERE r.id = $1 ORDER BY x.created_at, x.id",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(run_from).collect())
    }

    async fn show_branch(&self, session_id: &str, run_id: &str) -> Result<String, StoreError> {
        let mut tx = self.write_tx().await?;
        lock_session(&mut tx, self.engine, session_id).await?;
        if let Some(active_run_id) = running_run(&mut tx, session_id).await? {
            return Err(StoreError::Busy { active_run_id });
        }
        // Down from the run, always to the newest of the turns that follow it.
        let head = sqlx::query(
            "WITH RECURSIVE down(id, depth) AS ( \
               SELECT id, 0 FROM runs WHERE id = $1 AND session_id = $2 \
               UNION ALL \
               SELECT (SELECT c.id FROM runs c WHERE c.session_id = $2 AND c.parent_run_id = down.id \
                       ORDER BY c.created_at DESC, c.id DESC LIMIT 1), down.depth + 1 \
               FROM down WHERE down.id IS NOT NULL) \
             SELECT id FROM down WHERE id IS NOT NULL ORDER BY depth DESC LIMIT 1",
        )
        .bind(run_id)
        .bind(session_id)
        .fetch_optional(&mut *tx)
        .await?
        .map(|row| row.get::<String, _>("id"))
        .ok_or(StoreError::NotFound)?;
        sqlx::query("UPDATE sessions SET head_run_id = $2 WHERE id = $1")
            .bind(session_id)
            .bind(&head)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(head)
    }

    async fn run(&self, run_id: &str) -> Result<Run, StoreError> {
        sqlx::query("SELECT * FROM runs WHERE id = $1")
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await?
            .map(|row| run_from(&row))
            .ok_or(StoreError::NotFound)
    }

    async fn running_runs(&self) -> Result<Vec<Run>, StoreError> {
        let rows = sqlx::query("SELECT * FROM runs WHERE status = 'running' ORDER BY created_at")
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(run_from).collect())
    }

    async fn count_running(&self, owner: Option<&str>) -> Result<u64, StoreError> {
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM runs r JOIN sessions s ON s.id = r.session_id \
             WHERE r.status = 'running' AND s.owner_id IS NOT DISTINCT FROM $1",
        )
        .bind(owner)
        .fetch_one(&self.pool)
        .await?;
        Ok(n.max(0) as u64)
    }

    async fn import_begin(&self, import: &NewImport) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO sessions (id, title, title_source, created_at, updated_at, owner_id, deleted_at) \
             VALUES ($1, '', 'default', $2, $2, $3, $4)",
        )
        .bind(&import.session_id)
        .bind(import.now)
        .bind(import.owner.as_deref())
        .bind(import.now + STAGED_FOR)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn import_runs(
        &self,
        session_id: &str,
        runs: &[ImportedRun],
        now: f64,
    ) -> Result<u64, StoreError> {
        let mut tx = self.write_tx().await?;
        let left_out = imports::write(&mut tx, self.engine, session_id, runs, now).await?;
        tx.commit().await?;
        Ok(left_out)
    }

    async fn import_finish(
        &self,
        session_id: &str,
        title: &str,
        source: TitleSource,
        head: Option<&str>,
        now: f64,
    ) -> Result<Session, StoreError> {
        let done = sqlx::query(
            "UPDATE sessions SET title = $2, title_source = $3, head_run_id = $4, updated_at = $5, \
             deleted_at = NULL WHERE id = $1 AND deleted_at IS NOT NULL",
        )
        .bind(session_id)
        .bind(title)
        .bind(source.as_str())
        .bind(head)
        .bind(now)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        self.session(session_id).await
    }

    async fn import_abandon(&self, session_id: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM sessions WHERE id = $1 AND deleted_at IS NOT NULL")
            .bind(session_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
