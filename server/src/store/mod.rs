//! Durable storage: sessions, their transcript, and the run journal.
//!
//! Handlers and the runner only see the [`Store`] trait. `sql::SqlStore` implements it on
//! SQLite (a file under the data directory, the default) and on PostgreSQL (`--database-url`),
//! which several server instances may share: each run is owned by one of them (a lease on its
//! row), commands for a run travel through the database ([`Command`]), and committed journal
//! rows are announced to every instance ([`Notice`]).

use async_trait::async_trait;
use serde_json::Value;

mod accounts;
pub mod sql;
mod types;

pub use accounts::*;
pub use types::*;

/// Conversations: created, listed, searched, renamed, deleted and restored, pinned or archived,
/// and the model each asks for.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Creates a session belonging to `owner` (`None`: open mode).
    async fn create_session(
        &self,
        title: &str,
        owner: Option<&str>,
        now: f64,
    ) -> Result<Session, StoreError>;

    /// The session `id`, created (titled `title`, owned by `owner`) unless it exists: what a
    /// client that names its own threads gets (see `routes::protocols`).
    async fn create_session_as(
        &self,
        id: &str,
        title: &str,
        owner: Option<&str>,
        now: f64,
    ) -> Result<Session, StoreError>;

    /// At most `limit` sessions of `owner` (`None`: those made in open mode) after the first
    /// `offset`: the pinned ones first, then the most recently updated; the archived ones
    /// only (`archived`) or all but those.
    async fn sessions_page(
        &self,
        owner: Option<&str>,
        offset: u64,
        limit: u32,
        archived: bool,
    ) -> Result<Vec<Session>, StoreError>;

    /// The titles of `owner`'s conversations (archived ones too) that begin with `prefix`,
    /// at most `limit` of them.
    async fn titles_starting(
        &self,
        owner: Option<&str>,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>, StoreError>;

    /// At most `limit` sessions of `owner` whose title or messages contain `query`
    /// (case-insensitive), newest first.
    async fn search_sessions(
        &self,
        owner: Option<&str>,
        query: &str,
        limit: u32,
    ) -> Result<Vec<Session>, StoreError>;

    /// One session.
    async fn session(&self, id: &str) -> Result<Session, StoreError>;

    /// Renames a session (`source` is `manual` or `agent`; an agent title never replaces a manual one).
    async fn rename_session(
        &self,
        id: &str,
        title: &str,
        source: TitleSource,
        now: f64,
    ) -> Result<Session, StoreError>;

    /// Deletes a session: it is gone at once for every read, and removed with its transcript
    /// and journal by [`Store::purge_deleted`] later (until then [`Store::restore_session`]
    /// brings it back). Refused while a run is active.
    async fn delete_session(&self, id: &str, now: f64) -> Result<(), StoreError>;

    /// Brings back session `id` of `owner` deleted since the last purge (`NotFound`: no such
    /// deleted session of theirs).
    async fn restore_session(&self, owner: Option<&str>, id: &str) -> Result<Session, StoreError>;

    /// Removes the sessions deleted before `before`, with everything of theirs; how many.
    async fn purge_deleted(&self, before: f64) -> Result<u64, StoreError>;

    /// Puts a session on `shelf` (`on`), or takes it off. A session is on one shelf at most:
    /// pinning brings it back from the archive, archiving unpins it.
    async fn shelve(
        &self,
        id: &str,
        shelf: Shelf,
        on: bool,
        now: f64,
    ) -> Result<Session, StoreError>;

    /// Sets the model a session asks for (`None`: the server's default).
    async fn set_session_model(&self, id: &str, model: Option<&str>) -> Result<(), StoreError>;
}

/// Accounts, their sign-ins, and the standing permissions (grants) each gave its agent.
#[async_trait]
pub trait AccountStore: Send + Sync {
    /// Records a standing permission for `pattern`: in `session` only, or (`None`) in every
    /// session of `owner`. Granting what is granted changes nothing.
    async fn add_grant(
        &self,
        owner: Option<&str>,
        session: Option<&str>,
        pattern: &str,
        now: f64,
    ) -> Result<(), StoreError>;

    /// Whether a standing permission for one of `patterns` lets an action go ahead in
    /// `session` of `owner`: `Some` with its scope (`always` over `session`), `None` when it
    /// must be asked.
    async fn granted(
        &self,
        owner: Option<&str>,
        session: &str,
        patterns: &[String],
    ) -> Result<Option<&'static str>, StoreError>;

