//! `activity_scene_v1`: the renderer-neutral projection of an anchor.
//!
//! Rows are views: an [`ActivityRow`] borrows its event and derives the row's fields from it
//! on demand, so projecting a turn allocates one small struct per row and nothing per field.
//! The same rows serve every display mode; only the display hint differs.

use std::borrow::Cow;
use std::fmt;

use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::classify::Kind;
use crate::js;
use crate::model::{Anchor, AnchorEvent, Identity, Lifecycle};
use crate::seq::Seq;

mod parts;
pub use parts::{Group, GroupKey, RowId, Thinking, Tool};

/// The scene format version.
pub const SCENE_VERSION: &str = "activity_scene_v1";

/// How a turn's activity is displayed. Switching modes never re-applies anything.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The final answer first; the process folded into a worklog (the default).
    #[default]
    CompactWorklog,
    /// Every event as a row of one chronological timeline.
    TransparentStream,
    /// Only the answer.
    HideAllActivity,
}

impl Mode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CompactWorklog => "compact_worklog",
            Self::TransparentStream => "transparent_stream",
            Self::HideAllActivity => "hide_all_activity",
        }
    }

    /// Parses a (trimmed) wire name.
    pub fn parse(s: &str) -> Option<Mode> {
        match js::trim(s) {
            "compact_worklog" => Some(Self::CompactWorklog),
            "transparent_stream" => Some(Self::TransparentStream),
            "hide_all_activity" => Some(Self::HideAllActivity),
            _ => None,
        }
    }

    /// [`Mode::parse`], falling back to the default for anything else.
    pub fn parse_or_default(s: &str) -> Mode {
        Self::parse(s).unwrap_or_default()
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The part a row plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Process prose.
    Prose,
    /// Reasoning.
    Thinking,
    /// A tool start, update or completion.
    Tool,
    /// Compression and similar lifecycle notes.
    Lifecycle,
    /// Approval, clarify, steer and goal boundaries.
    Control,
    /// The turn's end.
    Terminal,
    /// Anything else.
    Activity,
}

impl Role {
    /// The role of a kind (`None`: an event without a kind).
    pub fn of(kind: Option<Kind>) -> Role {
        match kind {
            Some(Kind::ProcessProse) => Role::Prose,
            Some(Kind::Reasoning) => Role::Thinking,
            Some(Kind::ToolStarted | Kind::ToolUpdated | Kind::ToolCompleted) => Role::Tool,
            Some(Kind::LifecycleStatus) => Role::Lifecycle,
            Some(Kind::ControlBoundary) => Role::Control,
            Some(Kind::TerminalStatus) => Role::Terminal,
            _ => Role::Activity,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Prose => "prose",
            Role::Thinking => "thinking",
            Role::Tool => "tool",
            Role::Lifecycle => "lifecycle",
            Role::Control => "control",
            Role::Terminal => "terminal",
            Role::Activity => "activity",
        }
    }

    /// The Compact Worklog's display hint for this role.
    pub fn compact_hint(self) -> &'static str {
        match self {
            Role::Prose => "main_prose",
            Role::Thinking => "collapsed_thinking",
            Role::Tool => "tool_row",
            Role::Lifecycle => "quiet_lifecycle_row",
            Role::Control => "control_boundary_row",
            Role::Terminal => "terminal_status_row",
            Role::Activity => "activity_row",
        }
    }
}

/// The Transparent Stream's display hint for every row.
pub const TRANSPARENT_HINT: &str = "chronological_activity";

/// One activity row: a view of one activity event at its position.
#[derive(Clone, Debug)]
pub struct ActivityRow<'a> {
    event: &'a AnchorEvent,
    index: usize,
    text: Cow<'a, str>,
    segment: Option<&'a Value>,
    burst: Option<&'a Value>,
    message: Option<&'a Value>,
}

/// A trimmed string field, `None` when empty.
fn non_empty(s: Option<&str>) -> Option<&str> {
    s.map(js::trim).filter(|s| !s.is_empty())
}

/// A field that is clean by the [`AnchorEvent`] invariant: only the length is looked at, so
/// projecting a row does not touch the string.
fn present(s: Option<&str>) -> Option<&str> {
    s.filter(|s| !s.is_empty())
}

