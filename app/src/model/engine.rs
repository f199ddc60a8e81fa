//! The turn engine: what applies a journal row or a live frame to a [`TurnState`] (the
//! anchor's registry, the display segments, the side channels). It is the largest piece of the
//! page's logic, and a page needs it only once it has a turn: a split browser build (feature
//! `split`) puts it in the turns' part (`components::turns`), which [`install`]s it when it
//! comes. Until then a turn holds what arrives, in order, and applies it then
//! ([`TurnState::catch_up`]). Other builds have it at once ([`now`]).

use anchor::{Applied, EventKind, Registry, RowChange, SourceEvent};
use serde_json::{json, Value};

use super::segments::{push_segment, str_of, Segment, SegmentKind};
pub use super::turn::Engine;
use super::turn::{ctx, ApprovalOption, Pending, TurnState};
use crate::api::JournalEvent;
use crate::api::TurnData;

/// The engine. In a split browser build only the turns' part calls this, so that the engine's
/// code goes into that part; the page then has it through [`install`] and [`now`].
pub fn build() -> Engine {
    Engine {
        journal: TurnState::absorb_journal,
        frame: TurnState::absorb_frame,
    }
}

#[cfg(all(feature = "hydrate", feature = "split"))]
thread_local! {
    static INSTALLED: std::cell::Cell<Option<Engine>> = const { std::cell::Cell::new(None) };
}

/// Makes `engine` (brought by the turns' part) the one [`now`] answers.
pub fn install(engine: Engine) {
    #[cfg(all(feature = "hydrate", feature = "split"))]
    INSTALLED.with(|e| e.set(Some(engine)));
    #[cfg(not(all(feature = "hydrate", feature = "split")))]
    let _ = engine;
}

/// The engine if it is here: in a split browser build once the turns' part has come, in
/// other builds always.
pub fn now() -> Option<Engine> {
    #[cfg(all(feature = "hydrate", feature = "split"))]
    return INSTALLED.with(std::cell::Cell::get);
    #[cfg(not(all(feature = "hydrate", feature = "split")))]
    Some(build())
}

impl TurnState {
    /// A turn rebuilt from its journal.
    pub fn new(session_id: &str, turn: &TurnData) -> Self {
        Self::with_engine(now(), session_id, turn)
    }

    /// Applies a journal row (from the page data); returns whether it was new.
    pub fn apply_journal(&mut self, event: &JournalEvent, context: &Value) -> bool {
        self.apply_journal_with(now(), event, context)
    }

    /// Applies a live SSE frame; returns whether it was new. Frames at or below the last seq
    /// were already applied (from the page data or before a reconnect) and change nothing.
    pub fn apply_frame(
        &mut self,
        kind: &str,
        data: &str,
        last_event_id: &str,
        session_id: &str,
    ) -> bool {
        self.apply_frame_with(now(), kind, data, last_event_id, session_id)
    }

    /// Applies a journal row the turn has not seen.
    fn absorb_journal(&mut self, event: &JournalEvent, context: &Value) {
        let input = json!({
            "event": event.kind,
            "event_id": format!("{}:{}", self.run_id, event.seq),
            "seq": event.seq,
            "run_id": self.run_id,
            "payload": event.payload,
        });
        self.absorb(&event.kind, &event.payload, event.seq, |r| {
            r.apply(&input, context)
        });
    }

    /// Applies a live frame the turn has not seen.
    fn absorb_frame(&mut self, kind: &str, data: &str, id: &str, seq: u64, session_id: &str) {
        let payload: Value = serde_json::from_str(data).unwrap_or(Value::Null);
        // The frame exactly as the browser got it: type, data, and its own id.
        let input = SourceEvent::live_frame(kind, data, Some(id));
        let context = ctx(session_id, &self.run_id);
        // Built from its parts, the frame is never a JSON object: a few percent less per token.
        self.absorb(kind, &payload, seq, |r| r.apply(&input, &context));
    }

    /// Counts the time the turn waits for the person: from the first request that waits for
    /// them to the moment none is left (answered, or the turn ended), at `at`.
    fn count_wait(&mut self, at: Option<f64>) {
        let Some(at) = at else { return };
        match (self.waiting_since, self.pending.is_empty()) {
            (None, false) => self.waiting_since = Some(at),
            (Some(since), true) => {
                self.waited += (at - since).max(0.0);
                self.waiting_since = None;
            }
            _ => {}
        }
    }

