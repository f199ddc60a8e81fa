//! Instances sharing one database: its clock, the leases on runs, commands between instances,
//! follow-up queues left idle, and the notices of committed rows.

use super::*;

#[async_trait]
impl InstanceStore for SqlStore {
    fn engine(&self) -> Engine {
        self.engine
    }

    async fn clock(&self) -> Result<f64, StoreError> {
        match self.engine {
            Engine::Sqlite => Ok(crate::clock::now()),
            Engine::Postgres => Ok(sqlx::query_scalar(
                "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)",
            )
            .fetch_one(&self.upkeep)
            .await?),
        }
    }

    async fn idle_queues(&self, limit: u32) -> Result<Vec<String>, StoreError> {
        let rows = sqlx::query(
            "SELECT DISTINCT q.session_id AS session_id FROM queued_messages q \
             JOIN sessions s ON s.id = q.session_id AND s.deleted_at IS NULL \
             WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.session_id = q.session_id \
               AND r.status = 'running') \
             LIMIT $1",
        )
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(|row| row.get("session_id")).collect())
    }

    async fn renew_leases(
        &self,
        instance: &str,
        run_ids: &[String],
        until: f64,
    ) -> Result<Vec<String>, StoreError> {
        let mut renewed = Vec::with_capacity(run_ids.len());
        for chunk in run_ids.chunks(200) {
            let sql = format!(
                "UPDATE runs SET lease_expires_at = $1 \
                 WHERE owner_instance = $2 AND status = 'running' AND id IN ({}) RETURNING id",
                marks(3, chunk.len())
            );
            let mut query = sqlx::query(&sql).bind(until).bind(instance);
            for id in chunk {
                query = query.bind(id);
            }
            let rows = query.fetch_all(&self.upkeep).await?;
            renewed.extend(rows.iter().map(|row| row.get::<String, _>("id")));
        }
        Ok(renewed)
    }

    async fn claim(
        &self,
        which: Claim<'_>,
        lease: crate::store::Lease<'_>,
        now: f64,
    ) -> Result<Vec<Run>, StoreError> {
        // One statement: of instances that claim at once, each run goes to one (PostgreSQL
        // re-checks the condition on a row another transaction changed before updating it).
        let expired = "(lease_expires_at IS NULL OR lease_expires_at <= $3)";
        let (filter, run) = match which {
            Claim::Expired => (expired.to_owned(), None),
            Claim::NotMine => (
                format!("({expired} OR owner_instance IS NULL OR owner_instance <> $1)"),
                None,
            ),
            Claim::Run(id) => (format!("id = $4 AND {expired}"), Some(id)),
        };
        let sql = format!(
            "UPDATE runs SET owner_instance = $1, lease_expires_at = $2 \
             WHERE status = 'running' AND {filter} RETURNING *"
        );
        let mut query = sqlx::query(&sql)
            .bind(lease.instance)
            .bind(lease.until)
            .bind(now);
        if let Some(run) = run {
            query = query.bind(run);
        }
        let rows = query.fetch_all(&self.upkeep).await?;
        let mut runs: Vec<Run> = rows.iter().map(run_from).collect();
        runs.sort_by(|a, b| a.created_at.total_cmp(&b.created_at));
        Ok(runs)
    }

    async fn send_command(
        &self,
        run_id: &str,
        instance: &str,
        kind: CommandKind,
        body: &Value,
        now: f64,
    ) -> Result<i64, StoreError> {
        // The command and its announcement, or neither.
        let mut tx = WriteTx::begin(&self.pool, "BEGIN").await?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO run_commands (run_id, instance, kind, body, created_at) \
             VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .bind(run_id)
        .bind(instance)
        .bind(kind.as_str())
        .bind(body.to_string())
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        if self.engine.shared() {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(COMMAND_CHANNEL)
                .bind(instance)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(id)
    }

    async fn take_commands(&self, instance: &str, now: f64) -> Result<Vec<Command>, StoreError> {
        let rows = sqlx::query(
            "UPDATE run_commands SET taken_at = $2 WHERE instance = $1 AND taken_at IS NULL \
             RETURNING id, run_id, instance, kind, body",
        )
        .bind(instance)
        .bind(now)
        .fetch_all(&self.pool)
        .await?;
        let mut commands: Vec<Command> = rows
            .iter()
            .filter_map(|row| {
                Some(Command {
                    id: row.get("id"),
                    run_id: row.get("run_id"),
                    instance: row.get("instance"),
                    kind: CommandKind::parse(row.get::<&str, _>("kind"))?,
                    body: serde_json::from_str(row.get::<&str, _>("body")).unwrap_or(Value::Null),
                })
            })
            .collect();
        commands.sort_by_key(|c| c.id);
        Ok(commands)
    }

    async fn finish_command(&self, id: i64, result: &Value) -> Result<(), StoreError> {
        sqlx::query("UPDATE run_commands SET result = $2 WHERE id = $1")
            .bind(id)
            .bind(result.to_string())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn command_result(&self, id: i64) -> Result<Option<Value>, StoreError> {
        let result: Option<Option<String>> =
            sqlx::query_scalar("SELECT result FROM run_commands WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(result
            .flatten()
            .map(|text| serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    async fn keep_reserve(&self) -> Result<(), StoreError> {
        if self.engine != Engine::Sqlite {
            return Ok(());
        }
        sqlx::query(
            "INSERT INTO reserve (b) SELECT zeroblob($1) WHERE NOT EXISTS (SELECT 1 FROM reserve)",
        )
        .bind(RESERVE_BYTES)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn release_reserve(&self) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM reserve")
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn purge_commands(&self, before: f64) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM run_commands WHERE created_at < $1")
            .bind(before)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn listen(&self) -> Result<Option<tokio::sync::mpsc::Receiver<Notice>>, StoreError> {
        let Some(url) = &self.url else {
            return Ok(None);
        };
        let mut listener = sqlx::postgres::PgListener::connect(url).await?;
        listener
            .listen_all([JOURNAL_CHANNEL, COMMAND_CHANNEL])
            .await?;
        let (tx, rx) = tokio::sync::mpsc::channel(4096);
        tokio::spawn(forward_notices(listener, tx));
        Ok(Some(rx))
    }
}

/// The room kept back for a full disk, in bytes (64 pages: the ends of a few dozen runs).
const RESERVE_BYTES: i64 = 256 * 1024;