    /// The standing permissions of `owner`, newest first (at most `limit`).
    async fn grants(&self, owner: Option<&str>, limit: u32) -> Result<Vec<Grant>, StoreError>;

    /// Revokes grant `id` of `owner` (`NotFound`: no such grant of theirs).
    async fn revoke_grant(&self, owner: Option<&str>, id: &str) -> Result<(), StoreError>;

    /// How many accounts exist (none: open mode).
    async fn count_users(&self) -> Result<u64, StoreError>;

    /// Every account, by name.
    async fn users(&self) -> Result<Vec<User>, StoreError>;

    /// Creates an account (`NameTaken` when the name is used, in any case). An admin account
    /// made while no other admin exists adopts the sessions that have no owner; the answer
    /// says how many.
    async fn create_user(
        &self,
        name: &str,
        password_hash: &str,
        admin: bool,
        now: f64,
    ) -> Result<(User, u64), StoreError>;

    /// An account and its password hash, by name (any case).
    async fn user_credentials(&self, name: &str) -> Result<(User, String), StoreError>;

    /// Replaces an account's password hash and signs it out everywhere.
    async fn set_password(&self, name: &str, password_hash: &str) -> Result<(), StoreError>;

    /// Removes an account and its sign-ins; its sessions are left without an owner.
    async fn remove_user(&self, name: &str) -> Result<(), StoreError>;

    /// Records a sign-in (its token by its hash).
    async fn create_token(&self, sign_in: &NewSignIn) -> Result<(), StoreError>;

    /// The account a token signs in, with the token's expiry, while it has not expired.
    async fn token_user(
        &self,
        token_hash: &str,
        now: f64,
    ) -> Result<Option<(User, f64)>, StoreError>;

    /// Moves a token's expiry, and records it seen at `now`.
    async fn extend_token(
        &self,
        token_hash: &str,
        expires_at: f64,
        now: f64,
    ) -> Result<(), StoreError>;

    /// When the password (or a passkey) was last given for this token (`None`: no such
    /// token, or it was never).
    async fn token_proved_at(&self, token_hash: &str) -> Result<Option<f64>, StoreError>;

    /// Records the password (or a passkey) given again for this token at `now`.
    async fn prove_token(&self, token_hash: &str, now: f64) -> Result<(), StoreError>;

    /// Revokes a token.
    async fn revoke_token(&self, token_hash: &str) -> Result<(), StoreError>;

    /// What `owner` keeps at `now` (`None`: open mode): its conversations (not those in the
    /// bin), its links' snapshots and its files.
    async fn storage(&self, owner: Option<&str>, now: f64) -> Result<Storage, StoreError>;

    /// The browsers signed in to an account (not expired at `now`), the last seen first.
    async fn sign_ins(&self, user_id: &str, now: f64) -> Result<Vec<SignIn>, StoreError>;

    /// Ends one of the account's sign-ins, by its id; `NotFound` for one that is not theirs.
    async fn end_sign_in(&self, user_id: &str, id: &str) -> Result<(), StoreError>;

    /// Ends every sign-in of the account; how many.
    async fn end_sign_ins(&self, user_id: &str) -> Result<u64, StoreError>;
}

/// Attached files: their bytes, who may read them, and their removal.
#[async_trait]
pub trait AttachmentStore: Send + Sync {
    /// Keeps a file `owner` attached (its bytes once per account and content): `Full` when
    /// the account's files would take more than `max_storage` bytes.
    async fn add_attachment(
        &self,
        attachment: &Attachment,
        data: &[u8],
        max_storage: u64,
    ) -> Result<Attachment, StoreError>;

    /// An attachment.
    async fn attachment(&self, id: &str) -> Result<Attachment, StoreError>;

    /// The bytes of an attachment.
    async fn attachment_bytes(&self, id: &str) -> Result<Vec<u8>, StoreError>;

    /// The bytes of the attachments `ids` names, by id, in one read (unknown ids are left
    /// out).
    async fn attachment_blobs(
        &self,
        ids: &[String],
    ) -> Result<std::collections::HashMap<String, Vec<u8>>, StoreError>;

    /// Removes attachments never sent that were made before `before`, and the bytes no
    /// attachment names any more; how many attachments it removed.
    async fn purge_attachments(&self, before: f64) -> Result<u64, StoreError>;
}

/// Turns: a user message and the run that answers it, in a tree of branches (retries and edits).
#[async_trait]
pub trait TurnStore: Send + Sync {
    /// The session's transcript, in order.
    async fn messages(&self, session_id: &str) -> Result<Vec<Message>, StoreError>;