/// What every row reads from its payload: its text (0..6, in order), then segment (6..10),
/// burst (10..14) and assistant message (14..17) keys, each group in order.
const ROW_KEYS: js::KeySet<17> = js::KeySet::new([
    "text",
    "content",
    "message",
    "summary",
    "result",
    "output",
    "activitySegmentSeq",
    "activity_segment_seq",
    "segmentSeq",
    "segment_seq",
    "activityBurstId",
    "activity_burst_id",
    "burstId",
    "burst_id",
    "assistant_msg_idx",
    "assistantMessageIndex",
    "assistant_msg_index",
]);
/// Everything a tool row reads from its payload: name (0..4), args (4..8), preview (8..10),
/// snippet (10..13), done, is_error, is_diff (13..17), duration (17..20), started_at (20..22)
/// and the call id (22..27).
const TOOL_KEYS: js::KeySet<27> = js::KeySet::new([
    "name",
    "tool_name",
    "function_name",
    "function",
    "args",
    "arguments",
    "input",
    "params",
    "preview",
    "summary",
    "snippet",
    "result",
    "output",
    "done",
    "is_error",
    "is_diff",
    "isDiff",
    "duration",
    "duration_seconds",
    "elapsed",
    "started_at",
    "startedAt",
    "tool_call_id",
    "tool_use_id",
    "call_id",
    "tid",
    "id",
]);

/// `String(v) === ''` without building the string.
fn stringifies_empty(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.iter().all(|i| i.is_null() || stringifies_empty(i)),
        _ => false,
    }
}

impl<'a> ActivityRow<'a> {
    /// The row for `event` at position `index`.
    pub fn new(event: &'a AnchorEvent, index: usize) -> Self {
        let k = ROW_KEYS.scan(&event.payload);
        let pick =
            |keys: &[Option<&'a Value>]| js::first_present(keys).filter(|v| !stringifies_empty(v));
        ActivityRow {
            event,
            index,
            text: js::first_text(k[0..6].iter().copied()),
            segment: pick(&k[6..10]),
            burst: pick(&k[10..14]),
            message: pick(&k[14..17]),
        }
    }

    /// The event the row shows.
    pub fn event(&self) -> &'a AnchorEvent {
        self.event
    }

    /// Its position (acceptance order).
    pub fn order_index(&self) -> usize {
        self.index
    }

