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
    Claim, Command, CommandKind, Interaction, Lease, Message, NewTurn, Place, QueuedMessage, Run,
    SettledAnswer, Store, StoreError, TitleSource,
};

/// How long a run's owner holds it without renewing, unless configured.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(15);
/// The longest the upkeep waits between rounds (renewing leases, reaping, taking commands).
const UPKEEP_INTERVAL: Duration = Duration::from_secs(10);
/// How long a Stop sent to another instance waits for it to say what it did.
const REMOTE_CANCEL_WAIT: Duration = Duration::from_secs(10);

/// A run in progress in this process.
/// What a user sends to start a turn (empty for a retry: it answers the same message).
#[derive(Clone, Copy, Debug, Default)]
struct TurnText<'a> {
    message: &'a str,
    attachments: &'a [String],
    client_id: Option<&'a str>,
}

struct Active {
    session_id: String,
    cancel: CancellationToken,
    waiters: Arc<Waiters>,
    // Invariant: set once, by whoever settles the run first.
    settled: tokio::sync::Mutex<bool>,
    // Another instance took the run over (this one was taken for dead) and ended it.
    lease_lost: std::sync::atomic::AtomicBool,
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
    /// A runner over the given parts; its runs' leases hold for `lease`.
    pub fn new(
        store: Arc<dyn Store>,
        journal: Journal,
        hub: Hub,
        adapter: Arc<dyn RuntimeAdapter>,
        lease: Duration,
    ) -> Self {
        let (ended, mut ended_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let instance = format!("inst-{}", &uuid::Uuid::new_v4().simple().to_string()[..16]);
        let runner = Runner {
            store,
            journal,
            hub,
            adapter,
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

    /// The time leases are reckoned by (the database's, when it is shared; this machine's
    /// should the database not answer).
    async fn clock(&self) -> f64 {
        match self.store.clock().await {
            Ok(now) => now,
            Err(e) => {
                tracing::warn!("reading the database's clock failed: {e}");
                crate::clock::now()
            }
        }
    }

    /// A lease of this instance from `now` (by [`Runner::clock`]).
    fn lease_from(&self, now: f64) -> Lease<'_> {
        Lease {
            instance: &self.instance,
            until: now + self.lease.as_secs_f64(),
        }
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

    /// Prompts an empty conversation offers (see [`RuntimeAdapter::examples`]).
    pub fn adapter_examples(&self) -> Vec<app::api::Example> {
        self.adapter.examples()
    }

    /// Stores the user message, creates the run and starts the agent on it. A `client_id`
    /// sent before starts nothing and reports the run it started then.
    /// `max_running` is the most turns the session's account may run at once, this one
    /// included (`TooManyRunning` past it; see [`NewTurn::max_running`]).
    pub async fn start(
        &self,
        session_id: &str,
        message: &str,
        attachments: &[String],
        client_id: Option<&str>,
        max_running: Option<u64>,
    ) -> Result<Started, RunError> {
        let turn = TurnText {
            message,
            attachments,
            client_id,
        };
        self.start_turn(session_id, turn, None, Place::Next, max_running)
            .await
    }

    /// Answers the user message of `run_id` again: a new version of that turn, beside it.
    pub async fn retry(
        &self,
        session_id: &str,
        run_id: &str,
        max_running: Option<u64>,
    ) -> Result<Started, RunError> {
        let place = Place::Retry(run_id);
        self.start_turn(session_id, TurnText::default(), None, place, max_running)
            .await
    }

    /// Sends `message` in place of the user message of `run_id`: the conversation forks
    /// there (the earlier version stays, beside it).
    pub async fn edit(
        &self,
        session_id: &str,
        run_id: &str,
        message: &str,
        client_id: Option<&str>,
        max_running: Option<u64>,
    ) -> Result<Started, RunError> {
        let turn = TurnText {
            message,
            attachments: &[],
            client_id,
        };
        self.start_turn(session_id, turn, None, Place::Edit(run_id), max_running)
            .await
    }

    /// Starts a queued follow-up: it leaves the queue in the transaction that stores it as the
    /// turn's user message, so a reader sees it either queued or started, never neither.
    /// `max_running` as for [`Runner::start`] (`None` when it takes the place of the turn
    /// that just ended).
    pub async fn start_queued(
        &self,
        queued: &QueuedMessage,
        max_running: Option<u64>,
    ) -> Result<Started, RunError> {
        let turn = TurnText {
            message: &queued.content,
            attachments: &queued.attachments,
            client_id: queued.client_id.as_deref(),
        };
        let queued_id = Some(queued.id.as_str());
        self.start_turn(
            &queued.session_id,
            turn,
            queued_id,
            Place::Next,
            max_running,
        )
        .await
    }

    /// The run an earlier send of the same message started.
    async fn started_before(&self, session_id: &str, run_id: &str) -> Result<Started, RunError> {
        let run = self.store.run(run_id).await?;
        let user_message = self
            .store
            .messages(session_id)
            .await?
            .into_iter()
            .find(|m| m.id == run.user_message_id);
        Ok(Started {
            session_id: session_id.to_owned(),
            run_id: run.id.clone(),
            stream_id: run.id,
            turn_id: run.turn_id,
            user_message,
            duplicate: true,
            model: run.model,
        })
    }

    async fn start_turn(
        &self,
        session_id: &str,
        text: TurnText<'_>,
        queued_id: Option<&str>,
        place: Place<'_>,
        max_running: Option<u64>,
    ) -> Result<Started, RunError> {
        let TurnText {
            message,
            attachments,
            client_id,
        } = text;
        let run_id = uuid::Uuid::new_v4().simple().to_string();
        let turn_id = format!("turn-{run_id}");
        let user_message_id = format!("msg-{}", uuid::Uuid::new_v4().simple());
        let active = Arc::new(Active {
            session_id: session_id.to_owned(),
            cancel: CancellationToken::new(),
            waiters: Arc::default(),
            settled: tokio::sync::Mutex::new(false),
            lease_lost: Default::default(),
        });
        let default_model = self.adapter.default_model();
        let clock = self.clock().await;
        // Live before it exists, so no follower and no reaper can see it half-started.
        self.hub.open(&run_id);
        self.active().insert(run_id.clone(), Arc::clone(&active));
        let started = self
            .store
            .start_run(NewTurn {
                session_id,
                run_id: &run_id,
                turn_id: &turn_id,
                user_message_id: &user_message_id,
                message,
                attachments,
                client_id,
                queued_id,
                place,
                default_model: default_model.as_deref(),
                lease: self.lease_from(clock),
                max_running,
                now: crate::clock::now(),
            })
            .await;
        // What the model is told came before: the branch the turn follows.
        let started = match started {
            Ok((run, user_message)) => match &run.parent_run_id {
                Some(parent) => self
                    .store
                    .history(parent)
                    .await
                    .map(|history| (history, user_message, run.model)),
                None => Ok((Vec::new(), user_message, run.model)),
            },
            Err(e) => Err(e),
        };
        let (history, user_message, model) = match started {
            Ok(started) => started,
            Err(e) => {
                self.active().remove(&run_id);
                self.hub.close(&run_id);
                return match e {
                    StoreError::Duplicate { run_id } => {
                        self.started_before(session_id, &run_id).await
                    }
                    e => Err(e.into()),
                };
            }
        };
        let first_turn = history.is_empty();
        let attempt = match self.store.versions(&run_id).await {
            Ok(versions) => versions
                .iter()
                .position(|r| r.id == run_id)
                .map_or(1, |i| i as u32 + 1),
            Err(_) => 1,
        };
        let message = user_message.content.as_str();
        let files = self.files(&user_message).await;
        let history = self.with_files(history).await;
        let title_from = match (message.trim().is_empty(), files.first()) {
            (true, Some(file)) => file.name.as_str(),
            _ => message,
        };
        self.name_from_prompt(session_id, title_from, first_turn)
            .await;
        let owner = self
            .store
            .session(session_id)
            .await
            .ok()
            .and_then(|s| s.owner_id);
        let turn = TurnRequest {
            owner,
            session_id: session_id.to_owned(),
            run_id: run_id.clone(),
            message: message.to_owned(),
            attachments: files,
            history,
            first_turn,
            attempt,
            model: model.clone(),
        };
        let budget = Arc::new(std::sync::Mutex::new(TurnBudget::default()));
        let io = RunIo {
            session_id: session_id.to_owned(),
            run_id: run_id.clone(),
            owner: turn.owner.clone(),
            journal: self.journal.clone(),
            store: Arc::clone(&self.store),
            cancel: active.cancel.clone(),
            waiters: Arc::clone(&active.waiters),
            pending: Default::default(),
            budget: Arc::clone(&budget),
        };
        let runner = self.clone();
        let adapter = Arc::clone(&self.adapter);
        let id = run_id.clone();
        tokio::spawn(async move {
            // The adapter runs in its own task so that a panic in it still ends the run.
            let outcome = tokio::spawn(async move { adapter.run(turn, io).await }).await;
            let mut end = outcome.unwrap_or_else(|e| RunEnd::Failed {
                message: "The agent stopped unexpectedly.".into(),
                hint: Some(format!("{e}")),
            });
            // Stopped for streaming more than a turn may: an error that says which bound
            // (not a Stop the person made).
            let exceeded = budget
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .exceeded()
                .map(str::to_owned);
            if let Some(message) = exceeded {
                end = RunEnd::Failed {
                    message,
                    hint: Some("What streamed before it is kept.".to_owned()),
                };
            }
            runner.finish(&id, end).await;
        });
        Ok(Started {
            session_id: session_id.to_owned(),
            run_id: run_id.clone(),
            stream_id: run_id,
            turn_id,
            user_message: Some(user_message),
            duplicate: false,
            model,
        })
    }

    /// The files `message` carries, with their bytes (a file that cannot be read is left
    /// out, and said so in the log).
    async fn files(&self, message: &crate::store::Message) -> Vec<AttachedFile> {
        let ids: Vec<String> = message.attachments.iter().map(|a| a.id.clone()).collect();
        let mut bytes = self.bytes_of(&ids).await;
        message
            .attachments
            .iter()
            .filter_map(|a| Some(attached(a, Some(bytes.remove(&a.id)?))))
            .collect()
    }

    /// The bytes of the attachments `ids` names, in one read; none when it fails (logged).
    async fn bytes_of(&self, ids: &[String]) -> HashMap<String, Vec<u8>> {
        if ids.is_empty() {
            return HashMap::new();
        }
        self.store.attachment_blobs(ids).await.unwrap_or_else(|e| {
            tracing::warn!("attachments not read: {e}");
            HashMap::new()
        })
    }

    /// The history as the model is given it: the files each message carried, the bytes of
    /// the newest [`HISTORY_IMAGES`] images only.
    async fn with_files(&self, history: Vec<crate::store::Message>) -> Vec<ChatMessage> {
        let newest_images: Vec<String> = history
            .iter()
            .rev()
            .flat_map(|m| m.attachments.iter())
            .filter(|a| a.is_image())
            .take(HISTORY_IMAGES)
            .map(|a| a.id.clone())
            .collect();
        let mut bytes = self.bytes_of(&newest_images).await;
        history
            .into_iter()
            .map(|m| ChatMessage {
                role: m.role,
                attachments: m
                    .attachments
                    .iter()
                    .map(|a| attached(a, bytes.remove(&a.id)))
                    .collect(),
                content: m.content,
            })
            .collect()
    }

    /// Gives a session whose title is still the default one a title from its first prompt.
    async fn name_from_prompt(&self, session_id: &str, message: &str, first_turn: bool) {
        if !first_turn {
            return;
        }
        if let Ok(session) = self.store.session(session_id).await {
            if session.title_source == TitleSource::Default {
                let title: String = message
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .chars()
                    .take(64)
                    .collect();
                if !title.is_empty() {
                    let _ = self
                        .store
                        .rename_session(
                            session_id,
                            &title,
                            TitleSource::Prompt,
                            crate::clock::now(),
                        )
                        .await;
                }
            }
        }
    }

    /// Ends a run once: journals its terminal event, the settled message and `stream_end`.
    /// Later calls (the adapter returning after a cancel, the reaper) change nothing.
    async fn settle(&self, run_id: &str, active: Option<&Active>, end: RunEnd) -> bool {
        let guard = match active {
            Some(a) => {
                let mut settled = a.settled.lock().await;
                if *settled {
                    return false;
                }
                *settled = true;
                Some(settled)
            }
            None => None,
        };
        let ending = Ending::of(end);
        let cut_off = ending.payload.get("cut_off").is_some();
        let terminal = journal::event(ending.kind, ending.payload, Some(ending.state));
        let answer = SettledAnswer {
            message_id: answer_id(run_id),
            content: ending.answer,
            usage: ending.usage,
            cut_off,
        };
        let settled = match self.journal.settle(run_id, terminal, answer).await {
            Ok(_) => {
                crate::snapshots::after_settle(Arc::clone(&self.store), run_id.to_owned());
                true
            }
            Err(JournalError::Finished) => false,
            Err(e) => {
                tracing::error!(run_id, "settling failed: {e}");
                false
            }
        };
        drop(guard);
        settled
    }

    /// The adapter returned: settle, release, then start the next queued follow-up.
    async fn finish(&self, run_id: &str, end: RunEnd) {
        let active = self.active().get(run_id).cloned();
        let lost = active
            .as_ref()
            .is_some_and(|a| a.lease_lost.load(std::sync::atomic::Ordering::SeqCst));
        if self.is_shutting_down() || lost {
            // Another instance ends it (or ended it already).
            self.release(run_id);
            return;
        }
        if let Some(active) = &active {
            active.cancel.cancel();
            self.settle(run_id, Some(active), end).await;
        }
        self.release(run_id);
        if let Some(active) = active {
            let _ = self.ended.send(active.session_id.clone());
        }
    }

    fn release(&self, run_id: &str) {
        self.active().remove(run_id);
        self.hub.close(run_id);
    }

    async fn drain_queue(&self, session_id: &str) {
        if self.is_shutting_down() {
            // The next instance (or start) picks it up: no turn starts in a process that stops.
            return;
        }
        match self.store.next_queued(session_id).await {
            Ok(Some(next)) => match self.start_queued(&next, None).await {
                // Started by someone else meanwhile, or the session runs a turn already.
                Ok(_) | Err(RunError::Store(StoreError::NotFound | StoreError::Busy { .. })) => {}
                Err(e) => tracing::warn!(session_id, "queued follow-up not started: {e}"),
            },
            Ok(None) => {}
            Err(e) => tracing::warn!(session_id, "reading the queue failed: {e}"),
        }
    }

    /// Stops a run: journals `cancel` (once) and stops the agent. Returns whether this call
    /// cancelled it; a second call, or a call on a finished run, changes nothing. A run
    /// another instance owns is stopped by that instance (asked through the database); one
    /// whose owner is gone is stopped here.
    pub async fn cancel(&self, run_id: &str) -> Result<bool, RunError> {
        if let Some(cancelled) = self.cancel_here(run_id).await {
            return Ok(cancelled);
        }
        // Unknown runs are an error; finished ones are not.
        let run = self.store.run(run_id).await?;
        if !run.running {
            return Ok(false);
        }
        let owner = run.owner_instance.clone();
        let theirs = owner.as_deref().filter(|owner| *owner != &*self.instance);
        if let Some(owner) = theirs {
            if run.held(self.clock().await) {
                return self.cancel_remote(&run, owner).await;
            }
        }
        // Nobody runs it: end it here, as the owner would have. If it is held after all (its
        // owner renewed meanwhile), the owner is asked.
        match self.end_abandoned(run.clone(), RunEnd::Cancelled).await {
            Some(ended) => Ok(ended),
            None => match theirs {
                Some(owner) => self.cancel_remote(&run, owner).await,
                None => Ok(false),
            },
        }
    }

    /// Stops a run this process runs (`None`: it runs no such run).
    async fn cancel_here(&self, run_id: &str) -> Option<bool> {
        let active = self.active().get(run_id).cloned()?;
        active.cancel.cancel();
        Some(self.settle(run_id, Some(&active), RunEnd::Cancelled).await)
    }

    /// Asks `owner` to stop `run` and waits a while for its answer (`false` when none came:
    /// the command stays, and the owner carries it out when it gets to it).
    async fn cancel_remote(&self, run: &Run, owner: &str) -> Result<bool, RunError> {
        let id = self
            .store
            .send_command(
                &run.id,
                owner,
                CommandKind::Cancel,
                &json!({}),
                crate::clock::now(),
            )
            .await?;
        let started = tokio::time::Instant::now();
        let mut pause = Duration::from_millis(10);
        // When the run ended: the owner records what the command did just after ending it.
        let mut ended: Option<tokio::time::Instant> = None;
        while started.elapsed() < REMOTE_CANCEL_WAIT {
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(100));
            if let Some(result) = self.store.command_result(id).await? {
                return Ok(result["cancelled"].as_bool().unwrap_or(false));
            }
            if let Some(ended) = ended {
                if ended.elapsed() > Duration::from_secs(2) {
                    // Ended some other way, and the command was never carried out.
                    return Ok(false);
                }
                continue;
            }
            let now = self.store.run(&run.id).await?;
            if !now.running {
                ended = Some(tokio::time::Instant::now());
                continue;
            }
            if !now.held(self.clock().await) {
                // Its owner died meanwhile.
                if let Some(ended) = self.end_abandoned(now, RunEnd::Cancelled).await {
                    return Ok(ended);
                }
            }
        }
        tracing::warn!(run_id = %run.id, owner, "the owner did not answer a Stop in time");
        Ok(false)
    }

    /// Ends a run nobody runs any more with `end`, once: claims it (unless this instance
    /// holds it already), journals the ending, closes its questions and starts the session's
    /// next follow-up. Whether this call ended it; `None` when it could not claim it (it is
    /// held after all, or was claimed by another).
    async fn end_abandoned(&self, run: Run, end: RunEnd) -> Option<bool> {
        let mine = run.owner_instance.as_deref() == Some(&*self.instance);
        if !mine {
            let now = self.clock().await;
            match self
                .store
                .claim(Claim::Run(&run.id), self.lease_from(now), now)
                .await
            {
                Ok(claimed) if !claimed.is_empty() => {}
                Ok(_) => return None,
                Err(e) => {
                    tracing::warn!(run_id = %run.id, "claiming an abandoned run failed: {e}");
                    return None;
                }
            }
        }
        Some(self.interrupt(&run, end).await)
    }

    /// Journals the ending of a run this process holds but does not run, and what follows.
    async fn interrupt(&self, run: &Run, end: RunEnd) -> bool {
        // The hub channel lets followers here see its ending live.
        self.hub.open(&run.id);
        let ended = self.settle(&run.id, None, end).await;
        let _ = self.store.close_interactions(&run.id).await;
        self.hub.close(&run.id);
        if ended {
            let _ = self.ended.send(run.session_id.clone());
        }
        ended
    }

    /// Answers an approval or clarify request exactly once and wakes the waiting agent.
    pub async fn respond(
        &self,
        run_id: &str,
        id: &str,
        kind: &str,
        response: Value,
    ) -> Result<Interaction, RunError> {
        let interaction = self
            .store
            .answer_interaction(run_id, id, kind, &response)
            .await?;
        // The agent waits in the instance that runs it: that one journals the answer.
        let here = self.is_active(run_id);
        if !here {
            let run = self.store.run(run_id).await?;
            let now = self.clock().await;
            if let Some(owner) = run
                .owner_instance
                .as_deref()
                .filter(|owner| *owner != &*self.instance && run.held(now))
            {
                let body = json!({"id": id, "kind": kind, "response": response});
                self.store
                    .send_command(
                        run_id,
                        owner,
                        CommandKind::Resolved,
                        &body,
                        crate::clock::now(),
                    )
                    .await?;
                return Ok(interaction);
            }
        }
        self.resolved(run_id, id, kind, response).await;
        Ok(interaction)
    }

    /// Journals an answered approval or question (`kind`) and wakes the agent waiting for it.
    async fn resolved(&self, run_id: &str, id: &str, kind: &str, response: Value) {
        let (event, resolved) = resolved_event(id, kind, &response);
        let _ = self
            .journal
            .append(run_id, journal::event(resolved, event, None))
            .await;
        if let Some(active) = self.active().get(run_id).cloned() {
            active.waiters.deliver(id, response);
        }
    }

    /// Carries out the commands other instances left for this one, each once.
    pub async fn run_commands(&self) {
        let commands = match self
            .store
            .take_commands(&self.instance, crate::clock::now())
            .await
        {
            Ok(commands) => commands,
            Err(e) => {
                tracing::warn!("reading commands failed: {e}");
                return;
            }
        };
        for command in commands {
            let result = self.carry_out(&command).await;
            if let Err(e) = self.store.finish_command(command.id, &result).await {
                tracing::warn!(
                    command = command.id,
                    "recording a command's result failed: {e}"
                );
            }
        }
    }

    async fn carry_out(&self, command: &Command) -> Value {
        match command.kind {
            CommandKind::Cancel => {
                let cancelled = self.cancel_here(&command.run_id).await.unwrap_or(false);
                json!({"cancelled": cancelled})
            }
            CommandKind::Resolved => {
                let body = &command.body;
                let id = body["id"].as_str().unwrap_or_default();
                let kind = body["kind"].as_str().unwrap_or_default();
                let response = body["response"].clone();
                self.resolved(&command.run_id, id, kind, response).await;
                json!({"delivered": self.is_active(&command.run_id)})
            }
        }
    }

    /// Ends, as interrupted, every running run nobody runs any more: those whose owner's lease
    /// has expired (the instance died or lost the database), and, on a database no other
    /// instance shares, every one this process does not run (a previous process left it).
    /// Each is claimed first, so of instances reaping at once one ends it.
    pub async fn reap(&self) -> usize {
        let which = if self.store.engine().shared() {
            Claim::Expired
        } else {
            Claim::NotMine
        };
        let now = self.clock().await;
        let runs = match self.store.claim(which, self.lease_from(now), now).await {
            Ok(runs) => runs,
            Err(e) => {
                tracing::error!("reaper could not claim runs: {e}");
                return 0;
            }
        };
        let mut reaped = 0;
        for run in runs {
            if self.is_active(&run.id) {
                continue;
            }
            if self.interrupt(&run, RunEnd::Interrupted).await {
                reaped += 1;
                tracing::info!(run_id = %run.id, "reaped an abandoned run as interrupted");
            }
        }
        reaped
    }

    /// Renews the leases of the runs this process runs; a run whose lease another instance
    /// took (this one was taken for dead) stops here without ending: it was ended there.
    pub async fn renew_leases(&self) {
        if self.is_shutting_down() {
            return;
        }
        let ids: Vec<String> = self.active().keys().cloned().collect();
        if ids.is_empty() {
            return;
        }
        let until = self.lease_from(self.clock().await).until;
        let renewed = match self.store.renew_leases(&self.instance, &ids, until).await {
            Ok(renewed) => renewed,
            Err(e) => {
                tracing::warn!("renewing leases failed: {e}");
                return;
            }
        };
        for id in ids.iter().filter(|id| !renewed.contains(id)) {
            // Not renewed: starting (its row not committed yet), ended since, or taken.
            let taken = match self.store.run(id).await {
                Ok(run) => run.running && run.owner_instance.as_deref() != Some(&*self.instance),
                Err(_) => false,
            };
            if !taken {
                continue;
            }
            if let Some(active) = self.active().get(id).cloned() {
                tracing::warn!(run_id = %id, "another instance took this run over; stopping it here");
                active
                    .lease_lost
                    .store(true, std::sync::atomic::Ordering::SeqCst);
                active.cancel.cancel();
            }
        }
    }

    /// Lets the leases of `ids` expire now (this process is shutting down), so that another
    /// instance ends those runs at once rather than after the lease.
    async fn release_leases(&self, ids: &[String]) {
        if ids.is_empty() || !self.store.engine().shared() {
            return;
        }
        let now = self.clock().await;
        if let Err(e) = self.store.renew_leases(&self.instance, ids, now).await {
            tracing::warn!("releasing leases failed: {e}");
        }
    }

    /// Starts the follow-ups waiting in sessions whose turn ended where no queue worker saw it.
    async fn drain_idle_queues(&self) {
        match self.store.idle_queues(50).await {
            Ok(sessions) => {
                for session in sessions {
                    self.drain_queue(&session).await;
                }
            }
            Err(e) => tracing::warn!("looking for waiting follow-ups failed: {e}"),
        }
    }

    /// Every third of a lease (at most every [`UPKEEP_INTERVAL`]) until `shutdown`: renews
    /// leases, and, apart so that neither delays the renewals, reaps and takes commands whose
    /// announcement was lost. The start already reaped once (see `AppState::with_parts`).
    pub fn spawn_upkeep(&self, shutdown: CancellationToken) {
        let every = (self.lease / 3).min(UPKEEP_INTERVAL);
        let runner = self.clone();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(every) => {}
                    () = stop.cancelled() => break,
                }
                runner.renew_leases().await;
            }
        });
        let runner = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(every) => {}
                    () = shutdown.cancelled() => break,
                }
                if runner.is_shutting_down() {
                    break;
                }
                runner.reap().await;
                runner.drain_idle_queues().await;
                if runner.store.engine().shared() {
                    runner.run_commands().await;
                }
            }
        });
    }

    /// Stops every run in progress without ending it (the server is shutting down): the next
    /// start reports each as interrupted.
    /// On a shared database, their leases are let go at once, so that another instance ends
    /// them now rather than after the lease.
    pub async fn shut_down(&self) {
        self.shutting_down
            .store(true, std::sync::atomic::Ordering::SeqCst);
        // The runs as they are now, before any of them stops and leaves.
        let ids: Vec<String> = self.active().keys().cloned().collect();
        for active in self.active().values() {
            active.cancel.cancel();
        }
        self.release_leases(&ids).await;
    }

    fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// The id of the message a run settles into, known from its start (the AI SDK's stream