    /// The session's runs (of every branch), oldest first.
    async fn session_runs(&self, session_id: &str) -> Result<Vec<Run>, StoreError>;

    /// These messages (of any session; those that do not exist are left out).
    async fn messages_by_id(&self, ids: &[String]) -> Result<Vec<Message>, StoreError>;

    /// Stores the user message and creates a running run, atomically, in its place (which the
    /// session then shows); `Busy` when the session already runs one, `Duplicate` when its
    /// client id was sent before, `NotFound` for a place of another session.
    async fn start_run(&self, turn: NewTurn<'_>) -> Result<(Run, Message), StoreError>;

    /// The runs of the branch the session shows, first turn first, each with its versions.
    async fn branch(&self, session_id: &str) -> Result<Vec<(Run, Versions)>, StoreError>;

    /// The messages of the branch that ends with `run_id`, in order: each turn's user message,
    /// then its answer once it has settled (what the model is told came before).
    async fn history(&self, run_id: &str) -> Result<Vec<Message>, StoreError>;

    /// The versions of a run's place (it and its siblings), oldest first.
    async fn versions(&self, run_id: &str) -> Result<Vec<Run>, StoreError>;

    /// Shows the branch through `run_id`: down from it, the newest turn at each step; returns
    /// the run it ends with. `Busy` while the session runs a turn, `NotFound` for a run of
    /// another session.
    async fn show_branch(&self, session_id: &str, run_id: &str) -> Result<String, StoreError>;

    /// One run.
    async fn run(&self, run_id: &str) -> Result<Run, StoreError>;

    /// Every run still marked running.
    async fn running_runs(&self) -> Result<Vec<Run>, StoreError>;

    /// How many runs of `owner`'s sessions are running (`None`: of sessions with no owner).
    async fn count_running(&self, owner: Option<&str>) -> Result<u64, StoreError>;

    /// Begins writing a whole conversation: its session, hidden (see [`NewImport`]).
    async fn import_begin(&self, import: &NewImport) -> Result<(), StoreError>;

    /// Writes runs of an import begun, in one transaction: each run's message, journal and
    /// end, as a live run writes them; how many of the files named were not carried.
    async fn import_runs(
        &self,
        session_id: &str,
        runs: &[ImportedRun],
        now: f64,
    ) -> Result<u64, StoreError>;

    /// Ends an import: the session shows, titled, at its last run (`head`), first in the list.
    async fn import_finish(
        &self,
        session_id: &str,
        title: &str,
        source: TitleSource,
        head: Option<&str>,
        now: f64,
    ) -> Result<Session, StoreError>;

    /// Removes an import that failed part way, with all it wrote.
    async fn import_abandon(&self, session_id: &str) -> Result<(), StoreError>;
}

/// The run journal's writer: events committed in order, gapless per run (what
/// [`crate::journal::Journal`] needs, and all it needs).
#[async_trait]
pub trait JournalStore: Send + Sync {
    /// Commits a batch of journal writes in one transaction, in order; returns the journaled
    /// rows per op, each with the SSE frame stored for it. An op on a finished run fails alone
    /// with `Finished`.
    async fn commit(
        &self,
        ops: Vec<JournalOp>,
    ) -> Result<Vec<Result<Vec<Frame>, StoreError>>, StoreError>;
}

/// The run journal read back (as rows, as the SSE frames stored with them), and the snapshots a
/// settled turn is shown from.
#[async_trait]
pub trait HistoryStore: Send + Sync {
    /// Journal rows of a run with `after < seq <= up_to`, in order, at most `limit`.
    async fn events(
        &self,
        run_id: &str,
        after: u64,
        up_to: Option<u64>,
        limit: u32,
    ) -> Result<Vec<JournalRow>, StoreError>;

    /// The same rows as [`Store::events`], as the SSE frames stored with them, in one buffer:
    /// what a replaying follower sends.
    async fn frames(
        &self,
        run_id: &str,
        after: u64,
        up_to: Option<u64>,
        limit: u32,
    ) -> Result<Frames, StoreError>;

