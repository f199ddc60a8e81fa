//! What a run waits on (approvals and questions) and the follow-ups queued behind it.

use super::*;

#[async_trait]
impl InteractionStore for SqlStore {
    async fn open_interaction(&self, interaction: &Interaction) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO interactions (run_id, id, kind, status, request) VALUES ($1, $2, $3, 'pending', $4)",
        )
        .bind(&interaction.run_id)
        .bind(&interaction.id)
        .bind(&interaction.kind)
        .bind(interaction.request.to_string())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn answer_interaction(
        &self,
        run_id: &str,
        id: &str,
        kind: &str,
        response: &Value,
    ) -> Result<Interaction, StoreError> {
        // Only a pending request of this kind: an approval answered as a question (or the
        // reverse) changes nothing and stays pending.
        let updated = sqlx::query(
            "UPDATE interactions SET status = 'answered', response = $4 \
             WHERE run_id = $1 AND id = $2 AND kind = $3 AND status = 'pending' RETURNING *",
        )
        .bind(run_id)
        .bind(id)
        .bind(kind)
        .bind(response.to_string())
        .fetch_optional(&self.pool)
        .await?;
        match updated {
            Some(row) => Ok(interaction_from(&row)),
            None => {
                let existing =
                    sqlx::query("SELECT kind FROM interactions WHERE run_id = $1 AND id = $2")
                        .bind(run_id)
                        .bind(id)
                        .fetch_optional(&self.pool)
                        .await?;
                Err(match existing {
                    Some(row) if row.get::<String, _>("kind") != kind => StoreError::WrongKind {
                        kind: row.get("kind"),
                    },
                    Some(_) => StoreError::AlreadyAnswered,
                    None => StoreError::NotFound,
                })
            }
        }
    }

    async fn close_interactions(&self, run_id: &str) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE interactions SET status = 'closed' WHERE run_id = $1 AND status = 'pending'",
        )
        .bind(run_id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn interactions(&self, run_id: &str) -> Result<Vec<Interaction>, StoreError> {
        let rows = sqlx::query("SELECT * FROM interactions WHERE run_id = $1 ORDER BY rowid")
            .bind(run_id)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(interaction_from).collect())
    }

    async fn queue_message(
        &self,
        message: &QueuedMessage,
        limit: usize,
    ) -> Result<QueuedMessage, StoreError> {
        let mut tx = self.write_tx().await?;
        if !lock_session(&mut tx, self.engine, &message.session_id).await? {
            return Err(StoreError::NotFound);
        }
        let client_id = message.client_id.as_deref();
        if let Some(run_id) = sent_before(&mut tx, &message.session_id, client_id).await? {
            return Err(StoreError::Duplicate { run_id });
        }
        if let Some(client_id) = client_id {
            let queued = sqlx::query(
                "SELECT * FROM queued_messages WHERE session_id = $1 AND client_id = $2",
            )
            .bind(&message.session_id)
            .bind(client_id)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(row) = queued {
                return Ok(queued_from(&row));
            }
        }
        let waiting: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM queued_messages WHERE session_id = $1")
                .bind(&message.session_id)
                .fetch_one(&mut *tx)
                .await?;
        if waiting.max(0) as usize >= limit {
            return Err(StoreError::QueueFull { limit });
        }
        sqlx::query(
            "INSERT INTO queued_messages (id, session_id, content, client_id, created_at, attachments) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&message.id)
        .bind(&message.session_id)
        .bind(&message.content)
        .bind(client_id)
        .bind(message.created_at)
        .bind(
            (!message.attachments.is_empty())
                .then(|| serde_json::to_string(&message.attachments).unwrap_or_default()),
        )
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(message.clone())
    }

    async fn queued_messages(&self, session_id: &str) -> Result<Vec<QueuedMessage>, StoreError> {
        let rows = sqlx::query(
            "SELECT * FROM queued_messages WHERE session_id = $1 ORDER BY created_at, rowid",
        )
        .bind(session_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(queued_from).collect())
    }

    async fn next_queued(&self, session_id: &str) -> Result<Option<QueuedMessage>, StoreError> {
        let row = sqlx::query(
            "SELECT * FROM queued_messages WHERE session_id = $1 ORDER BY created_at, rowid LIMIT 1",
        )
        .bind(session_id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.as_ref().map(queued_from))
    }
}
