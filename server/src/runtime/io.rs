//! What an adapter can do while it runs a turn ([`RunIo`]): journal events in order, wait
//! for the user's answers, notice Stop. It also holds the turn to what one turn may stream
//! ([`TurnBudget`]): past a bound, the turn stops and ends as an error that says which bound,
//! keeping what streamed before it.

use anchor::EventKind;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::approvals::Approval;
use super::ApprovalChoice;
use crate::journal::{self, Journal, JournalError, Queued};
use crate::store::{Interaction, Store, TitleSource};

/// The run stopped (cancelled, or ended elsewhere); the adapter should return.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the run was stopped")]
pub struct Stopped;

/// Waiters for the user's answers, shared by a run and the HTTP handlers.
#[derive(Default)]
pub struct Waiters {
    pending: Mutex<HashMap<String, oneshot::Sender<Value>>>,
}

impl Waiters {
    fn register(&self, id: &str) -> oneshot::Receiver<Value> {
        let (tx, rx) = oneshot::channel();
        self.lock().insert(id.to_owned(), tx);
        rx
    }

    /// Delivers an answer to the waiting agent, if it still waits.
    pub fn deliver(&self, id: &str, answer: Value) {
        if let Some(tx) = self.lock().remove(id) {
            let _ = tx.send(answer);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Value>>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What an adapter can do while it runs a turn.
#[derive(Clone)]
pub struct RunIo {
    pub(crate) session_id: String,
    pub(crate) run_id: String,
    // The account the session belongs to (`None`: open mode); standing permissions are its.
    pub(crate) owner: Option<String>,
    pub(crate) journal: Journal,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) cancel: CancellationToken,
    pub(crate) waiters: Arc<Waiters>,
    // What was emitted and is not yet known to be committed, oldest first.
    pub(crate) pending: Arc<tokio::sync::Mutex<Pending>>,
    // What the turn has streamed, against what it may.
    pub(crate) budget: Arc<Mutex<TurnBudget>>,
}

/// The most events of one turn that wait to be committed at once.
pub const IN_FLIGHT: usize = 256;
/// The most bytes of events of one turn that wait to be committed at once.
pub const IN_FLIGHT_BYTES: usize = 2 << 20;
/// The longest answer one turn may stream, in bytes.
pub const MAX_ANSWER_BYTES: usize = 2 << 20;
/// The most reasoning one turn may stream, in bytes.
pub const MAX_REASONING_BYTES: usize = 2 << 20;
/// The most bytes one turn may journal in all (answer, reasoning, tools, everything).
pub const MAX_TURN_BYTES: usize = 64 << 20;
/// The most events one turn may journal.
pub const MAX_TURN_EVENTS: usize = 200_000;

/// Events emitted and not yet known to be committed, with the bytes they hold.
#[derive(Default)]
pub struct Pending {
    queue: VecDeque<(Queued, usize)>,
    bytes: usize,
}

impl Pending {
    fn pop(&mut self) -> Option<Queued> {
        let (queued, size) = self.queue.pop_front()?;
        self.bytes -= size;
        Some(queued)
    }
}

/// What a turn has streamed so far, and the bound it passed, once it has.
#[derive(Debug, Default)]
pub struct TurnBudget {
    answer: usize,
    reasoning: usize,
    bytes: usize,
    events: usize,
    exceeded: Option<String>,
    // When the turn began (`None`: not said), and how long after it its first token came.
    began: Option<std::time::Instant>,
    first_token: Option<std::time::Duration>,
}

impl TurnBudget {
    /// The budget of a turn that begins now.
    pub fn begun_now() -> Self {
        TurnBudget {
            began: Some(std::time::Instant::now()),
            ..TurnBudget::default()
        }
    }

    /// How long the turn has gone on.
    pub fn elapsed(&self) -> Option<std::time::Duration> {
        self.began.map(|b| b.elapsed())
    }

    /// How long after its beginning the turn's first token of answer came.
    pub fn first_token(&self) -> Option<std::time::Duration> {
        self.first_token
    }

    /// Counts an event of `size` bytes carrying `text` bytes of answer or reasoning; why the
    /// turn must stop, when it passes a bound.
    fn spend(&mut self, kind: EventKind, text: usize, size: usize) -> Result<(), ()> {
        if self.exceeded.is_some() {
            return Err(());
        }
        let mut over = |what: String| {
            self.exceeded = Some(what);
            Err(())
        };
        self.bytes += size;
        self.events += 1;
        if kind == EventKind::Token && self.first_token.is_none() {
            self.first_token = self.began.map(|b| b.elapsed());
        }
        match kind {
            EventKind::Token => self.answer += text,
            EventKind::Reasoning => self.reasoning += text,
            _ => {}
        }
        let mib = |n: usize| n >> 20;
        if self.answer > MAX_ANSWER_BYTES {
            return over(format!(
                "The answer passed {} MiB, the most one turn may stream.",
                mib(MAX_ANSWER_BYTES)
            ));
        }
        if self.reasoning > MAX_REASONING_BYTES {
            return over(format!(
                "The agent's reasoning passed {} MiB, the most one turn may stream.",
                mib(MAX_REASONING_BYTES)
            ));
        }
        if self.bytes > MAX_TURN_BYTES {
            return over(format!(
                "The turn passed {} MiB of events, the most one turn may journal.",
                mib(MAX_TURN_BYTES)
            ));
        }
        if self.events > MAX_TURN_EVENTS {
            return over(format!(
                "The turn passed {MAX_TURN_EVENTS} events, the most one turn may journal."
            ));
        }
        Ok(())
    }

    /// The bound the turn passed, if it did.
    pub fn exceeded(&self) -> Option<&str> {
        self.exceeded.as_deref()
    }

    /// The turn cannot go on for `why` (its journal cannot be written): said as its error,
    /// unless a bound said why first; nothing more is spent.
    pub fn stop(&mut self, why: String) {
        self.exceeded.get_or_insert(why);
    }
}

/// What a turn whose journal cannot be written says, by why (`e`).
pub fn unsaved(e: &crate::store::StoreError) -> String {
    if e.disk_full() {
        "The server could not save this turn: the disk is full.".to_owned()
    } else if e.unreachable() {
        "The server could not save this turn: its database could not be reached.".to_owned()
    } else {
        "The server could not save this turn.".to_owned()
    }
}

/// The bytes of answer or reasoning an event carries, and about the bytes it will take in
/// the journal.
fn event_size(kind: EventKind, payload: &Value) -> (usize, usize) {
    match kind {
        EventKind::Token | EventKind::Reasoning => {
            let text = payload["text"].as_str().map_or(0, str::len);
            (text, text + 64)
        }
        _ => (0, serde_json::to_vec(payload).map_or(0, |v| v.len())),
    }
}

impl RunIo {
    /// Journals an event of the turn, in order after the ones before it. It returns once the
    /// event is queued, not committed, so that an agent streaming faster than one commit per
    /// token is not slowed to it: what it queues meanwhile is committed together. At most
    /// [`IN_FLIGHT`] events ([`IN_FLIGHT_BYTES`]) wait; a refused one (the run ended, the
    /// store failed) stops the turn at a later call or at [`RunIo::flush`]. So does an event
    /// past what one turn may stream (see [`TurnBudget`]).
    pub async fn emit(&self, kind: EventKind, payload: Value) -> Result<(), Stopped> {
        if self.cancel.is_cancelled() {
            return Err(Stopped);
        }
        let (text, size) = event_size(kind, &payload);
        if self.lock_budget().spend(kind, text, size).is_err() {
            return Err(Stopped);
        }
        let title = (kind == EventKind::Title)
            .then(|| payload["title"].as_str().map(str::trim).map(str::to_owned))
            .flatten()
            .filter(|t| !t.is_empty());
        let mut pending = self.pending.lock().await;
        while let Some((front, _)) = pending.queue.front_mut() {
            let Some(outcome) = front.try_outcome() else {
                break;
            };
            pending.pop();
            self.check(outcome)?;
        }
        while pending.queue.len() >= IN_FLIGHT
            || (pending.bytes + size > IN_FLIGHT_BYTES && !pending.queue.is_empty())
        {
            if let Some(oldest) = pending.pop() {
                self.check(oldest.outcome().await)?;
            }
        }
        let queued = self
            .journal
            .enqueue(&self.run_id, journal::event(kind, payload, None))
            .await;
        pending
            .queue
            .push_back((queued.map_err(|e| self.stopped_by(e))?, size));
        pending.bytes += size;
        if let Some(title) = title {
            while let Some(queued) = pending.pop() {
                self.check(queued.outcome().await)?;
            }
            // The agent's title replaces a default or prompt title, never the user's.
            let _ = self
                .store
                .rename_session(
                    &self.session_id,
                    &title,
                    TitleSource::Agent,
                    crate::clock::now(),
                )
                .await;
        }
        Ok(())
    }

    /// Waits until everything emitted so far is committed.
    pub async fn flush(&self) -> Result<(), Stopped> {
        let mut pending = self.pending.lock().await;
        while let Some(queued) = pending.pop() {
            self.check(queued.outcome().await)?;
        }
        Ok(())
    }

    fn lock_budget(&self) -> std::sync::MutexGuard<'_, TurnBudget> {
        self.budget.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn check(&self, outcome: Result<(), JournalError>) -> Result<(), Stopped> {
        outcome.map_err(|e| self.stopped_by(e))
    }

    fn stopped_by(&self, e: JournalError) -> Stopped {
        if let JournalError::Store(e) = &e {
            tracing::error!(run_id = %self.run_id, "journal append failed: {e}");
            // The turn ends saying why, once a write works again (see `Runner::settle`).
            self.lock_budget().stop(unsaved(e));
        }
        Stopped
    }

    /// Waits, unless the run is stopped first.
    pub async fn sleep(&self, duration: Duration) -> Result<(), Stopped> {
        tokio::select! {
            () = tokio::time::sleep(duration) => Ok(()),
            () = self.cancel.cancelled() => Err(Stopped),
        }
    }

    /// Whether the run was stopped.
    pub fn is_stopped(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Resolves when the run is stopped.
    pub async fn stopped(&self) {
        self.cancel.cancelled().await;
    }

    /// `work`'s output, or [`Stopped`] as soon as the run is stopped (dropping `work`, which
    /// aborts an upstream request in flight).
    pub async fn unless_stopped<F: std::future::Future>(
        &self,
        work: F,
    ) -> Result<F::Output, Stopped> {
        tokio::select! {
            out = work => Ok(out),
            () = self.cancel.cancelled() => Err(Stopped),
        }
    }

    async fn ask(&self, kind: EventKind, id: String, payload: Value) -> Result<Value, Stopped> {
        let interaction = Interaction {
            run_id: self.run_id.clone(),
            id: id.clone(),
            kind: kind.name().to_owned(),
            status: "pending".into(),
            request: payload.clone(),
            response: None,
        };
        self.store
            .open_interaction(&interaction)
            .await
            .map_err(|_| Stopped)?;
        let answer = self.waiters.register(&id);
        self.emit(kind, payload).await?;
        // Asked only once the person can see the question.
        self.flush().await?;
        tokio::select! {
            answer = answer => answer.map_err(|_| Stopped),
            () = self.cancel.cancelled() => Err(Stopped),
        }
    }

    /// Whether a standing permission covers `approval` in this run's session: `Session` or
    /// `Always` (how it was given), `None` to ask.
    pub async fn permitted(&self, approval: &Approval) -> Option<ApprovalChoice> {
        match self
            .store
            .granted(
                self.owner.as_deref(),
                &self.session_id,
                &approval.covered_by,
            )
            .await
        {
            Ok(Some("always")) => Some(ApprovalChoice::Always),
            Ok(Some(_)) => Some(ApprovalChoice::Session),
            Ok(None) => None,
            Err(e) => {
                // Asking again is the safe side.
                tracing::warn!(run_id = %self.run_id, "reading grants failed: {e}");
                None
            }
        }
    }

    /// Asks the user to approve an action and waits for the answer. A standing permission
    /// the answer gives is kept exactly as the card offered it (its pattern and scope: see
    /// [`Approval::offers`]; Settings lists and revokes them); an answer the card did not
    /// offer allows nothing.
    pub async fn ask_approval(&self, approval: &Approval) -> Result<ApprovalChoice, Stopped> {
        let id = format!("apr-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let answer = self
            .ask(EventKind::Approval, id.clone(), approval.payload(&id))
            .await?;
        let choice =
            serde_json::from_value(answer["choice"].clone()).unwrap_or(ApprovalChoice::Deny);
        let Some(offer) = approval.offer(choice) else {
            return Ok(ApprovalChoice::Deny);
        };
        if let Some((pattern, everywhere)) = offer.grant {
            let session = (!everywhere).then_some(self.session_id.as_str());
            if let Err(e) = self
                .store
                .add_grant(
                    self.owner.as_deref(),
                    session,
                    &pattern,
                    crate::clock::now(),
                )
                .await
            {
                tracing::warn!(run_id = %self.run_id, "keeping a grant failed: {e}");
            }
        }
        Ok(choice)
    }

    /// Asks the user a question (with optional choices) and waits for the answer.
    pub async fn ask_clarify(&self, question: &str, choices: &[&str]) -> Result<String, Stopped> {
        let id = format!("clr-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let payload = json!({
            "clarify_id": id,
            "question": question,
            "choices_offered": choices,
            "kind": "clarify",
            "status": "pending",
        });
        let answer = self.ask(EventKind::Clarify, id, payload).await?;
        Ok(answer["response"].as_str().unwrap_or_default().to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_is_held_to_what_it_may_stream_and_says_which_bound() {
        let mut budget = TurnBudget::default();
        // A long answer of small tokens counts its text, not what the journal adds to each.
        for _ in 0..(MAX_ANSWER_BYTES / 64) {
            assert!(budget.spend(EventKind::Token, 64, 64 + 64).is_ok());
        }
        assert_eq!(budget.exceeded(), None);
        assert!(budget.spend(EventKind::Token, 1, 65).is_err());
        let said = budget.exceeded().unwrap().to_owned();
        assert!(said.contains("answer") && said.contains("2 MiB"), "{said}");
        // Once over, everything after is refused and the first reason stays.
        assert!(budget.spend(EventKind::Tool, 0, 10).is_err());
        assert_eq!(budget.exceeded(), Some(said.as_str()));

        let mut budget = TurnBudget::default();
        assert!(budget
            .spend(EventKind::Reasoning, MAX_REASONING_BYTES + 1, 0)
            .is_err());
        assert!(budget.exceeded().unwrap().contains("reasoning"));

        let mut budget = TurnBudget::default();
        for _ in 0..MAX_TURN_EVENTS {
            assert!(budget.spend(EventKind::Tool, 0, 1).is_ok());
        }
        assert!(budget.spend(EventKind::Tool, 0, 1).is_err());
        assert!(budget.exceeded().unwrap().contains("events"));

        let mut budget = TurnBudget::default();
        assert!(budget
            .spend(EventKind::Tool, 0, MAX_TURN_BYTES + 1)
            .is_err());
        assert!(budget.exceeded().unwrap().contains("64 MiB"));
    }
}
