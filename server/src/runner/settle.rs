//! Ending a run exactly once: settled with its answer, stopped here or on the instance that owns
//! it, or interrupted when abandoned; the answers to approvals and questions reach it here.

use super::endings::Ending;
use super::*;

/// How long a Stop sent to another instance waits for it to say what it did.
pub(super) const REMOTE_CANCEL_WAIT: Duration = Duration::from_secs(10);

/// The longest wait between two tries of writing a run's end that failed.
pub(super) const SETTLE_RETRY_MAX: Duration = Duration::from_secs(5);

/// How a run ended, for the metrics once its end is written.
pub(super) struct Ended {
    state: TerminalState,
    usage: Option<Value>,
    took: Option<Duration>,
    first_token: Option<Duration>,
}

/// The event that journals the answer to an approval or a question (`kind`).
pub(super) fn resolved_event(id: &str, kind: &str, response: &Value) -> (Value, EventKind) {
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

impl Runner {
    /// Ends a run once: journals its terminal event, the settled message and `stream_end`.
    /// Later calls (the adapter returning after a cancel, the reaper) change nothing.
    pub(super) async fn settle(&self, run_id: &str, active: Option<&Active>, end: RunEnd) -> bool {
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
        let state = ending.state;
        let usage = ending.usage.clone();
        let cut_off = ending.payload.get("cut_off").is_some();
        let terminal = journal::event(ending.kind, ending.payload, Some(ending.state));
        let answer = SettledAnswer {
            message_id: answer_id(run_id),
            content: ending.answer,
            usage: ending.usage,
            cut_off,
        };
        let (took, first_token) = active.map_or((None, None), |a| {
            let budget = a.budget.lock().unwrap_or_else(|e| e.into_inner());
            (budget.elapsed(), budget.first_token())
        });
        let ended = Ended {
            state,
            usage,
            took,
            first_token,
        };
        let settled = match self
            .journal
            .settle(run_id, terminal.clone(), answer.clone())
            .await
        {
            Ok(_) => {
                self.ended_well(run_id, &ended);
                true
            }
            Err(JournalError::Finished) => false,
            Err(e) => {
                // The journal cannot be written now (a full disk, a database out of reach):
                // the run ends as soon as a write works again, and nothing leaves it running.
                tracing::error!(run_id, "settling failed: {e}; trying again until it works");
                let runner = self.clone();
                let run_id = run_id.to_owned();
                tokio::spawn(async move {
                    runner.settle_later(&run_id, terminal, answer, ended).await;
                });
                false
            }
        };
        drop(guard);
        settled
    }

    /// What follows a run's end once written: its snapshot, and the metrics of how it ended.
    fn ended_well(&self, run_id: &str, ended: &Ended) {
        crate::snapshots::after_settle(Arc::clone(&self.store), run_id.to_owned());
        self.metrics.ended(
            self.adapter.name(),
            ended.state.as_str(),
            ended.took,
            ended.first_token,
            ended.usage.as_ref(),
        );
    }

    /// Writes a run's end again and again (waiting longer each time, up to
    /// [`SETTLE_RETRY_MAX`]) until the journal takes it, the run is found ended by someone
    /// else, or the server stops (the next start reaps it as interrupted).
    async fn settle_later(
        &self,
        run_id: &str,
        terminal: crate::store::NewEvent,
        answer: SettledAnswer,
        ended: Ended,
    ) {
        let mut wait = Duration::from_millis(500);
        // The room kept back for a full disk is given up once, for the ends of runs.
        let mut released = false;
        loop {
            tokio::time::sleep(wait).await;
            if self.is_shutting_down() {
                return;
            }
            match self
                .journal
                .settle(run_id, terminal.clone(), answer.clone())
                .await
            {
                Ok(_) => {
                    tracing::info!(run_id, "the run's end is written after all");
                    self.ended_well(run_id, &ended);
                    return;
                }
                Err(JournalError::Finished | JournalError::Closed) => return,
                Err(JournalError::Store(e)) if e.disk_full() && !released => {
                    released = true;
                    match self.store.release_reserve().await {
                        Ok(true) => {
                            tracing::warn!("the disk is full: the room kept back is given up");
                            wait = Duration::ZERO;
                        }
                        Ok(false) => wait = (wait * 2).min(SETTLE_RETRY_MAX),
                        Err(e) => {
                            tracing::warn!("giving up the room kept back failed: {e}");
                            wait = (wait * 2).min(SETTLE_RETRY_MAX);
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(run_id, "settling failed again: {e}");
                    wait = (wait * 2)
                        .max(Duration::from_millis(500))
                        .min(SETTLE_RETRY_MAX);
                }
            }
        }
    }

    /// The adapter returned: settle, release, then start the next queued follow-up.
    pub(super) async fn finish(&self, run_id: &str, end: RunEnd) {
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

    pub(super) fn release(&self, run_id: &str) {
        self.active().remove(run_id);
        self.hub.close(run_id);
    }

    pub(super) async fn drain_queue(&self, session_id: &str) {
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
    pub(super) async fn cancel_here(&self, run_id: &str) -> Option<bool> {
        let active = self.active().get(run_id).cloned()?;
        active.cancel.cancel();
        Some(self.settle(run_id, Some(&active), RunEnd::Cancelled).await)
    }

    /// Asks `owner` to stop `run` and waits a while for its answer (`false` when none came:
    /// the command stays, and the owner carries it out when it gets to it).
    pub(super) async fn cancel_remote(&self, run: &Run, owner: &str) -> Result<bool, RunError> {
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
    pub(super) async fn end_abandoned(&self, run: Run, end: RunEnd) -> Option<bool> {
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
    pub(super) async fn interrupt(&self, run: &Run, end: RunEnd) -> bool {
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
    pub(super) async fn resolved(&self, run_id: &str, id: &str, kind: &str, response: Value) {
        let (event, resolved) = resolved_event(id, kind, &response);
        let _ = self
            .journal
            .append(run_id, journal::event(resolved, event, None))
            .await;
        if let Some(active) = self.active().get(run_id).cloned() {
            active.waiters.deliver(id, response);
        }
    }
}
