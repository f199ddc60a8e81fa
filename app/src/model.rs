//! A turn as the page holds it: the anchor, fed by journal rows and live frames alike, plus the
//! display segments derived from it incrementally and the side channels the anchor leaves out
//! (todos, open approval and clarify requests).
//!
//! Nothing here touches the DOM, so it is tested natively and behaves the same on the server
//! and in the browser.

use anchor::{
    ActivityRow, Applied, EventKind, Kind, Mode, Registry, RowChange, Seed, SourceEvent,
    TerminalState,
};
use serde_json::{json, Value};

use crate::api::{JournalEvent, TurnData, TurnNotices, TurnSnapshot};

/// How a segment reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SegmentKind {
    /// Prose written while working (token deltas merged, or one interim message).
    Prose,
    /// Reasoning (deltas merged).
    Thinking,
    /// A tool call started.
    ToolStart,
    /// A tool call reported progress.
    ToolUpdate,
    /// A tool call finished.
    ToolDone,
    /// Compression and similar notes.
    Lifecycle,
    /// An approval, clarification or other hand-over.
    Control,
    /// The end of the turn.
    Terminal,
}

/// A tool call as a segment shows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolInfo {
    /// The tool's name.
    pub name: String,
    /// The call id.
    pub call_id: String,
    /// The arguments, as pretty JSON.
    pub args: String,
    /// A one-line summary of the arguments (the command, the path, …).
    pub target: String,
    /// The result snippet.
    pub result: String,
    /// The call failed.
    pub is_error: bool,
}

/// One display unit: a row of the scene, or consecutive prose/reasoning deltas merged.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    /// Stable display key (creation order within the turn).
    pub key: u64,
    /// The scene row id of its first row.
    pub row_id: String,
    /// What it is.
    pub kind: SegmentKind,
    /// Bumped on every change.
    pub rev: u32,
    /// The source event type of its first row.
    pub source: String,
    /// Its text (merged prose or reasoning; a note's message).
    pub text: String,
    /// The row's status.
    pub status: Option<String>,
    /// When it happened (seconds since the epoch).
    pub at: Option<f64>,
    /// Tool details, for tool segments.
    pub tool: Option<ToolInfo>,
    /// The approval or clarify id, for those control rows.
    pub interaction: Option<String>,
    // The source row kept merging (token deltas) rather than standing alone.
    merging: bool,
}

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
    /// How the user answered each approval or question, by its id ("Allowed once", …).
    pub answers: std::collections::HashMap<String, String>,
    /// Bumped whenever [`TurnState::process`] may have changed: not by the answer's tokens, so
    /// what is derived from the process (the worklog, the stream) is not redone per token.
    pub process_rev: u64,
    next_key: u64,
    /// A settled turn loaded as its snapshot: what it shows until its rows are loaded (the
    /// registry and the segments are empty meanwhile).
    folded: Option<Box<TurnSnapshot>>,
}

