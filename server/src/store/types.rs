//! What the store keeps and hands out: sessions, messages, runs, journal rows, accounts and
//! the rest, as plain data (the traits that read and write them are in the parent).

use anchor::{EventKind, TerminalState};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use app::api::Versions;

/// The database engine behind the store, and what sets the two apart for its callers (the
/// words of SQL in which they differ are `sql`'s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// One file, one process (the default).
    Sqlite,
    /// A server several instances share.
    Postgres,
}

impl Engine {
    /// Its name, for logs.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sqlite => "SQLite",
            Self::Postgres => "PostgreSQL",
        }
    }

    /// Whether other server processes may use the same database at once (a run may then be
    /// owned by another instance, and commands and live events cross between them).
    pub fn shared(self) -> bool {
        self == Self::Postgres
    }
}

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person.
    User,
    /// The agent.
    Assistant,
}

impl Role {
    /// The stored (and provider-facing) name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }

    /// The role a stored name names; anything but `user` is the assistant's.
    pub fn parse(name: &str) -> Role {
        if name == "user" {
            Self::User
        } else {
            Self::Assistant
        }
    }
}

/// Where a session's title came from. A title the user gave is never replaced by another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TitleSource {
    /// Not named yet.
    Default,
    /// The first prompt's words.
    Prompt,
    /// Named by the agent.
    Agent,
    /// Renamed by the user.
    Manual,
}

/// A conversation's title from its first message: its first words (six at most, 60 characters
/// at most); none for a message without words. The one rule for a title nobody chose.
pub fn title_from_prompt(message: &str) -> Option<String> {
    let words: Vec<&str> = message.split_whitespace().take(6).collect();
    let title: String = words.join(" ").chars().take(60).collect();
    (!title.is_empty()).then_some(title)
}

impl TitleSource {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::Prompt => "prompt",
            Self::Agent => "agent",
            Self::Manual => "manual",
        }
    }

    /// The source a stored name names (an unknown one reads as not named yet).
    pub fn parse(name: &str) -> TitleSource {
        match name {
            "prompt" => Self::Prompt,
            "agent" => Self::Agent,
            "manual" => Self::Manual,
            _ => Self::Default,
        }
    }
}

/// A chat session.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Session {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Where its title came from.
    pub title_source: TitleSource,
    /// Seconds since the epoch.
    pub created_at: f64,
    /// Seconds since the epoch; bumped by every message.
    pub updated_at: f64,
    /// The run in progress, if any.
    pub active_run_id: Option<String>,
    /// The account it belongs to (`None`: made with no account, in open mode).
    #[serde(skip)]
    pub owner_id: Option<String>,
    /// The model it asks for (`None`: the server's default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Pinned to the top of the list.
    pub pinned: bool,
    /// When it was pinned (seconds since the epoch).
    pub pinned_at: Option<f64>,
    /// Archived: out of the list (search still finds it).
    pub archived: bool,
    /// In search results: the turn of the newest message that matched (a link opens there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hit_turn_id: Option<String>,
    /// In search results: the matching message's words around the match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    /// What its journal takes, in bytes (its share of its account's storage).
    #[serde(skip)]
    pub bytes: u64,
}

/// A transcript message.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Message {
    /// Its id (stable: the settled assistant message keeps it).
    pub id: String,
    /// Its session.
    pub session_id: String,
    /// 0-based position in the session.
    pub position: i64,
    /// Who wrote it.
    pub role: Role,
    /// Its text: an assistant message's final answer, or for a turn that did not complete,
    /// what it had streamed as its answer (then `partial`); empty when there is neither.
    pub content: String,
    /// The assistant's turn did not complete: `content` is what it had streamed by then.
    pub partial: bool,
    /// The id the browser gave the user's message (a retried send finds it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The run that produced it, or that it started.
    pub run_id: Option<String>,
    /// How the assistant's turn ended.
    pub terminal_state: Option<TerminalState>,
    /// Token usage of the assistant's turn.
    pub usage: Option<Value>,
    /// The provider stopped the answer at a length limit: `content` is as far as it got.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cut_off: bool,
    /// Seconds since the epoch.
    pub created_at: f64,
    /// The files a user message carries, as they were sent.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<app::api::AttachmentData>,
}

