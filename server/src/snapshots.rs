//! Settled turns as snapshots: what a turn shows folded (its answer, its ending, its usage, the
//! worklog's counts), computed from its journal by the page's own model and stored beside it,
//! so that a page carries this instead of every row the turn journaled.
//!
//! The journal stays the source of truth: a snapshot is made when a run settles, made for older
//! runs by a pass at startup, and made on the spot by a page that finds one missing or of an
//! older [`VERSION`].

use std::sync::Arc;

use app::api::{JournalEvent, MessageData, TurnData, TurnSnapshot};
use app::model::TurnState;
use serde_json::Value;

use crate::store::{Run, Store, StoreError};

/// The version of what a snapshot holds: snapshots of another version are made again.
/// 3: a snapshot carries the time the turn waited for the person (`waited`).
/// 4: and the files the turn made (`artifacts`).
pub const VERSION: i64 = 4;

/// Journal rows read per query.
const ROWS_PER_READ: u32 = 10_000;

/// Every journal row of a run, in order, as page data carries them.
pub async fn journal(store: &dyn Store, run_id: &str) -> Result<Vec<JournalEvent>, StoreError> {
    let mut events = Vec::new();
    let mut after = 0;
    loop {
        let rows = store.events(run_id, after, None, ROWS_PER_READ).await?;
        let full = rows.len() as u32 == ROWS_PER_READ;
        for row in rows {
            after = row.seq;
            events.push(JournalEvent {
                seq: row.seq,
                kind: row.kind,
                payload: Value::Object(row.payload),
            });
        }
        if !full {
            return Ok(events);
        }
    }
}

/// The snapshot of a finished run, from its journal rows (`None`: the journal has no ending);
/// gives the rows back.
pub fn fold(run: &Run, events: Vec<JournalEvent>) -> (Option<TurnSnapshot>, Vec<JournalEvent>) {
    if run.running {
        return (None, events);
    }
    let turn = TurnData {
        // The user's message plays no part in what the assistant's turn shows.
        user: MessageData {
            id: run.user_message_id.clone(),
            content: String::new(),
            created_at: run.created_at,
            attachments: Vec::new(),
        },
        run_id: run.id.clone(),
        turn_id: run.turn_id.clone(),
        events,
        running: false,
        snapshot: None,
        versions: Default::default(),
        model: None,
    };
    let snapshot = TurnState::new(&run.session_id, &turn).snapshot();
    (snapshot, turn.events)
}

/// Stores a run's snapshot.
pub async fn save(
    store: &dyn Store,
    run_id: &str,
    snapshot: &TurnSnapshot,
) -> Result<(), StoreError> {
    if let Ok(data) = serde_json::to_string(snapshot) {
        store.put_snapshot(run_id, VERSION, &data).await?;
    }
    Ok(())
}

/// Computes and stores the snapshot of a finished run; returns it.
pub async fn refresh(store: &dyn Store, run: &Run) -> Result<Option<TurnSnapshot>, StoreError> {
    if run.running {
        return Ok(None);
    }
    let (snapshot, _) = fold(run, journal(store, &run.id).await?);
    if let Some(snapshot) = &snapshot {
        save(store, &run.id, snapshot).await?;
    }
    Ok(snapshot)
}

/// Makes the snapshot of a run that just settled (in the background: the run's followers and
/// the next queued turn do not wait for it).
pub fn after_settle(store: Arc<dyn Store>, run_id: String) {
    tokio::spawn(async move {
        let result = match store.run(&run_id).await {
            Ok(run) => refresh(store.as_ref(), &run).await.map(|_| ()),
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            // A page that finds it missing makes it.
            tracing::warn!("no snapshot for run {run_id} yet: {e}");
        }
    });
}

/// Makes the snapshots that are missing or of an older version, a batch at a time, until none
/// is left (or a batch makes none: those runs have no ending, and pages carry their journals).
pub async fn backfill(store: Arc<dyn Store>) -> Result<u64, StoreError> {
    let mut made = 0u64;
    loop {
        let runs = store.runs_without_snapshot(VERSION, 100).await?;
        if runs.is_empty() {
            return Ok(made);
        }
        let mut progress = false;
        for run in &runs {
            match refresh(store.as_ref(), run).await {
                Ok(Some(_)) => {
                    made += 1;
                    progress = true;
                }
                Ok(None) => {}
                // One run that cannot be read does not stop the others.
                Err(e) => tracing::warn!(run_id = %run.id, "no snapshot made: {e}"),
            }
            // Pages are served meanwhile.
            tokio::task::yield_now().await;
        }
        if !progress {
            return Ok(made);
        }
    }
}

/// Reads stored snapshots (those of [`VERSION`] only).
pub async fn stored(
    store: &dyn Store,
    run_ids: &[String],
) -> Result<std::collections::HashMap<String, TurnSnapshot>, StoreError> {
    Ok(store
        .snapshots(run_ids, VERSION)
        .await?
        .into_iter()
        .filter_map(|(id, data)| Some((id, serde_json::from_str(&data).ok()?)))
        .collect())
}

/// The snapshots of the runs `run_ids` that have ended: those stored, and those missing (a run
/// that settled a moment ago, whose snapshot is still being made, or one of an older
/// [`VERSION`]) made now from their journals and stored. Running runs have none.
pub async fn settled(
    store: &dyn Store,
    run_ids: &[String],
) -> Result<std::collections::HashMap<String, TurnSnapshot>, StoreError> {
    let mut found = stored(store, run_ids).await?;
    for id in run_ids {
        if found.contains_key(id) {
            continue;
        }
        let made = match store.run(id).await {
            Ok(run) => refresh(store, &run).await,
            Err(e) => Err(e),
        };
        match made {
            Ok(Some(snapshot)) => {
                found.insert(id.clone(), snapshot);
            }
            Ok(None) => {}
            // One turn without its snapshot, not none for all.
            Err(e) => tracing::warn!(run_id = %id, "no snapshot made: {e}"),
        }
    }
    Ok(found)
}
