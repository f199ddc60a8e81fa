//! The Compact Worklog's items: a tool call's start and end folded into one, a phase's start
//! and end into one, and the count of steps a finished turn took.

use super::segments::{Segment, SegmentKind};

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
pub(super) fn opens_phase(segment: &Segment) -> bool {
    segment.kind == SegmentKind::Lifecycle && segment.source == "compressing"
}

/// Whether a segment ends the phase [`opens_phase`] started.
pub(super) fn closes_phase(segment: &Segment) -> bool {
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
