//! Conversations in and out whole: the JSON Lines export (`export`), reading one back
//! (`read`), and writing what was read as a new conversation of the account, every id issued
//! afresh. Import and duplicate are the same path: a copy is its conversation exported and
//! read back, so both hold to one format and one set of checks.

pub mod export;
pub mod read;

use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::Value;

use crate::limits::{MAX_IMPORT_BYTES, MAX_MESSAGE_BYTES};
use crate::store::{
    Imported, ImportedMessage, ImportedRun, NewImport, Run, Session, SettledAnswer, Store,
    StoreError, TitleSource,
};
use read::{Export, ExportedMessage, ReadError};

/// The longest title an import takes from a file's name or the agent, in characters.
const MAX_TITLE_CHARS: usize = 200;

/// Why a conversation could not be written.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// The file is not an export, or breaks one of its rules (400), or is past a limit (413).
    #[error("{0}")]
    Read(ReadError),
    /// The conversation is too long to copy (413).
    #[error("{0}")]
    TooLarge(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Reading the conversation to copy failed.
    #[error("reading the conversation: {0}")]
    Export(std::io::Error),
}

/// Writes an export as a new conversation of `owner`, under the title it was exported with,
/// else the agent's last title in it, else `title` (the file's name), else its first message.
pub async fn import(
    store: &Arc<dyn Store>,
    owner: Option<&str>,
    text: &str,
    title: Option<&str>,
    now: f64,
) -> Result<Imported, TransferError> {
    let export = read::read(text, MAX_MESSAGE_BYTES).map_err(TransferError::Read)?;
    let (title, source) = match (&export.title, title.map(str::trim)) {
        (Some(named), _) => (named.clone(), export.title_source),
        (None, Some(given)) if !given.is_empty() => (given.to_owned(), TitleSource::Manual),
        (None, _) => (first_words(&export), TitleSource::Prompt),
    };
    write(store, owner, export, title, source, now).await
}

/// Copies a conversation: the branch it shows, or (`all`) every branch; a turn still running
/// is left out.
pub async fn duplicate(
    store: &Arc<dyn Store>,
    session: &Session,
    all: bool,
    now: f64,
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
    let title = format!("{} (copy)", session.title);
    let owner = session.owner_id.as_deref();
    if runs.is_empty() {
        let export = Export::default();
        return write(store, owner, export, title, TitleSource::Manual, now).await;
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
    let export = read::read(&text, MAX_MESSAGE_BYTES).map_err(TransferError::Read)?;
    write(store, owner, export, title, TitleSource::Manual, now).await
}

/// Issues new ids for what was read and writes it in one transaction; the turns' snapshots
/// are made after, in the background, as after a live turn.
async fn write(
    store: &Arc<dyn Store>,
    owner: Option<&str>,
    export: Export,
    title: String,
    title_source: TitleSource,
    now: f64,
) -> Result<Imported, TransferError> {
    let import = issue(export, owner, title, title_source, now);
    let run_ids: Vec<String> = import.runs.iter().map(|run| run.id.clone()).collect();
    let imported = store.import(import).await?;
    let store = Arc::clone(store);
    tokio::spawn(async move {
        for run_id in run_ids {
            if let Ok(run) = store.run(&run_id).await {
                if let Err(e) = crate::snapshots::refresh(store.as_ref(), &run).await {
                    tracing::warn!(run_id = %run_id, "an imported turn's snapshot: {e}");
                }
            }
        }
    });
    Ok(imported)
}

/// What was read, with every id new: the session's, each run's, turn's and message's.
fn issue(
    export: Export,
    owner: Option<&str>,
    title: String,
    title_source: TitleSource,
    now: f64,
) -> NewImport {
    let fresh = || uuid::Uuid::new_v4().simple().to_string();
    let run_ids: Vec<String> = export.runs.iter().map(|_| fresh()).collect();
    let mut message_ids: Vec<String> = Vec::with_capacity(export.runs.len());
    let mut runs = Vec::with_capacity(export.runs.len());
    for (index, run) in export.runs.into_iter().enumerate() {
        let id = run_ids[index].clone();
        let message = match run.message {
            ExportedMessage::New {
                content,
                created_at,
                attachments,
                ..
            } => {
                let message_id = format!("msg-{}", fresh());
                message_ids.push(message_id.clone());
                ImportedMessage::New {
                    id: message_id,
                    content,
                    created_at,
                    attachments,
                }
            }
            ExportedMessage::Of(first) => {
                // `read` names a run before this one, whose message was new.
                let message_id = message_ids.get(first).cloned().unwrap_or_default();
                message_ids.push(message_id.clone());
                ImportedMessage::Earlier(message_id)
            }
        };
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
        runs.push(ImportedRun {
            turn_id: format!("turn-{id}"),
            parent_run_id: run.parent.and_then(|parent| run_ids.get(parent).cloned()),
            message,
            created_at: run.created_at,
            events: run.events,
            terminal,
            answer,
            id,
        });
    }
    NewImport {
        session_id: fresh(),
        title: title.chars().take(MAX_TITLE_CHARS).collect(),
        title_source,
        owner: owner.map(str::to_owned),
        now,
        runs,
    }
}

/// A title from the first message: its first line, shortened.
fn first_words(export: &Export) -> String {
    let first = export.runs.iter().find_map(|run| match &run.message {
        ExportedMessage::New { content, .. } => content.lines().find(|l| !l.trim().is_empty()),
        ExportedMessage::Of(_) => None,
    });
    match first {
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
