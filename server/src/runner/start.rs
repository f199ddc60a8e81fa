//! Starting a turn: a message, a retry, an edit or a queued follow-up becomes a run with its
//! history and files, decided in one store transaction; the first message names the session.

use super::*;
use tracing::Instrument as _;

/// The terminal event for an ending: (type, terminal state, payload, answer, usage).
/// A file as an agent is given it (`bytes`: `None` when this turn does not get them).
pub(super) fn attached(a: &app::api::AttachmentData, bytes: Option<Vec<u8>>) -> AttachedFile {
    AttachedFile {
        name: a.name.clone(),
        mime: a.mime.clone(),
        size: a.size,
        bytes: bytes.map(Into::into),
    }
}

impl Runner {
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
        self.start_turn(session_id, turn, None, TurnAt::Next, max_running)
            .await
    }

    /// Answers the user message of `run_id` again: a new version of that turn, beside it.
    pub async fn retry(
        &self,
        session_id: &str,
        run_id: &str,
        max_running: Option<u64>,
    ) -> Result<Started, RunError> {
        let place = TurnAt::Retry(run_id);
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
        self.start_turn(session_id, turn, None, TurnAt::Edit(run_id), max_running)
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
            TurnAt::Next,
            max_running,
        )
        .await
    }

    /// The run an earlier send of the same message started.
    pub(super) async fn started_before(
        &self,
        session_id: &str,
        run_id: &str,
    ) -> Result<Started, RunError> {
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

    pub(super) async fn start_turn(
        &self,
        session_id: &str,
        text: TurnText<'_>,
        queued_id: Option<&str>,
        place: TurnAt<'_>,
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
            budget: Arc::new(std::sync::Mutex::new(TurnBudget::begun_now())),
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
        self.name_from_prompt(session_id, &run_id, title_from, first_turn)
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
        let budget = Arc::clone(&active.budget);
        self.metrics.runs_started.inc(&[self.adapter.name()]);
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
        // The turn's span (see `telemetry`), a child of the request that started it.
        let span = tracing::info_span!(
            crate::telemetry::SPAN_TURN,
            run_id = %run_id,
            session_id = %session_id,
            backend = self.adapter.name(),
        );
        let turn_span = span.clone();
        tokio::spawn(
            async move {
                // The adapter runs in its own task so that a panic in it still ends the run.
                let outcome =
                    tokio::spawn(async move { adapter.run(turn, io).await }.instrument(turn_span))
                        .await;
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
            }
            .instrument(span),
        );
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
    pub(super) async fn files(&self, message: &crate::store::Message) -> Vec<AttachedFile> {
        let ids: Vec<String> = message.attachments.iter().map(|a| a.id.clone()).collect();
        let mut bytes = self.bytes_of(&ids).await;
        message
            .attachments
            .iter()
            .filter_map(|a| Some(attached(a, Some(bytes.remove(&a.id)?))))
            .collect()
    }

    /// The bytes of the attachments `ids` names, in one read; none when it fails (logged).
    pub(super) async fn bytes_of(&self, ids: &[String]) -> HashMap<String, Vec<u8>> {
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
    pub(super) async fn with_files(&self, history: Vec<crate::store::Message>) -> Vec<ChatMessage> {
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

    /// Gives a session whose title is still the default one a title from its first prompt, and
    /// says so in the run's journal (a `title` event, as an agent's own title would be), so
    /// that the pages following the run show it at once.
    pub(super) async fn name_from_prompt(
        &self,
        session_id: &str,
        run_id: &str,
        message: &str,
        first_turn: bool,
    ) {
        if !first_turn {
            return;
        }
        let Ok(session) = self.store.session(session_id).await else {
            return;
        };
        if session.title_source != TitleSource::Default {
            return;
        }
        let title = self
            .adapter
            .title_for(message)
            .or_else(|| crate::store::title_from_prompt(message));
        let Some(title) = title else {
            return;
        };
        let renamed = self
            .store
            .rename_session(session_id, &title, TitleSource::Prompt, crate::clock::now())
            .await;
        if renamed.is_ok() {
            let event = journal::event(EventKind::Title, json!({ "title": title }), None);
            if let Err(e) = self.journal.append(run_id, event).await {
                tracing::warn!("journaling the title of {run_id}: {e}");
            }
        }
    }
}
