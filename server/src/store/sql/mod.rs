//! The SQL store: one implementation over sqlx's `Any` driver, for the two engines Anchorage
//! runs on. SQLite (one file in WAL mode, the default) serves one process; PostgreSQL serves
//! several instances at once. Both keep the same tables and answer the same statements; where
//! the engines differ in a word of SQL, [`Engine`] says which. Migrations are per engine
//! (`migrations/sqlite`, `migrations/postgres`), embedded in the binary.

use anchor::{EventKind, TerminalState};
use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value};
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::AnyConnection;
use sqlx::{AnyPool, Executor as _, Row};

use super::prelude::*;
use super::{
    Attachment, Claim, Command, CommandKind, Engine, Frame, Frames, Grant, ImportedMessage,
    ImportedRun, Interaction, JournalOp, JournalRow, Message, NewEvent, NewImport, NewSignIn,
    NewTurn, Notice, QueuedMessage, Role, Run, Session, SettledAnswer, Share, Shelf, SignIn,
    Storage, StoreError, StoredPasskey, TitleSource, TurnAt, User, Versions, STAGED_FOR,
};

mod accounts;
mod attachments;
mod imports;
mod instances;
mod interactions;
mod journal;
mod passkeys;
mod sessions;
mod shares;
mod turns;

mod append;
mod notify;
mod tx;
use append::{append_imported, append_one, write_appends};
use journal::settle_in;
use notify::{forward_notices, journal_notices, COMMAND_CHANNEL, JOURNAL_CHANNEL};
use tx::WriteTx;

/// Opens the store the configuration names: PostgreSQL at `database_url`, else the SQLite
/// file `anchorage.db` under `data_dir` (created if missing).
pub async fn open(
    database_url: Option<&str>,
    data_dir: &std::path::Path,
) -> anyhow::Result<std::sync::Arc<dyn Store>> {
    open_with(database_url, data_dir, None).await
}

/// As [`open`], the SQLite file held to `max_database_bytes` (`--max-database-mb`; nothing
/// for PostgreSQL): past it a write fails as on a full disk.
pub async fn open_with(
    database_url: Option<&str>,
    data_dir: &std::path::Path,
    max_database_bytes: Option<u64>,
) -> anyhow::Result<std::sync::Arc<dyn Store>> {
    use anyhow::Context as _;
    let store = match database_url {
        Some(url) => SqlStore::open_postgres(url)
            .await
            .with_context(|| format!("opening the database {}", redacted_url(url)))?,
        None => {
            std::fs::create_dir_all(data_dir)
                .with_context(|| format!("creating the data directory {}", data_dir.display()))?;
            let db = data_dir.join("anchorage.db");
            SqlStore::open_sqlite_within(&db, max_database_bytes)
                .await
                .with_context(|| format!("opening the database {}", db.display()))?
        }
    };
    Ok(std::sync::Arc::new(store))
}

/// A database address fit for a log or an error: its password replaced.
pub fn redacted_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// Sessions, transcripts and the run journal in SQLite or PostgreSQL.
#[derive(Clone, Debug)]
pub struct SqlStore {
    engine: Engine,
    pool: AnyPool,
    /// The journal writer's own connection: readers, however many, never make a commit wait
    /// for a connection (SQLite in WAL mode lets them read while it writes).
    journal: AnyPool,
    /// Leases' own connection (PostgreSQL only; SQLite's is `pool`): however busy the other
    /// connections are, a renewal never waits for one, and the lease never lapses for that.
    upkeep: AnyPool,
    /// Where a listener connects (PostgreSQL only).
    url: Option<String>,
}

/// SQLite's settings for every connection: WAL (readers never wait for the writer), NORMAL
/// sync (with WAL every commit survives a crash of the process; only an OS crash can lose the
/// last ones), foreign keys, a busy timeout; replays read whole journals, so the file is mapped
/// instead of copied page by page and each connection keeps a larger page cache.
const SQLITE_PRAGMAS: &str = "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
     PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 10000; \
     PRAGMA mmap_size = 1073741824; PRAGMA cache_size = -8192;";

