//! `TurnState`: a turn as the page holds it, fed by journal rows and live frames alike; its
//! answer, its ending, and the side channels the anchor leaves out (todos, open requests).

use anchor::{EventKind, Kind, Mode, Registry, Seed, TerminalState};
use serde_json::{json, Value};

use super::segments::{Segment, SegmentKind};
use super::worklog::step_count;
use crate::api::{JournalEvent, TurnData, TurnNotices, TurnSnapshot};

/// An approval or clarify request waiting for the user.
#[derive(Clone, Debug, PartialEq)]
pub enum Pending {
    /// Approve or deny an action.
    Approval {
        /// Its id.
        id: String,
        /// The command to run.
        command: String,
        /// What it does.
        description: String,
        /// The answers offered, narrowest first, each saying what it allows.
        options: Vec<ApprovalOption>,
    },
    /// Answer a question.
    Clarify {
        /// Its id.
        id: String,
        /// The question.
        question: String,
        /// Offered answers.
        choices: Vec<String>,
    },
}

/// One answer an approval offers: what it sends, and what its button says it allows.
#[derive(Clone, Debug, PartialEq)]
pub struct ApprovalOption {
    /// `once`, `session`, `session_wide`, `always`, `always_wide` or `deny`.
    pub choice: String,
    /// "Allow `rm -rf target/` in this conversation".
    pub label: String,
}

impl ApprovalOption {
    /// The answers of an approval's payload: its `options`, or (a request journaled before
    /// they were) its `choices` in general words.
    pub fn of(payload: &serde_json::Value) -> Vec<ApprovalOption> {
        let text =
            |v: &serde_json::Value, key: &str| v[key].as_str().unwrap_or_default().to_owned();
        if let Some(options) = payload["options"].as_array() {
            return options
                .iter()
                .map(|o| ApprovalOption {
                    choice: text(o, "choice"),
                    label: text(o, "label"),
                })
                .filter(|o| !o.choice.is_empty() && !o.label.is_empty())
                .collect();
        }
        let choices: Vec<&str> = payload["choices"]
            .as_array()
            .map(|c| c.iter().filter_map(serde_json::Value::as_str).collect())
            .unwrap_or_else(|| vec!["once", "deny"]);
        choices
            .into_iter()
            .map(|choice| ApprovalOption {
                choice: choice.to_owned(),
                label: match choice {
                    "once" => "Allow once",
                    "session" | "session_wide" => "Allow in this conversation",
                    "always" | "always_wide" => "Allow in every conversation",
                    "deny" => "Deny",
                    other => other,
                }
                .to_owned(),
            })
            .collect()
    }

    /// What the answer it gave says once given ("Allowed x in this conversation").
    pub fn answered(&self) -> String {
        let label = self.label.replace('`', "");
        match label.strip_prefix("Allow ") {
            Some(rest) => format!("Allowed {rest}"),
            None if self.choice == "deny" => "Denied".to_owned(),
            None => label,
        }
    }
}

impl Pending {
    /// Its id.
    pub fn id(&self) -> &str {
        match self {
            Pending::Approval { id, .. } | Pending::Clarify { id, .. } => id,
        }
    }
}

/// One assistant turn on the page.
#[derive(Clone, Debug)]
pub struct TurnState {
    /// The anchor.
    pub registry: Registry,
    /// The run.
    pub run_id: String,
    /// The highest journal seq applied.
    pub last_seq: u64,
    /// Display segments, in acceptance order.
    pub segments: Vec<Segment>,
    /// The latest todo list.
    pub todos: Option<Value>,
    /// What the turn says beside its answer: earlier context left out, the answer cut off.
    pub notices: TurnNotices,
    /// Requests waiting for the user.
    pub pending: Vec<Pending>,
    /// `stream_end` was seen: nothing more will come.
    pub ended: bool,
    /// When the first and the last event happened.
    pub first_at: Option<f64>,
    /// When the last event happened.
    pub last_at: Option<f64>,
    /// Seconds the turn waited for the person (an approval, a question): not the agent's time.
    pub waited: f64,
    /// Since when it waits for the person, while it does.
    pub(super) waiting_since: Option<f64>,
    /// How the user answered each approval or question, by its id ("Allowed once", …).
    pub answers: std::collections::HashMap<String, String>,
    /// Bumped whenever [`TurnState::process`] may have changed: not by the answer's tokens, so
    /// what is derived from the process (the worklog, the stream) is not redone per token.
    pub process_rev: u64,
    pub(super) next_key: u64,
    /// A settled turn loaded as its snapshot: what it shows until its rows are loaded (the
    /// registry and the segments are empty meanwhile).
    folded: Option<Box<TurnSnapshot>>,
    /// What came while the engine was missing, in order (see [`engine`](super::engine)).
    held: Vec<Held>,
}