/// A read-only link to a snapshot of a conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct Share {
    /// Its id (how its owner names it: to list and revoke).
    pub id: String,
    /// What the link carries (128 random bits, URL-safe): whoever has it may read the snapshot.
    pub token: String,
    /// The account that made it (`None`: open mode).
    pub owner: Option<String>,
    /// The conversation it shows.
    pub session_id: String,
    /// The conversation's title when it was shared.
    pub title: String,
    /// What the link shows, as JSON (`routes::share` writes and reads it).
    pub snapshot: String,
    /// Seconds since the epoch.
    pub created_at: f64,
}

/// A file someone attached (sent with a message, or waiting to be).
#[derive(Clone, Debug, PartialEq)]
pub struct Attachment {
    /// Its id.
    pub id: String,
    /// The account it belongs to (`""`: open mode).
    pub owner: String,
    /// The SHA-256 of its bytes (hex): the account keeps each content once.
    pub sha256: String,
    /// Its file name.
    pub name: String,
    /// Its type (see [`app::api::AttachmentData::mime`]).
    pub mime: String,
    /// Its size in bytes.
    pub size: u64,
    /// The conversation it was sent in (`None`: not sent yet).
    pub session_id: Option<String>,
    /// The message that carries it (`None`: not sent yet).
    pub message_id: Option<String>,
    /// Seconds since the epoch.
    pub created_at: f64,
}

impl Attachment {
    /// What a message and the page say about it.
    pub fn data(&self) -> app::api::AttachmentData {
        app::api::AttachmentData {
            id: self.id.clone(),
            name: self.name.clone(),
            mime: self.mime.clone(),
            size: self.size,
        }
    }
}

/// A run: one agent turn of a session.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Run {
    /// Its id (also the journal's stream id).
    pub id: String,
    /// Its session.
    pub session_id: String,
    /// The assistant turn it produces.
    pub turn_id: String,
    /// The user message that started it.
    pub user_message_id: String,
    /// Still producing events.
    pub running: bool,
    /// How it ended.
    pub terminal_state: Option<TerminalState>,
    /// The last journaled sequence number (0: none yet).
    pub last_seq: u64,
    /// Seconds since the epoch.
    pub created_at: f64,
    /// Seconds since the epoch.
    pub finished_at: Option<f64>,
    /// The turn it follows on its branch (`None`: a first turn). Retries and edits of a turn
    /// have its parent: they are its other versions.
    pub parent_run_id: Option<String>,
    /// The model that answers it (`None`: a backend that offers no choice of model).
    pub model: Option<String>,
    /// The server instance that runs it (its lease), while it runs.
    #[serde(skip)]
    pub owner_instance: Option<String>,
    /// Until when that instance's claim holds, unless it renews it (seconds since the epoch).
    #[serde(skip)]
    pub lease_expires_at: Option<f64>,
}

impl Run {
    /// Whether an instance holds it at `now`: it runs, and its owner's lease has not expired.
    pub fn held(&self, now: f64) -> bool {
        self.running && self.lease_expires_at.is_some_and(|until| until > now)
    }
}

/// One journaled event: `event_id = run_id:seq`, `seq` gapless from 1 per run.
#[derive(Clone, Debug, PartialEq)]
pub struct JournalRow {
    /// Its run.
    pub run_id: String,
    /// Its position in the run.
    pub seq: u64,
    /// Its session.
    pub session_id: String,
    /// The event type (`token`, `tool`, `done`, …).
    pub kind: String,
    /// Seconds since the epoch.
    pub created_at: f64,
    /// The run's one terminal event.
    pub terminal: bool,
    /// How the run ended, on the terminal event.
    pub terminal_state: Option<String>,
    /// The event's data (always an object; carries `created_at` too).
    pub payload: Map<String, Value>,
}

/// A committed journal row with its SSE frame, as the journal stored it: every follower sends
/// these bytes.
#[derive(Debug)]
pub struct Frame {
    /// The row.
    pub row: JournalRow,
    /// `id: run:seq`, `event: type`, `data: payload` and the blank line.
    pub sse: bytes::Bytes,
}

impl Frame {
    /// A row encoded as the journal writer encodes it (for a row stored before frames were).
    pub fn encode(row: JournalRow) -> Self {
        let data = serde_json::to_string(&row.payload).unwrap_or_else(|_| "{}".to_owned());
        let sse = crate::wire::encode_frame(&row.run_id, row.seq, &row.kind, &data);
        Frame {
            row,
            sse: sse.into(),
        }
    }
}

impl JournalRow {
    /// `run_id:seq`.
    pub fn event_id(&self) -> String {
        format!("{}:{}", self.run_id, self.seq)
    }