/// A `sqlite://` address for a file (its path percent-encoded where a URL would misread it).
fn sqlite_url(path: &Path) -> String {
    let mut url = String::from("sqlite://");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' | '?' | '#' | ' ' | '"' | '<' | '>' | '`' | '{' | '}' => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    url.push_str(&format!("%{b:02X}"));
                }
            }
            c => url.push(c),
        }
    }
    url.push_str("?mode=rwc");
    url
}

impl SqlStore {
    /// Opens (creating if needed) the SQLite database file and migrates it.
    pub async fn open_sqlite(path: &Path) -> Result<Self, StoreError> {
        SqlStore::open_sqlite_within(path, None).await
    }

    /// As [`SqlStore::open_sqlite`], the file held to `max_bytes` (SQLite's
    /// `max_page_count`): a write past it fails with `SQLITE_FULL`, as on a full disk.
    pub async fn open_sqlite_within(
        path: &Path,
        max_bytes: Option<u64>,
    ) -> Result<Self, StoreError> {
        sqlx::any::install_default_drivers();
        let url = sqlite_url(path);
        // SQLite's default page is 4 KiB.
        let max_pages = max_bytes.map(|bytes| (bytes / 4096).max(16));
        let options = move || {
            AnyPoolOptions::new().after_connect(move |conn: &mut AnyConnection, _| {
                Box::pin(async move {
                    conn.execute(SQLITE_PRAGMAS).await?;
                    if let Some(pages) = max_pages {
                        conn.execute(format!("PRAGMA max_page_count = {pages}").as_str())
                            .await?;
                    }
                    Ok(())
                })
            })
        };
        let pool = options().max_connections(4).connect(&url).await?;
        sqlx::migrate!("./migrations/sqlite").run(&pool).await?;
        let journal = options()
            .max_connections(1)
            .min_connections(1)
            .connect(&url)
            .await?;
        Ok(SqlStore {
            engine: Engine::Sqlite,
            upkeep: pool.clone(),
            pool,
            journal,
            url: None,
        })
    }

    /// Connects to a PostgreSQL database (`postgres://…`) and migrates it. Several instances
    /// may do this at once: migrations take a lock of their own.
    pub async fn open_postgres(url: &str) -> Result<Self, StoreError> {
        sqlx::any::install_default_drivers();
        // A transaction left open by a process that stalled (or was paused) holds its rows:
        // the server ends it, so that another instance can take over the stalled one's runs.
        let options = || {
            AnyPoolOptions::new().after_connect(|conn: &mut AnyConnection, _| {
                Box::pin(async move {
                    conn.execute("SET idle_in_transaction_session_timeout = '20s'")
                        .await?;
                    Ok(())
                })
            })
        };
        let pool = options()
            .max_connections(12)
            // A database out of reach is said within 2 s (503), not after a long wait.
            .acquire_timeout(Duration::from_millis(1500))
            .connect(url)
            .await?;
        sqlx::migrate!("./migrations/postgres").run(&pool).await?;
        // The journal's and the leases' own connections wait a little longer (a restart of
        // the database is ridden out by the journal's retries), never a pool's default 30 s.
        let one = || {
            options()
                .max_connections(1)
                .min_connections(1)
                .acquire_timeout(Duration::from_secs(2))
        };
        let journal = one().connect(url).await?;
        let upkeep = one().connect(url).await?;
        Ok(SqlStore {
            engine: Engine::Postgres,
            pool,
            journal,
            upkeep,
            url: Some(url.to_owned()),
        })
    }

    /// A transaction that will write. On SQLite it takes the write lock when it begins
    /// (waiting up to the busy timeout): a deferred transaction that reads first and writes
    /// later fails with `SQLITE_BUSY` without waiting if another connection wrote in between,
    /// which turned a delete right after a Stop into a 500. On PostgreSQL, rows are locked as
    /// they are written, and a session's writers take its row first ([`Engine::lock_row`]).
    ///
    /// A failed `COMMIT` (a full disk) or a failed rollback never hands the connection back
    /// with a transaction open ([`WriteTx`]).
    async fn write_tx(&self) -> Result<WriteTx, sqlx::Error> {
        WriteTx::begin(&self.pool, self.engine.begin_write()).await
    }
}

