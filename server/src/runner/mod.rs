//! The runner: starts turns, drives the adapter, ends every run exactly once, and keeps
//! abandoned runs from looking alive.
//!
//! Each instance has an id; every run it starts is its own, by a lease on the run's row that
//! it renews while the run goes on. When the lease expires (the instance died), whichever
//! instance claims the run first ends it as interrupted. Stop and the answers to approvals
//! and questions reach a run's owner through the database ([`crate::store::Command`]).

use anchor::{EventKind, TerminalState};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::hub::Hub;
use crate::journal::{self, Journal, JournalError};
use crate::runtime::{
    redact_secrets, AttachedFile, ChatMessage, RunEnd, RunIo, RuntimeAdapter, TurnBudget,
    TurnRequest, Waiters, HISTORY_IMAGES,
};
use crate::store::{
    Claim, Command, CommandKind, Interaction, Lease, Message, NewTurn, QueuedMessage, Run,
    SettledAnswer, Store, StoreError, TitleSource, TurnAt,
};

mod context;
mod endings;
mod fleet;
mod settle;
mod start;

/// How long a run's owner holds it without renewing, unless configured.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(15);

/// What a user sends to start a turn (empty for a retry: it answers the same message).
#[derive(Clone, Copy, Debug, Default)]
struct TurnText<'a> {
    message: &'a str,
    attachments: &'a [String],
    client_id: Option<&'a str>,
}

/// A run in progress in this process.
struct Active {
    session_id: String,
    cancel: CancellationToken,
    waiters: Arc<Waiters>,
    // Invariant: set once, by whoever settles the run first.
    settled: tokio::sync::Mutex<bool>,
    // Another instance took the run over (this one was taken for dead) and ended it.
    lease_lost: std::sync::atomic::AtomicBool,
    // What the turn has streamed (and when it began and first answered).
    budget: Arc<Mutex<TurnBudget>>,
}

/// What `start` reports.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Started {
    /// The session.
    pub session_id: String,
    /// The run (and stream) id.
    pub run_id: String,
    /// The stream id (the run id).
    pub stream_id: String,
    /// The assistant turn.
    pub turn_id: String,
    /// The stored user message.
    #[serde(skip)]
    pub user_message: Option<Message>,
    /// The message was sent before (same client id): this is the run it started then, and
    /// nothing new was started.
    pub duplicate: bool,
    /// The model that answers it (`None`: the backend offers no choice).
    pub model: Option<String>,
}

/// Why a turn could not be started or answered.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// See [`StoreError`].
    #[error(transparent)]
    Store(#[from] StoreError),
    /// See [`JournalError`].
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The run is not in progress in this server.
    #[error("run is not active")]
    NotActive,
}

/// Starts and ends runs.
#[derive(Clone)]
pub struct Runner {
    store: Arc<dyn Store>,
    journal: Journal,
    hub: Hub,
    adapter: Arc<dyn RuntimeAdapter>,
    metrics: Arc<crate::metrics::Metrics>,
    active: Arc<Mutex<HashMap<String, Arc<Active>>>>,
    // Set on shutdown: runs stop without settling, to be reaped as interrupted on restart.
    shutting_down: Arc<std::sync::atomic::AtomicBool>,
    // Sessions whose run ended, for the queue worker to start their next follow-up.
    ended: tokio::sync::mpsc::UnboundedSender<String>,
    // This process among those sharing the database.
    instance: Arc<str>,
    // How long a lease holds.
    lease: Duration,
}

impl Runner {
    /// A runner over the given parts, counting in `metrics`; its runs' leases hold for
    /// `lease`.
    pub fn new(
        store: Arc<dyn Store>,
        journal: Journal,
        hub: Hub,
        adapter: Arc<dyn RuntimeAdapter>,
        metrics: Arc<crate::metrics::Metrics>,
        lease: Duration,
    ) -> Self {
        let (ended, mut ended_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let instance = format!("inst-{}", &uuid::Uuid::new_v4().simple().to_string()[..16]);
        let runner = Runner {
            store,
            journal,
            hub,
            adapter,
            metrics,
            active: Arc::default(),
            shutting_down: Arc::default(),
            ended,
            instance: instance.into(),
            lease: lease.max(Duration::from_secs(1)),
        };
        // Queued follow-ups start from their own task: a run's ending never waits on the next.
        let worker = runner.clone();
        tokio::spawn(async move {
            while let Some(session_id) = ended_rx.recv().await {
                worker.drain_queue(&session_id).await;
            }
        });
        runner
    }

    fn active(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Active>>> {
        self.active.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a run has a worker in this process.
    pub fn is_active(&self, run_id: &str) -> bool {
        self.active().contains_key(run_id)
    }

    /// This instance's id (what its runs' leases name).
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// The adapter's name.
    pub fn adapter_name(&self) -> &'static str {
        self.adapter.name()
    }

    /// Who answers, for people (see [`RuntimeAdapter::label`]).
    pub fn adapter_label(&self) -> String {
        self.adapter.label()
    }

    /// The model a turn gets when its session asks for none (`None`: no choice of model).
    pub fn default_model(&self) -> Option<String> {
        self.adapter.default_model()
    }

    /// The models a session may ask for (see [`RuntimeAdapter::models`]).
    /// Why it cannot be had is upstream text, shown to people: never a credential in it.
    pub async fn models(&self, refresh: bool) -> Result<Vec<String>, String> {
        self.adapter
            .models(refresh)
            .await
            .map_err(|e| redact_secrets(&e))
    }

    /// The workspace of `owner`'s agent, when the agent keeps files here (see
    /// [`RuntimeAdapter::workspaces`]); why it cannot be opened otherwise.
    pub fn workspace_of(
        &self,
        owner: Option<&str>,
    ) -> Option<Result<crate::runtime::tools::Workspace, String>> {
        self.adapter.workspaces().map(|w| w.of(owner))
    }

    /// Whether the agent keeps files here, in a workspace per account.
    pub fn keeps_files(&self) -> bool {
        self.adapter.workspaces().is_some()
    }

    /// Whether the agent knows its model's context window (for a conversation in its
    /// default model), so that the composer shows a meter.
    pub fn knows_context(&self) -> bool {
        self.adapter.context_use(None, &[], 0).window.is_some()
    }

    /// The agent's own slash commands (see [`RuntimeAdapter::commands`]).
    pub fn adapter_commands(&self) -> Vec<app::api::Example> {
        self.adapter.commands()
    }

    /// Prompts an empty conversation offers (see [`RuntimeAdapter::examples`]).
    pub fn adapter_examples(&self) -> Vec<app::api::Example> {
        self.adapter.examples()
    }
}

/// The id of the message a run settles into, known from its start (the AI SDK's stream
/// names it first; a resumed stream names the same one).
pub fn answer_id(run_id: &str) -> String {
    format!("msg-{run_id}")
}

/// The terminal event of a run that stopped, at `at`, with nobody left to end it (what a
/// restart journals for it, and what an import writes for a run its file left open).
pub fn interrupted_at(at: f64) -> crate::store::NewEvent {
    let ending = endings::Ending::of(RunEnd::Interrupted);
    let mut event = journal::event(ending.kind, ending.payload, Some(ending.state));
    event.created_at = at;
    event.payload.insert("created_at".into(), at.into());
    event
}
