//! Reading a JSON Lines export back (pure): every line checked, every run's journal gapless
//! and ended at most once, every parent a run read before. What it reads still carries the
//! export's ids; `transfer` issues new ones.

use anchor::{EventKind, TerminalState};
use serde_json::{Map, Value};

use crate::store::{NewEvent, TitleSource};

/// Runs an import may hold (413 beyond).
pub const MAX_RUNS: usize = 5_000;

/// The longest id the reader takes (a run's, a turn's, a message's).
const MAX_ID: usize = 200;

/// A conversation as an export holds it.
#[derive(Debug, PartialEq)]
pub struct Export {
    /// Its runs, in the file's order (each after the run it follows).
    pub runs: Vec<ExportedRun>,
    /// The title it was exported with, else the last one the agent gave it, if any.
    pub title: Option<String>,
    /// Where that title came from.
    pub title_source: TitleSource,
}

impl Default for Export {
    fn default() -> Self {
        Export {
            runs: Vec::new(),
            title: None,
            title_source: TitleSource::Default,
        }
    }
}

/// A run as an export holds it.
#[derive(Debug, PartialEq)]
pub struct ExportedRun {
    /// Its id in the export.
    pub id: String,
    /// The run it follows: its index in [`Export::runs`].
    pub parent: Option<usize>,
    /// The message it answers.
    pub message: ExportedMessage,
    /// Seconds since the epoch.
    pub created_at: f64,
    /// Its journal up to its end.
    pub events: Vec<NewEvent>,
    /// Its terminal event, when it has one.
    pub terminal: Option<NewEvent>,
    /// The data of its `settled_message`, when it has one.
    pub settled: Option<Map<String, Value>>,
}

/// The user message of an exported run.
#[derive(Debug, PartialEq)]
pub enum ExportedMessage {
    /// First read with this run.
    New {
        /// Its id in the export.
        id: String,
        /// Its text.
        content: String,
        /// Seconds since the epoch.
        created_at: f64,
        /// The ids of its files.
        attachments: Vec<String>,
    },
    /// The message of an earlier run (a retry): that run's index.
    Of(usize),
}

/// Why an export cannot be read: the line (from 1) and what is wrong with it.
#[derive(Debug, PartialEq, Eq)]
pub struct ReadError {
    /// The line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
    /// Past a limit (413), not malformed (400).
    pub too_large: bool,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Where a run's journal is.
#[derive(Clone, Copy, PartialEq)]
enum Phase {
    /// Before its terminal event.
    Open,
    /// After its terminal event.
    Ended,
    /// After its `stream_end`: nothing more.
    Closed,
}

/// Reads an export. The lines of a run follow its `user_message` line; blank lines are
/// skipped.
pub fn read(text: &str, max_message_bytes: usize) -> Result<Export, ReadError> {
    // A byte-order mark (an editor's) is not part of the first line.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut export = Export::default();
    let mut ids: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut messages: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut phase = Phase::Open;
    // The seq of the last row read of the run read last.
    let mut last_seq = 0u64;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let fail = |message: String| ReadError {
            line,
            message,
            too_large: false,
        };
        if raw.trim().is_empty() {
            continue;
        }
        let row: Map<String, Value> =
            serde_json::from_str(raw).map_err(|e| fail(format!("not a JSON object ({e})")))?;
        let event = text_field(&row, "event")
            .or_else(|| text_field(&row, "type"))
            .ok_or_else(|| fail("no \"event\"".into()))?;
        let created_at = time_field(&row, "created_at").map_err(&fail)?;
        let run_id = id_field(&row, "run_id").map_err(&fail)?;
        if event == "user_message" {
            if export.runs.len() == MAX_RUNS {
                return Err(ReadError {
                    line,
                    message: format!("more than {MAX_RUNS} turns"),
                    too_large: true,
                });
            }
            if ids.contains_key(run_id) {
                return Err(fail(format!("run {run_id:?} appears twice")));
            }
            let parent = match row.get("parent_run_id") {
                None | Some(Value::Null) => None,
                Some(Value::String(parent)) => Some(*ids.get(parent).ok_or_else(|| {
                    fail(format!("parent_run_id {parent:?} names no run before it"))
                })?),
                Some(_) => return Err(fail("parent_run_id is not a string".into())),
            };
            let payload = object_field(&row, "payload").map_err(&fail)?;
            let message_id = id_field(payload, "id").map_err(|e| fail(format!("payload: {e}")))?;
            let message = match messages.get(message_id) {
                Some(&first) => ExportedMessage::Of(first),
                None => {
                    let content = text_field(payload, "content")
                        .ok_or_else(|| fail("payload: no \"content\" text".into()))?;
                    if content.len() > max_message_bytes {
                        return Err(ReadError {
                            line,
                            message: format!(
                                "a message of {} bytes (the limit is {max_message_bytes})",
                                content.len()
                            ),
                            too_large: true,
                        });
                    }
                    messages.insert(message_id.to_owned(), export.runs.len());
                    ExportedMessage::New {
                        id: message_id.to_owned(),
                        content: content.to_owned(),
                        created_at: time_field(payload, "created_at").unwrap_or(created_at),
                        attachments: attachment_ids(payload),
                    }
                }
            };
            if let Some(title) = text_field(&row, "session_title").filter(|t| !t.trim().is_empty())
            {
                export.title = Some(title.to_owned());
                export.title_source = TitleSource::Manual;
            }
            ids.insert(run_id.to_owned(), export.runs.len());
            export.runs.push(ExportedRun {
                id: run_id.to_owned(),
                parent,
                message,
                created_at,
                events: Vec::new(),
                terminal: None,
                settled: None,
            });
            phase = Phase::Open;
            last_seq = 0;
            continue;
        }
        // A row of the journal of the run read last.
        let Some(run) = export.runs.last_mut().filter(|run| run.id == run_id) else {
            return Err(fail(format!(
                "a row of run {run_id:?} that is not after that run's user_message line"
            )));
        };
        let kind =
            EventKind::parse(event).ok_or_else(|| fail(format!("unknown event {event:?}")))?;
        if phase == Phase::Closed {
            return Err(fail(format!("{event} after the run's stream_end")));
        }
        let expected = last_seq + 1;
        match row.get("seq").and_then(Value::as_u64) {
            Some(seq) if seq == expected => last_seq = seq,
            Some(seq) => return Err(fail(format!("seq {seq} where {expected} was due"))),
            None => return Err(fail("no \"seq\" number".into())),
        }
        let mut new = NewEvent {
            kind,
            payload: object_field(&row, "payload").map_err(&fail)?.clone(),
            terminal_state: None,
            created_at,
        };
        let terminal = row
            .get("terminal")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        match (phase, kind, terminal) {
            (Phase::Open, _, true) => {
                let state = row
                    .get("terminal_state")
                    .and_then(Value::as_str)
                    .and_then(TerminalState::parse)
                    .ok_or_else(|| fail("a terminal row with no known terminal_state".into()))?;
                new.terminal_state = Some(state);
                run.terminal = Some(new);
                phase = Phase::Ended;
            }
            (Phase::Open, EventKind::SettledMessage | EventKind::StreamEnd, _) => {
                return Err(fail(format!("{event} before the run's end")));
            }
            (Phase::Open, ..) => {
                if kind == EventKind::Title && export.title_source != TitleSource::Manual {
                    if let Some(title) = text_field(&new.payload, "title") {
                        export.title = Some(title.to_owned());
                        export.title_source = TitleSource::Agent;
                    }
                }
                run.events.push(new);
            }
            (Phase::Ended, EventKind::SettledMessage, false) if run.settled.is_none() => {
                text_field(&new.payload, "content")
                    .ok_or_else(|| fail("settled_message: no \"content\" text".into()))?;
                run.settled = Some(new.payload);
            }
            (Phase::Ended, EventKind::StreamEnd, false) => phase = Phase::Closed,
            _ => return Err(fail(format!("{event} after the run's end"))),
        }
    }
    if export.runs.is_empty() {
        return Err(ReadError {
            line: text.lines().count().max(1),
            message: "no user_message line: this is not a conversation's JSON Lines export".into(),
            too_large: false,
        });
    }
    Ok(export)
}