    /// The rows of a run after `after`, in order, at most `limit`, each with the SSE frame stored
    /// with it: what a feed publishes of rows another instance committed.
    async fn stored_frames(
        &self,
        run_id: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<Frame>, StoreError>;

    /// The stored snapshots of `version` among these runs (run id → its JSON).
    async fn snapshots(
        &self,
        run_ids: &[String],
        version: i64,
    ) -> Result<std::collections::HashMap<String, String>, StoreError>;

    /// Stores a run's snapshot (replacing one of another version).
    async fn put_snapshot(&self, run_id: &str, version: i64, data: &str) -> Result<(), StoreError>;

    /// Finished runs with no snapshot of `version`, oldest first, at most `limit`.
    async fn runs_without_snapshot(&self, version: i64, limit: u32)
        -> Result<Vec<Run>, StoreError>;
}

/// What a run waits on: open approvals and questions, and the follow-ups queued behind it.
#[async_trait]
pub trait InteractionStore: Send + Sync {
    async fn open_interaction(&self, interaction: &Interaction) -> Result<(), StoreError>;

    /// Answers a pending interaction of `kind` once: `AlreadyAnswered` for a second answer,
    /// `WrongKind` (nothing changed) when it is the other kind.
    async fn answer_interaction(
        &self,
        run_id: &str,
        id: &str,
        kind: &str,
        response: &Value,
    ) -> Result<Interaction, StoreError>;

    /// Closes a run's open interactions (the run ended).
    async fn close_interactions(&self, run_id: &str) -> Result<(), StoreError>;

    /// A run's interactions.
    async fn interactions(&self, run_id: &str) -> Result<Vec<Interaction>, StoreError>;

    /// Queues a follow-up. With a client id sent before, the follow-up queued then (or
    /// `Duplicate` with its run, once it started) and nothing new. `QueueFull` when `limit`
    /// follow-ups wait already (counted in the same transaction).
    async fn queue_message(
        &self,
        message: &QueuedMessage,
        limit: usize,
    ) -> Result<QueuedMessage, StoreError>;

    /// A session's queued follow-ups, oldest first.
    async fn queued_messages(&self, session_id: &str) -> Result<Vec<QueuedMessage>, StoreError>;

    /// The oldest queued follow-up (it stays queued until a turn starts it, see [`NewTurn`]).
    async fn next_queued(&self, session_id: &str) -> Result<Option<QueuedMessage>, StoreError>;
}

/// Several instances on one database: the clock they share, leases on runs, commands between
/// instances and the notices of committed rows.
#[async_trait]
pub trait InstanceStore: Send + Sync {
    /// The engine, and with it whether other instances may share this database.
    fn engine(&self) -> Engine;

    /// Keeps room back for a full disk, unless it is kept already (SQLite; nothing on
    /// PostgreSQL): what [`InstanceStore::release_reserve`] gives up.
    async fn keep_reserve(&self) -> Result<(), StoreError>;

    /// Gives up the room kept back, so that the runs a full disk stopped can still be ended;
    /// whether there was any.
    async fn release_reserve(&self) -> Result<bool, StoreError>;

    /// The time leases are reckoned by, in seconds since the epoch: the database's clock when
    /// several instances share it (theirs may differ), this machine's for SQLite.
    async fn clock(&self) -> Result<f64, StoreError>;

    /// Sessions (at most `limit`) with follow-ups waiting and no turn running: their turn
    /// ended where no queue worker saw it (its instance died just then, or was stopping).
    async fn idle_queues(&self, limit: u32) -> Result<Vec<String>, StoreError>;

    /// Extends `instance`'s lease on those of `run_ids` it still holds; returns them (a run
    /// missing from the answer was taken over, or ended).
    async fn renew_leases(
        &self,
        instance: &str,
        run_ids: &[String],
        until: f64,
    ) -> Result<Vec<String>, StoreError>;

    /// Takes over the running runs `which` names for `lease` (each once, whichever instance
    /// asks: the claim is one atomic update); returns them.
    async fn claim(
        &self,
        which: Claim<'_>,
        lease: Lease<'_>,
        now: f64,
    ) -> Result<Vec<Run>, StoreError>;

    /// Leaves a command for `instance` about `run_id` (and tells it, in the same
    /// transaction); returns its id.
    async fn send_command(
        &self,
        run_id: &str,
        instance: &str,
        kind: CommandKind,
        body: &Value,
        now: f64,
    ) -> Result<i64, StoreError>;

    /// Takes the commands waiting for `instance`, oldest first; each is taken once.
    async fn take_commands(&self, instance: &str, now: f64) -> Result<Vec<Command>, StoreError>;

    /// Records what a command did.
    async fn finish_command(&self, id: i64, result: &Value) -> Result<(), StoreError>;

    /// What a command did, once its instance has done it.
    async fn command_result(&self, id: i64) -> Result<Option<Value>, StoreError>;

    /// Removes commands made before `before`; how many.
    async fn purge_commands(&self, before: f64) -> Result<u64, StoreError>;

