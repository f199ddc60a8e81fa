//! The runner among other instances: leases renewed while runs go on, abandoned runs reaped,
//! commands from other instances carried out, follow-ups left waiting drained, shutdown.

use super::*;

/// The longest the upkeep waits between rounds (renewing leases, reaping, taking commands).
pub(super) const UPKEEP_INTERVAL: Duration = Duration::from_secs(10);

impl Runner {
    /// The time leases are reckoned by (the database's, when it is shared; this machine's
    /// should the database not answer).
    pub(super) async fn clock(&self) -> f64 {
        match self.store.clock().await {
            Ok(now) => now,
            Err(e) => {
                tracing::warn!("reading the database's clock failed: {e}");
                crate::clock::now()
            }
        }
    }

    /// A lease of this instance from `now` (by [`Runner::clock`]).
    pub(super) fn lease_from(&self, now: f64) -> Lease<'_> {
        Lease {
            instance: &self.instance,
            until: now + self.lease.as_secs_f64(),
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

    pub(super) async fn carry_out(&self, command: &Command) -> Value {
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
    pub(super) async fn release_leases(&self, ids: &[String]) {
        if ids.is_empty() || !self.store.engine().shared() {
            return;
        }
        let now = self.clock().await;
        if let Err(e) = self.store.renew_leases(&self.instance, ids, now).await {
            tracing::warn!("releasing leases failed: {e}");
        }
    }

    /// Starts the follow-ups waiting in sessions whose turn ended where no queue worker saw it.
    pub(super) async fn drain_idle_queues(&self) {
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

    pub(super) fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(std::sync::atomic::Ordering::SeqCst)
    }
}