fn ctx(session_id: &str, run_id: &str) -> Value {
    json!({"session_id": session_id, "stream_id": run_id})
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A short description of what a tool call acts on.
fn target_of(args: &Value) -> String {
    let pick = ["command", "path", "pattern", "query", "url", "file"];
    let text = match args {
        Value::Object(map) => pick
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_str))
            .map(str::to_owned)
            .or_else(|| map.values().find_map(Value::as_str).map(str::to_owned))
            .unwrap_or_default(),
        Value::String(s) => s.clone(),
        _ => String::new(),
    };
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > 120 {
        line.chars().take(117).collect::<String>() + "..."
    } else {
        line.to_owned()
    }
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
    /// A turn rebuilt from its journal.
    pub fn new(session_id: &str, turn: &TurnData) -> Self {
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
            answers: std::collections::HashMap::new(),
            process_rev: 0,
            next_key: 0,
            folded: None,
        };
        if let Some(snapshot) = &turn.snapshot {
            state.last_seq = snapshot.last_seq;
            (state.first_at, state.last_at) = snapshot.span;
            state.ended = true;
            state.folded = Some(Box::new(snapshot.clone()));
            return state;
        }
        let context = ctx(session_id, &turn.run_id);
        for event in &turn.events {
            state.apply_journal(event, &context);
        }
        state
    }

    /// Applies a journal row (from the page data).
    pub fn apply_journal(&mut self, event: &JournalEvent, context: &Value) -> bool {
        if event.seq <= self.last_seq {
            return false;
        }
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
        true
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
        let payload: Value = serde_json::from_str(data).unwrap_or(Value::Null);
        // The frame exactly as the browser got it: type, data, and its own id.
        let input = SourceEvent::live_frame(kind, data, Some(last_event_id));
        let context = ctx(session_id, &self.run_id);
        // Built from its parts, the frame is never a JSON object: a few percent less per token.
        self.absorb(kind, &payload, seq, |r| r.apply(&input, &context));
        true
    }

    fn absorb(
        &mut self,
        kind: &str,
        payload: &Value,
        seq: u64,
        apply: impl FnOnce(&mut Registry) -> Applied,
    ) {
        self.last_seq = seq;
        if let Some(at) = payload.get("created_at").and_then(Value::as_f64) {
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
                self.pending.retain(|p| p.id() != id);
                let answer = if approval {
                    match str_of(payload, "choice").as_str() {
                        "once" => "Allowed once".to_owned(),
                        "session" => "Allowed for this session".to_owned(),
                        "always" => "Always allowed".to_owned(),
                        "deny" => "Denied".to_owned(),
                        _ => String::new(),
                    }
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

/// Appends one new scene row to the segment list, merging consecutive token/reasoning deltas.
fn push_segment(segments: &mut Vec<Segment>, next_key: &mut u64, row: &ActivityRow<'_>) {
    {
        let source = row.source_event_type().unwrap_or("").to_owned();
        let at = row.created_at().and_then(Value::as_f64);
        let kind = match row.kind() {
            Some(Kind::ProcessProse) => SegmentKind::Prose,
            Some(Kind::Reasoning) => SegmentKind::Thinking,
            Some(Kind::ToolStarted) => SegmentKind::ToolStart,
            Some(Kind::ToolUpdated) => SegmentKind::ToolUpdate,
            Some(Kind::ToolCompleted) => SegmentKind::ToolDone,
            Some(Kind::LifecycleStatus) => SegmentKind::Lifecycle,
            Some(Kind::ControlBoundary) => SegmentKind::Control,
            Some(Kind::TerminalStatus) => SegmentKind::Terminal,
            _ => SegmentKind::Lifecycle,
        };
        let deltas = matches!(
            EventKind::parse(&source),
            Some(EventKind::Token | EventKind::Reasoning)
        );
        if deltas {
            if let Some(last) = segments.last_mut() {
                if last.kind == kind && last.merging {
                    last.text.push_str(row.text());
                    last.rev += 1;
                    return;
                }
            }
        }
        let payload = row.payload();
        let text = match kind {
            SegmentKind::Thinking => row
                .thinking()
                .map(|t| t.text.into_owned())
                .unwrap_or_default(),
            SegmentKind::Control => {
                let q = payload
                    .get("question")
                    .or_else(|| payload.get("description"))
                    .and_then(Value::as_str);
                q.map(str::to_owned)
                    .unwrap_or_else(|| row.text().to_owned())
            }
            _ => row.text().to_owned(),
        };
        let tool = row.tool().map(|t| {
            let args = t.args();
            ToolInfo {
                name: t.name.to_owned(),
                call_id: t.id.as_deref().unwrap_or("").to_owned(),
                args: serde_json::to_string_pretty(args).unwrap_or_default(),
                target: target_of(args),
                result: if kind == SegmentKind::ToolDone {
                    let s = t.snippet.to_string();
                    if s.is_empty() {
                        t.preview.to_string()
                    } else {
                        s
                    }
                } else {
                    String::new()
                },
                is_error: t.is_error,
            }
        });
        segments.push(Segment {
            key: *next_key,
            row_id: row.row_id().to_string(),
            kind,
            rev: 0,
            source,
            text,
            status: row.status().map(str::to_owned),
            at,
            tool,
            interaction: ["approval_id", "clarify_id"]
                .iter()
                .find_map(|k| payload.get(*k).and_then(Value::as_str))
                .filter(|_| kind == SegmentKind::Control)
                .map(str::to_owned),
            merging: deltas,
        });
        *next_key += 1;
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
            notices: self.notices.clone(),
        })
    }

    /// Seconds between the first and the last event.
    pub fn elapsed(&self) -> Option<f64> {
        Some(self.last_at? - self.first_at?).filter(|e| *e >= 0.0)
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

/// An item of the Compact Worklog: a segment, or a tool call's start and end folded together.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkItem {
    /// Prose, reasoning or a note.
    Segment(Segment),
    /// A tool call: its start, and its end once it has one.
    Tool {
        /// The start (or the end, for a completion without a start).
        first: Segment,
        /// The end (boxed: most items are plain segments).
        done: Option<Box<Segment>>,
    },
}

impl WorkItem {
    /// A stable display key.
    pub fn key(&self) -> (u64, u32) {
        match self {
            WorkItem::Segment(s) => (s.key, s.rev),
            WorkItem::Tool { first, done } => (first.key, done.as_ref().map_or(0, |d| d.rev + 1)),
        }
    }
}

/// Whether a segment is the start of a phase that a later note ends (context compression).
fn opens_phase(segment: &Segment) -> bool {
    segment.kind == SegmentKind::Lifecycle && segment.source == "compressing"
}

/// Whether a segment ends the phase [`opens_phase`] started.
fn closes_phase(segment: &Segment) -> bool {
    segment.kind == SegmentKind::Lifecycle && segment.source == "compressed"
}

/// How many items [`fold_tools`] makes of `segments`, without building them.
pub fn step_count(segments: &[&Segment]) -> usize {
    let mut started = std::collections::HashSet::new();
    let mut phase_open = false;
    let mut steps = 0;
    for segment in segments {
        let id = segment.tool.as_ref().map_or("", |t| t.call_id.as_str());
        match segment.kind {
            SegmentKind::ToolStart => {
                steps += 1;
                if !id.is_empty() {
                    started.insert(id);
                }
            }
            SegmentKind::ToolUpdate => {}
            SegmentKind::ToolDone => {
                if id.is_empty() || !started.remove(id) {
                    steps += 1;
                }
            }
            _ if closes_phase(segment) && phase_open => phase_open = false,
            _ => {
                phase_open = opens_phase(segment);
                steps += 1;
            }
        }
    }
    steps
}

/// Folds what belongs together into one item: a tool call's start and end (by call id; its
/// progress updates are dropped, the card shows its state), and a phase's start and end (the
/// note that compression finished takes the place of the one that it began). A finished turn
/// thus reads one line per thing it did.
pub fn fold_tools(segments: &[&Segment]) -> Vec<WorkItem> {
    let mut items: Vec<WorkItem> = Vec::with_capacity(segments.len());
    let mut open: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut phase: Option<usize> = None;
    for segment in segments {
        let id = segment
            .tool
            .as_ref()
            .map(|t| t.call_id.clone())
            .unwrap_or_default();
        match segment.kind {
            SegmentKind::ToolStart => {
                if !id.is_empty() {
                    open.insert(id, items.len());
                }
                items.push(WorkItem::Tool {
                    first: (*segment).clone(),
                    done: None,
                });
            }
            SegmentKind::ToolUpdate => {}
            SegmentKind::ToolDone => match open.remove(&id).filter(|_| !id.is_empty()) {
                Some(i) => {
                    if let WorkItem::Tool { done, .. } = &mut items[i] {
                        *done = Some(Box::new((*segment).clone()));
                    }
                }
                None => items.push(WorkItem::Tool {
                    first: (*segment).clone(),
                    done: Some(Box::new((*segment).clone())),
                }),
            },
            _ => match phase.take().filter(|_| closes_phase(segment)) {
                Some(i) => items[i] = WorkItem::Segment((*segment).clone()),
                None => {
                    if opens_phase(segment) {
                        phase = Some(items.len());
                    }
                    items.push(WorkItem::Segment((*segment).clone()));
                }
            },
        }
    }
    items
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    fn ev(seq: u64, kind: &str, payload: Value) -> JournalEvent {
        JournalEvent {
            seq,
            kind: kind.into(),
            payload,
        }
    }

    /// A settled-looking turn of run `run1` made of `events` (the view model's tests use it too).
    pub(crate) fn turn(events: Vec<JournalEvent>) -> TurnData {
        TurnData {
            user: crate::api::MessageData {
                id: "u".into(),
                content: "hi".into(),
                created_at: 0.0,
                attachments: Vec::new(),
            },
            run_id: "run1".into(),
            turn_id: "turn-run1".into(),
            events,
            running: false,
            snapshot: None,
            versions: Default::default(),
            model: None,
        }
    }

    fn journal() -> Vec<JournalEvent> {
        vec![
            ev(1, "title", json!({"title": "x", "created_at": 1.0})),
            ev(
                2,
                "reasoning",
                json!({"text": "Let me ", "created_at": 1.1}),
            ),
            ev(3, "reasoning", json!({"text": "look.", "created_at": 1.2})),
            ev(
                4,
                "tool",
                json!({"name": "terminal", "tid": "c1", "args": {"command": "ls -la"}, "created_at": 1.3}),
            ),
            ev(5, "metering", json!({"tps": 1, "created_at": 1.4})),
            ev(
                6,
                "tool_complete",
                json!({"name": "terminal", "tid": "c1", "args": {"command": "ls -la"}, "preview": "a b", "is_error": false, "created_at": 1.5}),
            ),
            ev(7, "token", json!({"text": "The ", "created_at": 1.6})),
            ev(8, "token", json!({"text": "answer.", "created_at": 1.7})),
            ev(9, "done", json!({"status": "completed", "created_at": 2.0})),
            ev(
                10,
                "settled_message",
                json!({"role": "assistant", "id": "m1", "content": "The answer.", "created_at": 2.0}),
            ),
            ev(11, "stream_end", json!({"created_at": 2.0})),
        ]
    }

    #[test]
    fn deltas_merge_tools_stand_alone_and_the_answer_stream_is_separated() {
        let state = TurnState::new("s1", &turn(journal()));
        let kinds: Vec<SegmentKind> = state.segments.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            [
                SegmentKind::Thinking,
                SegmentKind::ToolStart,
                SegmentKind::ToolDone,
                SegmentKind::Prose,
                SegmentKind::Terminal
            ]
        );
        assert_eq!(state.segments[0].text, "Let me look.");
        assert_eq!(state.segments[3].text, "The answer.");
        assert_eq!(state.segments[1].tool.as_ref().unwrap().target, "ls -la");
        assert_eq!(state.segments[2].tool.as_ref().unwrap().result, "a b");
        assert_eq!(state.final_answer(), "The answer.");
        assert_eq!(state.terminal_state(), Some(TerminalState::Completed));
        assert_eq!(state.answer_stream(), 3..4);
        let process: Vec<SegmentKind> = state.process().iter().map(|s| s.kind).collect();
        assert_eq!(
            process,
            [
                SegmentKind::Thinking,
                SegmentKind::ToolStart,
                SegmentKind::ToolDone
            ]
        );
        let items = fold_tools(&state.process());
        assert_eq!(items.len(), 2);
        assert_eq!(step_count(&state.process()), 2);
        assert!(matches!(&items[1], WorkItem::Tool { done: Some(_), .. }));
        assert!(state.ended);
        assert_eq!(state.elapsed(), Some(1.0));
        assert_eq!(state.segments[0].row_id, "run1:2");
    }

    #[test]
    fn step_count_agrees_with_fold_tools_on_unmatched_and_repeated_calls() {
        let tool = |seq, kind: &str, tid: &str| {
            ev(
                seq,
                kind,
                json!({"name": "terminal", "tid": tid, "args": {"command": "ls"}, "preview": "ok", "is_error": false, "created_at": 1.0}),
            )
        };
        let events = vec![
            tool(1, "tool", "a"),
            tool(2, "tool_complete", "b"), // an end without a start
            tool(3, "tool", "c"),
            tool(4, "tool", "c"), // the same call id started twice
            tool(5, "tool_complete", "c"),
            tool(6, "tool_complete", "c"),
            tool(7, "tool_complete", "a"),
            ev(8, "token", json!({"text": "ok", "created_at": 2.0})),
        ];
        let state = TurnState::new("s1", &turn(events));
        let process = state.process();
        let all: Vec<&Segment> = state.segments.iter().collect();
        for segments in [&process[..], &all[..], &all[2..], &all[..4]] {
            assert_eq!(step_count(segments), fold_tools(segments).len());
        }
    }

    #[test]
    fn the_streamed_answer_stays_the_answer_between_done_and_the_settled_message() {
        let all = journal();
        let done = all.iter().position(|e| e.kind == "done").unwrap();
        let between = TurnState::new("s1", &turn(all[..=done].to_vec()));
        assert_eq!(between.terminal_state(), Some(TerminalState::Completed));
        assert_eq!(between.final_answer(), "");
        assert_eq!(between.answer_state(), AnswerState::Settling);
        assert_eq!(between.answer_text(), "The answer.");
        assert!(between
            .process()
            .iter()
            .all(|s| s.kind != SegmentKind::Prose));
        let settled = TurnState::new("s1", &turn(all.clone()));
        assert_eq!(settled.answer_state(), AnswerState::Final);
        assert_eq!(settled.answer_text(), "The answer.");
    }

    /// Everything a folded turn shows, as a turn state answers it.
    #[allow(clippy::type_complexity)]
    fn shown(
        s: &TurnState,
    ) -> (
        String,
        AnswerState,
        Option<TerminalState>,
        (String, String),
        Option<(u64, u64)>,
        usize,
        (usize, usize),
        usize,
        u64,
        Option<f64>,
        bool,
    ) {
        (
            s.answer_text(),
            s.answer_state(),
            s.terminal_state(),
            s.terminal_note(),
            s.usage_tokens(),
            s.steps(),
            s.stream_counts(),
            s.row_count(),
            s.last_seq,
            s.elapsed(),
            s.ended,
        )
    }

    #[test]
    fn a_settled_turn_made_from_its_snapshot_shows_what_its_journal_shows() {
        let all = journal();
        let done = all.iter().position(|e| e.kind == "done").unwrap();
        let mut failed = all[..done].to_vec();
        failed.push(ev(
            9,
            "apperror",
            json!({"message": "The provider failed.", "hint": "Try again.", "created_at": 2.5}),
        ));
        failed.push(ev(10, "stream_end", json!({"created_at": 2.5})));
        let mut used = all.clone();
        used.insert(
            8,
            ev(
                9,
                "usage",
                json!({"input_tokens": 1200, "output_tokens": 7, "created_at": 1.8}),
            ),
        );
        for (i, e) in used.iter_mut().enumerate() {
            e.seq = i as u64 + 1;
        }
        for events in [all, failed, used] {
            let full = TurnState::new("s1", &turn(events.clone()));
            assert!(!full.needs_rows());
            let snapshot = full.snapshot().expect("a settled turn has a snapshot");
            // Through JSON, as page data carries it.
            let wire: TurnSnapshot =
                serde_json::from_str(&serde_json::to_string(&snapshot).unwrap()).unwrap();
            let mut data = turn(Vec::new());
            data.snapshot = Some(wire);
            let folded = TurnState::new("s1", &data);
            assert!(folded.needs_rows());
            assert_eq!(shown(&folded), shown(&full));
            assert!(folded.process().is_empty() && folded.row_count() == full.row_count());
        }
        // Each journal says something different: the comparison is not between defaults.
        let failed_state = TurnState::new("s1", &turn(journal()[..done].to_vec()));
        assert_eq!(failed_state.snapshot(), None, "a running turn has none");
    }

    #[test]
    fn a_snapshot_keeps_the_ending_the_usage_and_the_note_of_its_turn() {
        let mut events = journal();
        let done = events.iter().position(|e| e.kind == "done").unwrap();
        events.truncate(done);
        events.push(ev(
            9,
            "apperror",
            json!({"message": "The provider failed.", "hint": "Try again.", "created_at": 2.5}),
        ));
        let s = TurnState::new("s1", &turn(events)).snapshot().unwrap();
        assert_eq!(s.terminal, Some(TerminalState::Error));
        assert_eq!(s.note.1, "Try again.");
        assert!(!s.settled);
        assert_eq!(s.answer, "The answer.");
        assert_eq!(s.steps, 2, "the reasoning and the tool call");
        assert_eq!(s.stream.1, 1);
        assert_eq!(s.span, (Some(1.0), Some(2.5)));
    }

    #[test]
    fn what_a_turn_says_beside_its_answer_is_kept_folded_and_does_not_touch_the_answer() {
        let mut events = journal();
        // Earlier context left out before the work; the answer cut off at its limit.
        events.insert(
            1,
            ev(
                2,
                "context_status",
                json!({"status": "trimmed", "left_out": 4, "message": "Earlier context left out.", "created_at": 1.05}),
            ),
        );
        for (i, e) in events.iter_mut().enumerate() {
            e.seq = i as u64 + 1;
        }
        let done = events.iter().position(|e| e.kind == "done").unwrap();
        events[done].payload = json!({"status": "completed", "finish_reason": "length",
            "cut_off": {"limit": 24, "message": "The answer was cut off."}, "created_at": 2.0});
        let full = TurnState::new("s1", &turn(events.clone()));
        let notices = full.notices();
        assert_eq!(
            notices.left_out.as_deref(),
            Some("Earlier context left out.")
        );
        assert_eq!(notices.cut_off.as_deref(), Some("The answer was cut off."));
        // The answer, its ending and its rows are those of the same turn without them.
        let plain = TurnState::new("s1", &turn(journal()));
        assert_eq!(full.answer_text(), plain.answer_text());
        assert_eq!(full.terminal_state(), Some(TerminalState::Completed));
        assert_eq!(full.row_count(), plain.row_count());
        assert_eq!(plain.notices(), TurnNotices::default());
        // Folded into its snapshot (through JSON, as page data carries it), it says the same.
        let wire: TurnSnapshot =
            serde_json::from_str(&serde_json::to_string(&full.snapshot().unwrap()).unwrap())
                .unwrap();
        let mut data = turn(events);
        data.events.clear();
        data.snapshot = Some(wire);
        assert_eq!(TurnState::new("s1", &data).notices(), notices);
        // A snapshot stored before notices existed reads as saying nothing.
        let old: TurnSnapshot = serde_json::from_value(json!({
            "answer": "a", "settled": true, "terminal": "completed", "note": ["", ""],
            "usage": null, "steps": 0, "stream": [0, 0], "rows": 1, "last_seq": 3,
            "span": [null, null]
        }))
        .unwrap();
        assert_eq!(old.notices, TurnNotices::default());
    }

    #[test]
    fn a_turn_that_did_not_complete_keeps_its_streamed_answer_as_partial() {
        let all = journal();
        let done = all.iter().position(|e| e.kind == "done").unwrap();
        let mut cancelled = all[..done].to_vec();
        cancelled.push(ev(
            9,
            "cancel",
            json!({"message": "Cancelled", "created_at": 2.0}),
        ));
        // Before the settled message: the streamed prose.
        let stopped = TurnState::new("s1", &turn(cancelled.clone()));
        assert_eq!(stopped.terminal_state(), Some(TerminalState::Cancelled));
        assert_eq!(stopped.answer_state(), AnswerState::Partial);
        assert_eq!(stopped.answer_text(), "The answer.");
        assert!(stopped
            .process()
            .iter()
            .all(|s| s.kind != SegmentKind::Prose));
        // The server settles it with what the journal had streamed: the same text.
        let rows: Vec<(&str, &Value)> = cancelled
            .iter()
            .map(|e| (e.kind.as_str(), &e.payload))
            .collect();
        let partial = anchor::answer::answer_tail(rows);
        assert_eq!(partial, "The answer.");
        cancelled.push(ev(
            10,
            "settled_message",
            json!({"role": "assistant", "id": "m1", "content": partial, "partial": true}),
        ));
        let settled = TurnState::new("s1", &turn(cancelled));
        assert_eq!(settled.answer_state(), AnswerState::Partial);
        assert_eq!(settled.answer_text(), "The answer.");
    }

    #[test]
    fn a_kind_this_build_does_not_know_is_shown_once_not_dropped() {
        let mut events = journal()[..3].to_vec();
        events.push(ev(4, "sandbox_snapshot", json!({"created_at": 4.0})));
        let from_page = TurnState::new("s1", &turn(events.clone()));
        let rows = from_page.row_count();
        let notes: Vec<&Segment> = from_page
            .process()
            .into_iter()
            .filter(|s| s.status.as_deref() == Some("unrecognised"))
            .collect();
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].text.contains("sandbox_snapshot"),
            "{}",
            notes[0].text
        );
        assert_eq!(notes[0].row_id, "run1:4");

        // The same event live, then again after a reconnect: one note, as from the page.
        let mut live = TurnState::new("s1", &turn(events[..3].to_vec()));
        for _ in 0..2 {
            live.apply_frame("sandbox_snapshot", r#"{"created_at":4.0}"#, "run1:4", "s1");
        }
        let shown = |s: &TurnState| {
            s.process()
                .iter()
                .map(|seg| (seg.kind, seg.text.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(shown(&live), shown(&from_page));
        assert_eq!(live.row_count(), rows, "the anchor's rows are unchanged");
        // A known kind makes no such note.
        assert!(TurnState::new("s1", &turn(journal()))
            .process()
            .iter()
            .all(|s| s.status.as_deref() != Some("unrecognised")));
    }

    #[test]
    fn the_process_changes_with_activity_not_with_the_answers_tokens() {
        let all = journal();
        let mut state = TurnState::new("s1", &turn(all[..6].to_vec()));
        let before = (state.process_rev, state.process().len());
        for (seq, text) in [(7, "The "), (8, "answer.")] {
            state.apply_frame(
                "token",
                &json!({ "text": text }).to_string(),
                &format!("run1:{seq}"),
                "s1",
            );
            assert_eq!(
                (state.process_rev, state.process().len()),
                before,
                "a token"
            );
        }
        state.apply_frame(
            "tool",
            &json!({"name": "terminal", "tid": "c2", "args": {"command": "ls"}}).to_string(),
            "run1:9",
            "s1",
        );
        assert!(state.process_rev > before.0, "a tool call");
        assert_eq!(
            state.process().len(),
            before.1 + 2,
            "the prose before it and the call"
        );
        let rev = state.process_rev;
        state.apply_frame(
            "done",
            &json!({"status": "completed"}).to_string(),
            "run1:10",
            "s1",
        );
        assert_eq!(state.process_rev, rev, "the terminal note is not process");
    }

    #[test]
    fn a_compression_and_its_end_are_one_item() {
        let note = |seq, kind: &str| {
            ev(
                seq,
                kind,
                json!({"message": "Compressing context", "created_at": 1.0}),
            )
        };
        let events = vec![
            ev(1, "reasoning", json!({"text": "hm", "created_at": 1.0})),
            note(2, "compressing"),
            note(3, "compressed"),
            note(4, "compressing"),
        ];
        let state = TurnState::new("s1", &turn(events));
        let process = state.process();
        let items = fold_tools(&process);
        assert_eq!(items.len(), 3);
        assert_eq!(step_count(&process), 3);
        let sources: Vec<&str> = items
            .iter()
            .map(|i| match i {
                WorkItem::Segment(s) => s.source.as_str(),
                WorkItem::Tool { .. } => "tool",
            })
            .collect();
        assert_eq!(sources, ["reasoning", "compressed", "compressing"]);
    }

    #[test]
    fn live_frames_continue_where_the_page_data_stopped_without_duplicates() {
        let all = journal();
        let mut live = TurnState::new("s1", &turn(all[..5].to_vec()));
        for e in &all {
            // Frames 1..=5 arrive again after a reconnect: ignored.
            live.apply_frame(
                &e.kind,
                &e.payload.to_string(),
                &format!("run1:{}", e.seq),
                "s1",
            );
        }
        let whole = TurnState::new("s1", &turn(all.clone()));
        assert_eq!(live.segments, whole.segments);
        assert_eq!(live.registry.anchor(), whole.registry.anchor());
        assert!(
            !live.apply_frame("token", "{\"text\":\"x\"}", "other-run:99", "s1"),
            "another run's frame"
        );
    }

    #[test]
    fn approvals_wait_until_resolved_and_todos_keep_the_latest() {
        let events = vec![
            ev(
                1,
                "approval",
                json!({"approval_id": "a1", "command": "rm -rf target/", "description": "Delete"}),
            ),
            ev(
                2,
                "todo_state",
                json!({"todos": [{"id": "1", "status": "pending"}]}),
            ),
            ev(
                3,
                "todo_state",
                json!({"todos": [{"id": "1", "status": "completed"}]}),
            ),
        ];
        let mut state = TurnState::new("s1", &turn(events));
        assert_eq!(state.pending.len(), 1);
        assert_eq!(
            state.todos.as_ref().unwrap()["todos"][0]["status"],
            "completed"
        );
        state.apply_frame(
            "approval_resolved",
            "{\"approval_id\":\"a1\",\"choice\":\"once\"}",
            "run1:4",
            "s1",
        );
        assert!(state.pending.is_empty());
    }

    #[test]
    fn answers_to_approvals_and_questions_are_kept_by_id() {
        let asked = vec![
            ev(
                1,
                "approval",
                json!({"approval_id": "a1", "command": "rm x", "description": "Remove x"}),
            ),
            ev(
                2,
                "clarify",
                json!({"clarify_id": "c1", "question": "Which?"}),
            ),
        ];
        let state = TurnState::new("s1", &turn(asked.clone()));
        let ids: Vec<Option<&str>> = state
            .segments
            .iter()
            .map(|s| s.interaction.as_deref())
            .collect();
        assert_eq!(ids, [Some("a1"), Some("c1")]);
        assert!(state.answers.is_empty());
        assert_eq!(state.pending.len(), 2);

        let mut answered = asked;
        answered.push(ev(
            3,
            "approval_resolved",
            json!({"approval_id": "a1", "choice": "session"}),
        ));
        answered.push(ev(
            4,
            "clarify_resolved",
            json!({"clarify_id": "c1", "response": "dev"}),
        ));
        let state = TurnState::new("s1", &turn(answered));
        assert_eq!(state.answers["a1"], "Allowed for this session");
        assert_eq!(state.answers["c1"], "Answered: dev");
        assert!(state.pending.is_empty());
    }
}
