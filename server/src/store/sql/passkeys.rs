//! Passkeys and the state of their ceremonies.

use super::*;

fn passkey_from(row: &AnyRow) -> StoredPasskey {
    StoredPasskey {
        id: row.get("id"),
        user_id: row.get("user_id"),
        credential_id: row.get("credential_id"),
        name: row.get("name"),
        passkey: row.get("passkey"),
        created_at: row.get("created_at"),
        last_used_at: row.get("last_used_at"),
    }
}

#[async_trait]
impl PasskeyStore for SqlStore {
    async fn add_passkey(&self, passkey: &StoredPasskey, limit: u32) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        let key = format!("passkeys:{}", passkey.user_id);
        super::hold_until_commit(&mut tx, self.engine, &key).await?;
        let held: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM passkeys WHERE user_id = $1")
            .bind(&passkey.user_id)
            .fetch_one(&mut *tx)
            .await?;
        if held >= i64::from(limit) {
            return Err(StoreError::TooManyPasskeys { limit });
        }
        sqlx::query(
            "INSERT INTO passkeys (id, user_id, credential_id, name, passkey, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&passkey.id)
        .bind(&passkey.user_id)
        .bind(&passkey.credential_id)
        .bind(&passkey.name)
        .bind(&passkey.passkey)
        .bind(passkey.created_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn passkeys(&self, user_id: &str) -> Result<Vec<StoredPasskey>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, user_id, credential_id, name, passkey, created_at, last_used_at \
             FROM passkeys WHERE user_id = $1 ORDER BY created_at, id",
        )
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(passkey_from).collect())
    }

    async fn remove_passkey(&self, user_id: &str, id: &str) -> Result<(), StoreError> {
        let done = sqlx::query("DELETE FROM passkeys WHERE id = $1 AND user_id = $2")
            .bind(id)
            .bind(user_id)
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    async fn used_passkey(&self, id: &str, passkey: &str, now: f64) -> Result<(), StoreError> {
        sqlx::query("UPDATE passkeys SET passkey = $2, last_used_at = $3 WHERE id = $1")
            .bind(id)
            .bind(passkey)
            .bind(now)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn count_passkeys(&self) -> Result<u64, StoreError> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM passkeys")
            .fetch_one(&self.pool)
            .await?;
        Ok(n.max(0) as u64)
    }

    async fn open_ceremony(
        &self,
        id: &str,
        user_id: Option<&str>,
        kind: &str,
        state: &str,
        expires_at: f64,
    ) -> Result<(), StoreError> {
        // Expired ones go as new ones come, and an account has a few in progress at most (the
        // oldest give way): the table holds what may still be answered. Sign-ins, nobody's
        // until a key answers, share a larger bound.
        let kept = if user_id.is_none() {
            SIGN_INS_IN_PROGRESS
        } else {
            CEREMONIES_PER_ACCOUNT
        };
        let mut tx = self.write_tx().await?;
        sqlx::query("DELETE FROM passkey_ceremonies WHERE expires_at < $1")
            .bind(expires_at - CEREMONY_LIFETIME)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "DELETE FROM passkey_ceremonies WHERE user_id IS NOT DISTINCT FROM $1 AND kind = $2 \
             AND id NOT IN (SELECT id FROM passkey_ceremonies \
             WHERE user_id IS NOT DISTINCT FROM $1 AND kind = $2 \
             ORDER BY expires_at DESC, id LIMIT $3)",
        )
        .bind(user_id)
        .bind(kind)
        .bind(i64::from(kept - 1))
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO passkey_ceremonies (id, user_id, kind, state, expires_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(id)
        .bind(user_id)
        .bind(kind)
        .bind(state)
        .bind(expires_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn take_ceremony(
        &self,
        id: &str,
        kind: &str,
        now: f64,
    ) -> Result<(Option<String>, String), StoreError> {
        let row = sqlx::query(
            "DELETE FROM passkey_ceremonies WHERE id = $1 AND kind = $2 \
             RETURNING user_id, state, expires_at",
        )
        .bind(id)
        .bind(kind)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::NotFound)?;
        let expires_at: f64 = row.get("expires_at");
        if expires_at < now {
            return Err(StoreError::NotFound);
        }
        Ok((row.get("user_id"), row.get("state")))
    }
}

/// The lifetime the routes give a ceremony (seconds): one that began longer ago than this
/// before a new one's start has expired.
const CEREMONY_LIFETIME: f64 = 300.0;
/// Ceremonies of one kind an account may have in progress at once.
const CEREMONIES_PER_ACCOUNT: u32 = 4;
/// How many sign-ins with a passkey may be in progress at once on the whole server.
const SIGN_INS_IN_PROGRESS: u32 = 64;
