//! The event vocabulary: every kind of event a turn's journal holds, named once.
//!
//! The server emits an [`EventKind`], the journal stores its [`name`](EventKind::name), the
//! SSE layer sends that name as the frame's `event:` field, the browser subscribes to every
//! name in [`EventKind::ALL`], and the app's model matches on the enum. The anchor's
//! classifier ([`crate::classify`]) reads its table from [`EventKind::meta`], so a kind added
//! here is classified, subscribed to and matched everywhere at once.

use crate::classify::{Classification, Kind, SourceMeta};

macro_rules! vocabulary {
    ($($(#[doc = $doc:expr])* $variant:ident = $name:literal,)*) => {
        /// A kind of event in a turn's journal and on its live stream.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventKind {
            $($(#[doc = $doc])* $variant,)*
        }

        impl EventKind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [EventKind] = &[$(EventKind::$variant,)*];

            /// The wire name: the journal's `event` column and the SSE frame's `event:` field.
            pub const fn name(self) -> &'static str {
                match self {
                    $(EventKind::$variant => $name,)*
                }
            }

            /// The kind a wire name names exactly; `None` for a name this build does not know
            /// (a newer server's, or no event kind at all).
            pub fn parse(name: &str) -> Option<EventKind> {
                match name {
                    $($name => Some(EventKind::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

vocabulary! {
    /// A delta of the answer's (or the work's) visible prose.
    Token = "token",
    /// A delta of the model's reasoning.
    Reasoning = "reasoning",
    /// A whole message written while working.
    InterimAssistant = "interim_assistant",
    /// A tool call began.
    Tool = "tool",
    /// A tool call reported progress.
    ToolUpdate = "tool_update",
    /// A tool call finished.
    ToolComplete = "tool_complete",
    /// A progress tick (bytes, steps) that is not part of the transcript.
    Metering = "metering",
    /// Token usage.
    Usage = "usage",
    /// The agent named the conversation.
    Title = "title",
    /// How naming the conversation went.
    TitleStatus = "title_status",
    /// The agent's to-do list.
    TodoState = "todo_state",
    /// The agent asks before running a command.
    Approval = "approval",
    /// An approval request was answered.
    ApprovalResolved = "approval_resolved",
    /// The agent asks the user a question.
    Clarify = "clarify",
    /// A question was answered.
    ClarifyResolved = "clarify_resolved",
    /// Context compression began.
    Compressing = "compressing",
    /// Context compression ended.
    Compressed = "compressed",
    /// The agent changed something outside the transcript (memory, skills).
    StateSaved = "state_saved",
    /// A reference to something the turn produced.
    ArtifactReference = "artifact_reference",
    /// A steering message arrived too late for the turn.
    PendingSteerLeftover = "pending_steer_leftover",
    /// The agent goes on towards a goal.
    GoalContinue = "goal_continue",
    /// Something the user should know that does not end the turn.
    Warning = "warning",
    /// How full the model's context is.
    ContextStatus = "context_status",
    /// The turn ended: completed, or stopped by the worker.
    Done = "done",
    /// The user stopped the turn.
    Cancel = "cancel",
    /// The run failed.
    Error = "error",
    /// The run failed inside the application (the form peers send).
    Apperror = "apperror",
    /// The settled transcript message of the turn.
    SettledMessage = "settled_message",
    /// The end of the run's stream: transport, never an outcome.
    StreamEnd = "stream_end",
    /// A recovery snapshot of the runtime journal.
    RuntimeJournalSnapshot = "runtime_journal_snapshot",
    /// A recovery snapshot of the in-flight turn.
    InflightSnapshot = "inflight_snapshot",
}

impl EventKind {
    /// Where the anchor routes this kind, and its activity kind.
    ///
    /// Kinds outside the anchor's vocabulary (`metering`, `todo_state`, the answers to
    /// approvals and questions, warnings, context status) are [`Classification::Excluded`]:
    /// they feed the app's side channels, not the anchor.
    pub const fn meta(self) -> SourceMeta {
        use Classification::*;
        let (classification, kind) = match self {
            Self::Token | Self::InterimAssistant => (Activity, Some(Kind::ProcessProse)),
            Self::Reasoning => (Activity, Some(Kind::Reasoning)),
            Self::Tool => (Activity, Some(Kind::ToolStarted)),
            Self::ToolComplete => (Activity, Some(Kind::ToolCompleted)),
            Self::ToolUpdate => (Activity, Some(Kind::ToolUpdated)),
            Self::Compressing | Self::Compressed => (Activity, Some(Kind::LifecycleStatus)),
            Self::Approval | Self::Clarify | Self::PendingSteerLeftover | Self::GoalContinue => {
                (Activity, Some(Kind::ControlBoundary))
            }
            Self::ArtifactReference => (Artifact, Some(Kind::ArtifactReference)),
            Self::StateSaved => (SideEffect, None),
            Self::Usage
            | Self::Title
            | Self::RuntimeJournalSnapshot
            | Self::InflightSnapshot
            | Self::SettledMessage => (Metadata, None),
            Self::Done | Self::Cancel | Self::Error | Self::Apperror => {
                (Activity, Some(Kind::TerminalStatus))
            }
            Self::StreamEnd => (Transport, None),
            Self::Metering
            | Self::TitleStatus
            | Self::TodoState
            | Self::ApprovalResolved
            | Self::ClarifyResolved
            | Self::Warning
            | Self::ContextStatus => {
                return SourceMeta {
                    classification: Excluded,
                    kind: None,
                    name: None,
                }
            }
        };
        SourceMeta {
            classification,
            kind,
            name: Some(self.name()),
        }
    }

    /// Whether an event of this kind ends the turn (and carries its [`crate::TerminalState`]).
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Done | Self::Cancel | Self::Error | Self::Apperror
        )
    }

    /// Whether the anchor makes an activity row of it.
    pub const fn is_activity(self) -> bool {
        matches!(self.meta().classification, Classification::Activity)
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Classifies a (trimmed) source event type; unknown types are excluded.
///
/// Names of `Object.prototype` members (`constructor`, `__proto__`, …) are excluded too: the
/// reference's table lookup falls through to the prototype for them (Quirk Q1), which stores
/// the event nowhere yet counts it as applied. We treat them like any other unknown name.
pub fn classify(source_type: &str) -> SourceMeta {
    EventKind::parse(source_type).map_or(
        SourceMeta {
            classification: Classification::Excluded,
            kind: None,
            name: None,
        },
        EventKind::meta,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_distinct() {
        let mut seen = std::collections::BTreeSet::new();
        for &kind in EventKind::ALL {
            assert_eq!(EventKind::parse(kind.name()), Some(kind));
            assert!(seen.insert(kind.name()), "{kind} twice");
        }
        assert_eq!(EventKind::parse("Token"), None);
        assert_eq!(EventKind::parse(" token"), None);
        assert_eq!(EventKind::parse("constructor"), None);
    }

    #[test]
    fn terminal_kinds_are_the_terminal_status_activities() {
        for &kind in EventKind::ALL {
            assert_eq!(
                kind.is_terminal(),
                kind.meta().kind == Some(Kind::TerminalStatus),
                "{kind}"
            );
        }
    }
}