pub(super) fn ctx(session_id: &str, run_id: &str) -> Value {
    json!({"session_id": session_id, "stream_id": run_id})
}

/// What applies rows and frames to a turn: the functions of [`super::engine`], which a split
/// browser build fetches with the turns' part.
#[derive(Clone, Copy)]
pub struct Engine {
    pub(super) journal: fn(&mut TurnState, &JournalEvent, &Value),
    pub(super) frame: fn(&mut TurnState, &str, &str, &str, u64, &str),
}

impl Engine {
    /// Applies a journal row, new to the turn.
    fn journal(self, state: &mut TurnState, event: &JournalEvent, context: &Value) {
        (self.journal)(state, event, context)
    }

    /// Applies a live frame (its type, data and id; `seq` read from the id), new to the turn.
    fn frame(
        self,
        state: &mut TurnState,
        kind: &str,
        data: &str,
        id: &str,
        seq: u64,
        session_id: &str,
    ) {
        (self.frame)(state, kind, data, id, seq, session_id)
    }
}

/// A row or a frame that came before the engine, kept as it came.
#[derive(Clone, Debug)]
enum Held {
    /// A journal row, with the context it is applied in.
    Journal { event: JournalEvent, context: Value },
    /// A live frame.
    Frame {
        kind: String,
        data: String,
        id: String,
        seq: u64,
        session_id: String,
    },
}

/// How a turn's answer stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnswerState {
    /// The turn runs; the answer is taking shape.
    Streaming,
    /// The turn completed and its final answer is settled.
    Final,
    /// The turn completed; its settled message is on its way.
    Settling,
    /// The turn ended some other way (stopped, failed, interrupted): what was streamed stays,
    /// marked as partial.
    Partial,
}

impl AnswerState {
    /// The `data-final-answer` value.
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerState::Streaming | AnswerState::Settling => "streaming",
            AnswerState::Final => "true",
            AnswerState::Partial => "partial",
        }
    }
}

impl TurnState {
    /// A turn rebuilt from its journal with this engine (see [`TurnState::new`]).
    pub(crate) fn with_engine(engine: Option<Engine>, session_id: &str, turn: &TurnData) -> Self {
        let registry = Registry::new(
            &Seed::new(session_id)
                .turn(turn.turn_id.clone())
                .run(turn.run_id.clone())
                .stream(turn.run_id.clone()),
        )
        .expect("a session id is never empty");
        let mut state = TurnState {
            registry,
            run_id: turn.run_id.clone(),
            last_seq: 0,
            segments: Vec::new(),
            todos: None,
            notices: TurnNotices::default(),
            pending: Vec::new(),
            ended: false,
            first_at: None,
            last_at: None,
            waited: 0.0,
            waiting_since: None,
            answers: std::collections::HashMap::new(),
            process_rev: 0,
            next_key: 0,
            folded: None,
            held: Vec::new(),
        };
        if let Some(snapshot) = &turn.snapshot {
            state.last_seq = snapshot.last_seq;
            (state.first_at, state.last_at) = snapshot.span;
            state.waited = snapshot.waited;
            state.ended = true;
            state.folded = Some(Box::new(snapshot.clone()));
            return state;
        }
        let context = ctx(session_id, &turn.run_id);
        for event in &turn.events {
            state.apply_journal_with(engine, event, &context);
        }
        state
    }

    /// [`TurnState::apply_journal`] with this engine (`None`: it has not come yet, and the row
    /// is held until it does).
    pub(crate) fn apply_journal_with(
        &mut self,
        engine: Option<Engine>,
        event: &JournalEvent,
        context: &Value,
    ) -> bool {
        if event.seq <= self.last_seq {
            return false;
        }
        match self.ready(engine) {
            Some(engine) => engine.journal(self, event, context),
            None => self.hold(
                event.seq,
                &event.kind,
                Held::Journal {
                    event: event.clone(),
                    context: context.clone(),
                },
            ),
        }
        true
    }

