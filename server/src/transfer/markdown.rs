//! The Markdown export: a conversation as a person reads it, the branch it shows. Each answer
//! comes with what the agent did for it, as the Compact Worklog shows it (folded under a
//! `<details>`): its reasoning, every tool call with its arguments and result, approvals and
//! questions with the answers given, and how the turn ended when it did not complete.

use std::collections::HashMap;

use app::api::{JournalEvent, MessageData, TurnData};
use app::model::{fold_tools, Segment, SegmentKind, TurnState, WorkItem};

use crate::store::{Message, Role, Session, Store, StoreError};

/// The longest a step's text runs in the export (the JSON Lines export has it whole).
const STEP_CHARS: usize = 300;

/// The conversation `session` as Markdown.
pub async fn markdown(store: &dyn Store, session: &Session) -> Result<String, StoreError> {
    let mut out = format!("# {}\n", session.title);
    // The branch the session shows (the other versions of its turns are in the JSON lines).
    let messages = match store.branch(&session.id).await?.last() {
        Some((last, _)) => store.history(&last.id).await?,
        None => Vec::new(),
    };
    for m in messages {
        let who = if m.role == Role::User {
            "You"
        } else {
            "Assistant"
        };
        out.push_str(&format!("\n## {who}\n\n"));
        if m.role == Role::Assistant {
            if let Some(run_id) = &m.run_id {
                let events = crate::snapshots::journal(store, run_id).await?;
                out.push_str(&worklog(&session.id, run_id, events));
            }
        }
        message(&mut out, &m);
    }
    Ok(out)
}

/// A message's files and text.
fn message(out: &mut String, m: &Message) {
    let state = m
        .terminal_state
        .map_or("no answer", anchor::TerminalState::as_str);
    // The files a message carried: a list of links before its text.
    for a in &m.attachments {
        let name = a.name.replace(['[', ']'], "");
        out.push_str(&format!(
            "- Attached: [{name}]({}) ({}, {})\n",
            a.url(),
            a.mime,
            app::api::file_size(a.size)
        ));
    }
    if !m.attachments.is_empty() {
        out.push('\n');
    }
    if m.content.is_empty() && m.role == Role::Assistant {
        out.push_str(&format!("_(no final answer: {state})_\n"));
    } else if !m.content.is_empty() || m.attachments.is_empty() {
        out.push_str(&m.content);
        out.push('\n');
        if m.partial {
            out.push_str(&format!("\n_(partial answer: the turn ended {state})_\n"));
        }
    }
}

/// What the agent did in run `run_id`, as a folded list ("" when it did nothing to list).
fn worklog(session_id: &str, run_id: &str, events: Vec<JournalEvent>) -> String {
    // What each approval asked to run (its card shows it; its row says what it is for).
    let commands: HashMap<String, String> = events
        .iter()
        .filter(|e| e.kind == "approval")
        .filter_map(|e| {
            let id = e.payload.get("approval_id")?.as_str()?;
            let command = e.payload.get("command")?.as_str()?;
            Some((id.to_owned(), command.to_owned()))
        })
        .collect();
    let turn = TurnData {
        user: MessageData {
            id: String::new(),
            content: String::new(),
            created_at: 0.0,
            attachments: Vec::new(),
        },
        run_id: run_id.to_owned(),
        turn_id: format!("turn-{run_id}"),
        events,
        running: false,
        snapshot: None,
        versions: Default::default(),
        model: None,
    };
    let state = TurnState::new(session_id, &turn);
    let items = fold_tools(&state.process());
    if items.is_empty() {
        return String::new();
    }
    let lines: Vec<String> = items
        .iter()
        .map(|item| step(&state, &commands, item))
        .collect();
    let n = lines.len();
    format!(
        "<details>\n<summary>Worklog: {n} step{}</summary>\n\n{}\n\n</details>\n\n",
        if n == 1 { "" } else { "s" },
        lines.join("\n")
    )
}

/// One step as a list item.
fn step(state: &TurnState, commands: &HashMap<String, String>, item: &WorkItem) -> String {
    match item {
        WorkItem::Tool { first, done } => {
            let tool = done
                .as_deref()
                .and_then(|d| d.tool.as_ref())
                .or(first.tool.as_ref());
            let Some(tool) = tool else {
                return format!("- Tool call: {}", text(&first.text));
            };
            let mut line = format!("- **{}** {}", text(&tool.name), code(&tool.target));
            if !tool.result.is_empty() {
                let failed = if tool.is_error { " (failed)" } else { "" };
                line.push_str(&format!(" → {}{failed}", code(&tool.result)));
            } else if done.is_none() {
                line.push_str(" (no result)");
            }
            line
        }
        WorkItem::Segment(s) => segment(state, commands, s),
    }
}

fn segment(state: &TurnState, commands: &HashMap<String, String>, s: &Segment) -> String {
    match s.kind {
        SegmentKind::Thinking => format!("- Thought: _{}_", text(&s.text)),
        SegmentKind::Prose => format!("- Said: {}", text(&s.text)),
        SegmentKind::Control => {
            let id = s.interaction.as_deref().unwrap_or_default();
            let answer = state
                .answers
                .get(id)
                .map_or_else(|| "not answered".to_owned(), |a| text(a));
            match commands.get(id) {
                Some(command) => format!(
                    "- Asked to run {} ({}): {answer}",
                    code(command),
                    text(&s.text)
                ),
                None => format!("- Asked: {}: {answer}", text(&s.text)),
            }
        }
        _ => format!("- {}", text(&s.text)),
    }
}

/// `raw` on one line, at most [`STEP_CHARS`], with what Markdown or HTML would read as markup
/// made plain (a tool's output is no one's markup).
fn text(raw: &str) -> String {
    let line = one_line(raw);
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '*' | '_' | '`' | '[' | ']' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// `raw` on one line as a code span, fenced with more backticks than it holds.
fn code(raw: &str) -> String {
    let line = one_line(raw);
    if line.is_empty() {
        return String::new();
    }
    let longest = line.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    format!("{fence} {line} {fence}")
}

fn one_line(raw: &str) -> String {
    let joined = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= STEP_CHARS {
        return joined;
    }
    let cut: String = joined.chars().take(STEP_CHARS - 1).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::{code, text};

    #[test]
    fn a_steps_text_is_never_markup() {
        assert_eq!(
            text("</details><b>x</b>"),
            "&lt;/details&gt;&lt;b&gt;x&lt;/b&gt;"
        );
        assert_eq!(text("a *b* [c](d)"), "a \\*b\\* \\[c\\](d)");
        assert_eq!(code("rm -rf target/"), "` rm -rf target/ `");
        assert_eq!(code("a `b` c"), "`` a `b` c ``");
        assert_eq!(text("two\nlines"), "two lines");
    }
}
