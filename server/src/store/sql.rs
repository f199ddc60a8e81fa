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

use super::{
    Attachment, Claim, Command, CommandKind, Engine, Frames, Grant, Interaction, JournalOp,
    JournalRow, Message, NewEvent, NewTurn, Notice, Place, QueuedMessage, Role, Run, Session,
    Shelf, Store, StoreError, TitleSource, User, Versions,
};

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
fn journal_notices(results: &[Result<Vec<JournalRow>, StoreError>]) -> Vec<String> {
    let mut high: Vec<(&str, u64)> = Vec::new();
    for row in results.iter().flatten().filter_map(|rows| rows.last()) {
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
) -> Result<Option<Vec<JournalRow>>, StoreError> {
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
) -> Result<Vec<Option<Vec<JournalRow>>>, StoreError> {
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
    let mut out = Vec::with_capacity(runs.len());
    let mut rows: Vec<(JournalRow, String)> = Vec::new();
    for (run_id, events) in runs {
        let Some((last, session_id)) = taken.get(*run_id) else {
            out.push(None);
            continue;
        };
        let first = (last - events.len() as i64 + 1).max(1) as u64;
        let mut mine = Vec::with_capacity(events.len());
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
            rows.push((row.clone(), payload));
            mine.push(row);
        }
        out.push(Some(mine));
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
        for (row, payload) in chunk {
            let frame = crate::wire::encode_frame(&row.run_id, row.seq, &row.kind, payload);
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
                .bind(frame);
        }
        query.execute(&mut *tx).await?;
    }
    Ok(out)
}

/// Journals the appends of the runs in `pending` (each event with its op's index) and puts
/// each op's result in its place.
async fn write_appends(
    tx: &mut AnyConnection,
    pending: Vec<(String, Vec<(usize, NewEvent)>)>,
    results: &mut [Option<Result<Vec<JournalRow>, StoreError>>],
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
) -> Result<Option<JournalRow>, StoreError> {
    Ok(append_in(tx, run_id, &[event])
        .await?
        .and_then(|mut rows| rows.pop()))
}