/// names it first; a resumed stream names the same one).
pub fn answer_id(run_id: &str) -> String {
    format!("msg-{run_id}")
}

/// The event that journals the answer to an approval or a question (`kind`).
fn resolved_event(id: &str, kind: &str, response: &Value) -> (Value, EventKind) {
    if kind == "approval" {
        (
            json!({"approval_id": id, "choice": response["choice"], "status": "answered"}),
            EventKind::ApprovalResolved,
        )
    } else {
        (
            json!({"clarify_id": id, "response": response["response"], "status": "answered"}),
            EventKind::ClarifyResolved,
        )
    }
}

/// The terminal event for an ending: (type, terminal state, payload, answer, usage).
/// A file as an agent is given it (`bytes`: `None` when this turn does not get them).
fn attached(a: &app::api::AttachmentData, bytes: Option<Vec<u8>>) -> AttachedFile {
    AttachedFile {
        name: a.name.clone(),
        mime: a.mime.clone(),
        size: a.size,
        bytes: bytes.map(Into::into),
    }
}

/// How a run ends, as the journal records it.
struct Ending {
    /// The terminal event.
    kind: EventKind,
    /// The state it reports.
    state: TerminalState,
    /// The terminal event's data.
    payload: Value,
    /// The settled answer (empty when the turn ended without one).
    answer: String,
    /// Token usage, when the agent reported it.
    usage: Option<Value>,
}

