//! The app's view of the store: the page data the chat page renders from, on the server and
//! (through the `load_page` server function) in the browser.

use std::sync::Arc;

use app::api::{
    JournalEvent, MessageData, QueuedData, SessionDetail, SessionPage, SessionSummary, TurnData,
};
use app::ssr::ChatBackend;
use serde_json::Value;

use crate::store::{Session, Store, StoreError};

/// Journal rows read per query while assembling a page.
const PAGE_ROWS: u32 = 10_000;

/// Implements the app's port over the store.
pub struct PageBackend {
    store: Arc<dyn Store>,
    agent: String,
}

impl PageBackend {
    /// A backend over `store`; `agent` says who answers (shown in the sidebar).
    pub fn new(store: Arc<dyn Store>, agent: String) -> Self {
        PageBackend { store, agent }
    }

    async fn detail(&self, session: &Session) -> Result<SessionDetail, StoreError> {
        let messages = self.store.messages(&session.id).await?;
        let runs = self.store.session_runs(&session.id).await?;
        let mut turns = Vec::with_capacity(runs.len());
        for run in runs {
            let Some(user) = messages.iter().find(|m| m.id == run.user_message_id) else {
                continue;
            };
            let mut events = Vec::new();
            let mut after = 0;
            loop {
                let rows = self.store.events(&run.id, after, None, PAGE_ROWS).await?;
                let full = rows.len() as u32 == PAGE_ROWS;
                for row in rows {
                    after = row.seq;
                    events.push(JournalEvent {
                        seq: row.seq,
                        kind: row.kind,
                        payload: Value::Object(row.payload),
                    });
                }
                if !full {
                    break;
                }
            }
            turns.push(TurnData {
                user: MessageData {
                    id: user.id.clone(),
                    content: user.content.clone(),
                    created_at: user.created_at,
                },
                run_id: run.id.clone(),
                turn_id: run.turn_id.clone(),
                events,
                running: run.running,
            });
        }
        let queued = self
            .store
            .queued_messages(&session.id)
            .await?
            .into_iter()
            .map(|q| QueuedData {
                id: q.id,
                content: q.content,
            })
            .collect();
        Ok(SessionDetail {
            id: session.id.clone(),
            title: session.title.clone(),
            turns,
            queued,
        })
    }
}

fn summary(s: &Session) -> SessionSummary {
    SessionSummary {
        id: s.id.clone(),
        title: s.title.clone(),
        updated_at: s.updated_at,
        active_run_id: s.active_run_id.clone(),
    }
}

#[async_trait::async_trait]
impl ChatBackend for PageBackend {
    async fn page(&self, session_id: Option<&str>) -> Result<SessionPage, String> {
        let sessions = self
            .store
            .list_sessions()
            .await
            .map_err(|e| e.to_string())?;
        let mut missing = false;
        let chosen = match session_id {
            Some(id) => match sessions.iter().find(|s| s.id == id) {
                Some(s) => Some(s.clone()),
                None => {
                    missing = true;
                    sessions.first().cloned()
                }
            },
            None => sessions.first().cloned(),
        };
        let session = match chosen {
            Some(s) => Some(self.detail(&s).await.map_err(|e| e.to_string())?),
            None => None,
        };
        Ok(SessionPage {
            sessions: sessions.iter().map(summary).collect(),
            session,
            missing,
            agent: self.agent.clone(),
        })
    }
}