#[async_trait]
impl Store for SqlStore {
    async fn create_session(
        &self,
        title: &str,
        owner: Option<&str>,
        now: f64,
    ) -> Result<Session, StoreError> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        sqlx::query(
            "INSERT INTO sessions (id, title, title_source, created_at, updated_at, owner_id) \
             VALUES ($1, $2, 'default', $3, $3, $4)",
        )
        .bind(&id)
        .bind(title)
        .bind(now)
        .bind(owner)
        .execute(&self.pool)
        .await?;
        self.session(&id).await
    }

    async fn create_session_as(
        &self,
        id: &str,
        title: &str,
        owner: Option<&str>,
        now: f64,
    ) -> Result<Session, StoreError> {
        sqlx::query(
            "INSERT INTO sessions (id, title, title_source, created_at, updated_at, owner_id) \
             VALUES ($1, $2, 'default', $3, $3, $4) ON CONFLICT (id) DO NOTHING",
        )
        .bind(id)
        .bind(title)
        .bind(now)
        .bind(owner)
        .execute(&self.pool)
        .await?;
        self.session(id).await
    }

    async fn sessions_page(
        &self,
        owner: Option<&str>,
        offset: u64,
        limit: u32,
        archived: bool,
    ) -> Result<Vec<Session>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.owner_id IS NOT DISTINCT FROM $1 \
             AND s.deleted_at IS NULL AND (s.archived_at IS NOT NULL) = $4 \
             ORDER BY s.pinned_at IS NULL, s.pinned_at DESC, s.updated_at DESC, s.created_at DESC, s.id \
             LIMIT $2 OFFSET $3"
        ))
        .bind(owner)
        .bind(i64::from(limit))
        .bind(offset.min(i64::MAX as u64) as i64)
        .bind(archived)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(session_from).collect())
    }

    async fn search_sessions(
        &self,
        owner: Option<&str>,
        query: &str,
        limit: u32,
    ) -> Result<Vec<Session>, StoreError> {
        let pattern = like_pattern(query.trim());
        // The turn of the newest matching message: its own (an answer) or the one it started.
        let rows = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS}, \
               (SELECT r.turn_id FROM messages m JOIN runs r \
                  ON r.session_id = s.id AND (r.id = m.run_id OR r.user_message_id = m.id) \
                WHERE m.session_id = s.id AND m.content {like} $1 ESCAPE '\\' \
                ORDER BY m.position DESC LIMIT 1) AS hit_turn_id \
             FROM sessions s \
             WHERE s.owner_id IS NOT DISTINCT FROM $2 AND s.deleted_at IS NULL AND (s.title {like} $1 ESCAPE '\\' \
                OR EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id AND m.content {like} $1 ESCAPE '\\')) \
             ORDER BY s.updated_at DESC, s.id LIMIT $3",
            like = self.engine.like()
        ))
        .bind(pattern)
        .bind(owner)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(session_from).collect())
    }

    async fn session(&self, id: &str) -> Result<Session, StoreError> {
        sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.id = $1 AND s.deleted_at IS NULL"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        .map(|row| session_from(&row))
        .ok_or(StoreError::NotFound)
    }

    async fn rename_session(
        &self,
        id: &str,
        title: &str,
        source: TitleSource,
        now: f64,
    ) -> Result<Session, StoreError> {
        let guard = if source == TitleSource::Manual {
            ""
        } else {
            " AND title_source <> 'manual'"
        };
        let done = sqlx::query(&format!(
            "UPDATE sessions SET title = $2, title_source = $3, updated_at = {greatest}(updated_at, $4) WHERE id = $1{guard}",
            greatest = self.engine.greatest()
        ))
        .bind(id)
        .bind(title)
        .bind(source.as_str())
        .bind(now)
        .execute(&self.pool)
        .await?;
        let session = self.session(id).await?;
        let _ = done;
        Ok(session)
    }

    async fn delete_session(&self, id: &str, now: f64) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        lock_session(&mut tx, self.engine, id).await?;
        if let Some(active_run_id) = running_run(&mut tx, id).await? {
            return Err(StoreError::Busy { active_run_id });
        }
        let done =
            sqlx::query("UPDATE sessions SET deleted_at = $2 WHERE id = $1 AND deleted_at IS NULL")
                .bind(id)
                .bind(now)
                .execute(&mut *tx)
                .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        // Follow-ups waiting in it will not start.
        sqlx::query("DELETE FROM queued_messages WHERE session_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn restore_session(&self, owner: Option<&str>, id: &str) -> Result<Session, StoreError> {
        let done = sqlx::query(
            "UPDATE sessions SET deleted_at = NULL \
             WHERE id = $1 AND owner_id IS NOT DISTINCT FROM $2 AND deleted_at IS NOT NULL",
        )
        .bind(id)
        .bind(owner)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        self.session(id).await
    }

    async fn purge_deleted(&self, before: f64) -> Result<u64, StoreError> {
        let done =
            sqlx::query("DELETE FROM sessions WHERE deleted_at IS NOT NULL AND deleted_at < $1")
                .bind(before)
                .execute(&self.pool)
                .await?;
        Ok(done.rows_affected())
    }

    async fn shelve(
        &self,
        id: &str,
        shelf: Shelf,
        on: bool,
        now: f64,
    ) -> Result<Session, StoreError> {
        let (column, other) = match shelf {
            Shelf::Pinned => ("pinned_at", "archived_at"),
            Shelf::Archived => ("archived_at", "pinned_at"),
        };
        let done = sqlx::query(&format!(
            "UPDATE sessions SET {column} = CASE WHEN $2 THEN COALESCE({column}, $3) END, \
             {other} = CASE WHEN $2 THEN NULL ELSE {other} END \
             WHERE id = $1 AND deleted_at IS NULL"
        ))
        .bind(id)
        .bind(on)
        .bind(now)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        self.session(id).await
    }

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
        pattern: &str,
    ) -> Result<Option<&'static str>, StoreError> {
        let row = sqlx::query(
            "SELECT MIN(CASE WHEN session_id IS NULL THEN 0 ELSE 1 END) AS per_session FROM grants \
             WHERE owner_id IS NOT DISTINCT FROM $1 AND pattern = $3 AND (session_id IS NULL OR session_id = $2) \
             AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = $2 AND s.deleted_at IS NOT NULL)",
        )
        .bind(owner)
        .bind(session)
        .bind(pattern)
        .fetch_one(&self.pool)
        .await?;
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

    async fn set_session_model(&self, id: &str, model: Option<&str>) -> Result<(), StoreError> {
        let done = sqlx::query("UPDATE sessions SET model = $2 WHERE id = $1")
            .bind(id)
            .bind(model)
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    async fn messages(&self, session_id: &str) -> Result<Vec<Message>, StoreError> {
        let rows = sqlx::query("SELECT * FROM messages WHERE session_id = $1 ORDER BY position")
            .bind(session_id)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(message_from).collect())
    }

    async fn session_runs(&self, session_id: &str) -> Result<Vec<Run>, StoreError> {
        let rows = sqlx::query("SELECT * FROM runs WHERE session_id = $1 ORDER BY created_at, id")
            .bind(session_id)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(run_from).collect())
    }

    async fn messages_by_id(&self, ids: &[String]) -> Result<Vec<Message>, StoreError> {
        let mut found = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(200) {
            let sql = format!(
                "SELECT * FROM messages WHERE id IN ({})",
                marks(1, chunk.len())
            );
            let mut query = sqlx::query(&sql);
            for id in chunk {
                query = query.bind(id);
            }
            found.extend(query.fetch_all(&self.pool).await?.iter().map(message_from));
        }
        Ok(found)
    }

    async fn start_run(&self, turn: NewTurn<'_>) -> Result<(Run, Message), StoreError> {
        let NewTurn {
            session_id,
            run_id,
            turn_id,
            user_message_id,
            message,
            attachments,
            client_id,
            queued_id,
            place,
            default_model,
            lease,
            max_running,
            now,
        } = turn;
        let mut tx = self.write_tx().await?;
        if !lock_session(&mut tx, self.engine, session_id).await? {
            return Err(StoreError::NotFound);
        }
        if let Some(run_id) = sent_before(&mut tx, session_id, client_id).await? {
            return Err(StoreError::Duplicate { run_id });
        }
        if let Some(active_run_id) = running_run(&mut tx, session_id).await? {
            return Err(StoreError::Busy { active_run_id });
        }
        if let Some(limit) = max_running {
            let owner: Option<String> = sqlx::query("SELECT owner_id FROM sessions WHERE id = $1")
                .bind(session_id)
                .fetch_one(&mut *tx)
                .await?
                .get("owner_id");
            if running_count(&mut tx, self.engine, owner.as_deref()).await? >= limit {
                return Err(StoreError::TooManyRunning { limit });
            }
        }
        // Where the turn goes: after the turn shown last, or beside the one it retries or
        // edits (which must be a turn of this session).
        let (parent, replaced_message): (Option<String>, Option<String>) = match place {
            Place::Next => {
                let head = sqlx::query(&format!("SELECT {HEAD_SQL} AS head"))
                    .bind(session_id)
                    .fetch_one(&mut *tx)
                    .await?;
                (head.get("head"), None)
            }
            Place::Retry(of) | Place::Edit(of) => {
                let row = sqlx::query(
                    "SELECT parent_run_id, user_message_id FROM runs WHERE id = $1 AND session_id = $2",
                )
                .bind(of)
                .bind(session_id)
                .fetch_optional(&mut *tx)
                .await?
                .ok_or(StoreError::NotFound)?;
                (row.get("parent_run_id"), Some(row.get("user_message_id")))
            }
        };
        if let Some(queued_id) = queued_id {
            let taken =
                sqlx::query("DELETE FROM queued_messages WHERE id = $1 AND session_id = $2")
                    .bind(queued_id)
                    .bind(session_id)
                    .execute(&mut *tx)
                    .await?;
            if taken.rows_affected() == 0 {
                return Err(StoreError::NotFound);
            }
        }
        // A retry answers the same message again; anything else stores a new one.
        let retried_message = replaced_message
            .as_ref()
            .filter(|_| matches!(place, Place::Retry(_)));
        let user_message_id = match retried_message {
            Some(id) => id.clone(),
            None => {
                sqlx::query(
                    "INSERT INTO messages (id, session_id, position, role, content, run_id, client_id, created_at) \
                     VALUES ($1, $2, (SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE session_id = $2), 'user', $3, $4, $5, $6)",
                )
                .bind(user_message_id)
                .bind(session_id)
                .bind(message)
                .bind(run_id)
                .bind(client_id)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                // An edit keeps the files of the message it replaces.
                let carried = match (&replaced_message, attachments.is_empty()) {
                    (Some(from), true) => {
                        copy_attachments(&mut tx, from, user_message_id, now).await?
                    }
                    _ => {
                        link_attachments(&mut tx, session_id, user_message_id, attachments).await?
                    }
                };
                if let Some(json) = carried_json(&carried) {
                    sqlx::query("UPDATE messages SET attachments = $2 WHERE id = $1")
                        .bind(user_message_id)
                        .bind(json)
                        .execute(&mut *tx)
                        .await?;
                }
                user_message_id.to_owned()
            }
        };
        let inserted = sqlx::query(
            "INSERT INTO runs (id, session_id, turn_id, user_message_id, status, created_at, parent_run_id, model, \
               owner_instance, lease_expires_at) \
             VALUES ($1, $2, $3, $4, 'running', $5, $6, \
               CASE WHEN $7 IS NULL THEN NULL \
                 ELSE COALESCE((SELECT model FROM sessions WHERE id = $2), $7) END, $8, $9)",
        )
        .bind(run_id)
        .bind(session_id)
        .bind(turn_id)
        .bind(&user_message_id)
        .bind(now)
        .bind(&parent)
        .bind(default_model)
        .bind(lease.instance)
        .bind(lease.until)
        .execute(&mut *tx)
        .await;
        if let Err(sqlx::Error::Database(e)) = &inserted {
            if e.is_unique_violation() {
                // Lost a race with another start: report the winner.
                drop(tx);
                let active =
                    sqlx::query("SELECT id FROM runs WHERE session_id = $1 AND status = 'running'")
                        .bind(session_id)
                        .fetch_optional(&self.pool)
                        .await?;
                return Err(StoreError::Busy {
                    active_run_id: active.map(|r| r.get("id")).unwrap_or_default(),
                });
            }
        }
        inserted?;
        // The new turn is what the session shows last.
        sqlx::query(&format!(
            "UPDATE sessions SET updated_at = {}(updated_at, $2), head_run_id = $3 WHERE id = $1",
            self.engine.greatest()
        ))
        .bind(session_id)
        .bind(now)
        .bind(run_id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        let run = self.run(run_id).await?;
        let message = sqlx::query("SELECT * FROM messages WHERE id = $1")
            .bind(&user_message_id)
            .fetch_one(&self.pool)
            .await
            .map(|row| message_from(&row))?;
        Ok((run, message))
    }

    async fn branch(&self, session_id: &str) -> Result<Vec<(Run, Versions)>, StoreError> {
        let sql = format!(
            "WITH RECURSIVE path(id, depth) AS ( \
               SELECT {HEAD_SQL}, 0 \
               UNION ALL \
               SELECT r.parent_run_id, path.depth + 1 FROM runs r JOIN path ON r.id = path.id \
               WHERE r.parent_run_id IS NOT NULL) \
             SELECT r.*, {VERSIONS_SQL} FROM path JOIN runs r ON r.id = path.id \
             WHERE r.session_id = $1 ORDER BY path.depth DESC"
        );
        let rows = sqlx::query(&sql)
            .bind(session_id)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .iter()
            .map(|r| (run_from(r), versions_from(r)))
            .collect())
    }

    async fn history(&self, run_id: &str) -> Result<Vec<Message>, StoreError> {
        let sql = format!(
            "{PATH_SQL} \
             SELECT m.* FROM path JOIN runs r ON r.id = path.id \
             JOIN messages m ON m.id = r.user_message_id OR (m.run_id = r.id AND m.role = 'assistant') \
             ORDER BY path.depth DESC, m.role = 'assistant'"
        );
        let rows = sqlx::query(&sql).bind(run_id).fetch_all(&self.pool).await?;
        Ok(rows.iter().map(message_from).collect())
    }

    async fn versions(&self, run_id: &str) -> Result<Vec<Run>, StoreError> {
        let rows = sqlx::query(
            "SELECT x.* FROM runs r JOIN runs x \
               ON x.session_id = r.session_id AND x.parent_run_id IS NOT DISTINCT FROM r.parent_run_id \
             WHERE r.id = $1 ORDER BY x.created_at, x.id",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(run_from).collect())
    }

    async fn show_branch(&self, session_id: &str, run_id: &str) -> Result<String, StoreError> {
        let mut tx = self.write_tx().await?;
        lock_session(&mut tx, self.engine, session_id).await?;
        if let Some(active_run_id) = running_run(&mut tx, session_id).await? {
            return Err(StoreError::Busy { active_run_id });
        }
        // Down from the run, always to the newest of the turns that follow it.
        let head = sqlx::query(
            "WITH RECURSIVE down(id, depth) AS ( \
               SELECT id, 0 FROM runs WHERE id = $1 AND session_id = $2 \
               UNION ALL \
               SELECT (SELECT c.id FROM runs c WHERE c.session_id = $2 AND c.parent_run_id = down.id \
                       ORDER BY c.created_at DESC, c.id DESC LIMIT 1), down.depth + 1 \
               FROM down WHERE down.id IS NOT NULL) \
             SELECT id FROM down WHERE id IS NOT NULL ORDER BY depth DESC LIMIT 1",
        )
        .bind(run_id)
        .bind(session_id)
        .fetch_optional(&mut *tx)
        .await?
        .map(|row| row.get::<String, _>("id"))
        .ok_or(StoreError::NotFound)?;
        sqlx::query("UPDATE sessions SET head_run_id = $2 WHERE id = $1")
            .bind(session_id)
            .bind(&head)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(head)
    }

    async fn run(&self, run_id: &str) -> Result<Run, StoreError> {
        sqlx::query("SELECT * FROM runs WHERE id = $1")
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await?
            .map(|row| run_from(&row))
            .ok_or(StoreError::NotFound)
    }

    async fn running_runs(&self) -> Result<Vec<Run>, StoreError> {
        let rows = sqlx::query("SELECT * FROM runs WHERE status = 'running' ORDER BY created_at")
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(run_from).collect())
    }

    async fn snapshots(
        &self,
        run_ids: &[String],
        version: i64,
    ) -> Result<std::collections::HashMap<String, String>, StoreError> {
        let mut found = std::collections::HashMap::new();
        // A bounded number of parameters per query.
        for chunk in run_ids.chunks(200) {
            let sql = format!(
                "SELECT run_id, data FROM turn_snapshots WHERE version = $1 AND run_id IN ({})",
                marks(2, chunk.len())
            );
            let mut query = sqlx::query(&sql).bind(version);
            for id in chunk {
                query = query.bind(id);
            }
            for row in query.fetch_all(&self.pool).await? {
                found.insert(row.get("run_id"), row.get("data"));
            }
        }
        Ok(found)
    }

    async fn put_snapshot(&self, run_id: &str, version: i64, data: &str) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO turn_snapshots (run_id, version, data) \
             SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM runs WHERE id = $1) \
             ON CONFLICT (run_id) DO UPDATE SET version = excluded.version, data = excluded.data",
        )
        .bind(run_id)
        .bind(version)
        .bind(data)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn runs_without_snapshot(
        &self,
        version: i64,
        limit: u32,
    ) -> Result<Vec<Run>, StoreError> {
        let rows = sqlx::query(
            "SELECT r.* FROM runs r LEFT JOIN turn_snapshots t ON t.run_id = r.id \
             WHERE r.status = 'finished' AND (t.run_id IS NULL OR t.version <> $1) \
             ORDER BY r.created_at, r.id LIMIT $2",
        )
        .bind(version)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(run_from).collect())
    }

    async fn commit(
        &self,
        ops: Vec<JournalOp>,
    ) -> Result<Vec<Result<Vec<JournalRow>, StoreError>>, StoreError> {
        let mut tx = self.journal.begin_with(self.engine.begin_write()).await?;
        let mut results: Vec<Option<Result<Vec<JournalRow>, StoreError>>> =
            (0..ops.len()).map(|_| None).collect();
        // A run's appends go in together (one update, one insert), in their order; a run's
        // settling first writes what was appended to it before.
        let mut pending: Vec<(String, Vec<(usize, NewEvent)>)> = Vec::new();
        for (index, op) in ops.into_iter().enumerate() {
            match op {
                JournalOp::Append { run_id, event } => {
                    match pending.iter_mut().find(|(run, _)| *run == run_id) {
                        Some((_, events)) => events.push((index, event)),
                        None => pending.push((run_id, vec![(index, event)])),
                    }
                }
                JournalOp::Settle {
                    run_id,
                    terminal,
                    answer,
                } => {
                    if let Some(at) = pending.iter().position(|(run, _)| *run == run_id) {
                        let earlier = vec![pending.remove(at)];
                        write_appends(&mut tx, earlier, &mut results).await?;
                    }
                    let Some(terminal_row) = append_one(&mut tx, &run_id, &terminal).await? else {
                        results[index] = Some(Err(StoreError::Finished));
                        continue;
                    };
                    let session_id = terminal_row.session_id.clone();
                    let usage = answer.usage.as_ref().map(Value::to_string);
                    // A turn that did not complete keeps what it had streamed as its answer.
                    let completed = terminal.terminal_state == Some(TerminalState::Completed);
                    let content = if completed || !answer.content.is_empty() {
                        answer.content.clone()
                    } else {
                        streamed_answer(&mut tx, &run_id).await?
                    };
                    let partial = !completed && !content.is_empty();
                    sqlx::query(
                        "INSERT INTO messages (id, session_id, position, role, content, partial, run_id, terminal_state, usage, created_at, cut_off) \
                         VALUES ($1, $2, (SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE session_id = $2), 'assistant', $3, $4, $5, $6, $7, $8, $9)",
                    )
                    .bind(&answer.message_id)
                    .bind(&session_id)
                    .bind(&content)
                    .bind(i64::from(partial))
                    .bind(&run_id)
                    .bind(terminal.terminal_state.map(TerminalState::as_str))
                    .bind(&usage)
                    .bind(terminal.created_at)
                    .bind(i64::from(answer.cut_off))
                    .execute(&mut *tx)
                    .await?;
                    let mut payload = Map::new();
                    payload.insert("role".into(), Value::from("assistant"));
                    payload.insert("id".into(), Value::from(answer.message_id.clone()));
                    payload.insert("content".into(), Value::from(content));
                    if partial {
                        payload.insert("partial".into(), Value::Bool(true));
                    }
                    if answer.cut_off {
                        payload.insert("cut_off".into(), Value::Bool(true));
                    }
                    if let Some(usage) = &answer.usage {
                        payload.insert("usage".into(), usage.clone());
                    }
                    payload.insert("created_at".into(), Value::from(terminal.created_at));
                    let settled = NewEvent {
                        kind: EventKind::SettledMessage,
                        payload,
                        terminal_state: None,
                        created_at: terminal.created_at,
                    };
                    let settled_row = append_one(&mut tx, &run_id, &settled).await?;
                    let mut end_payload = Map::new();
                    end_payload.insert("session_id".into(), Value::from(session_id.clone()));
                    end_payload.insert("created_at".into(), Value::from(terminal.created_at));
                    let end = NewEvent {
                        kind: EventKind::StreamEnd,
                        payload: end_payload,
                        terminal_state: None,
                        created_at: terminal.created_at,
                    };
                    let end_row = append_one(&mut tx, &run_id, &end).await?;
                    sqlx::query(
                        "UPDATE runs SET status = 'finished', terminal_state = $2, finished_at = $3 WHERE id = $1",
                    )
                    .bind(&run_id)
                    .bind(terminal.terminal_state.map(TerminalState::as_str))
                    .bind(terminal.created_at)
                    .execute(&mut *tx)
                    .await?;
                    sqlx::query("UPDATE interactions SET status = 'closed' WHERE run_id = $1 AND status = 'pending'")
                        .bind(&run_id)
                        .execute(&mut *tx)
                        .await?;
                    sqlx::query(&format!(
                        "UPDATE sessions SET updated_at = {}(updated_at, $2) WHERE id = $1",
                        self.engine.greatest()
                    ))
                    .bind(&session_id)
                    .bind(terminal.created_at)
                    .execute(&mut *tx)
                    .await?;
                    results[index] = Some(Ok([Some(terminal_row), settled_row, end_row]
                        .into_iter()
                        .flatten()
                        .collect()));
                }
            }
        }
        if !pending.is_empty() {
            write_appends(&mut tx, pending, &mut results).await?;
        }
        let results: Vec<Result<Vec<JournalRow>, StoreError>> = results
            .into_iter()
            .map(|result| result.unwrap_or(Err(StoreError::Finished)))
            .collect();
        if self.engine.shared() {
            // Delivered when the transaction commits, never before: a follower on another
            // instance reads rows that are there.
            for payload in journal_notices(&results) {
                sqlx::query("SELECT pg_notify($1, $2)")
                    .bind(JOURNAL_CHANNEL)
                    .bind(payload)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        tx.commit().await?;
        Ok(results)
    }

    async fn events(
        &self,
        run_id: &str,
        after: u64,
        up_to: Option<u64>,
        limit: u32,
    ) -> Result<Vec<JournalRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT * FROM run_events WHERE run_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4",
        )
        .bind(run_id)
        .bind(after as i64)
        .bind(up_to.map_or(i64::MAX, |u| u as i64))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(journal_row_from).collect())
    }

    async fn frames(
        &self,
        run_id: &str,
        after: u64,
        up_to: Option<u64>,
        limit: u32,
    ) -> Result<Frames, StoreError> {
        // One aggregate over the stored encodings: one result row per page, whatever its size.
        // Sequence numbers are gapless, so a page is a seq range. The range scan walks the
        // primary key (run_id, seq) in order, which is the order the aggregate concatenates in;
        // an ORDER BY inside the aggregate would add a sort of the whole page.
        let last = up_to
            .unwrap_or(u64::MAX)
            .min(after.saturating_add(u64::from(limit)));
        let row = sqlx::query(&format!(
            "SELECT COUNT(*) AS count, COALESCE(MAX(seq), 0) AS last_seq, {} AS sse \
             FROM run_events WHERE run_id = $1 AND seq > $2 AND seq <= $3",
            self.engine.frames_concat()
        ))
        .bind(run_id)
        .bind(after as i64)
        .bind(last.min(i64::MAX as u64) as i64)
        .fetch_one(&self.pool)
        .await?;
        let count: i64 = row.get("count");
        let last_seq: i64 = row.get("last_seq");
        let sse: String = row.get::<Option<String>, _>("sse").unwrap_or_default();
        Ok(Frames {
            count: count.max(0) as u32,
            last_seq: last_seq.max(0) as u64,
            ended: crate::wire::ends_with_stream_end(&sse),
            sse: bytes::Bytes::from(sse),
        })
    }

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

    async fn count_running(&self, owner: Option<&str>) -> Result<u64, StoreError> {
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM runs r JOIN sessions s ON s.id = r.session_id \
             WHERE r.status = 'running' AND s.owner_id IS NOT DISTINCT FROM $1",
        )
        .bind(owner)
        .fetch_one(&self.pool)
        .await?;
        Ok(n.max(0) as u64)
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

    async fn create_token(
        &self,
        token_hash: &str,
        user_id: &str,
        now: f64,
        expires_at: f64,
    ) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        // Expired sign-ins go as new ones come.
        sqlx::query("DELETE FROM auth_tokens WHERE expires_at <= $1")
            .bind(now)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO auth_tokens (token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(token_hash)
        .bind(user_id)
        .bind(now)
        .bind(expires_at)
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

    async fn extend_token(&self, token_hash: &str, expires_at: f64) -> Result<(), StoreError> {
        sqlx::query(&format!(
            "UPDATE auth_tokens SET expires_at = {}(expires_at, $2) WHERE token_hash = $1",
            self.engine.greatest()
        ))
        .bind(token_hash)
        .bind(expires_at)
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
        lease: super::Lease<'_>,
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
        let mut tx = self.pool.begin().await?;
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