/// The words of SQL in which the engines differ.
impl Engine {
    fn begin_write(self) -> &'static str {
        match self {
            Self::Sqlite => "BEGIN IMMEDIATE",
            Self::Postgres => "BEGIN",
        }
    }

    /// The larger of two values (SQLite's two-argument `MAX`).
    fn greatest(self) -> &'static str {
        match self {
            Self::Sqlite => "MAX",
            Self::Postgres => "GREATEST",
        }
    }

    /// Where a string first occurs in another (1-based; 0: nowhere): `f(haystack, needle)`.
    fn position(self) -> &'static str {
        match self {
            Self::Sqlite => "instr",
            Self::Postgres => "strpos",
        }
    }

    /// A `LIKE` that ignores case (SQLite's does, for ASCII).
    fn like(self) -> &'static str {
        match self {
            Self::Sqlite => "LIKE",
            Self::Postgres => "ILIKE",
        }
    }

    /// What follows a `SELECT` of a row the transaction goes on to write on its behalf
    /// (SQLite's write transaction already holds the whole database).
    fn lock_row(self) -> &'static str {
        match self {
            Self::Sqlite => "",
            Self::Postgres => " FOR UPDATE",
        }
    }

    /// The stored SSE encodings of a page of journal rows, in seq order, as one text. SQLite's
    /// range scan walks the primary key (run_id, seq) in order, which is the order its
    /// aggregate concatenates in (an ORDER BY inside it would add a sort of the whole page);
    /// PostgreSQL promises no order without one.
    fn frames_concat(self) -> &'static str {
        match self {
            Self::Sqlite => "group_concat(frame, '')",
            Self::Postgres => "string_agg(frame, '' ORDER BY seq)",
        }
    }
}

const SESSION_COLUMNS: &str =
    "s.id, s.title, s.title_source, s.created_at, s.updated_at, s.owner_id, s.model, \
     s.pinned_at, s.archived_at, \
     (SELECT r.id FROM runs r WHERE r.session_id = s.id AND r.status = 'running') AS active_run_id";

fn session_from(row: &AnyRow) -> Session {
    Session {
        id: row.get("id"),
        title: row.get("title"),
        title_source: TitleSource::parse(row.get::<&str, _>("title_source")),
        created_at: row.get("created_at"),
        updated_at: row.get("updated_at"),
        active_run_id: row.get("active_run_id"),
        owner_id: row.get("owner_id"),
        model: row.get("model"),
        pinned: row.get::<Option<f64>, _>("pinned_at").is_some(),
        pinned_at: row.get("pinned_at"),
        archived: row.get::<Option<f64>, _>("archived_at").is_some(),
        hit_turn_id: row.try_get("hit_turn_id").ok().flatten(),
        snippet: row.try_get("hit_text").ok().flatten(),
        bytes: row
            .try_get::<i64, _>("bytes")
            .map_or(0, |b| b.max(0) as u64),
    }
}

fn user_from(row: &AnyRow) -> User {
    User {
        id: row.get("id"),
        name: row.get("name"),
        admin: row.get::<i64, _>("admin") != 0,
        created_at: row.get("created_at"),
    }
}

fn message_from(row: &AnyRow) -> Message {
    let usage: Option<String> = row.get("usage");
    Message {
        id: row.get("id"),
        session_id: row.get("session_id"),
        position: row.get("position"),
        role: Role::parse(row.get::<&str, _>("role")),
        content: row.get("content"),
        run_id: row.get("run_id"),
        partial: row.get::<i64, _>("partial") != 0,
        cut_off: row.get::<i64, _>("cut_off") != 0,
        client_id: row.get("client_id"),
        terminal_state: terminal_state_from(row),
        usage: usage.and_then(|u| serde_json::from_str(&u).ok()),
        created_at: row.get("created_at"),
        attachments: json_list(row, "attachments"),
    }
}

