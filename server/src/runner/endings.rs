//! What an ending says: the terminal state, the note a reader sees, and the message that settles
//! the turn, for each way a run can end.

use super::*;

/// How a run ends, as the journal records it.
pub(super) struct Ending {
    /// The terminal event.
    pub(super) kind: EventKind,
    /// The state it reports.
    pub(super) state: TerminalState,
    /// The terminal event's data.
    pub(super) payload: Value,
    /// The settled answer (empty when the turn ended without one).
    pub(super) answer: String,
    /// Token usage, when the agent reported it.
    pub(super) usage: Option<Value>,
}

impl Ending {
    /// How `end` is journaled.
    pub(super) fn of(end: RunEnd) -> Ending {
        let (kind, state, payload, answer, usage) = match end {
            RunEnd::Completed { answer, usage } => (
                EventKind::Done,
                TerminalState::Completed,
                json!({"status": "completed", "usage": usage}),
                answer,
                usage,
            ),
            // Completed, and said to be cut off: the terminal state stays the agent's, the
            // notice travels beside it (and in the settled message).
            RunEnd::CutOff {
                answer,
                usage,
                limit,
            } => {
                let message = match limit {
                    Some(limit) => format!(
                        "The answer was cut off: it reached the limit of {limit} tokens for an \
                         answer."
                    ),
                    None => "The answer was cut off: the model ran out of room in its context."
                        .to_owned(),
                };
                (
                    EventKind::Done,
                    TerminalState::Completed,
                    json!({"status": "completed", "usage": usage, "finish_reason": "length",
                       "cut_off": {"limit": limit, "message": message}}),
                    answer,
                    usage,
                )
            }
            RunEnd::ToolLimitReached { answer, usage } => (
                EventKind::Done,
                TerminalState::ToolLimitReached,
                json!({"status": "tool_limit_reached", "terminal_state": "tool_limit_reached",
                   "terminal_reason": "max_iterations", "usage": usage,
                   "message": "The agent reached its step limit before finishing."}),
                answer,
                usage,
            ),
            RunEnd::Cancelled => (
                EventKind::Cancel,
                TerminalState::Cancelled,
                json!({"status": "cancelled", "type": "cancelled", "message": "Cancelled by user"}),
                String::new(),
                None,
            ),
            RunEnd::NoResponse => (
                EventKind::Apperror,
                TerminalState::NoResponse,
                json!({"status": "no_response", "type": "no_response", "message": "The model returned no response.",
                   "hint": "Try again, or rephrase the message."}),
                String::new(),
                None,
            ),
            RunEnd::CompressionExhausted => (
                EventKind::Apperror,
                TerminalState::CompressionExhausted,
                json!({"status": "compression_exhausted", "type": "compression_exhausted",
                   "message": "The conversation is too long to continue, even after compression.",
                   "hint": "Start a new conversation for what comes next: this one stays as it is."}),
                String::new(),
                None,
            ),
            RunEnd::ContextOverflow { message, hint } => (
                EventKind::Apperror,
                TerminalState::CompressionExhausted,
                json!({"status": "compression_exhausted", "type": "context_overflow",
                   "message": redact_secrets(&message), "hint": hint}),
                String::new(),
                None,
            ),
            RunEnd::Degraded { message } => (
                EventKind::Apperror,
                TerminalState::Degraded,
                json!({"status": "degraded", "type": "degraded", "message": message,
                   "hint": "The step marked as failed above fell short. Retry to run the turn \
                      again, or ask the agent to go on with what it has."}),
                String::new(),
                None,
            ),
            RunEnd::Interrupted => (
                EventKind::Apperror,
                TerminalState::Interrupted,
                json!({"status": "interrupted", "type": "interrupted", "recovery_control": true,
                   "message": "The live worker stopped before this turn finished.",
                   "hint": "The server running this turn stopped (it restarted, or went away) \
                      before the turn finished. Everything journaled before then is kept; send \
                      the message again to retry."}),
                String::new(),
                None,
            ),
            RunEnd::Failed { message, hint } => (
                EventKind::Apperror,
                TerminalState::Error,
                // Upstream text: never a credential in what the turn shows.
                json!({"status": "error", "type": "error", "message": redact_secrets(&message),
                   "hint": hint.as_deref().map(redact_secrets)}),
                String::new(),
                None,
            ),
        };
        Ending {
            kind,
            state,
            payload,
            answer,
            usage,
        }
    }
}
