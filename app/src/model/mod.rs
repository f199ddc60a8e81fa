//! A turn as the page holds it: the anchor, fed by journal rows and live frames alike, plus the
//! display segments derived from it incrementally and the side channels the anchor leaves out
//! (todos, open approval and clarify requests).
//!
//! Nothing here touches the DOM, so it is tested natively and behaves the same on the server
//! and in the browser.

pub mod engine;
mod segments;
#[cfg(test)]
pub(crate) mod tests;
mod turn;
mod worklog;

pub use segments::{Segment, SegmentKind, ToolInfo};
pub use turn::{AnswerState, ApprovalOption, Pending, TurnState};
pub use worklog::{fold_tools, step_count, WorkItem};
