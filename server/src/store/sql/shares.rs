//! Read-only links to conversations.

use super::*;

fn share_from(row: &AnyRow, with_snapshot: bool) -> Share {
    Share {
        id: row.get("id"),
        token: row.get("token"),
        owner: row.get("owner_id"),
        session_id: row.get("session_id"),
        title: row.get("title"),
        snapshot: if with_snapshot {
            row.get("snapshot")
        } else {
            String::new()
        },
        created_at: row.get("created_at"),
    }
}

#[async_trait]
impl ShareStore for SqlStore {
    async fn create_share(&self, share: &Share, limit: u32) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        let key = format!("shares:{}", share.owner.as_deref().unwrap_or_default());
        super::hold_until_commit(&mut tx, self.engine, &key).await?;
        // Every live link counts, those of a conversation in the bin too (restored, it
        // leads again): deleting, sharing and undoing gets past nothing.
        let held: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM shares WHERE owner_id IS NOT DISTINCT FROM $1",
        )
        .bind(share.owner.as_deref())
        .fetch_one(&mut *tx)
        .await?;
        if held >= i64::from(limit) {
            return Err(StoreError::TooManyShares { limit });
        }
        sqlx::query(
            "INSERT INTO shares (id, token, owner_id, session_id, title, snapshot, created_at, bytes) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(&share.id)
        .bind(&share.token)
        .bind(share.owner.as_deref())
        .bind(&share.session_id)
        .bind(&share.title)
        .bind(&share.snapshot)
        .bind(share.created_at)
        .bind(share.snapshot.len() as i64)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn shares(&self, owner: Option<&str>) -> Result<Vec<Share>, StoreError> {
        let rows = sqlx::query(
            "SELECT sh.id, sh.token, sh.owner_id, sh.session_id, sh.title, sh.created_at \
             FROM shares sh JOIN sessions s ON s.id = sh.session_id \
             WHERE sh.owner_id IS NOT DISTINCT FROM $1 AND s.deleted_at IS NULL \
             ORDER BY sh.created_at DESC, sh.id",
        )
        .bind(owner)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(|row| share_from(row, false)).collect())
    }

    async fn revoke_share(&self, owner: Option<&str>, id: &str) -> Result<(), StoreError> {
        let done =
            sqlx::query("DELETE FROM shares WHERE id = $1 AND owner_id IS NOT DISTINCT FROM $2")
                .bind(id)
                .bind(owner)
                .execute(&self.pool)
                .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    async fn revoke_shares(&self, owner: &str) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM shares WHERE owner_id = $1")
            .bind(owner)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn shared(&self, token: &str) -> Result<Share, StoreError> {
        let row = sqlx::query(
            "SELECT sh.* FROM shares sh JOIN sessions s ON s.id = sh.session_id \
             WHERE sh.token = $1 AND s.deleted_at IS NULL",
        )
        .bind(token)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::NotFound)?;
        Ok(share_from(&row, true))
    }

    async fn shared_head(&self, token: &str) -> Result<Share, StoreError> {
        let row = sqlx::query(
            "SELECT sh.id, sh.token, sh.owner_id, sh.session_id, sh.title, sh.created_at \
             FROM shares sh JOIN sessions s ON s.id = sh.session_id \
             WHERE sh.token = $1 AND s.deleted_at IS NULL",
        )
        .bind(token)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::NotFound)?;
        Ok(share_from(&row, false))
    }
}
