//! What the anchor does with an event: where it is routed ([`Classification`]), the kind of
//! row it makes ([`Kind`]), and how a turn ends ([`TerminalState`], with its aliases). The
//! table that assigns these to each event kind, and [`crate::classify()`], live in `kind.rs`.

use serde::{Deserialize, Serialize};

use crate::js;

/// Where an accepted source event is routed inside the anchor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Classification {
    /// Part of the turn's visible process: prose, reasoning, tools, lifecycle, control, terminal.
    Activity,
    /// A reference to something the turn produced.
    Artifact,
    /// Something the turn changed outside the transcript (memory, skills).
    SideEffect,
    /// Usage, title, snapshots and the settled message.
    Metadata,
    /// Stream plumbing such as `stream_end`.
    Transport,
    /// Not part of the anchor; counted and dropped.
    Excluded,
}

impl Classification {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Activity => "activity",
            Self::Artifact => "artifact",
            Self::SideEffect => "side_effect",
            Self::Metadata => "metadata",
            Self::Transport => "transport",
            Self::Excluded => "excluded",
        }
    }
}

/// The kind of an activity (or artifact) event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Visible prose written while working (`token`, `interim_assistant`).
    ProcessProse,
    /// Model reasoning.
    Reasoning,
    /// A tool call began.
    ToolStarted,
    /// A tool call reported progress.
    ToolUpdated,
    /// A tool call finished (successfully or not).
    ToolCompleted,
    /// Context compression and similar lifecycle notes.
    LifecycleStatus,
    /// The turn waits on the user or hands over control (approval, clarify, steer, goal).
    ControlBoundary,
    /// The turn ended (`done`, `cancel`, `error`, `apperror`).
    TerminalStatus,
    /// A reference to a produced artifact (never an activity row).
    ArtifactReference,
}

impl Kind {
    /// The activity kinds, in the reference's order. `artifact_reference` is not one.
    pub const ACTIVITY: [Kind; 8] = [
        Kind::ProcessProse,
        Kind::Reasoning,
        Kind::ToolStarted,
        Kind::ToolUpdated,
        Kind::ToolCompleted,
        Kind::LifecycleStatus,
        Kind::ControlBoundary,
        Kind::TerminalStatus,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ProcessProse => "process_prose",
            Self::Reasoning => "reasoning",
            Self::ToolStarted => "tool_started",
            Self::ToolUpdated => "tool_updated",
            Self::ToolCompleted => "tool_completed",
            Self::LifecycleStatus => "lifecycle_status",
            Self::ControlBoundary => "control_boundary",
            Self::TerminalStatus => "terminal_status",
            Self::ArtifactReference => "artifact_reference",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Kind> {
        Self::ACTIVITY
            .into_iter()
            .chain([Kind::ArtifactReference])
            .find(|k| k.as_str() == s)
    }

    /// Tool start, update and completion.
    pub fn is_tool(self) -> bool {
        matches!(
            self,
            Self::ToolStarted | Self::ToolUpdated | Self::ToolCompleted
        )
    }
}

/// The classification of one source type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceMeta {
    /// Where the event goes.
    pub classification: Classification,
    /// The activity kind, for activity and artifact events.
    pub kind: Option<Kind>,
    /// The canonical source type name, for known types.
    pub name: Option<&'static str>,
}

/// How a turn ended. Separate from the final answer: a turn can end without one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminalState {
    /// The agent finished the turn.
    Completed,
    /// The user stopped it.
    Cancelled,
    /// The worker stopped before the turn ended (restart, crash).
    Interrupted,
    /// The provider produced nothing.
    NoResponse,
    /// The agent hit its iteration limit.
    ToolLimitReached,
    /// Context compression could not make room.
    CompressionExhausted,
    /// The transport dropped and the settlement could not be confirmed.
    ConnectionLost,
    /// Evidence is incomplete; the turn could not be fully reconstructed.
    Degraded,
    /// The run failed.
    Error,
}

impl TerminalState {
    /// Every terminal state, in the reference's order.
    pub const ALL: [TerminalState; 9] = [
        Self::Completed,
        Self::Cancelled,
        Self::Interrupted,
        Self::NoResponse,
        Self::ToolLimitReached,
        Self::CompressionExhausted,
        Self::ConnectionLost,
        Self::Degraded,
        Self::Error,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Cancelled => "cancelled",
            Self::Interrupted => "interrupted",
            Self::NoResponse => "no_response",
            Self::ToolLimitReached => "tool_limit_reached",
            Self::CompressionExhausted => "compression_exhausted",
            Self::ConnectionLost => "connection_lost",
            Self::Degraded => "degraded",
            Self::Error => "error",
        }
    }

    /// Parses a wire name exactly (no aliases; see [`normalize_terminal_state`]).
    pub fn parse(s: &str) -> Option<TerminalState> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }

    fn from_alias(key: &str) -> Option<TerminalState> {
        Some(match key {
            "completed" | "complete" | "done" => Self::Completed,
            "cancelled" | "canceled" | "cancel" => Self::Cancelled,
            "interrupted" | "interrupted_by_user" => Self::Interrupted,
            "no_response" | "no_response_generated" => Self::NoResponse,
            "tool_limit_reached" | "max_iterations" => Self::ToolLimitReached,
            "compression_exhausted" => Self::CompressionExhausted,
            "connection_lost" | "lost_worker_bookkeeping" => Self::ConnectionLost,
            "degraded" => Self::Degraded,
            "error" | "failed" | "apperror" => Self::Error,
            _ => return None,
        })
    }
}

impl std::fmt::Display for TerminalState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The alias key: trimmed, lower-cased, every run of whitespace and `-` turned into one `_`.
fn alias_key(value: &str) -> String {
    let lower = js::trim(value).to_lowercase();
    let mut key = String::with_capacity(lower.len());
    let mut in_run = false;
    for c in lower.chars() {
        if js::is_js_space(c) || c == '-' {
            if !in_run {
                key.push('_');
                in_run = true;
            }
        } else {
            key.push(c);
            in_run = false;
        }
    }
    key
}

/// `normalizeAssistantTurnAnchorTerminalState(value, fallback)`: the terminal state an alias
/// names, trying `value` first and then `fallback`.
pub fn normalize_terminal_state(value: &str, fallback: Option<&str>) -> Option<TerminalState> {
    TerminalState::from_alias(&alias_key(value))
        .or_else(|| fallback.and_then(|f| TerminalState::from_alias(&alias_key(f))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::classify;

    #[test]
    fn unknown_and_prototype_names_are_excluded() {
        for t in [
            "metering",
            "todo_state",
            "constructor",
            "__proto__",
            "toString",
            "",
        ] {
            assert_eq!(classify(t).classification, Classification::Excluded, "{t}");
        }
    }

    #[test]
    fn aliases_collapse_spaces_and_dashes() {
        assert_eq!(
            normalize_terminal_state("interrupted - by  user", None),
            Some(TerminalState::Interrupted)
        );
        assert_eq!(
            normalize_terminal_state("  CANCEL ", None),
            Some(TerminalState::Cancelled)
        );
        assert_eq!(normalize_terminal_state("errored", None), None);
        assert_eq!(
            normalize_terminal_state("zzz", Some("done")),
            Some(TerminalState::Completed)
        );
    }
}
