//! Conversations in and out whole: the JSON Lines export (`export`), the Markdown one a
//! person reads (`markdown`), reading a JSON Lines one back (`read`), and writing what was
//! read as a new conversation of the account, every id issued afresh. Import and duplicate are the same path: a copy is its conversation exported and
//! read back, so both hold to one format and one set of checks.

pub mod export;
pub mod markdown;
pub mod read;

use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::Value;

use crate::limits::{MAX_IMPORT_BYTES, MAX_MESSAGE_BYTES};
use crate::storage::NoRoom;
use crate::store::{
    Imported, ImportedMessage, ImportedRun, NewImport, Run, Session, SettledAnswer, Store,
    StoreError, TitleSource,
};
use read::{ExportedMessage, ExportedRun, ReadError, Reader};

/// The longest title an import takes from a file's name or the agent, in characters.
const MAX_TITLE_CHARS: usize = 200;

/// The export's bytes an import writes per transaction (at least one run, however long):
/// what it holds parsed at once, and how long it holds the database's write lock.
pub const CHUNK_BYTES: usize = 512 * 1024;

/// Why a conversation could not be written.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// The file is not an export, or breaks one of its rules (400), or is past a limit (413).
    #[error("{0}")]
    Read(ReadError),
    /// The conversation is too long to copy (413).
    #[error("{0}")]
    TooLarge(String),
    /// The account's storage is full (413).
    #[error("{0}")]
    Full(crate::storage::Full),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Reading the conversation to copy failed.
    #[error("reading the conversation: {0}")]
    Export(std::io::Error),
}

impl From<NoRoom> for TransferError {
    fn from(e: NoRoom) -> Self {
        match e {
            NoRoom::Full(full) => TransferError::Full(full),
            NoRoom::Store(e) => TransferError::Store(e),
        }
    }
}

/// Where a conversation is written: whose, and the storage it may fill.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    /// The account (`None`: open mode).
    pub owner: Option<&'a str>,
    /// Its storage quota, in bytes.
    pub quota: u64,
    /// Seconds since the epoch.
    pub now: f64,
}

/// Writes an export as a new conversation of `into.owner`, under the title it was exported
/// with, else the agent's last title in it, else `title` (the file's name), else its first
/// message.
pub async fn import(
    store: &Arc<dyn Store>,
    into: Target<'_>,
    text: &str,
    title: Option<&str>,
) -> Result<Imported, TransferError> {
    let given = title
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned);
    write(store, into, text, |heading| match (heading.title, given) {
        (Some(named), _) => (named, heading.title_source),
        (None, Some(given)) => (given, TitleSource::Manual),
        (None, None) => (
            first_words(heading.first_line.as_deref()),
            TitleSource::Prompt,
        ),
    })
    .await
}

/// Copies a conversation: the branch it shows, or (`all`) every branch; a turn still running
/// is left out.
pub async fn duplicate(
    store: &Arc<dyn Store>,
    into: Target<'_>,
    session: &Session,
    all: bool,
) -> Result<Imported, TransferError> {
    let runs: Vec<Run> = if all {
        store.session_runs(&session.id).await?
    } else {
        store
            .branch(&session.id)
            .await?
            .into_iter()
            .map(|(run, _)| run)
            .collect()
    };
    let runs: Vec<Run> = runs.into_iter().filter(|run| !run.running).collect();
    // Its own title: the copy is told apart from it when written ("… (copy)", "… (copy 2)").
    let title = session.title.clone();
    let named = move |_| (title, TitleSource::Manual);
    if runs.is_empty() {
        return write_runs(store, into, None, named).await;
    }
    let mut text = String::new();
    let mut lines = std::pin::pin!(export::lines(Arc::clone(store), session, runs));
    while let Some(chunk) = lines.next().await {
        let chunk = chunk.map_err(TransferError::Export)?;
        if text.len() + chunk.len() > MAX_IMPORT_BYTES {
            return Err(TransferError::TooLarge(format!(
                "this conversation is longer than {}, the most a copy or an import may hold",
                app::api::file_size(MAX_IMPORT_BYTES as u64)
            )));
        }
        text.push_str(&chunk);
    }
    write(store, into, &text, named).await
}

/// Reads `text` a run at a time and writes it as a new conversation, titled by `title` from
/// what the export says once read.
async fn write(
    store: &Arc<dyn Store>,
    into: Target<'_>,
    text: &str,
    title: impl FnOnce(read::Heading) -> (String, TitleSource),
) -> Result<Imported, TransferError> {
    // What it will take is about what the export is, twice (each row is kept as its JSON
    // and as its frame): refused at once when that cannot fit, before anything is written.
    crate::storage::room(
        store.as_ref(),
        into.owner,
        into.quota,
        2 * text.len() as u64,
    )
    .await?;
    write_runs(
        store,
        into,
        Some(Reader::new(text, MAX_MESSAGE_BYTES)),
        title,
    )
    .await
}