    /// The row as JSON, in the journal envelope shape the anchor reads.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "version": 1,
            "event_id": self.event_id(),
            "seq": self.seq,
            "run_id": self.run_id,
            "session_id": self.session_id,
            "event": self.kind,
            "type": self.kind,
            "created_at": self.created_at,
            "terminal": self.terminal,
            "terminal_state": self.terminal_state,
            "payload": self.payload,
        })
    }
}

/// An event to journal.
#[derive(Clone, Debug, PartialEq)]
pub struct NewEvent {
    /// The event type.
    pub kind: EventKind,
    /// Its data.
    pub payload: Map<String, Value>,
    /// Set on the run's terminal event.
    pub terminal_state: Option<TerminalState>,
    /// Seconds since the epoch.
    pub created_at: f64,
}

/// A write to the journal; a batch of them commits in one transaction, in order.
#[derive(Clone, Debug)]
pub enum JournalOp {
    /// Appends an event to a running run.
    Append {
        /// The run.
        run_id: String,
        /// The event.
        event: NewEvent,
    },
    /// Ends a run: its terminal event, the settled assistant message (stored and journaled as
    /// `settled_message`), then `stream_end`; the run is marked finished.
    Settle {
        /// The run.
        run_id: String,
        /// The terminal event (`done`, `cancel` or `apperror`).
        terminal: NewEvent,
        /// The settled assistant message.
        answer: SettledAnswer,
    },
}

/// The assistant message a run settles with.
#[derive(Clone, Debug, PartialEq)]
pub struct SettledAnswer {
    /// The message id.
    pub message_id: String,
    /// The final answer (may be empty). A run that did not complete and has no answer of its
    /// own settles with the prose it had streamed as its answer (`anchor::answer::answer_tail` of
    /// its journal, read in the settling transaction), flagged partial.
    pub content: String,
    /// Token usage.
    pub usage: Option<Value>,
    /// The provider stopped the answer at a length limit.
    pub cut_off: bool,
}

/// A conversation being written whole (an import, a copy): made hidden (as if deleted until
/// a day from now, so that the purger removes one a crash left half written), filled in
/// chunks of runs, each chunk a transaction of its own, then shown in one last transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct NewImport {
    /// The new session's id.
    pub session_id: String,
    /// Its account (`None`: open mode).
    pub owner: Option<String>,
    /// Seconds since the epoch: when it was made, and its place at the top of the list.
    pub now: f64,
}

/// How long a conversation an import is writing may stay hidden before the purger takes it
/// for one a crash left (seconds).
pub const STAGED_FOR: f64 = 86_400.0;

/// A run an import writes, ended: what it journaled, then how it ended. Runs are written in
/// the order they were made, parents before their children, every id fresh.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportedRun {
    /// Its id.
    pub id: String,
    /// Its turn's id.
    pub turn_id: String,
    /// The run it follows (one of the import's, written before it).
    pub parent_run_id: Option<String>,
    /// The message it answers.
    pub message: ImportedMessage,
    /// Seconds since the epoch.
    pub created_at: f64,
    /// Its journal up to its end (no terminal event, no `settled_message`, no `stream_end`).
    pub events: Vec<NewEvent>,
    /// Its terminal event.
    pub terminal: NewEvent,
    /// Its settled answer.
    pub answer: SettledAnswer,
}

/// The user message an imported run answers.
#[derive(Clone, Debug, PartialEq)]
pub enum ImportedMessage {
    /// Written with the run.
    New {
        /// Its id.
        id: String,
        /// Its text.
        content: String,
        /// Seconds since the epoch.
        created_at: f64,
        /// Files of the importing account to send with it again (their ids); one that is not
        /// the account's is left out.
        attachments: Vec<String>,
    },
    /// One an earlier run of the import wrote (a retry answers the same message): its id.
    Earlier(String),
}

