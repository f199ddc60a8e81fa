use anchor::TerminalState;
use leptos::prelude::*;

/// The card title for a terminal state (the server's shared pages say it too).
pub fn terminal_label(state: TerminalState) -> &'static str {
    match state {
        TerminalState::Completed => "Completed",
        TerminalState::Cancelled => "Task cancelled",
        TerminalState::Interrupted => "Response interrupted",
        TerminalState::NoResponse => "No response from provider",
        TerminalState::ToolLimitReached => "Tool iteration limit reached",
        TerminalState::CompressionExhausted => "Too long for the model's context",
        TerminalState::ConnectionLost => "Connection interrupted",
        TerminalState::Degraded => "Only partly done",
        TerminalState::Error => "Error",
    }
}

/// What to tell the user when the turn gives no hint of its own.
fn default_hint(state: TerminalState) -> &'static str {
    match state {
        TerminalState::Completed => "",
        TerminalState::Cancelled => {
            "You stopped this turn. Everything it did before that is kept above."
        }
        TerminalState::Interrupted => {
            "The turn stopped before it finished. Send the message again to retry."
        }
        TerminalState::NoResponse => {
            "The provider returned nothing; this is often a silent rate limit."
        }
        TerminalState::ToolLimitReached => {
            "The agent used all of its steps. Ask it to continue, or narrow the task."
        }
        TerminalState::CompressionExhausted => {
            "The conversation no longer fits. Start a new conversation for what comes next."
        }
        TerminalState::ConnectionLost => {
            "The connection dropped before the turn settled. Reload to restore it."
        }
        TerminalState::Degraded => {
            "Part of this turn's work is missing. Retry to run it again, or go on with what it has."
        }
        TerminalState::Error => "Something went wrong. The partial work is kept above.",
    }
}

/// The end of a turn that did not simply complete: what happened and what to do.
#[component]
pub(crate) fn TerminalCard(
    state: TerminalState,
    #[prop(into)] message: String,
    #[prop(into)] hint: String,
    /// What the reader can do about it (a button), if anything.
    #[prop(optional)]
    children: Option<Children>,
) -> impl IntoView {
    let hint = if hint.is_empty() {
        default_hint(state).to_owned()
    } else {
        hint
    };
    let tone = match state {
        TerminalState::Cancelled => "muted",
        TerminalState::ToolLimitReached
        | TerminalState::Degraded
        | TerminalState::ConnectionLost => "warning",
        _ => "danger",
    };
    view! {
        <div class=format!("terminal-card {tone}") role="status" data-terminal-state=state.as_str()>
            <strong class="terminal-label">{terminal_label(state)}</strong>
            {(!message.is_empty()).then(|| view! { <p class="terminal-message">{message.clone()}</p> })}
            {(!hint.is_empty()).then(|| view! { <p class="terminal-hint">{hint.clone()}</p> })}
            {children.map(|action| view! { <div class="card-actions terminal-actions">{action()}</div> })}
        </div>
    }
}

/// Why a turn without a terminal state is not shown as simply running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Evidence {
    /// The live connection dropped; the turn goes on on the server and resumes after `seq`.
    Restoring(u64),
    /// The run is over, but its record never said how it ended.
    Incomplete,
}

/// In place of an empty "running" shell: what the page knows and what it is doing about it.
#[component]
pub(crate) fn EvidenceCard(evidence: Evidence) -> impl IntoView {
    let (kind, title, text) = match evidence {
        Evidence::Restoring(seq) => (
            "restoring",
            "Reconnecting",
            format!(
                "The connection dropped. The turn keeps running on the server and continues here \
                 after event {seq} once the connection is back."
            ),
        ),
        Evidence::Incomplete => (
            "incomplete",
            "Incomplete turn",
            "This turn stopped without recording how it ended. Everything that arrived is kept \
             above."
                .to_owned(),
        ),
    };
    view! {
        <div class="terminal-card warning evidence-card" role="status" data-evidence=kind>
            <strong class="terminal-label">{title}</strong>
            <p class="terminal-hint">{text}</p>
        </div>
    }
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::*;

    #[test]
    fn every_terminal_state_has_a_card_with_its_label_and_a_hint() {
        let owner = Owner::new();
        owner.set();
        for state in TerminalState::ALL {
            let html =
                view! { <TerminalCard state=state message="It went <b>wrong</b>" hint="" /> }
                    .to_html();
            assert!(
                html.contains(&format!("data-terminal-state=\"{}\"", state.as_str())),
                "{html}"
            );
            assert!(html.contains(terminal_label(state)), "{html}");
            assert!(
                html.contains("It went &lt;b&gt;wrong&lt;/b&gt;"),
                "message is text: {html}"
            );
            if state != TerminalState::Completed {
                assert!(html.contains("terminal-hint"), "{state}: a default hint");
            }
        }
    }

    #[test]
    fn evidence_cards_say_what_is_known() {
        let owner = Owner::new();
        owner.set();
        let restoring = view! { <EvidenceCard evidence=Evidence::Restoring(42) /> }.to_html();
        assert!(
            restoring.contains("data-evidence=\"restoring\""),
            "{restoring}"
        );
        assert!(restoring.contains("after event 42"), "{restoring}");
        let incomplete = view! { <EvidenceCard evidence=Evidence::Incomplete /> }.to_html();
        assert!(
            incomplete.contains("data-evidence=\"incomplete\""),
            "{incomplete}"
        );
        assert!(
            !incomplete.contains("data-terminal-state"),
            "not a terminal state"
        );
    }
}