/// Writes the runs `reader` reads (none without one) as a new conversation: made hidden,
/// filled a chunk of runs per transaction (room asked for each), shown at the end; removed
/// again, whole, when anything fails. The turns' snapshots are made after, in the
/// background, as after a live turn.
async fn write_runs(
    store: &Arc<dyn Store>,
    into: Target<'_>,
    reader: Option<Reader<'_>>,
    title: impl FnOnce(read::Heading) -> (String, TitleSource),
) -> Result<Imported, TransferError> {
    let session_id = uuid::Uuid::new_v4().simple().to_string();
    store
        .import_begin(&NewImport {
            session_id: session_id.clone(),
            owner: into.owner.map(str::to_owned),
            now: into.now,
        })
        .await?;
    // Removed whole unless it ends written: a failure, and a request dropped part way (its
    // client gone), leave nothing behind, nothing taking the account's storage.
    let mut staged = Staged {
        store: Arc::clone(store),
        session_id: Some(session_id.clone()),
    };
    let mut ids = Ids::default();
    let written = async {
        let (left_out, heading) = fill(store, into, &session_id, reader, &mut ids).await?;
        let (title, source) = title(heading);
        let title: String = title.chars().take(MAX_TITLE_CHARS).collect();
        let taken = store
            .titles_starting(into.owner, copy_base(&title), MAX_TITLES_READ)
            .await?;
        let title = distinct_title(&title, &taken);
        let session = store
            .import_finish(
                &session_id,
                &title,
                source,
                ids.runs.last().map(String::as_str),
                into.now,
            )
            .await?;
        Ok::<_, TransferError>(Imported {
            session,
            attachments_left_out: left_out,
        })
    }
    .await;
    // Ended either way: shown, or removed now (before the answer says it failed).
    staged.session_id = None;
    let imported = match written {
        Ok(imported) => imported,
        Err(e) => {
            if let Err(gone) = store.import_abandon(&session_id).await {
                // The purger removes it later (it stays hidden).
                tracing::warn!("removing an import that failed: {gone}");
            }
            return Err(e);
        }
    };
    let store = Arc::clone(store);
    tokio::spawn(async move {
        for run_id in ids.runs {
            if let Ok(run) = store.run(&run_id).await {
                if let Err(e) = crate::snapshots::refresh(store.as_ref(), &run).await {
                    tracing::warn!(run_id = %run_id, "an imported turn's snapshot: {e}");
                }
            }
        }
    });
    Ok(imported)
}

/// Writes what `reader` reads into the hidden session, [`CHUNK_BYTES`] of the export per
/// transaction; how many files were left out, and what the export says of itself.
async fn fill(
    store: &Arc<dyn Store>,
    into: Target<'_>,
    session_id: &str,
    reader: Option<Reader<'_>>,
    ids: &mut Ids,
) -> Result<(u64, read::Heading), TransferError> {
    let Some(mut reader) = reader else {
        let empty = read::Heading {
            title: None,
            title_source: TitleSource::Default,
            first_line: None,
        };
        return Ok((0, empty));
    };
    let mut left_out = 0;
    let mut chunk: Vec<ImportedRun> = Vec::new();
    let mut bytes = 0;
    loop {
        let run = reader.next_run().map_err(TransferError::Read)?;
        let last = run.is_none();
        if let Some(run) = run {
            bytes += run.bytes;
            chunk.push(ids.issue(run));
        }
        if !chunk.is_empty() && (last || bytes >= CHUNK_BYTES) {
            // Each chunk asks for room: an import never fills more than the quota.
            crate::storage::room(store.as_ref(), into.owner, into.quota, 2 * bytes as u64).await?;
            left_out += store.import_runs(session_id, &chunk, into.now).await?;
            chunk.clear();
            bytes = 0;
        }
        if last {
            return Ok((left_out, reader.heading()));
        }
    }
}

/// A conversation an import is writing, removed when this is dropped before it is shown.
struct Staged {
    store: Arc<dyn Store>,
    /// `None` once it is shown.
    session_id: Option<String>,
}

impl Drop for Staged {
    fn drop(&mut self) {
        let Some(session_id) = self.session_id.take() else {
            return;
        };
        let store = Arc::clone(&self.store);
        // Dropped on a runtime's thread (a request's task): the removal goes on without it.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = store.import_abandon(&session_id).await {
                    // The purger removes it later (it stays hidden).
                    tracing::warn!("removing an import that did not end: {e}");
                }
            });
        }
    }
}