    /// [`TurnState::apply_frame`] with this engine (`None`: it has not come yet, and the
    /// frame is held until it does).
    pub(crate) fn apply_frame_with(
        &mut self,
        engine: Option<Engine>,
        kind: &str,
        data: &str,
        last_event_id: &str,
        session_id: &str,
    ) -> bool {
        let Some(seq) = last_event_id.rsplit_once(':').and_then(|(run, seq)| {
            (run == self.run_id)
                .then(|| seq.parse::<u64>().ok())
                .flatten()
        }) else {
            return false;
        };
        if seq <= self.last_seq {
            return false;
        }
        match self.ready(engine) {
            Some(engine) => engine.frame(self, kind, data, last_event_id, seq, session_id),
            None => self.hold(
                seq,
                kind,
                Held::Frame {
                    kind: kind.to_owned(),
                    data: data.to_owned(),
                    id: last_event_id.to_owned(),
                    seq,
                    session_id: session_id.to_owned(),
                },
            ),
        }
        true
    }

    /// Rows or frames wait for the engine: the turn shows them once [`TurnState::catch_up`]
    /// has applied them.
    pub fn holds(&self) -> bool {
        !self.held.is_empty()
    }

    /// Applies, in the order they came, the rows and frames held while the engine was missing.
    pub fn catch_up(&mut self, engine: Engine) {
        for held in std::mem::take(&mut self.held) {
            match held {
                Held::Journal { event, context } => engine.journal(self, &event, &context),
                Held::Frame {
                    kind,
                    data,
                    id,
                    seq,
                    session_id,
                } => engine.frame(self, &kind, &data, &id, seq, &session_id),
            }
        }
    }

    /// The engine, once what was held before it came is applied.
    fn ready(&mut self, engine: Option<Engine>) -> Option<Engine> {
        let engine = engine?;
        if self.holds() {
            self.catch_up(engine);
        }
        Some(engine)
    }

    /// Keeps what the engine must apply once it comes. What the page does before (resume
    /// after `seq`, stop following once the stream ended) is known now.
    fn hold(&mut self, seq: u64, kind: &str, held: Held) {
        self.last_seq = seq;
        if EventKind::parse(kind) == Some(EventKind::StreamEnd) {
            self.ended = true;
        }
        self.held.push(held);
    }
}

impl TurnState {
    /// The settled final answer (`""` until there is one).
    pub fn final_answer(&self) -> &str {
        match &self.folded {
            Some(s) if s.settled => &s.answer,
            Some(_) => "",
            None => &self.registry.anchor().content.final_answer,
        }
    }

    /// How the turn ended, once it has.
    pub fn terminal_state(&self) -> Option<TerminalState> {
        match &self.folded {
            Some(s) => s.terminal,
            None => self.registry.anchor().lifecycle.terminal_state,
        }
    }

    /// The row count of the anchor's scene.
    pub fn row_count(&self) -> usize {
        match &self.folded {
            Some(s) => s.rows,
            None => self.registry.row_count(),
        }
    }

    /// The turn shows its snapshot: its rows (the steps, the stream) are not loaded.
    pub fn needs_rows(&self) -> bool {
        self.folded.is_some()
    }

    /// How many steps the worklog lists (see [`step_count`]).
    pub fn steps(&self) -> usize {
        match &self.folded {
            Some(s) => s.steps,
            None => step_count(&self.process()),
        }
    }

    /// The stream's rows and how many of them are tool calls.
    pub fn stream_counts(&self) -> (usize, usize) {
        match &self.folded {
            Some(s) => s.stream,
            None => (
                self.process().len(),
                self.segments
                    .iter()
                    .filter(|seg| seg.kind == SegmentKind::ToolStart)
                    .count(),
            ),
        }
    }

    /// The input and output tokens the turn reported.
    pub fn usage_tokens(&self) -> Option<(u64, u64)> {
        if let Some(s) = &self.folded {
            return s.usage;
        }
        let usage = self.registry.anchor().usage.as_ref()?;
        let input = usage.get("input_tokens")?.as_u64()?;
        let output = usage.get("output_tokens")?.as_u64()?;
        Some((input, output))
    }

    /// What the terminal note says, and its hint (for the card of a turn that did not
    /// complete).
    pub fn terminal_note(&self) -> (String, String) {
        if let Some(s) = &self.folded {
            return s.note.clone();
        }
        let message = self
            .segments
            .iter()
            .rev()
            .find(|seg| seg.kind == SegmentKind::Terminal)
            .map(|n| n.text.clone())
            .unwrap_or_default();
        let hint = self
            .registry
            .anchor()
            .activity_events
            .iter()
            .rev()
            .find(|e| e.kind == Some(Kind::TerminalStatus))
            .and_then(|e| e.payload.get("hint").and_then(Value::as_str))
            .unwrap_or_default()
            .to_owned();
        (message, hint)
    }

