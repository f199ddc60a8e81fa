//! Display segments: a row of the anchor's scene, or consecutive prose or reasoning deltas
//! merged, each with a stable key, built incrementally as rows arrive.

use anchor::{ActivityRow, EventKind, Kind};
use serde_json::Value;

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
    pub(super) merging: bool,
}

pub(super) fn str_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A short description of what a tool call acts on.
pub(super) fn target_of(args: &Value) -> String {
    if let Some(todos) = args.get("todos").and_then(Value::as_array) {
        return todo_change(todos);
    }
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

/// What a todo list update leaves: how much is done and what is under way ("1 of 3 done ·
/// now: Fix the cache"), the list itself being the todo panel's.
fn todo_change(todos: &[Value]) -> String {
    fn status(t: &Value) -> &str {
        t.get("status").and_then(Value::as_str).unwrap_or_default()
    }
    let done = todos.iter().filter(|t| status(t) == "completed").count();
    let now = todos
        .iter()
        .find(|t| status(t) == "in_progress")
        .map(|t| str_of(t, "content"));
    match (todos.len(), now) {
        (0, _) => "emptied the list".to_owned(),
        (all, _) if done == all => format!("all {all} done"),
        (all, Some(now)) if !now.is_empty() => format!("{done} of {all} done · now: {now}"),
        (all, _) => format!("{done} of {all} done"),
    }
}

/// Appends one new scene row to the segment list, merging consecutive token/reasoning deltas.
pub(super) fn push_segment(segments: &mut Vec<Segment>, next_key: &mut u64, row: &ActivityRow<'_>) {
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