    /// The row id: the event id, else `run:seq`, else `local:type:index`, else
    /// `activity:index`. Stable for journaled events, whatever path delivered them.
    pub fn row_id(&self) -> RowId<'a> {
        let e = self.event;
        if let Some(id) = present(e.event_id.as_deref()) {
            return RowId::Event(id);
        }
        if let (Some(run), Some(seq)) =
            (non_empty(e.run_id.as_deref()), present_seq(e.seq.as_ref()))
        {
            return RowId::RunSeq(run, seq);
        }
        if let Some(local) = non_empty(Some(&e.local_id)) {
            let ty = present(Some(&e.source_event_type))
                .or_else(|| e.kind.map(Kind::as_str))
                .unwrap_or("event");
            return RowId::Local(local, ty, self.index);
        }
        RowId::Index(self.index)
    }

    /// The kind (`None` only for hand-built events without one; shown as `activity`).
    pub fn kind(&self) -> Option<Kind> {
        self.event.kind
    }

    /// The kind's wire name.
    pub fn kind_str(&self) -> &'static str {
        self.event.kind.map_or("activity", Kind::as_str)
    }

    /// The role.
    pub fn role(&self) -> Role {
        Role::of(self.event.kind)
    }

    /// The display hint in `mode`.
    pub fn display_hint(&self, mode: Mode) -> &'static str {
        match mode {
            Mode::TransparentStream => TRANSPARENT_HINT,
            Mode::CompactWorklog | Mode::HideAllActivity => self.role().compact_hint(),
        }
    }

    /// The source type.
    pub fn source_event_type(&self) -> Option<&'a str> {
        present(Some(&self.event.source_event_type))
    }

    /// The journal event id.
    pub fn event_id(&self) -> Option<&'a str> {
        present(self.event.event_id.as_deref())
    }

    /// The local id.
    pub fn local_id(&self) -> Option<&'a str> {
        non_empty(Some(&self.event.local_id))
    }

    /// The run id.
    pub fn run_id(&self) -> Option<&'a str> {
        non_empty(self.event.run_id.as_deref())
    }

    /// The stream id.
    pub fn stream_id(&self) -> Option<&'a str> {
        present(self.event.stream_id.as_deref())
    }

    /// The sequence number.
    pub fn seq(&self) -> Option<&'a Seq> {
        self.event.seq.as_ref()
    }

    /// The status.
    pub fn status(&self) -> Option<&'a str> {
        present(self.event.status.as_deref())
    }

    /// When it happened.
    pub fn created_at(&self) -> Option<&'a Value> {
        self.event.created_at.as_ref()
    }

    /// The payload.
    pub fn payload(&self) -> &'a Map<String, Value> {
        &self.event.payload
    }

    /// The row's text: the first non-empty of `text`, `content`, `message`, `summary`,
    /// `result`, `output`.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The grouping.
    pub fn group(&self) -> Group<'a> {
        let (segment, burst, message) = (self.segment, self.burst, self.message);
        let key = if let Some(v) = segment {
            GroupKey::Segment(v)
        } else if let Some(v) = burst {
            GroupKey::Burst(v)
        } else if let Some(v) = message {
            GroupKey::Message(v)
        } else if let Some(seq) = present_seq(self.event.seq.as_ref()) {
            GroupKey::Event(seq)
        } else {
            GroupKey::Index(self.index)
        };
        Group {
            key,
            activity_burst_id: burst,
            activity_segment_seq: segment,
            assistant_msg_idx: message,
        }
    }

    /// Reasoning text with its one-line preview (reasoning rows only).
    pub fn thinking(&self) -> Option<Thinking<'_>> {
        if self.event.kind != Some(Kind::Reasoning) {
            return None;
        }
        const THINKING_KEYS: js::KeySet<3> = js::KeySet::new(["thinking", "reasoning", "text"]);
        let text = js::first_text(THINKING_KEYS.scan(&self.event.payload));
        let text = if text.is_empty() {
            Cow::Borrowed(&*self.text)
        } else {
            text
        };
        Some(Thinking { text })
    }

    /// The tool call id (tool rows only).
    pub fn tool_call_id(&self) -> Option<Cow<'a, str>> {
        if !self.event.kind.is_some_and(Kind::is_tool) {
            return None;
        }
        let t = TOOL_KEYS.scan(&self.event.payload);
        Some(js::first_text(t[22..27].iter().copied())).filter(|id| !id.is_empty())
    }

    /// The tool call (tool rows only).
    pub fn tool(&self) -> Option<Tool<'_>> {
        let kind = self.event.kind.filter(|k| k.is_tool())?;
        let t = TOOL_KEYS.scan(&self.event.payload);
        let name_raw = js::or(js::first_present(&t[0..3]), js::own(t[3], "name"));
        let name = match js::clean(name_raw) {
            "" => "tool",
            n => n,
        };
        let args = js::first_present(&t[4..8]).filter(|v| js::truthy(Some(v)));
        let preview = js::first_text([t[8], t[9]]);
        let preview = if preview.is_empty() {
            Cow::Borrowed(&*self.text)
        } else {
            preview
        };
        let status = self.status().unwrap_or("");
        let failed = ["error", "failed", "failure"]
            .iter()
            .any(|f| status.eq_ignore_ascii_case(f));
        Some(Tool {
            id: Some(js::first_text(t[22..27].iter().copied())).filter(|id| !id.is_empty()),
            name,
            args,
            preview,
            snippet: js::first_text([t[10], t[11], t[12]]),
            result: t[11].filter(|v| !v.is_null()),
            output: t[12].filter(|v| !v.is_null()),
            done: match t[13] {
                Some(Value::Bool(b)) => *b,
                _ => kind == Kind::ToolCompleted,
            },
            is_error: match t[14] {
                Some(Value::Bool(b)) => *b,
                _ => failed,
            },
            is_diff: matches!(t[15], Some(Value::Bool(true)))
                || matches!(t[16], Some(Value::Bool(true))),
            duration: js::first_present(&t[17..20]),
            started_at: js::first_present(&t[20..22]),
        })
    }

    /// Serializes the row for `mode` (the scene's row shape).
    pub fn in_mode(&self, mode: Mode) -> RowInMode<'_, 'a> {
        RowInMode { row: self, mode }
    }
}

fn present_seq(seq: Option<&Seq>) -> Option<&Seq> {
    seq.filter(|s| !matches!(s, Seq::Text(t) if t.is_empty()))
}

/// A row serialized for one mode.
pub struct RowInMode<'r, 'a> {
    row: &'r ActivityRow<'a>,
    mode: Mode,
}

impl Serialize for RowInMode<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let row = self.row;
        let e = row.event;
        let compact = row.role().compact_hint();
        let mut st = s.serialize_map(None)?;
        st.serialize_entry("row_id", &row.row_id())?;
        st.serialize_entry("order_index", &row.index)?;
        st.serialize_entry("kind", row.kind_str())?;
        st.serialize_entry("role", row.role().as_str())?;
        st.serialize_entry("display_hint", row.display_hint(self.mode))?;
        st.serialize_entry(
            "display_hints",
            &Hints {
                compact_worklog: compact,
                transparent_stream: TRANSPARENT_HINT,
            },
        )?;
        st.serialize_entry("source_event_type", &row.source_event_type())?;
        st.serialize_entry("event_id", &row.event_id())?;
        st.serialize_entry("local_id", &row.local_id())?;
        st.serialize_entry("run_id", &row.run_id())?;
        st.serialize_entry("stream_id", &row.stream_id())?;
        st.serialize_entry("seq", &e.seq)?;
        st.serialize_entry("status", &row.status())?;
        st.serialize_entry("created_at", &e.created_at)?;
        st.serialize_entry(
            "identity",
            &RowIdentity {
                event_id: row.event_id(),
                local_id: row.local_id(),
                run_id: row.run_id(),
                stream_id: row.stream_id(),
                seq: e.seq.as_ref(),
            },
        )?;
        st.serialize_entry("group", &row.group())?;
        st.serialize_entry("text", row.text())?;
        st.serialize_entry("thinking", &row.thinking())?;
        st.serialize_entry("tool_call_id", &row.tool_call_id())?;
        st.serialize_entry("tool", &row.tool())?;
        st.serialize_entry("payload", &e.payload)?;
        st.end()
    }
}

