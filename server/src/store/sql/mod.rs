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
    Attachment, Claim, Command, CommandKind, Engine, Frame, Frames, Grant, Interaction, JournalOp,
    JournalRow, Message, NewEvent, NewTurn, Notice, QueuedMessage, Role, Run, Session, Shelf,
    StoreError, TitleSource, TurnAt, User, Versions,
};

mod accounts;
mod attachments;
mod instances;
mod interactions;
mod journal;
mod sessions;
mod turns;

/// The channel committed journal rows are announced on (`run_id seq`, space-separated pairs).
pub const JOURNAL_CHANNEL: &str = "anchorage_journal";
/// The channel that tells an instance it has commands waiting (its id).
pub const COMMAND_CHANNEL: &str = "anchorage_commands";
/// The most a notification carries (PostgreSQL's limit is 8,000 bytes).
const NOTIFY_BYTES: usize = 7_000;

/// Opens the store the configuration names: PostgreSQL at `database_url`, else the SQLite
/// file `anchorage.db` under `data_dir` (created if missing).
pub async fn open(
    database_url: Option<&str>,
    data_dir: &std::path::Path,
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
            SqlStore::open_sqlite(&db)
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
        sqlx::any::install_default_drivers();
        let url = sqlite_url(path);
        let options = || {
            AnyPoolOptions::new().after_connect(|conn: &mut AnyConnection, _| {
                Box::pin(async move {
                    conn.execute(SQLITE_PRAGMAS).await?;
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
            .acquire_timeout(Duration::from_secs(10))
            .connect(url)
            .await?;
        sqlx::migrate!("./migrations/postgres").run(&pool).await?;
        let one = || options().max_connections(1).min_connections(1);
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
    async fn write_tx(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error> {
        self.pool.begin_with(self.engine.begin_write()).await
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

/// The turns an account (`None`: open mode) runs now, counted with the account's starts held
/// off until the transaction ends: on PostgreSQL by a lock of the account's own (taken after
/// the session's row, as every start does), on SQLite by the write transaction itself.
async fn running_count(
    conn: &mut AnyConnection,
    engine: Engine,
    owner: Option<&str>,
) -> Result<u64, sqlx::Error> {
    if engine == Engine::Postgres {
        sqlx::query("SELECT 1 AS one FROM (SELECT pg_advisory_xact_lock(hashtext($1))) AS held")
            .bind(format!("running:{}", owner.unwrap_or_default()))
            .fetch_one(&mut *conn)
            .await?;
    }
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

/// The payloads that announce a commit: each run's new high-water mark, a line `run_id seq`
/// each, as few notifications as fit.
fn journal_notices(results: &[Result<Vec<Frame>, StoreError>]) -> Vec<String> {
    let mut high: Vec<(&str, u64)> = Vec::new();
    for row in results
        .iter()
        .flatten()
        .filter_map(|frames| frames.last().map(|f| &f.row))
    {
        match high.iter_mut().find(|(run, _)| *run == row.run_id) {
            Some((_, seq)) => *seq = (*seq).max(row.seq),
            None => high.push((&row.run_id, row.seq)),
        }
    }
    let mut payloads = Vec::new();
    let mut payload = String::new();
    for (run, seq) in high {
        let line = format!("{run} {seq}");
        if !payload.is_empty() && payload.len() + 1 + line.len() > NOTIFY_BYTES {
            payloads.push(std::mem::take(&mut payload));
        }
        if !payload.is_empty() {
            payload.push('\n');
        }
        payload.push_str(&line);
    }
    if !payload.is_empty() {
        payloads.push(payload);
    }
    payloads
}

/// What a notification on one of the store's channels says.
fn parse_notice(channel: &str, payload: &str) -> Vec<Notice> {
    match channel {
        JOURNAL_CHANNEL => payload
            .lines()
            .filter_map(|line| {
                let (run_id, seq) = line.rsplit_once(' ')?;
                Some(Notice::Journal {
                    run_id: run_id.to_owned(),
                    seq: seq.parse().ok()?,
                })
            })
            .collect(),
        COMMAND_CHANNEL => vec![Notice::Commands {
            instance: payload.to_owned(),
        }],
        _ => Vec::new(),
    }
}

/// Forwards what `listener` hears to `tx` until `tx` is dropped; after a lost connection,
/// once it is back, [`Notice::Resync`].
async fn forward_notices(
    mut listener: sqlx::postgres::PgListener,
    tx: tokio::sync::mpsc::Sender<Notice>,
) {
    loop {
        let next = tokio::select! {
            next = listener.try_recv() => next,
            () = tx.closed() => return,
        };
        match next {
            Ok(Some(notification)) => {
                for notice in parse_notice(notification.channel(), notification.payload()) {
                    if tx.send(notice).await.is_err() {
                        return;
                    }
                }
            }
            // Lost, and already connected again.
            Ok(None) => {
                if tx.send(Notice::Resync).await.is_err() {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!("listening to the database failed: {e}; trying again");
                // Until a LISTEN goes through again (it reconnects first).
                loop {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                        () = tx.closed() => return,
                    }
                    if listener.listen(JOURNAL_CHANNEL).await.is_ok() {
                        break;
                    }
                }
                if tx.send(Notice::Resync).await.is_err() {
                    return;
                }
            }
        }
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

/// Rows one INSERT of journal rows carries at most (ten parameters each: under SQLite's and
/// PostgreSQL's limits on parameters per statement).
const INSERT_ROWS: usize = 500;

/// Appends events to a running run inside `tx`, in order: one update takes their seqs, and
/// the rows go in as few INSERTs as fit; `None` when the run is not running.
async fn append_in(
    tx: &mut AnyConnection,
    run_id: &str,
    events: &[&NewEvent],
) -> Result<Option<Vec<Frame>>, StoreError> {
    let mut rows = append_runs(tx, &[(run_id, events.to_vec())]).await?;
    Ok(rows.pop().flatten())
}

/// Appends events to several running runs inside `tx`, each run's in order, in one update
/// (which takes their seqs) and as few INSERTs as fit, whatever the number of runs: a batch of
/// many runs' appends costs a few statements, not two per event. Per run, its rows, or `None`
/// when it is not running.
async fn append_runs(
    tx: &mut AnyConnection,
    runs: &[(&str, Vec<&NewEvent>)],
) -> Result<Vec<Option<Vec<Frame>>>, StoreError> {
    // What each running run's new last seq is, and its session.
    let mut taken: std::collections::HashMap<String, (i64, String)> =
        std::collections::HashMap::with_capacity(runs.len());
    for chunk in runs.chunks(INSERT_ROWS) {
        let values = (0..chunk.len())
            .map(|i| format!("(${}, ${})", 2 * i + 1, 2 * i + 2))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "UPDATE runs SET last_seq = runs.last_seq + v.column2 FROM (VALUES {values}) AS v \
             WHERE runs.id = v.column1 AND runs.status = 'running' \
             RETURNING id, last_seq, session_id"
        );
        let mut query = sqlx::query(&sql);
        for (run_id, events) in chunk {
            query = query.bind(*run_id).bind(events.len() as i64);
        }
        for row in query.fetch_all(&mut *tx).await? {
            taken.insert(row.get("id"), (row.get("last_seq"), row.get("session_id")));
        }
    }
    // Per run, how many rows it wrote (`None`: not running); the rows, each with its payload
    // and its frame encoded once: stored, and handed back to be sent as they are.
    let mut counts = Vec::with_capacity(runs.len());
    let mut rows: Vec<(JournalRow, String, String)> = Vec::new();
    for (run_id, events) in runs {
        let Some((last, session_id)) = taken.get(*run_id) else {
            counts.push(None);
            continue;
        };
        let first = (last - events.len() as i64 + 1).max(1) as u64;
        for (i, event) in events.iter().enumerate() {
            let row = JournalRow {
                run_id: (*run_id).to_owned(),
                seq: first + i as u64,
                session_id: session_id.clone(),
                kind: event.kind.name().to_owned(),
                created_at: event.created_at,
                terminal: event.terminal_state.is_some(),
                terminal_state: event.terminal_state.map(|t| t.as_str().to_owned()),
                payload: event.payload.clone(),
            };
            let payload = serde_json::to_string(&event.payload).unwrap_or_else(|_| "{}".to_owned());
            let frame = crate::wire::encode_frame(&row.run_id, row.seq, &row.kind, &payload);
            rows.push((row, payload, frame));
        }
        counts.push(Some(events.len()));
    }
    for chunk in rows.chunks(INSERT_ROWS) {
        let values = (0..chunk.len())
            .map(|i| format!("({})", marks(i * 10 + 1, 10)))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "INSERT INTO run_events (run_id, seq, event_id, session_id, type, created_at, terminal, \
             terminal_state, payload, frame) VALUES {values}"
        );
        let mut query = sqlx::query(&sql);
        for (row, payload, frame) in chunk {
            query = query
                .bind(row.run_id.as_str())
                .bind(row.seq as i64)
                .bind(row.event_id())
                .bind(row.session_id.as_str())
                .bind(row.kind.as_str())
                .bind(row.created_at)
                .bind(i64::from(row.terminal))
                .bind(row.terminal_state.as_deref())
                .bind(payload.as_str())
                .bind(frame.as_str());
        }
        query.execute(&mut *tx).await?;
    }
    let mut written = rows.into_iter().map(|(row, _, frame)| Frame {
        row,
        sse: frame.into(),
    });
    Ok(counts
        .into_iter()
        .map(|count| count.map(|n| written.by_ref().take(n).collect()))
        .collect())
}

/// Journals the appends of the runs in `pending` (each event with its op's index) and puts
/// each op's result in its place.
async fn write_appends(
    tx: &mut AnyConnection,
    pending: Vec<(String, Vec<(usize, NewEvent)>)>,
    results: &mut [Option<Result<Vec<Frame>, StoreError>>],
) -> Result<(), StoreError> {
    let runs: Vec<(&str, Vec<&NewEvent>)> = pending
        .iter()
        .map(|(run, events)| (run.as_str(), events.iter().map(|(_, e)| e).collect()))
        .collect();
    let written = append_runs(tx, &runs).await?;
    for ((_, events), rows) in pending.iter().zip(written) {
        match rows {
            Some(rows) => {
                for ((index, _), row) in events.iter().zip(rows) {
                    results[*index] = Some(Ok(vec![row]));
                }
            }
            None => {
                for (index, _) in events {
                    results[*index] = Some(Err(StoreError::Finished));
                }
            }
        }
    }
    Ok(())
}

/// Appends one event (see [`append_in`]).
async fn append_one(
    tx: &mut AnyConnection,
    run_id: &str,
    event: &NewEvent,
) -> Result<Option<Frame>, StoreError> {
    Ok(append_in(tx, run_id, &[event])
        .await?
        .and_then(|mut rows| rows.pop()))
}
