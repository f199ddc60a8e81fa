//! Accounts and their sign-in tokens, and the permissions (grants) an account gave its agent.

use super::*;

#[async_trait]
impl AccountStore for SqlStore {
    async fn add_grant(
        &self,
        owner: Option<&str>,
        session: Option<&str>,
        pattern: &str,
        now: f64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO grants (id, owner_id, session_id, pattern, created_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
        )
        .bind(format!("grant-{}", uuid::Uuid::new_v4().simple()))
        .bind(owner)
        .bind(session)
        .bind(pattern)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn granted(
        &self,
        owner: Option<&str>,
        session: &str,
        patterns: &[String],
    ) -> Result<Option<&'static str>, StoreError> {
        if patterns.is_empty() {
            return Ok(None);
        }
        let sql = format!(
            "SELECT MIN(CASE WHEN session_id IS NULL THEN 0 ELSE 1 END) AS per_session FROM grants \
             WHERE owner_id IS NOT DISTINCT FROM $1 AND pattern IN ({}) \
             AND (session_id IS NULL OR session_id = $2) \
             AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = $2 AND s.deleted_at IS NOT NULL)",
            marks(3, patterns.len())
        );
        let mut query = sqlx::query(&sql).bind(owner).bind(session);
        for pattern in patterns {
            query = query.bind(pattern);
        }
        let row = query.fetch_one(&self.pool).await?;
        let per_session: Option<i64> = row.get("per_session");
        Ok(per_session.map(|s| if s == 0 { "always" } else { "session" }))
    }

