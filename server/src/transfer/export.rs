//! The JSON Lines export: each run as its user message's line, then its journal rows as the
//! journal holds them (`JournalRow::to_json`). `read` takes the same lines back.

use std::sync::Arc;

use serde_json::json;

use crate::store::{Message, Run, Session, Store};

/// Journal rows an export reads at a time.
const EXPORT_PAGE: u32 = 2_000;

/// The JSON Lines export of `runs` (of `session`, oldest first), a page of rows at a
/// time: what the server holds while it sends a long conversation is one page, not the whole
/// history. Each run is its user message's line, then its journal rows.
pub fn lines(
    store: Arc<dyn Store>,
    session: &Session,
    runs: Vec<Run>,
) -> impl futures::Stream<Item = Result<String, std::io::Error>> + Send {
    struct Cursor {
        store: Arc<dyn Store>,
        session_id: String,
        title: String,
        runs: std::vec::IntoIter<Run>,
        // The run being sent, and the last seq sent of it (`None`: its user message next).
        current: Option<(Run, Option<u64>)>,
    }
    let cursor = Cursor {
        store,
        session_id: session.id.clone(),
        title: session.title.clone(),
        runs: runs.into_iter(),
        current: None,
    };
    let pages = futures::stream::unfold(cursor, |mut c| async move {
        loop {
            let (run, after) = match c.current.take() {
                Some(current) => current,
                None => (c.runs.next()?, None),
            };
            let Some(after) = after else {
                // The user's message that started the run, then the run's journal. Every
                // branch is here: a run names the turn it follows (`parent_run_id`); versions
                // of one place (a retry, an edit) follow the same turn, and a retry answers
                // the same message.
                let message = match c
                    .store
                    .messages_by_id(std::slice::from_ref(&run.user_message_id))
                    .await
                {
                    Ok(found) => found.into_iter().next(),
                    Err(e) => return Some((Err(std::io::Error::other(e.to_string())), c)),
                };
                let line = message.map(|m| user_line(&c.session_id, &c.title, &run, &m));
                c.current = Some((run, Some(0)));
                match line {
                    Some(line) => return Some((Ok(line), c)),
                    None => continue,
                }
            };
            let rows = match c.store.events(&run.id, after, None, EXPORT_PAGE).await {
                Ok(rows) => rows,
                Err(e) => return Some((Err(std::io::Error::other(e.to_string())), c)),
            };
            let Some(last) = rows.last().map(|r| r.seq) else {
                continue;
            };
            let mut out = String::new();
            for row in &rows {
                out.push_str(&row.to_json().to_string());
                out.push('\n');
            }
            c.current = Some((run, Some(last)));
            return Some((Ok(out), c));
        }
    });
    pages
}

/// The line of a run's user message in the JSON Lines export.
fn user_line(session_id: &str, title: &str, run: &Run, m: &Message) -> String {
    let line = json!({
        "version": 1,
        "run_id": run.id,
        "parent_run_id": run.parent_run_id,
        "turn_id": run.turn_id,
        "session_id": session_id,
        // The conversation's title when it was exported: what an import calls it.
        "session_title": title,
        "event": "user_message",
        "type": "user_message",
        // When the run began (a retry answers an older message: its time is the payload's).
        "created_at": run.created_at,
        "payload": {"role": "user", "id": m.id, "content": m.content, "created_at": m.created_at,
                    "attachments": m.attachments.iter().map(|a| json!({
                        "id": a.id, "name": a.name, "mime": a.mime, "size": a.size, "url": a.url(),
                    })).collect::<Vec<_>>()},
    });
    format!("{line}\n")
}