    /// What the turn says beside its answer.
    pub fn notices(&self) -> TurnNotices {
        match &self.folded {
            Some(s) => s.notices.clone(),
            None => self.notices.clone(),
        }
    }

    /// What a settled turn shows folded, to stand for its journal in page data (`None` while
    /// it runs). A turn made from it shows the same as this one, until its rows are loaded.
    pub fn snapshot(&self) -> Option<TurnSnapshot> {
        if let Some(s) = &self.folded {
            return Some((**s).clone());
        }
        let terminal = self.terminal_state()?;
        let settled = !self.final_answer().is_empty();
        Some(TurnSnapshot {
            answer: self.answer_text(),
            settled,
            terminal: Some(terminal),
            note: self.terminal_note(),
            usage: self.usage_tokens(),
            steps: self.steps(),
            stream: self.stream_counts(),
            rows: self.row_count(),
            last_seq: self.last_seq,
            span: (self.first_at, self.last_at),
            waited: self.waited,
            notices: self.notices.clone(),
            artifacts: self.artifacts(),
        })
    }

    /// The files the turn made, in the order it said so.
    pub fn artifacts(&self) -> Vec<crate::api::ArtifactRef> {
        if let Some(s) = &self.folded {
            return s.artifacts.clone();
        }
        let text = |e: &anchor::AnchorEvent, key: &str| {
            e.payload
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        self.registry
            .anchor()
            .artifacts
            .iter()
            .filter_map(|e| {
                let path = text(e, "path");
                (!path.is_empty()).then(|| crate::api::ArtifactRef {
                    action: text(e, "action"),
                    seq: e
                        .seq
                        .as_ref()
                        .and_then(anchor::Seq::as_u64)
                        .unwrap_or_default(),
                    handed_over: e.payload.get("content").is_some_and(Value::is_string),
                    path,
                })
            })
            .collect()
    }

    /// The agent's seconds: between the first and the last event, less the time the turn
    /// waited for the person ([`TurnState::waited`]).
    pub fn elapsed(&self) -> Option<f64> {
        Some(self.last_at? - self.first_at? - self.waited).filter(|e| *e >= 0.0)
    }

    /// Indices of the segments that stream the answer: the prose after the last segment that
    /// breaks it (see [`anchor::answer::breaks_answer`]), with a trailing terminal note left out.
    pub fn answer_stream(&self) -> std::ops::Range<usize> {
        let end = self
            .segments
            .iter()
            .rposition(|s| s.kind != SegmentKind::Terminal)
            .map_or(0, |i| i + 1);
        let start = self.segments[..end]
            .iter()
            .rposition(|s| s.kind != SegmentKind::Prose)
            .map_or(0, |i| i + 1);
        start..end
    }

    /// The answer as shown: the settled final answer once there is one, else the prose the
    /// turn has streamed as its answer so far (see [`anchor::answer::answer_tail`]: the server stores the same
    /// text as the partial answer of a turn that did not complete).
    pub fn answer_text(&self) -> String {
        if let Some(s) = &self.folded {
            return s.answer.clone();
        }
        let settled = self.final_answer();
        if !settled.is_empty() {
            return settled.to_owned();
        }
        anchor::answer::join_prose(
            self.segments[self.answer_stream()]
                .iter()
                .filter(|s| s.kind == SegmentKind::Prose)
                .map(|s| (s.source.as_str(), s.text.as_str())),
        )
    }

    /// How the answer stands.
    pub fn answer_state(&self) -> AnswerState {
        match self.terminal_state() {
            None => AnswerState::Streaming,
            Some(TerminalState::Completed) if self.final_answer().is_empty() => {
                AnswerState::Settling
            }
            Some(TerminalState::Completed) => AnswerState::Final,
            Some(_) => AnswerState::Partial,
        }
    }

    /// Segments that show as process (the worklog), in order: everything but the terminal note
    /// and the answer stream, which the answer shows whatever the turn's ending.
    pub fn process(&self) -> Vec<&Segment> {
        let hide = self.answer_stream();
        self.segments
            .iter()
            .enumerate()
            .filter(|(i, s)| !hide.contains(i) && s.kind != SegmentKind::Terminal)
            .map(|(_, s)| s)
            .collect()
    }

    /// The scene in a display mode (for diagnostics and tests).
    pub fn scene_json(&self, mode: Mode) -> Value {
        serde_json::to_value(self.registry.scene(mode)).unwrap_or(Value::Null)
    }
}