/// The fresh ids an import has issued: each run's, and the message each run answers (by the
/// run's index in the export).
#[derive(Default)]
struct Ids {
    runs: Vec<String>,
    messages: Vec<String>,
}

impl Ids {
    /// A run read, with every id new.
    fn issue(&mut self, run: ExportedRun) -> ImportedRun {
        let fresh = || uuid::Uuid::new_v4().simple().to_string();
        let id = fresh();
        let message = match run.message {
            ExportedMessage::New {
                content,
                created_at,
                attachments,
                ..
            } => {
                let message_id = format!("msg-{}", fresh());
                self.messages.push(message_id.clone());
                ImportedMessage::New {
                    id: message_id,
                    content,
                    created_at,
                    attachments,
                }
            }
            ExportedMessage::Of(first) => {
                // The reader names a run before this one, whose message was new.
                let message_id = self.messages.get(first).cloned().unwrap_or_default();
                self.messages.push(message_id.clone());
                ImportedMessage::Earlier(message_id)
            }
        };
        let parent_run_id = run.parent.and_then(|parent| self.runs.get(parent).cloned());
        self.runs.push(id.clone());
        let ended_at = run
            .events
            .last()
            .map_or(run.created_at, |event| event.created_at);
        let terminal = run
            .terminal
            .unwrap_or_else(|| crate::runner::interrupted_at(ended_at));
        let settled = run.settled.unwrap_or_default();
        let answer = SettledAnswer {
            message_id: crate::runner::answer_id(&id),
            content: settled
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            usage: settled.get("usage").filter(|u| !u.is_null()).cloned(),
            cut_off: settled.get("cut_off").and_then(Value::as_bool) == Some(true),
        };
        ImportedRun {
            turn_id: format!("turn-{id}"),
            parent_run_id,
            message,
            created_at: run.created_at,
            events: run.events,
            terminal,
            answer,
            id,
        }
    }
}

/// How many of an account's titles a copy's title is told apart from.
const MAX_TITLES_READ: u32 = 1000;

/// `title` without the " (copy)" or " (copy N)" that a copy of it carries.
fn copy_base(title: &str) -> &str {
    if let Some(base) = title.strip_suffix(" (copy)") {
        return base;
    }
    title
        .strip_suffix(')')
        .and_then(|t| t.rsplit_once(" (copy "))
        .filter(|(_, n)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        .map_or(title, |(base, _)| base)
}

/// The title a new conversation takes when its account already has the titles `taken`:
/// `wanted` when it is free, else the first free of "base (copy)", "base (copy 2)", … (base
/// being `wanted` without a copy's suffix): two copies are never told apart by nothing.
fn distinct_title(wanted: &str, taken: &[String]) -> String {
    let taken: std::collections::HashSet<&str> = taken.iter().map(String::as_str).collect();
    if wanted.is_empty() || !taken.contains(wanted) {
        return wanted.to_owned();
    }
    let base: String = copy_base(wanted)
        .chars()
        .take(MAX_TITLE_CHARS.saturating_sub(12))
        .collect();
    (1..)
        .map(|n| match n {
            1 => format!("{base} (copy)"),
            n => format!("{base} (copy {n})"),
        })
        .find(|t| !taken.contains(t.as_str()))
        .unwrap_or_default()
}

/// A title from the first message's first line, shortened.
fn first_words(first_line: Option<&str>) -> String {
    match first_line {
        Some(line) => {
            let line = line.trim();
            let short: String = line.chars().take(60).collect();
            if short.len() < line.len() {
                format!("{}…", short.trim_end())
            } else {
                short
            }
        }
        None => "Imported conversation".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::{copy_base, distinct_title};

    #[test]
    fn copies_are_told_apart_by_their_number() {
        let taken = |t: &[&str]| t.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(distinct_title("Plans", &taken(&[])), "Plans");
        assert_eq!(distinct_title("Plans", &taken(&["Plans"])), "Plans (copy)");
        assert_eq!(
            distinct_title("Plans", &taken(&["Plans", "Plans (copy)"])),
            "Plans (copy 2)"
        );
        // A copy of a copy is numbered among the first's copies, not "(copy) (copy)".
        assert_eq!(
            distinct_title(
                "Plans (copy)",
                &taken(&["Plans", "Plans (copy)", "Plans (copy 2)"])
            ),
            "Plans (copy 3)"
        );
        assert_eq!(copy_base("Plans (copy 12)"), "Plans");
        assert_eq!(copy_base("Plans (copy x)"), "Plans (copy x)");
        assert_eq!(copy_base("(copy 2)"), "(copy 2)");
    }
}