fn text_field<'a>(row: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    row.get(key).and_then(Value::as_str)
}

fn id_field<'a>(row: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    match text_field(row, key) {
        Some(id) if !id.is_empty() && id.len() <= MAX_ID => Ok(id),
        Some(_) => Err(format!("{key:?} is empty or longer than {MAX_ID} bytes")),
        None => Err(format!("no {key:?} text")),
    }
}

fn time_field(row: &Map<String, Value>, key: &str) -> Result<f64, String> {
    match row.get(key).and_then(Value::as_f64) {
        Some(t) if t.is_finite() && t >= 0.0 => Ok(t),
        _ => Err(format!("no {key:?} time")),
    }
}

fn object_field<'a>(
    row: &'a Map<String, Value>,
    key: &str,
) -> Result<&'a Map<String, Value>, String> {
    row.get(key)
        .and_then(Value::as_object)
        .ok_or_else(|| format!("no {key:?} object"))
}

fn attachment_ids(payload: &Map<String, Value>) -> Vec<String> {
    payload
        .get("attachments")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|a| a.get("id").and_then(Value::as_str))
                .filter(|id| !id.is_empty() && id.len() <= MAX_ID)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN_RUN: &str = concat!(
        r#"{"type":"user_message","run_id":"r1","turn_id":"t1","parent_run_id":null,"created_at":1.0,"#,
        r#""payload":{"id":"m1","content":"hi","created_at":1.0}}"#,
        "\n",
        r#"{"type":"token","run_id":"r1","seq":1,"created_at":1.5,"payload":{"text":"yo"}}"#,
        "\n",
    );

    #[test]
    fn a_byte_order_mark_and_windows_line_ends_are_read_past() {
        let text = format!("\u{feff}{}", OPEN_RUN.replace('\n', "\r\n"));
        let export = read(&text, 1024).unwrap();
        assert_eq!(export.runs.len(), 1);
        assert_eq!(export.runs[0].events.len(), 1);
        assert_eq!(export.runs[0].events[0].payload["text"], "yo");
        // Left open: whoever writes it ends it.
        assert!(export.runs[0].terminal.is_none());
        assert_eq!(export.title, None);
    }

    #[test]
    fn a_terminal_row_must_say_how_the_run_ended() {
        let text = format!(
            "{OPEN_RUN}{}\n",
            r#"{"type":"done","run_id":"r1","seq":2,"created_at":2.0,"terminal":true,"terminal_state":"sideways","payload":{}}"#
        );
        let error = read(&text, 1024).unwrap_err();
        assert_eq!(error.line, 3);
        assert!(error.message.contains("terminal_state"), "{error}");
        assert!(!error.too_large);
    }
}