/// A JSON list kept in a column (NULL, or what cannot be read: none).
fn json_list<T: serde::de::DeserializeOwned>(row: &AnyRow, column: &str) -> Vec<T> {
    row.try_get::<Option<String>, _>(column)
        .ok()
        .flatten()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

fn queued_from(row: &AnyRow) -> QueuedMessage {
    QueuedMessage {
        id: row.get("id"),
        session_id: row.get("session_id"),
        content: row.get("content"),
        client_id: row.get("client_id"),
        created_at: row.get("created_at"),
        attachments: json_list(row, "attachments"),
    }
}

fn attachment_from(row: &AnyRow) -> Attachment {
    Attachment {
        id: row.get("id"),
        owner: row.get("owner"),
        sha256: row.get("sha256"),
        name: row.get("name"),
        mime: row.get("mime"),
        size: u64::try_from(row.get::<i64, _>("size")).unwrap_or(0),
        session_id: row.get("session_id"),
        message_id: row.get("message_id"),
        created_at: row.get("created_at"),
    }
}

/// The JSON a message keeps of what it carries (NULL: nothing).
fn carried_json(carried: &[app::api::AttachmentData]) -> Option<String> {
    (!carried.is_empty()).then(|| serde_json::to_string(carried).unwrap_or_default())
}

/// Sends `ids` with message `message_id` of `session_id`, in that order: each must be an
/// attachment of the session's account not sent yet (`Unattachable` otherwise).
async fn link_attachments(
    conn: &mut AnyConnection,
    session_id: &str,
    message_id: &str,
    ids: &[String],
) -> Result<Vec<app::api::AttachmentData>, StoreError> {
    let mut carried = Vec::with_capacity(ids.len());
    for id in ids {
        let row = sqlx::query(
            "UPDATE attachments SET session_id = $2, message_id = $3 \
             WHERE id = $1 AND message_id IS NULL AND (session_id IS NULL OR session_id = $2) \
               AND owner = (SELECT COALESCE(owner_id, '') FROM sessions WHERE id = $2) \
             RETURNING *",
        )
        .bind(id)
        .bind(session_id)
        .bind(message_id)
        .fetch_optional(&mut *conn)
        .await?
        .ok_or_else(|| StoreError::Unattachable { id: id.clone() })?;
        carried.push(attachment_from(&row).data());
    }
    Ok(carried)
}

/// Gives message `to` copies of the attachments of message `from` (an edit carries the files
/// of the message it replaces; the bytes are not copied).
async fn copy_attachments(
    conn: &mut AnyConnection,
    from: &str,
    to: &str,
    now: f64,
) -> Result<Vec<app::api::AttachmentData>, StoreError> {
    let row = sqlx::query("SELECT attachments FROM messages WHERE id = $1")
        .bind(from)
        .fetch_optional(&mut *conn)
        .await?;
    let before: Vec<app::api::AttachmentData> = row
        .map(|r| json_list(&r, "attachments"))
        .unwrap_or_default();
    let mut carried = Vec::with_capacity(before.len());
    for old in before {
        let id = format!("att-{}", uuid::Uuid::new_v4().simple());
        let copied = sqlx::query(
            "INSERT INTO attachments (id, owner, sha256, name, mime, size, session_id, message_id, created_at) \
             SELECT $2, owner, sha256, name, mime, size, session_id, $3, $4 FROM attachments WHERE id = $1",
        )
        .bind(&old.id)
        .bind(&id)
        .bind(to)
        .bind(now)
        .execute(&mut *conn)
        .await?;
        if copied.rows_affected() == 1 {
            carried.push(app::api::AttachmentData { id, ..old });
        }
    }
    Ok(carried)
}

/// The run a message with this client id started, if one was stored.
async fn sent_before(
    conn: &mut AnyConnection,
    session_id: &str,
    client_id: Option<&str>,
) -> Result<Option<String>, sqlx::Error> {
    let Some(client_id) = client_id else {
        return Ok(None);
    };
    let row = sqlx::query("SELECT run_id FROM messages WHERE session_id = $1 AND client_id = $2")
        .bind(session_id)
        .bind(client_id)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(row.map(|r| r.get::<Option<String>, _>("run_id").unwrap_or_default()))
}

/// Takes a session's row for the transaction's writes (on PostgreSQL other writers of the
/// session wait for it; SQLite's write transaction already excludes them); whether it exists.
async fn lock_session(
    conn: &mut AnyConnection,
    engine: Engine,
    session_id: &str,
) -> Result<bool, sqlx::Error> {
    let row = sqlx::query(&format!(
        "SELECT 1 AS one FROM sessions WHERE id = $1{}",
        engine.lock_row()
    ))
    .bind(session_id)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.is_some())
}