/// What an import wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct Imported {
    /// The new session.
    pub session: Session,
    /// Files named by the import that were not carried (not the account's, or gone).
    pub attachments_left_out: u64,
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The session, run or interaction does not exist.
    #[error("not found")]
    NotFound,
    /// The session already runs a turn.
    #[error("session already has an active run")]
    Busy {
        /// The run in progress.
        active_run_id: String,
    },
    /// The run already ended.
    #[error("run already finished")]
    Finished,
    /// The interaction was already answered.
    #[error("already answered")]
    AlreadyAnswered,
    /// The interaction is of another kind (an approval answered as a question, or the reverse).
    #[error("that request is a pending {kind}, not this kind")]
    WrongKind {
        /// What it is.
        kind: String,
    },
    /// A message with this client id was already sent; its run is `run_id`.
    #[error("message already sent")]
    Duplicate {
        /// The run the first send started.
        run_id: String,
    },
    /// An account with this name exists.
    #[error("an account with this name exists")]
    NameTaken,
    /// The account's attachments would take more than `limit` bytes.
    #[error("attachments are full")]
    Full {
        /// The limit, in bytes.
        limit: u64,
    },
    /// This attachment cannot go with the message: it is not the account's, or was sent
    /// already.
    #[error("attachment cannot be sent")]
    Unattachable {
        /// Its id.
        id: String,
    },
    /// The session's account runs `limit` turns already (decided in the transaction that
    /// would start one more, so parallel starts cannot all pass).
    #[error("too many turns running")]
    TooManyRunning {
        /// The limit.
        limit: u64,
    },
    /// The conversation has `limit` follow-ups waiting already.
    #[error("too many follow-ups waiting")]
    QueueFull {
        /// The limit.
        limit: usize,
    },
    /// The account has `limit` passkeys already.
    #[error("too many passkeys")]
    TooManyPasskeys {
        /// The limit.
        limit: u32,
    },
    /// The account has `limit` share links already.
    #[error("too many share links")]
    TooManyShares {
        /// The limit.
        limit: u32,
    },
    /// The database failed.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// The database's disk is full (told to each write of a batch that failed for it).
    #[error("database: the disk is full")]
    DiskFull,
    /// The database cannot be reached now (told to each write of a batch that failed for it).
    #[error("database: out of reach")]
    Unreachable,
    /// A migration failed.
    #[error("migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

impl StoreError {
    /// The database's disk is full: SQLite's `SQLITE_FULL` (13), PostgreSQL's `disk_full`
    /// (53100).
    pub fn disk_full(&self) -> bool {
        match self {
            StoreError::DiskFull => true,
            StoreError::Database(sqlx::Error::Database(e)) => {
                matches!(e.code().as_deref(), Some("13" | "53100"))
                    || e.message().contains("database or disk is full")
            }
            _ => false,
        }
    }

    /// The database cannot be reached now: no connection came in time, or one was refused
    /// or lost (a PostgreSQL restarting, stopped, or out of connections).
    pub fn unreachable(&self) -> bool {
        match self {
            StoreError::Unreachable => true,
            StoreError::Database(
                sqlx::Error::PoolTimedOut
                | sqlx::Error::PoolClosed
                | sqlx::Error::Io(_)
                | sqlx::Error::Tls(_)
                | sqlx::Error::WorkerCrashed,
            ) => true,
            // PostgreSQL shutting down, starting up, or refusing connections.
            StoreError::Database(sqlx::Error::Database(e)) => matches!(
                e.code().as_deref(),
                Some("57P01" | "57P02" | "57P03" | "53300" | "08000" | "08003" | "08006")
            ),
            _ => false,
        }
    }

    /// The same failure again, for another write that met it, when every write shares it (a
    /// full disk, a database out of reach); `None` for a failure of one write.
    pub fn shared(&self) -> Option<StoreError> {
        if self.disk_full() {
            Some(StoreError::DiskFull)
        } else if self.unreachable() {
            Some(StoreError::Unreachable)
        } else {
            None
        }
    }
}

/// Consecutive journal rows encoded as SSE frames.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Frames {
    /// How many rows.
    pub count: u32,
    /// The last row's seq (0 when empty).
    pub last_seq: u64,
    /// The last row is `stream_end`.
    pub ended: bool,
    /// `id:`/`event:`/`data:` blocks, in order.
    pub sse: bytes::Bytes,
}

/// A pending or answered approval/clarify request.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Interaction {
    /// Its run.
    pub run_id: String,
    /// Its id within the run.
    pub id: String,
    /// `approval` or `clarify`.
    pub kind: String,
    /// `pending`, `answered` or `closed`.
    pub status: String,
    /// What was asked.
    pub request: Value,
    /// What was answered.
    pub response: Option<Value>,
}

/// A standing permission: actions of one kind (`pattern`) go ahead without asking, in one
/// session or (`session_id` `None`) in all of its owner's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Grant {
    /// Its id.
    pub id: String,
    /// `session` or `always`.
    pub scope: &'static str,
    /// The kind of action (`write_file`, `rm -rf`).
    pub pattern: String,
    /// The session it holds in (`None`: every session).
    pub session_id: Option<String>,
    /// That session's title.
    pub session_title: Option<String>,
    /// Seconds since the epoch.
    pub created_at: f64,
}