#[derive(Serialize)]
struct Hints {
    compact_worklog: &'static str,
    transparent_stream: &'static str,
}

#[derive(Serialize)]
struct RowIdentity<'a> {
    event_id: Option<&'a str>,
    local_id: Option<&'a str>,
    run_id: Option<&'a str>,
    stream_id: Option<&'a str>,
    seq: Option<&'a Seq>,
}

/// `activity_scene_v1`: a turn's rows in one display mode, with its identity, lifecycle,
/// final answer and terminal state (never a row), artifacts and side effects.
#[derive(Clone, Debug)]
pub struct ActivityScene<'a> {
    mode: Mode,
    anchor: Option<&'a Anchor>,
    rows: Vec<ActivityRow<'a>>,
}

impl<'a> ActivityScene<'a> {
    /// The scene of `anchor` in `mode`.
    pub fn of(anchor: &'a Anchor, mode: Mode) -> Self {
        ActivityScene {
            mode,
            anchor: Some(anchor),
            rows: anchor
                .activity_events
                .iter()
                .enumerate()
                .map(|(i, e)| ActivityRow::new(e, i))
                .collect(),
        }
    }

    /// The scene of no anchor: no identity, no rows.
    pub fn empty(mode: Mode) -> Self {
        ActivityScene {
            mode,
            anchor: None,
            rows: Vec::new(),
        }
    }

    /// The display mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The same rows in another mode (no re-application, no re-projection).
    pub fn with_mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// The rows, in acceptance order.
    pub fn rows(&self) -> &[ActivityRow<'a>] {
        &self.rows
    }

    /// The identity.
    pub fn identity(&self) -> Option<&'a Identity> {
        self.anchor.map(|a| &a.identity)
    }

    /// The lifecycle.
    pub fn lifecycle(&self) -> Option<&'a Lifecycle> {
        self.anchor.map(|a| &a.lifecycle)
    }

    /// The final answer (`""` until settled).
    pub fn final_answer(&self) -> &'a str {
        self.anchor.map_or("", |a| &a.content.final_answer)
    }

    /// The settled message the answer comes from.
    pub fn final_message_ref(&self) -> Option<&'a str> {
        self.anchor
            .and_then(|a| a.content.final_message_ref.as_deref())
    }

    /// How the turn ended, once it has.
    pub fn terminal_state(&self) -> Option<crate::TerminalState> {
        self.anchor.and_then(|a| a.lifecycle.terminal_state)
    }

    /// Artifact references.
    pub fn artifacts(&self) -> &'a [AnchorEvent] {
        self.anchor.map_or(&[], |a| &a.artifacts)
    }

    /// Side effects.
    pub fn side_effects(&self) -> &'a [AnchorEvent] {
        self.anchor.map_or(&[], |a| &a.side_effects)
    }
}

impl Serialize for ActivityScene<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Rows<'s, 'a>(&'s [ActivityRow<'a>], Mode);
        impl Serialize for Rows<'_, '_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.0.iter().map(|r| r.in_mode(self.1)))
            }
        }
        let mut st = s.serialize_map(Some(10))?;
        st.serialize_entry("version", SCENE_VERSION)?;
        st.serialize_entry("mode", self.mode.as_str())?;
        match self.anchor {
            Some(a) => {
                st.serialize_entry("identity", &a.identity)?;
                st.serialize_entry("lifecycle", &a.lifecycle)?;
            }
            None => {
                st.serialize_entry("identity", &serde_json::json!({"source_message_refs": []}))?;
                st.serialize_entry("lifecycle", &serde_json::json!({}))?;
            }
        }
        st.serialize_entry("final_answer", self.final_answer())?;
        st.serialize_entry("final_message_ref", &self.final_message_ref())?;
        st.serialize_entry("terminal_state", &self.terminal_state())?;
        st.serialize_entry("activity_rows", &Rows(&self.rows, self.mode))?;
        st.serialize_entry("artifacts", self.artifacts())?;
        st.serialize_entry("side_effects", self.side_effects())?;
        st.end()
    }
}
