//! The answer rule, one home for the page and the server: a turn's answer is the prose it
//! wrote after the last piece of other work (reasoning, a tool call, a note, a question).
//! The page shows that prose while it streams; the server stores the same text as the partial
//! answer of a turn that ended before completing.

use serde_json::Value;

use crate::{EventKind, Kind};

/// Whether an event of type `kind` ends the prose an answer is made of: every activity but
/// prose and the terminal event (reasoning, tool calls, notes, questions). Prose written before
/// one of them led to that work and is interim; the answer is the prose after the last of them.
/// Everything that is not activity (usage, title, todos, artifacts) leaves the answer going.
pub fn breaks_answer(kind: &str) -> bool {
    EventKind::parse(kind.trim()).is_some_and(|k| {
        k.is_activity()
            && !matches!(
                k.meta().kind,
                Some(Kind::ProcessProse | Kind::TerminalStatus)
            )
    })
}

/// The kinds that [`breaks_answer`].
pub fn answer_breaks() -> impl Iterator<Item = EventKind> {
    EventKind::ALL
        .iter()
        .copied()
        .filter(|k| breaks_answer(k.name()))
}

/// Whether events of type `kind` carry prose of the turn (token deltas or whole messages).
pub fn is_prose(kind: &str) -> bool {
    crate::classify(kind.trim()).kind == Some(Kind::ProcessProse)
}

/// The text a prose event adds: its first non-empty `text`, `content` or `message`.
pub fn prose_text(payload: &Value) -> &str {
    ["text", "content", "message"]
        .iter()
        .filter_map(|k| payload.get(*k).and_then(Value::as_str))
        .find(|t| !t.is_empty())
        .unwrap_or_default()
}

/// Joins consecutive prose parts into one text: token deltas continue each other as sent; a
/// whole message (`interim_assistant`) is a paragraph of its own.
pub fn join_prose<'a>(parts: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut out = String::new();
    let mut last_delta: Option<bool> = None;
    for (kind, text) in parts {
        if text.is_empty() {
            continue;
        }
        let delta = kind == "token";
        if last_delta.is_some() && !(delta && last_delta == Some(true)) {
            let trimmed = out.trim_end_matches([' ', '\t']).len();
            out.truncate(trimmed);
            if !out.ends_with("\n\n") {
                out.push_str(if out.ends_with('\n') { "\n" } else { "\n\n" });
            }
        }
        out.push_str(text);
        last_delta = Some(delta);
    }
    out
}

/// The answer a turn's events (in journal order) had streamed when they stopped: the prose
/// after the last event that [`breaks_answer`]. The server stores it as the partial answer of
/// a turn that ended without completing; the page shows the same text while it streams.
pub fn answer_tail<'a>(events: impl IntoIterator<Item = (&'a str, &'a Value)>) -> String {
    let mut parts: Vec<(&str, &str)> = Vec::new();
    for (kind, payload) in events {
        if breaks_answer(kind) {
            parts.clear();
        } else if is_prose(kind) {
            parts.push((kind, prose_text(payload)));
        }
    }
    join_prose(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_answer_is_the_prose_after_the_last_other_activity() {
        let payload = |t: &str| json!({ "text": t });
        let (a, b, c, d) = (
            payload("Let me look. "),
            payload("Found it: "),
            payload("the cache."),
            json!({"content": "A whole message."}),
        );
        let tool = json!({"name": "terminal", "tid": "c1"});
        let rows = vec![
            ("token", &a),
            ("tool", &tool),
            ("metering", &tool),
            ("token", &b),
            ("usage", &tool),
            ("token", &c),
        ];
        assert_eq!(answer_tail(rows.clone()), "Found it: the cache.");
        let mut with_note = rows.clone();
        with_note.push(("compressing", &tool));
        assert_eq!(answer_tail(with_note), "", "a note ends the answer too");
        let mut with_message = rows;
        with_message.push(("interim_assistant", &d));
        assert_eq!(
            answer_tail(with_message),
            "Found it: the cache.\n\nA whole message."
        );
        // The work between answers: reasoning, tools, notes, questions, steering.
        let mut breaks: Vec<&str> = answer_breaks().map(EventKind::name).collect();
        breaks.sort_unstable();
        assert_eq!(
            breaks,
            [
                "approval",
                "clarify",
                "compressed",
                "compressing",
                "goal_continue",
                "pending_steer_leftover",
                "reasoning",
                "tool",
                "tool_complete",
                "tool_update"
            ]
        );
        for kind in [
            "token",
            "interim_assistant",
            "done",
            "cancel",
            "apperror",
            "usage",
            "metering",
            "title",
            "todo_state",
            "settled_message",
            "stream_end",
            "artifact_reference",
            "nonsense",
        ] {
            assert!(!breaks_answer(kind), "{kind}");
        }
    }
}