/// A follow-up waiting for its session's run to end.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueuedMessage {
    /// Its id.
    pub id: String,
    /// Its session.
    pub session_id: String,
    /// The message.
    pub content: String,
    /// The id the browser gave it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Seconds since the epoch.
    pub created_at: f64,
    /// The attachments it will carry (ids).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<String>,
}

/// A turn to start: its user message and its run.
#[derive(Clone, Copy, Debug)]
pub struct NewTurn<'a> {
    /// The session.
    pub session_id: &'a str,
    /// The run to create.
    pub run_id: &'a str,
    /// The assistant turn it produces.
    pub turn_id: &'a str,
    /// The user message to store.
    pub user_message_id: &'a str,
    /// Its text.
    pub message: &'a str,
    /// The attachments it carries (ids of files not sent yet, of the session's account:
    /// `Unattachable` otherwise). An edit carries those of the message it replaces.
    pub attachments: &'a [String],
    /// The browser's id for the message: `Duplicate` when it was stored before.
    pub client_id: Option<&'a str>,
    /// The queued follow-up this turn starts: removed from the queue in the same transaction
    /// (`NotFound` when it is no longer queued).
    pub queued_id: Option<&'a str>,
    /// Where the turn goes in the session's tree of turns.
    pub place: TurnAt<'a>,
    /// The model to answer with when the session asks for none (`None`: the backend offers
    /// no choice, and the run records no model).
    pub default_model: Option<&'a str>,
    /// The instance that will run it, and until when its lease holds.
    pub lease: Lease<'a>,
    /// The most turns the session's account may run at once, this one included (`None`:
    /// no limit, for a follow-up that takes the place of the turn that just ended). Counted
    /// in the transaction that starts it, across every instance.
    pub max_running: Option<u64>,
    /// Seconds since the epoch.
    pub now: f64,
}

/// An instance's claim on the runs it runs: renewed while they run; once it expires, another
/// instance ends them as interrupted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lease<'a> {
    /// The instance's id.
    pub instance: &'a str,
    /// Seconds since the epoch.
    pub until: f64,
}

/// Which running runs [`Store::claim`] takes over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim<'a> {
    /// Those whose lease has expired.
    Expired,
    /// Those whose lease has expired, and every one another instance holds: no other process
    /// can be running them (one process owns a SQLite file, by the data directory's lock).
    NotMine,
    /// This run, if its lease has expired.
    Run(&'a str),
}

/// What one instance asks of the instance that owns a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandKind {
    /// Stop the run (as the Stop button does).
    Cancel,
    /// An approval or question of the run was answered (stored already): journal it and wake
    /// the waiting agent. The body has `id`, `kind` and `response`.
    Resolved,
}

impl CommandKind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cancel => "cancel",
            Self::Resolved => "resolved",
        }
    }

    /// The kind a stored name names.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "cancel" => Some(Self::Cancel),
            "resolved" => Some(Self::Resolved),
            _ => None,
        }
    }
}

/// A command for a run's owner, as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Command {
    /// Its id (increasing).
    pub id: i64,
    /// The run.
    pub run_id: String,
    /// The instance it is for.
    pub instance: String,
    /// What to do.
    pub kind: CommandKind,
    /// Its data.
    pub body: Value,
}

/// What the database tells every instance (PostgreSQL's LISTEN/NOTIFY).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    /// A run's journal holds rows up to `seq` (committed).
    Journal {
        /// The run.
        run_id: String,
        /// Its high-water mark.
        seq: u64,
    },
    /// Commands wait for `instance`.
    Commands {
        /// The instance.
        instance: String,
    },
    /// The listener lost its connection and has it back: notices sent meanwhile are lost, so
    /// whatever waits on them should look again.
    Resync,
}

/// Where a conversation can be put in the list, beside its day.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shelf {
    /// At the top.
    Pinned,
    /// Out of the list (listed apart; search still finds it).
    Archived,
}

/// Where a new turn goes in its session's tree of turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnAt<'a> {
    /// After the turn the session shows last (a message sent, a follow-up started).
    Next,
    /// Beside this turn, answering its user message again (a retry): the turn's message and
    /// client id are not used.
    Retry(&'a str),
    /// Beside this turn, with a new user message (an edit of its message).
    Edit(&'a str),
}
