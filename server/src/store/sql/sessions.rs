//! A conversation's own row: creating, listing, searching, renaming, deleting, restoring,
//! shelving (pins and the archive) and the model it asks for.

use super::*;

#[async_trait]
impl SessionStore for SqlStore {
    async fn create_session(
        &self,
        title: &str,
        owner: Option<&str>,
        now: f64,
    ) -> Result<Session, StoreError> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        sqlx::query(
            "INSERT INTO sessions (id, title, title_source, created_at, updated_at, owner_id) \
             VALUES ($1, $2, 'default', $3, $3, $4)",
        )
        .bind(&id)
        .bind(title)
        .bind(now)
        .bind(owner)
        .execute(&self.pool)
        .await?;
        self.session(&id).await
    }

    async fn create_session_as(
        &self,
        id: &str,
        title: &str,
        owner: Option<&str>,
        now: f64,
    ) -> Result<Session, StoreError> {
        sqlx::query(
            "INSERT INTO sessions (id, title, title_source, created_at, updated_at, owner_id) \
             VALUES ($1, $2, 'default', $3, $3, $4) ON CONFLICT (id) DO NOTHING",
        )
        .bind(id)
        .bind(title)
        .bind(now)
        .bind(owner)
        .execute(&self.pool)
        .await?;
        self.session(id).await
    }

    async fn sessions_page(
        &self,
        owner: Option<&str>,
        offset: u64,
        limit: u32,
        archived: bool,
    ) -> Result<Vec<Session>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.owner_id IS NOT DISTINCT FROM $1 \
             AND s.deleted_at IS NULL AND (s.archived_at IS NOT NULL) = $4 \
             ORDER BY s.pinned_at IS NULL, s.pinned_at DESC, s.updated_at DESC, s.id \
             LIMIT $2 OFFSET $3"
        ))
        .bind(owner)
        .bind(i64::from(limit))
        .bind(offset.min(i64::MAX as u64) as i64)
        .bind(archived)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(session_from).collect())
    }

    async fn titles_starting(
        &self,
        owner: Option<&str>,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>, StoreError> {
        // A comparison of the title's start, not LIKE: nothing in `prefix` is a pattern.
        let rows = sqlx::query(
            "SELECT title FROM sessions WHERE owner_id IS NOT DISTINCT FROM $1 \
             AND deleted_at IS NULL AND substr(title, 1, length($2)) = $2 LIMIT $3",
        )
        .bind(owner)
        .bind(prefix)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(|r| r.get::<String, _>("title")).collect())
    }

    async fn search_sessions(
        &self,
        owner: Option<&str>,
        query: &str,
        limit: u32,
    ) -> Result<Vec<Session>, StoreError> {
        let pattern = like_pattern(query.trim());
        // The turn of the newest matching message: its own (an answer) or the one it started.
        let rows = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS}, \
               (SELECT r.turn_id FROM messages m JOIN runs r \
                  ON r.session_id = s.id AND (r.id = m.run_id OR r.user_message_id = m.id) \
                WHERE m.session_id = s.id AND m.content {like} $1 ESCAPE '\\' \
                ORDER BY m.position DESC LIMIT 1) AS hit_turn_id, \
               (SELECT substr(m.content, {greatest}(1, {position}(lower(m.content), lower($4)) - 80), 320) \
                FROM messages m WHERE m.session_id = s.id AND m.content {like} $1 ESCAPE '\\' \
                ORDER BY m.position DESC LIMIT 1) AS hit_text \
             FROM sessions s \
             WHERE s.owner_id IS NOT DISTINCT FROM $2 AND s.deleted_at IS NULL AND (s.title {like} $1 ESCAPE '\\' \
                OR EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id AND m.content {like} $1 ESCAPE '\\')) \
             ORDER BY s.updated_at DESC, s.id LIMIT $3",
            like = self.engine.like(),
            greatest = self.engine.greatest(),
            position = self.engine.position(),
        ))
        .bind(pattern)
        .bind(owner)
        .bind(i64::from(limit))
        .bind(query.trim())
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(session_from).collect())
    }

    async fn session(&self, id: &str) -> Result<Session, StoreError> {
        sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.id = $1 AND s.deleted_at IS NULL"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        .map(|row| session_from(&row))
        .ok_or(StoreError::NotFound)
    }

    async fn rename_session(
        &self,
        id: &str,
        title: &str,
        source: TitleSource,
        now: f64,
    ) -> Result<Session, StoreError> {
        let guard = if source == TitleSource::Manual {
            ""
        } else {
            " AND title_source <> 'manual'"
        };
        let done = sqlx::query(&format!(
            "UPDATE sessions SET title = $2, title_source = $3, updated_at = {greatest}(updated_at, $4) WHERE id = $1{guard}",
            greatest = self.engine.greatest()
        ))
        .bind(id)
        .bind(title)
        .bind(source.as_str())
        .bind(now)
        .execute(&self.pool)
        .await?;
        let session = self.session(id).await?;
        let _ = done;
        Ok(session)
    }

    async fn delete_session(&self, id: &str, now: f64) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        lock_session(&mut tx, self.engine, id).await?;
        if let Some(active_run_id) = running_run(&mut tx, id).await? {
            return Err(StoreError::Busy { active_run_id });
        }
        let done =
            sqlx::query("UPDATE sessions SET deleted_at = $2 WHERE id = $1 AND deleted_at IS NULL")
                .bind(id)
                .bind(now)
                .execute(&mut *tx)
                .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        // Follow-ups waiting in it will not start.
        sqlx::query("DELETE FROM queued_messages WHERE session_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn restore_session(&self, owner: Option<&str>, id: &str) -> Result<Session, StoreError> {
        let done = sqlx::query(
            "UPDATE sessions SET deleted_at = NULL \
             WHERE id = $1 AND owner_id IS NOT DISTINCT FROM $2 AND deleted_at IS NOT NULL \
             AND deleted_at <= $3",
        )
        .bind(id)
        .bind(owner)
        // Deleted, not an import being written (hidden until a day from now).
        .bind(crate::clock::now())
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        self.session(id).await
    }

    async fn purge_deleted(&self, before: f64) -> Result<u64, StoreError> {
        let done =
            sqlx::query("DELETE FROM sessions WHERE deleted_at IS NOT NULL AND deleted_at < $1")
                .bind(before)
                .execute(&self.pool)
                .await?;
        Ok(done.rows_affected())
    }

    async fn shelve(
        &self,
        id: &str,
        shelf: Shelf,
        on: bool,
        now: f64,
    ) -> Result<Session, StoreError> {
        let (column, other) = match shelf {
            Shelf::Pinned => ("pinned_at", "archived_at"),
            Shelf::Archived => ("archived_at", "pinned_at"),
        };
        let done = sqlx::query(&format!(
            "UPDATE sessions SET {column} = CASE WHEN $2 THEN COALESCE({column}, $3) END, \
             {other} = CASE WHEN $2 THEN NULL ELSE {other} END \
             WHERE id = $1 AND deleted_at IS NULL"
        ))
        .bind(id)
        .bind(on)
        .bind(now)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        self.session(id).await
    }

    async fn set_session_model(&self, id: &str, model: Option<&str>) -> Result<(), StoreError> {
        let done = sqlx::query("UPDATE sessions SET model = $2 WHERE id = $1")
            .bind(id)
            .bind(model)
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }
}