    async fn grants(&self, owner: Option<&str>, limit: u32) -> Result<Vec<Grant>, StoreError> {
        let rows = sqlx::query(
            "SELECT g.id, g.session_id, g.pattern, g.created_at, s.title \
             FROM grants g LEFT JOIN sessions s ON s.id = g.session_id \
             WHERE g.owner_id IS NOT DISTINCT FROM $1 AND (g.session_id IS NULL OR s.deleted_at IS NULL) \
             ORDER BY g.created_at DESC, g.id LIMIT $2",
        )
        .bind(owner)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .iter()
            .map(|row| {
                let session_id: Option<String> = row.get("session_id");
                Grant {
                    id: row.get("id"),
                    scope: if session_id.is_some() {
                        "session"
                    } else {
                        "always"
                    },
                    pattern: row.get("pattern"),
                    session_id,
                    session_title: row.get("title"),
                    created_at: row.get("created_at"),
                }
            })
            .collect())
    }

    async fn revoke_grant(&self, owner: Option<&str>, id: &str) -> Result<(), StoreError> {
        let done =
            sqlx::query("DELETE FROM grants WHERE id = $1 AND owner_id IS NOT DISTINCT FROM $2")
                .bind(id)
                .bind(owner)
                .execute(&self.pool)
                .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    async fn count_users(&self) -> Result<u64, StoreError> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users")
            .fetch_one(&self.pool)
            .await?;
        Ok(n.max(0) as u64)
    }

    async fn users(&self) -> Result<Vec<User>, StoreError> {
        let rows = sqlx::query("SELECT * FROM users ORDER BY lower(name), name")
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(user_from).collect())
    }

    async fn create_user(
        &self,
        name: &str,
        password_hash: &str,
        admin: bool,
        now: f64,
    ) -> Result<(User, u64), StoreError> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let mut tx = self.write_tx().await?;
        if sqlx::query("SELECT 1 FROM users WHERE lower(name) = lower($1)")
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?
            .is_some()
        {
            return Err(StoreError::NameTaken);
        }
        let first_admin = admin
            && sqlx::query("SELECT 1 FROM users WHERE admin = 1")
                .fetch_optional(&mut *tx)
                .await?
                .is_none();
        let inserted = sqlx::query(
            "INSERT INTO users (id, name, password_hash, admin, created_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&id)
        .bind(name)
        .bind(password_hash)
        .bind(i64::from(admin))
        .bind(now)
        .execute(&mut *tx)
        .await;
        // Made by another instance meanwhile (PostgreSQL lets both pass the check above).
        if let Err(sqlx::Error::Database(e)) = &inserted {
            if e.is_unique_violation() {
                return Err(StoreError::NameTaken);
            }
        }
        inserted?;
        let adopted = if first_admin {
            // Standing permissions given with no account go with the conversations.
            sqlx::query("UPDATE grants SET owner_id = $1 WHERE owner_id IS NULL")
                .bind(&id)
                .execute(&mut *tx)
                .await?;
            // And the links shared (which it can then list and revoke).
            sqlx::query("UPDATE shares SET owner_id = $1 WHERE owner_id IS NULL")
                .bind(&id)
                .execute(&mut *tx)
                .await?;
            // And the files attached (the new account has none yet).
            for table in ["blobs", "attachments"] {
                sqlx::query(&format!("UPDATE {table} SET owner = $1 WHERE owner = ''"))
                    .bind(&id)
                    .execute(&mut *tx)
                    .await?;
            }
            sqlx::query("UPDATE sessions SET owner_id = $1 WHERE owner_id IS NULL")
                .bind(&id)
                .execute(&mut *tx)
                .await?
                .rows_affected()
        } else {
            0
        };
        tx.commit().await?;
        Ok((
            User {
                id,
                name: name.to_owned(),
                admin,
                created_at: now,
            },
            adopted,
        ))
    }

    async fn user_credentials(&self, name: &str) -> Result<(User, String), StoreError> {
        let row = sqlx::query("SELECT * FROM users WHERE lower(name) = lower($1)")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        Ok((user_from(&row), row.get("password_hash")))
    }

    async fn set_password(&self, name: &str, password_hash: &str) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        let id: String = sqlx::query_scalar(
            "UPDATE users SET password_hash = $2 WHERE lower(name) = lower($1) RETURNING id",
        )
        .bind(name)
        .bind(password_hash)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(StoreError::NotFound)?;
        sqlx::query("DELETE FROM auth_tokens WHERE user_id = $1")
            .bind(&id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn remove_user(&self, name: &str) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        let id: String = sqlx::query_scalar("SELECT id FROM users WHERE lower(name) = lower($1)")
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound)?;
        // Explicit, so that it does not depend on the connection's foreign-key setting.
        sqlx::query("DELETE FROM auth_tokens WHERE user_id = $1")
            .bind(&id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE sessions SET owner_id = NULL WHERE owner_id = $1")
            .bind(&id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM users WHERE id = $1")
            .bind(&id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn create_token(&self, sign_in: &NewSignIn) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        // Expired sign-ins go as new ones come.
        sqlx::query("DELETE FROM auth_tokens WHERE expires_at <= $1")
            .bind(sign_in.now)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO auth_tokens (token_hash, user_id, created_at, expires_at, last_seen_at, \
             proved_at, ip, agent, passkey_id) VALUES ($1, $2, $3, $4, $3, $3, $5, $6, $7)",
        )
        .bind(&sign_in.token_hash)
        .bind(&sign_in.user_id)
        .bind(sign_in.now)
        .bind(sign_in.expires_at)
        .bind(&sign_in.ip)
        .bind(&sign_in.agent)
        .bind(sign_in.passkey_id.as_deref())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn token_user(
        &self,
        token_hash: &str,
        now: f64,
    ) -> Result<Option<(User, f64)>, StoreError> {
        let row = sqlx::query(
            "SELECT u.*, t.expires_at AS token_expires_at FROM auth_tokens t \
             JOIN users u ON u.id = t.user_id WHERE t.token_hash = $1 AND t.expires_at > $2",
        )
        .bind(token_hash)
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|row| (user_from(&row), row.get("token_expires_at"))))
    }

    async fn extend_token(
        &self,
        token_hash: &str,
        expires_at: f64,
        now: f64,
    ) -> Result<(), StoreError> {
        sqlx::query(&format!(
            "UPDATE auth_tokens SET expires_at = {}(expires_at, $2), last_seen_at = $3 \
             WHERE token_hash = $1",
            self.engine.greatest()
        ))
        .bind(token_hash)
        .bind(expires_at)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn token_proved_at(&self, token_hash: &str) -> Result<Option<f64>, StoreError> {
        let proved: Option<Option<f64>> =
            sqlx::query_scalar("SELECT proved_at FROM auth_tokens WHERE token_hash = $1")
                .bind(token_hash)
                .fetch_optional(&self.pool)
                .await?;
        Ok(proved.flatten())
    }

    async fn prove_token(&self, token_hash: &str, now: f64) -> Result<(), StoreError> {
        sqlx::query("UPDATE auth_tokens SET proved_at = $2 WHERE token_hash = $1")
            .bind(token_hash)
            .bind(now)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn revoke_token(&self, token_hash: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM auth_tokens WHERE token_hash = $1")
            .bind(token_hash)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn storage(&self, owner: Option<&str>, now: f64) -> Result<Storage, StoreError> {
        // Conversations in the bin make room (restoring one asks for it again); one an
        // import is writing (hidden until later) takes it already.
        let conversations: Option<i64> = sqlx::query_scalar(
            "SELECT CAST(SUM(bytes) AS BIGINT) FROM sessions WHERE owner_id IS NOT DISTINCT FROM $1 \
             AND (deleted_at IS NULL OR deleted_at > $2)",
        )
        .bind(owner)
        .bind(now)
        .fetch_one(&self.pool)
        .await?;
        let shares: Option<i64> = sqlx::query_scalar(
            "SELECT CAST(SUM(bytes) AS BIGINT) FROM shares WHERE owner_id IS NOT DISTINCT FROM $1",
        )
        .bind(owner)
        .fetch_one(&self.pool)
        .await?;
        // (PostgreSQL sums BIGINT as NUMERIC: cast back.) Files are kept per account ('' for
        // open mode's).
        let files: Option<i64> =
            sqlx::query_scalar("SELECT bytes FROM blob_usage WHERE owner = $1")
                .bind(owner.unwrap_or_default())
                .fetch_optional(&self.pool)
                .await?;
        let count = |n: Option<i64>| n.unwrap_or(0).max(0) as u64;
        Ok(Storage {
            conversations: count(conversations),
            shares: count(shares),
            files: count(files),
        })
    }

    async fn sign_ins(&self, user_id: &str, now: f64) -> Result<Vec<SignIn>, StoreError> {
        let rows = sqlx::query(
            "SELECT substr(t.token_hash, 1, 16) AS id, t.created_at, \
             COALESCE(t.last_seen_at, t.created_at) AS last_seen_at, t.ip, t.agent, p.name, \
             p.id AS passkey_id \
             FROM auth_tokens t LEFT JOIN passkeys p ON p.id = t.passkey_id \
             WHERE t.user_id = $1 AND t.expires_at > $2 \
             ORDER BY COALESCE(t.last_seen_at, t.created_at) DESC, t.created_at DESC",
        )
        .bind(user_id)
        .bind(now)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .iter()
            .map(|row| SignIn {
                id: row.get("id"),
                created_at: row.get("created_at"),
                last_seen_at: row.get("last_seen_at"),
                ip: row.get("ip"),
                agent: row.get("agent"),
                passkey: row.get("name"),
                passkey_id: row.get("passkey_id"),
            })
            .collect())
    }

    async fn end_sign_in(&self, user_id: &str, id: &str) -> Result<(), StoreError> {
        // An id is 16 hex digits; anything else names nothing (and no pattern).
        if id.len() != 16 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(StoreError::NotFound);
        }
        let done = sqlx::query(
            "DELETE FROM auth_tokens WHERE user_id = $1 AND substr(token_hash, 1, 16) = $2",
        )
        .bind(user_id)
        .bind(id.to_ascii_lowercase())
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    async fn end_sign_ins(&self, user_id: &str) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM auth_tokens WHERE user_id = $1")
            .bind(user_id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }
}