    /// What the database announces, from now on (`None`: this engine announces nothing, as
    /// with SQLite, where one process sees everything itself). The listener reconnects by
    /// itself and says so ([`Notice::Resync`]); it stops when the receiver is dropped.
    async fn listen(&self) -> Result<Option<tokio::sync::mpsc::Receiver<Notice>>, StoreError>;
}

/// Read-only links to conversations.
#[async_trait]
pub trait ShareStore: Send + Sync {
    /// Keeps `share`, unless its owner already has `limit` of them ([`StoreError::TooManyShares`]).
    async fn create_share(&self, share: &Share, limit: u32) -> Result<(), StoreError>;

    /// The owner's shares of conversations not deleted, newest first (without their snapshots).
    async fn shares(&self, owner: Option<&str>) -> Result<Vec<Share>, StoreError>;

    /// Deletes one of the owner's shares; `NotFound` for one that is not theirs.
    async fn revoke_share(&self, owner: Option<&str>, id: &str) -> Result<(), StoreError>;

    /// Deletes every share of the owner (those of deleted conversations too); how many.
    async fn revoke_shares(&self, owner: &str) -> Result<u64, StoreError>;

    /// The share a link carries, unless revoked or its conversation deleted (`NotFound`).
    async fn shared(&self, token: &str) -> Result<Share, StoreError>;

    /// The same, without its snapshot (empty): whether a link still leads anywhere, cheaply.
    async fn shared_head(&self, token: &str) -> Result<Share, StoreError>;
}

/// Passkeys and the ceremonies that add and use them.
#[async_trait]
pub trait PasskeyStore: Send + Sync {
    /// Keeps a passkey, unless the account has `limit` already.
    async fn add_passkey(&self, passkey: &StoredPasskey, limit: u32) -> Result<(), StoreError>;

    /// An account's passkeys, oldest first.
    async fn passkeys(&self, user_id: &str) -> Result<Vec<StoredPasskey>, StoreError>;

    /// Removes one of the account's passkeys, and ends the sign-ins it made; `NotFound` for
    /// one that is not theirs.
    async fn remove_passkey(&self, user_id: &str, id: &str) -> Result<(), StoreError>;

    /// Renames one of the account's passkeys; `NotFound` for one that is not theirs.
    async fn rename_passkey(&self, user_id: &str, id: &str, name: &str) -> Result<(), StoreError>;

    /// Removes every passkey of the account, and the sign-ins they made; how many passkeys.
    async fn remove_passkeys(&self, user_id: &str) -> Result<u64, StoreError>;

    /// Records a sign-in with a passkey: its credential as it is now (the counter moved).
    async fn used_passkey(&self, id: &str, passkey: &str, now: f64) -> Result<(), StoreError>;

    /// How many passkeys the server holds (the sign-in page offers them when there are any).
    async fn count_passkeys(&self) -> Result<u64, StoreError>;

    /// The key that seals ceremonies (see `ceremony`): made once per database, the same for
    /// every instance.
    async fn ceremony_key(&self) -> Result<Vec<u8>, StoreError>;

    /// Records ceremony `nonce` answered (kept until `expires_at`, when it could no longer
    /// be answered anyway); `NotFound` when it was answered already.
    async fn answer_ceremony(
        &self,
        nonce: &str,
        expires_at: f64,
        now: f64,
    ) -> Result<(), StoreError>;
}

/// Durable storage for sessions, transcripts, runs and their journal: every part of it, as
/// one object (`Arc<dyn Store>`, whose methods need no import). A part can be handed on alone
/// (the journal writer takes a [`JournalStore`]); code that holds a `SqlStore` itself brings
/// the parts into scope with `use crate::store::prelude::*`.
pub trait Store:
    SessionStore
    + AccountStore
    + AttachmentStore
    + TurnStore
    + JournalStore
    + HistoryStore
    + InteractionStore
    + InstanceStore
    + ShareStore
    + PasskeyStore
    + 'static
{
}

impl<T> Store for T where
    T: SessionStore
        + AccountStore
        + AttachmentStore
        + TurnStore
        + JournalStore
        + HistoryStore
        + InteractionStore
        + InstanceStore
        + ShareStore
        + PasskeyStore
        + 'static
{
}

/// Every part of the store, for callers: `use crate::store::prelude::*`.
pub mod prelude {
    pub use super::{
        AccountStore, AttachmentStore, HistoryStore, InstanceStore, InteractionStore, JournalStore,
        PasskeyStore, SessionStore, ShareStore, Store, TurnStore,
    };
}
