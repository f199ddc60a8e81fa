//! A write transaction that never goes back to the pool half done.
//!
//! sqlx's own transaction hands its connection back to the pool when `COMMIT` fails, with the
//! transaction still counted open: on SQLite a full disk (`SQLITE_FULL`) rolls the transaction
//! back by itself, the connection's count of open transactions stays at one, and every later
//! transaction on it fails ("begin_with at non-zero transaction depth") until the process
//! restarts. Here a connection goes back only once it is known to be out of any transaction:
//! committed, or rolled back; when either fails, it is closed instead (the database ends what
//! it had open), and the pool opens a new one when it is next needed.

use std::ops::{Deref, DerefMut};

use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection, AnyPool, Executor as _};

/// A connection of the pool inside a transaction begun by [`WriteTx::begin`].
pub(super) struct WriteTx {
    /// `None` once ended (committed, or handed to its rollback).
    conn: Option<PoolConnection<Any>>,
}

impl WriteTx {
    /// A connection of `pool` with a transaction begun by `begin` (`BEGIN IMMEDIATE`, say).
    pub(super) async fn begin(pool: &AnyPool, begin: &str) -> Result<Self, sqlx::Error> {
        let mut conn = pool.acquire().await?;
        if let Err(e) = conn.execute(begin).await {
            // Whether a transaction began is not known: the connection does not go back.
            conn.close_on_drop();
            return Err(e);
        }
        Ok(WriteTx { conn: Some(conn) })
    }

    /// Commits; a connection whose `COMMIT` failed is closed, not handed back.
    pub(super) async fn commit(mut self) -> Result<(), sqlx::Error> {
        let Some(mut conn) = self.conn.take() else {
            return Ok(());
        };
        match conn.execute("COMMIT").await {
            Ok(_) => Ok(()),
            Err(e) => {
                conn.close_on_drop();
                Err(e)
            }
        }
    }
}

impl Drop for WriteTx {
    /// Not committed (the work failed, or the request was dropped): rolled back on the
    /// runtime, and the connection goes back only if that worked.
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if conn.execute("ROLLBACK").await.is_err() {
                        conn.close_on_drop();
                    }
                });
            }
            Err(_) => conn.close_on_drop(),
        }
    }
}

impl Deref for WriteTx {
    type Target = AnyConnection;

    fn deref(&self) -> &AnyConnection {
        self.conn
            .as_deref()
            .expect("a transaction's connection, until it ends")
    }
}

impl DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        self.conn
            .as_deref_mut()
            .expect("a transaction's connection, until it ends")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sql::SqlStore;
    use crate::store::StoreError;

    #[tokio::test]
    async fn a_write_that_fails_on_a_full_disk_leaves_no_transaction_behind() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqlStore::open_sqlite_within(&dir.path().join("a.db"), Some(4 << 20))
            .await
            .unwrap();
        // The journal's pool has one connection: what one transaction leaves, the next meets.
        let pool = &store.journal;
        let mut tx = WriteTx::begin(pool, "BEGIN IMMEDIATE").await.unwrap();
        tx.execute("CREATE TABLE t (b BLOB NOT NULL)")
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let mut tx = WriteTx::begin(pool, "BEGIN IMMEDIATE").await.unwrap();
        let full = tx
            .execute("INSERT INTO t (b) VALUES (zeroblob(8388608))")
            .await
            .map_err(StoreError::from)
            .unwrap_err();
        assert!(full.disk_full(), "{full}");
        drop(tx);
        // The next transactions, on the same pool, begin and commit.
        for _ in 0..3 {
            let mut tx = WriteTx::begin(pool, "BEGIN IMMEDIATE").await.unwrap();
            tx.execute("INSERT INTO t (b) VALUES (x'00')")
                .await
                .unwrap();
            tx.commit().await.unwrap();
        }
        let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t")
            .fetch_one(pool)
            .await
            .unwrap();
        assert_eq!(rows, 3);
    }
}
