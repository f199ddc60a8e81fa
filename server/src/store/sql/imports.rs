//! Runs of a conversation written whole (an import, a copy): each run goes in as a live one
//! does, its journal appended and its end settled by the same code, a chunk of runs per
//! transaction (the session stays hidden until the last: see `NewImport`).

use super::*;

/// Writes `runs` into the session `session_id` inside `tx`; how many of the files they name
/// were not carried.
pub(super) async fn write(
    tx: &mut AnyConnection,
    engine: Engine,
    session_id: &str,
    runs: &[ImportedRun],
    now: f64,
) -> Result<u64, StoreError> {
    let mut left_out = 0;
    for run in runs {
        let message_id = match &run.message {
            ImportedMessage::Earlier(id) => id.clone(),
            ImportedMessage::New {
                id,
                content,
                created_at,
                attachments,
            } => {
                sqlx::query(
                    "INSERT INTO messages (id, session_id, position, role, content, run_id, created_at) \
                     VALUES ($1, $2, (SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE session_id = $2), 'user', $3, $4, $5)",
                )
                .bind(id)
                .bind(session_id)
                .bind(content)
                .bind(&run.id)
                .bind(created_at)
                .execute(&mut *tx)
                .await?;
                let carried = carry_files(tx, session_id, id, attachments, now).await?;
                left_out += (attachments.len() - carried.len()) as u64;
                if let Some(json) = carried_json(&carried) {
                    sqlx::query("UPDATE messages SET attachments = $2 WHERE id = $1")
                        .bind(id)
                        .bind(json)
                        .execute(&mut *tx)
                        .await?;
                }
                id.clone()
            }
        };
        sqlx::query(
            "INSERT INTO runs (id, session_id, turn_id, user_message_id, status, created_at, parent_run_id) \
             VALUES ($1, $2, $3, $4, 'running', $5, $6)",
        )
        .bind(&run.id)
        .bind(session_id)
        .bind(&run.turn_id)
        .bind(&message_id)
        .bind(run.created_at)
        .bind(run.parent_run_id.as_deref())
        .execute(&mut *tx)
        .await?;
        if !run.events.is_empty() && !append_imported(tx, &run.id, &run.events).await? {
            return Err(StoreError::Finished);
        }
        if settle_in(tx, engine, &run.id, &run.terminal, &run.answer)
            .await?
            .is_none()
        {
            return Err(StoreError::Finished);
        }
    }
    Ok(left_out)
}

/// Sends copies of the files `ids` (those of the session's account; others are left out)
/// with message `message_id`: the bytes are shared, the copies are the new session's.
async fn carry_files(
    tx: &mut AnyConnection,
    session_id: &str,
    message_id: &str,
    ids: &[String],
    now: f64,
) -> Result<Vec<app::api::AttachmentData>, StoreError> {
    let mut carried = Vec::with_capacity(ids.len());
    for old in ids {
        let id = format!("att-{}", uuid::Uuid::new_v4().simple());
        let row = sqlx::query(
            "INSERT INTO attachments (id, owner, sha256, name, mime, size, session_id, message_id, created_at) \
             SELECT $2, owner, sha256, name, mime, size, $3, $4, $5 FROM attachments \
             WHERE id = $1 AND owner = (SELECT COALESCE(owner_id, '') FROM sessions WHERE id = $3) \
             RETURNING *",
        )
        .bind(old)
        .bind(&id)
        .bind(session_id)
        .bind(message_id)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(row) = row {
            carried.push(attachment_from(&row).data());
        }
    }
    Ok(carried)
}