impl Ending {
    /// How `end` is journaled.
    fn of(end: RunEnd) -> Ending {
        let (kind, state, payload, answer, usage) = match end {
            RunEnd::Completed { answer, usage } => (
                EventKind::Done,
                TerminalState::Completed,
                json!({"status": "completed", "usage": usage}),
                answer,
                usage,
            ),
            // Completed, and said to be cut off: the terminal state stays the agent's, the
            // notice travels beside it (and in the settled message).
            RunEnd::CutOff {
                answer,
                usage,
                limit,
            } => {
                let message = match limit {
                    Some(limit) => format!(
                        "The answer was cut off: it reached the limit of {limit} tokens for an \
                         answer."
                    ),
                    None => "The answer was cut off: the model ran out of room in its context."
                        .to_owned(),
                };
                (
                    EventKind::Done,
                    TerminalState::Completed,
                    json!({"status": "completed", "usage": usage, "finish_reason": "length",
                       "cut_off": {"limit": limit, "message": message}}),
                    answer,
                    usage,
                )
            }
            RunEnd::ToolLimitReached { answer, usage } => (
                EventKind::Done,
                TerminalState::ToolLimitReached,
                json!({"status": "tool_limit_reached", "terminal_state": "tool_limit_reached",
                   "terminal_reason": "max_iterations", "usage": usage,
                   "message": "The agent reached its step limit before finishing."}),
                answer,
                usage,
            ),
            RunEnd::Cancelled => (
                EventKind::Cancel,
                TerminalState::Cancelled,
                json!({"status": "cancelled", "type": "cancelled", "message": "Cancelled by user"}),
                String::new(),
                None,
            ),
            RunEnd::NoResponse => (
                EventKind::Apperror,
                TerminalState::NoResponse,
                json!({"status": "no_response", "type": "no_response", "message": "The model returned no response.",
                   "hint": "Try again, or rephrase the message."}),
                String::new(),
                None,
            ),
            RunEnd::CompressionExhausted => (
                EventKind::Apperror,
                TerminalState::CompressionExhausted,
                json!({"status": "compression_exhausted", "type": "compression_exhausted",
                   "message": "The conversation is too long to continue, even after compression.",
                   "hint": "Start a new session."}),
                String::new(),
                None,
            ),
            RunEnd::ContextOverflow { message, hint } => (
                EventKind::Apperror,
                TerminalState::CompressionExhausted,
                json!({"status": "compression_exhausted", "type": "context_overflow",
                   "message": redact_secrets(&message), "hint": hint}),
                String::new(),
                None,
            ),
            RunEnd::Degraded { message } => (
                EventKind::Apperror,
                TerminalState::Degraded,
                json!({"status": "degraded", "type": "degraded", "message": message,
                   "hint": "Part of this turn's work could not be recovered."}),
                String::new(),
                None,
            ),
            RunEnd::Interrupted => (
                EventKind::Apperror,
                TerminalState::Interrupted,
                json!({"status": "interrupted", "type": "interrupted", "recovery_control": true,
                   "message": "The live worker stopped before this turn finished.",
                   "hint": "The server running this turn stopped (it restarted, or went away) \
                      before the turn finished. Everything journaled before then is kept; send \
                      the message again to retry."}),
                String::new(),
                None,
            ),
            RunEnd::Failed { message, hint } => (
                EventKind::Apperror,
                TerminalState::Error,
                // Upstream text: never a credential in what the turn shows.
                json!({"status": "error", "type": "error", "message": redact_secrets(&message),
                   "hint": hint.as_deref().map(redact_secrets)}),
                String::new(),
                None,
            ),
        };
        Ending {
            kind,
            state,
            payload,
            answer,
            usage,
        }
    }
}