/// Holds off, until this transaction ends, every other transaction that asks to hold `what`:
/// a count followed by an insert then stays within its limit however many instances write
/// at once. On PostgreSQL an advisory lock of the transaction; SQLite's write transaction
/// already excludes every other writer.
pub(super) async fn hold_until_commit(
    conn: &mut AnyConnection,
    engine: Engine,
    what: &str,
) -> Result<(), sqlx::Error> {
    if engine == Engine::Postgres {
        sqlx::query("SELECT 1 AS one FROM (SELECT pg_advisory_xact_lock(hashtext($1))) AS held")
            .bind(what)
            .fetch_one(&mut *conn)
            .await?;
    }
    Ok(())
}

/// The turns an account (`None`: open mode) runs now, counted with the account's starts held
/// off until the transaction ends: on PostgreSQL by a lock of the account's own (taken after
/// the session's row, as every start does), on SQLite by the write transaction itself.
async fn running_count(
    conn: &mut AnyConnection,
    engine: Engine,
    owner: Option<&str>,
) -> Result<u64, sqlx::Error> {
    hold_until_commit(
        conn,
        engine,
        &format!("running:{}", owner.unwrap_or_default()),
    )
    .await?;
    let n: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM runs r JOIN sessions s ON s.id = r.session_id \
         WHERE r.status = 'running' AND s.owner_id IS NOT DISTINCT FROM $1",
    )
    .bind(owner)
    .fetch_one(&mut *conn)
    .await?;
    Ok(n.max(0) as u64)
}

/// The run a session is running, if any.
async fn running_run(
    conn: &mut AnyConnection,
    session_id: &str,
) -> Result<Option<String>, sqlx::Error> {
    let row = sqlx::query("SELECT id FROM runs WHERE session_id = $1 AND status = 'running'")
        .bind(session_id)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(row.map(|r| r.get("id")))
}

