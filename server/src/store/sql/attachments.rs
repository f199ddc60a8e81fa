//! Attached files: stored with their bytes, read back by their owner, purged when unsent or
//! deleted.

use super::*;

#[async_trait]
impl AttachmentStore for SqlStore {
    async fn add_attachment(
        &self,
        a: &Attachment,
        data: &[u8],
        max_storage: u64,
    ) -> Result<Attachment, StoreError> {
        let mut tx = self.write_tx().await?;
        let kept = sqlx::query("SELECT 1 FROM blobs WHERE owner = $1 AND sha256 = $2")
            .bind(&a.owner)
            .bind(&a.sha256)
            .fetch_optional(&mut *tx)
            .await?
            .is_some();
        if !kept {
            // One row per account, kept by triggers (migration 0011).
            let used: i64 = sqlx::query_scalar("SELECT bytes FROM blob_usage WHERE owner = $1")
                .bind(&a.owner)
                .fetch_optional(&mut *tx)
                .await?
                .unwrap_or(0);
            if u64::try_from(used).unwrap_or(0).saturating_add(a.size) > max_storage {
                return Err(StoreError::Full { limit: max_storage });
            }
            sqlx::query(
                // Two uploads of one file at once (PostgreSQL lets both get here): one keeps it.
                "INSERT INTO blobs (owner, sha256, size, data, created_at) VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (owner, sha256) DO NOTHING",
            )
            .bind(&a.owner)
            .bind(&a.sha256)
            .bind(i64::try_from(a.size).unwrap_or(i64::MAX))
            .bind(data)
            .bind(a.created_at)
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query(
            "INSERT INTO attachments (id, owner, sha256, name, mime, size, session_id, message_id, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8)",
        )
        .bind(&a.id)
        .bind(&a.owner)
        .bind(&a.sha256)
        .bind(&a.name)
        .bind(&a.mime)
        .bind(i64::try_from(a.size).unwrap_or(i64::MAX))
        .bind(&a.session_id)
        .bind(a.created_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Attachment {
            message_id: None,
            ..a.clone()
        })
    }

    async fn attachment(&self, id: &str) -> Result<Attachment, StoreError> {
        sqlx::query("SELECT * FROM attachments WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .map(|row| attachment_from(&row))
            .ok_or(StoreError::NotFound)
    }

    async fn attachment_bytes(&self, id: &str) -> Result<Vec<u8>, StoreError> {
        sqlx::query_scalar(
            "SELECT b.data FROM attachments a JOIN blobs b ON b.owner = a.owner AND b.sha256 = a.sha256 \
             WHERE a.id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::NotFound)
    }

    async fn attachment_blobs(
        &self,
        ids: &[String],
    ) -> Result<std::collections::HashMap<String, Vec<u8>>, StoreError> {
        if ids.is_empty() {
            return Ok(Default::default());
        }
        let places = marks(1, ids.len());
        let sql = format!(
            "SELECT a.id, b.data FROM attachments a \
             JOIN blobs b ON b.owner = a.owner AND b.sha256 = a.sha256 \
             WHERE a.id IN ({places})"
        );
        let mut query = sqlx::query(&sql);
        for id in ids {
            query = query.bind(id);
        }
        let rows = query.fetch_all(&self.pool).await?;
        Ok(rows
            .iter()
            .map(|row| (row.get("id"), row.get("data")))
            .collect())
    }

    async fn purge_attachments(&self, before: f64) -> Result<u64, StoreError> {
        let done =
            sqlx::query("DELETE FROM attachments WHERE message_id IS NULL AND created_at < $1")
                .bind(before)
                .execute(&self.pool)
                .await?;
        Ok(done.rows_affected())
    }
}