    fn absorb(
        &mut self,
        kind: &str,
        payload: &Value,
        seq: u64,
        apply: impl FnOnce(&mut Registry) -> Applied,
    ) {
        self.last_seq = seq;
        let at = payload.get("created_at").and_then(Value::as_f64);
        if let Some(at) = at {
            self.first_at.get_or_insert(at);
            self.last_at = Some(at);
        }
        let known = EventKind::parse(kind);
        match known {
            Some(EventKind::TodoState) => self.todos = Some(payload.clone()),
            Some(EventKind::ContextStatus) if str_of(payload, "status") == "trimmed" => {
                self.notices.left_out = Some(str_of(payload, "message")).filter(|m| !m.is_empty());
            }
            Some(EventKind::Done) => {
                self.notices.cut_off = payload
                    .get("cut_off")
                    .map(|c| str_of(c, "message"))
                    .filter(|m| !m.is_empty());
            }
            Some(EventKind::Approval) => self.pending.push(Pending::Approval {
                id: str_of(payload, "approval_id"),
                command: str_of(payload, "command"),
                description: str_of(payload, "description"),
                options: ApprovalOption::of(payload),
            }),
            Some(EventKind::Clarify) => self.pending.push(Pending::Clarify {
                id: str_of(payload, "clarify_id"),
                question: str_of(payload, "question"),
                choices: payload
                    .get("choices_offered")
                    .and_then(Value::as_array)
                    .map(|c| {
                        c.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
            }),
            Some(EventKind::ApprovalResolved | EventKind::ClarifyResolved) => {
                let approval = known == Some(EventKind::ApprovalResolved);
                let id = str_of(
                    payload,
                    if approval {
                        "approval_id"
                    } else {
                        "clarify_id"
                    },
                );
                let choice = str_of(payload, "choice");
                // What the card said the answer allows, when the card is here.
                let offered = self.pending.iter().find_map(|p| match p {
                    Pending::Approval {
                        id: asked, options, ..
                    } if *asked == id => options
                        .iter()
                        .find(|o| o.choice == choice)
                        .map(ApprovalOption::answered),
                    _ => None,
                });
                self.pending.retain(|p| p.id() != id);
                let answer = if approval {
                    offered.unwrap_or_else(|| match choice.as_str() {
                        "once" => "Allowed once".to_owned(),
                        "session" | "session_wide" => "Allowed in this conversation".to_owned(),
                        "always" | "always_wide" => "Allowed in every conversation".to_owned(),
                        "deny" => "Denied".to_owned(),
                        _ => String::new(),
                    })
                } else {
                    let response = str_of(payload, "response");
                    if response.trim().is_empty() {
                        "No answer".to_owned()
                    } else {
                        format!("Answered: {response}")
                    }
                };
                if !id.is_empty() && !answer.is_empty() {
                    self.answers.insert(id, answer);
                }
            }
            Some(EventKind::StreamEnd) => self.ended = true,
            None => self.unrecognised(kind, payload, seq),
            Some(_) => {}
        }
        let applied = apply(&mut self.registry);
        if self.registry.anchor().lifecycle.terminal_state.is_some() {
            self.pending.clear();
        }
        self.count_wait(at.or(self.last_at));
        if let Some(RowChange::Appended(i)) = applied.change.row {
            if let Some(row) = self.registry.row(i) {
                push_segment(&mut self.segments, &mut self.next_key, &row);
                // The answer's prose and the terminal note are not process; anything else
                // appended (or reasoning growing) is, and turns the prose before it into process.
                if self
                    .segments
                    .last()
                    .is_some_and(|s| !matches!(s.kind, SegmentKind::Prose | SegmentKind::Terminal))
                {
                    self.process_rev += 1;
                }
            }
        }
    }

    /// An event of a kind this build does not know (a newer server sent it): shown as a note
    /// in the turn's work instead of vanishing, so what the turn did is never silently lost.
    fn unrecognised(&mut self, kind: &str, payload: &Value, seq: u64) {
        let name: String = kind.chars().filter(|c| !c.is_control()).take(64).collect();
        self.segments.push(Segment {
            key: self.next_key,
            row_id: format!("{}:{seq}", self.run_id),
            kind: SegmentKind::Lifecycle,
            rev: 0,
            source: name.clone(),
            text: format!("This page does not know the event “{name}”: reload to update it."),
            status: Some("unrecognised".to_owned()),
            at: payload.get("created_at").and_then(Value::as_f64),
            tool: None,
            interaction: None,
            merging: false,
        });
        self.next_key += 1;
        self.process_rev += 1;
    }
}