/// Event types that end the answer stream (see `anchor::answer::breaks_answer`), for SQL.
fn answer_breaks_sql() -> &'static str {
    static LIST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LIST.get_or_init(|| {
        anchor::answer::answer_breaks()
            .map(|k| format!("'{}'", k.name()))
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// What a run had streamed as its answer, read from its journal inside the settling
/// transaction: the prose after the last event that ends the answer stream.
async fn streamed_answer(conn: &mut AnyConnection, run_id: &str) -> Result<String, sqlx::Error> {
    let rows = sqlx::query(&format!(
        "SELECT type, payload FROM run_events WHERE run_id = $1 AND type IN ('token', 'interim_assistant') \
         AND seq > COALESCE((SELECT MAX(seq) FROM run_events WHERE run_id = $1 AND type IN ({})), 0) \
         ORDER BY seq",
        answer_breaks_sql()
    ))
    .bind(run_id)
    .fetch_all(&mut *conn)
    .await?;
    let events: Vec<(String, Value)> = rows
        .iter()
        .map(|row| {
            let payload: String = row.get("payload");
            (
                row.get("type"),
                serde_json::from_str(&payload).unwrap_or(Value::Null),
            )
        })
        .collect();
    Ok(anchor::answer::answer_tail(
        events
            .iter()
            .map(|(kind, payload)| (kind.as_str(), payload)),
    ))
}

/// A stored terminal state; a name this build does not know reads as none.
fn terminal_state_from(row: &AnyRow) -> Option<TerminalState> {
    row.get::<Option<String>, _>("terminal_state")
        .as_deref()
        .and_then(TerminalState::parse)
}

fn run_from(row: &AnyRow) -> Run {
    let status: String = row.get("status");
    let last_seq: i64 = row.get("last_seq");
    Run {
        id: row.get("id"),
        session_id: row.get("session_id"),
        turn_id: row.get("turn_id"),
        user_message_id: row.get("user_message_id"),
        running: status == "running",
        terminal_state: terminal_state_from(row),
        last_seq: last_seq.max(0) as u64,
        created_at: row.get("created_at"),
        finished_at: row.get("finished_at"),
        parent_run_id: row.get("parent_run_id"),
        model: row.get("model"),
        owner_instance: row.try_get("owner_instance").ok().flatten(),
        lease_expires_at: row.try_get("lease_expires_at").ok().flatten(),
    }
}

/// The versions of a run's place in its session's tree, from a row that has them.
fn versions_from(row: &AnyRow) -> Versions {
    let index: i64 = row.get("version");
    let count: i64 = row.get("versions");
    Versions {
        index: index.clamp(1, i64::from(u32::MAX)) as u32,
        count: count.clamp(1, i64::from(u32::MAX)) as u32,
    }
}

/// The run a session shows last: its head, or its newest run (SQL, session id in `$1`).
const HEAD_SQL: &str = "COALESCE((SELECT head_run_id FROM sessions WHERE id = $1), \
     (SELECT r.id FROM runs r WHERE r.session_id = $1 ORDER BY r.created_at DESC, r.id DESC LIMIT 1))";

/// The runs from the run in `$1` up to its first, with their depth (0: that run) (SQL).
const PATH_SQL: &str = "WITH RECURSIVE path(id, depth) AS ( \
       SELECT $1, 0 \
       UNION ALL \
       SELECT r.parent_run_id, path.depth + 1 FROM runs r JOIN path ON r.id = path.id \
       WHERE r.parent_run_id IS NOT NULL)";

/// A run's place among its siblings (`version`, from 1, oldest first) and their number
/// (`versions`), as columns of `r` (SQL).
const VERSIONS_SQL: &str = "(SELECT COUNT(*) FROM runs x WHERE x.session_id = r.session_id \
       AND x.parent_run_id IS NOT DISTINCT FROM r.parent_run_id) AS versions, \
     (SELECT COUNT(*) FROM runs x WHERE x.session_id = r.session_id \
       AND x.parent_run_id IS NOT DISTINCT FROM r.parent_run_id \
       AND (x.created_at < r.created_at OR (x.created_at = r.created_at AND x.id <= r.id))) AS version";

fn journal_row_from(row: &AnyRow) -> JournalRow {
    let payload: String = row.get("payload");
    let seq: i64 = row.get("seq");
    let terminal: i64 = row.get("terminal");
    JournalRow {
        run_id: row.get("run_id"),
        seq: seq.max(0) as u64,
        session_id: row.get("session_id"),
        kind: row.get("type"),
        created_at: row.get("created_at"),
        terminal: terminal != 0,
        terminal_state: row.get("terminal_state"),
        payload: match serde_json::from_str(&payload) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        },
    }
}

fn interaction_from(row: &AnyRow) -> Interaction {
    let request: String = row.get("request");
    let response: Option<String> = row.get("response");
    Interaction {
        run_id: row.get("run_id"),
        id: row.get("id"),
        kind: row.get("kind"),
        status: row.get("status"),
        request: serde_json::from_str(&request).unwrap_or(Value::Null),
        response: response.and_then(|r| serde_json::from_str(&r).ok()),
    }
}

/// `n` numbered parameters from `$first`, comma-separated.
fn marks(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn like_pattern(query: &str) -> String {
    let mut out = String::with_capacity(query.len() + 2);
    out.push('%');
    for c in query.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}
