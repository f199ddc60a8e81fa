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
        let mut tx = self.write_tx().await?;
        let done = sqlx::query("DELETE FROM passkeys WHERE id = $1 AND user_id = $2")
            .bind(id)
            .bind(user_id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        // Whoever signed in with it is signed out with it.
        sqlx::query("DELETE FROM auth_tokens WHERE passkey_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn rename_passkey(&self, user_id: &str, id: &str, name: &str) -> Result<(), StoreError> {
        let done = sqlx::query("UPDATE passkeys SET name = $3 WHERE id = $1 AND user_id = $2")
            .bind(id)
            .bind(user_id)
            .bind(name)
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    async fn remove_passkeys(&self, user_id: &str) -> Result<u64, StoreError> {
        let mut tx = self.write_tx().await?;
        sqlx::query(
            "DELETE FROM auth_tokens WHERE passkey_id IN \
             (SELECT id FROM passkeys WHERE user_id = $1)",
        )
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
        let done = sqlx::query("DELETE FROM passkeys WHERE user_id = $1")
            .bind(user_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(done.rows_affected())
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

    async fn ceremony_key(&self) -> Result<Vec<u8>, StoreError> {
        use argon2::password_hash::rand_core::{OsRng, RngCore as _};
        let mut fresh = [0u8; crate::ceremony::KEY_BYTES];
        OsRng.fill_bytes(&mut fresh);
        // The first instance to get here makes it; every other reads that one.
        sqlx::query(
            "INSERT INTO server_keys (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
        )
        .bind(CEREMONY_KEY)
        .bind(hex::encode(fresh))
        .execute(&self.pool)
        .await?;
        let value: String = sqlx::query_scalar("SELECT value FROM server_keys WHERE name = $1")
            .bind(CEREMONY_KEY)
            .fetch_one(&self.pool)
            .await?;
        hex::decode(value.trim()).map_err(|e| {
            StoreError::Database(sqlx::Error::Decode(format!("the ceremony key: {e}").into()))
        })
    }

    async fn answer_ceremony(
        &self,
        nonce: &str,
        expires_at: f64,
        now: f64,
    ) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        // Those that could no longer be answered anyway go as new ones come.
        sqlx::query("DELETE FROM passkey_answers WHERE expires_at < $1")
            .bind(now)
            .execute(&mut *tx)
            .await?;
        let done = sqlx::query(
            "INSERT INTO passkey_answers (nonce, expires_at) VALUES ($1, $2) \
             ON CONFLICT (nonce) DO NOTHING",
        )
        .bind(nonce)
        .bind(expires_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }
}

/// The name the ceremony key is kept under.
const CEREMONY_KEY: &str = "passkey_ceremonies";
