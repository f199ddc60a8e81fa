//! Reading a JSON Lines export back (pure), a run at a time: every line checked, every run's
//! journal gapless and ended at most once, every parent a run read before. What it reads
//! still carries the export's ids; `transfer` issues new ones.

use anchor::{EventKind, TerminalState};
use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::store::{NewEvent, TitleSource};

/// Runs an import may hold (413 beyond).
pub const MAX_RUNS: usize = 5_000;

/// Files a message of an import may name (413 beyond), as many as a message may carry.
pub const MAX_FILES: usize = 20;

/// The longest id the reader takes (a run's, a turn's, a message's).
const MAX_ID: usize = 200;

/// What an export says of its conversation once read to its end.
#[derive(Debug, PartialEq)]
pub struct Heading {
    /// The title it was exported with, else the last one the agent gave it, if any.
    pub title: Option<String>,
    /// Where that title came from.
    pub title_source: TitleSource,
    /// The first line of its first message (for a title when it has none).
    pub first_line: Option<String>,
}

/// A run as an export holds it.
#[derive(Debug, PartialEq)]
pub struct ExportedRun {
    /// Its id in the export.
    pub id: String,
    /// The run it follows: its index among the runs read.
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
    /// The bytes of its lines in the export.
    pub bytes: usize,
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

/// Reads an export a run at a time ([`Reader::next_run`]): what it holds is the run being
/// read and the ids of those read before, never the whole conversation. The lines of a run
/// follow its `user_message` line; blank lines are skipped.
pub struct Reader<'a> {
    lines: std::iter::Enumerate<std::str::Lines<'a>>,
    max_message_bytes: usize,
    /// Run ids read, with their index.
    ids: HashMap<String, usize>,
    /// Message ids read, with the index of the run that brought each.
    messages: HashMap<String, usize>,
    /// The run being read.
    run: Option<ExportedRun>,
    phase: Phase,
    /// The seq of the last row read of the run being read.
    last_seq: u64,
    /// The number of lines (for the error of an export with no run).
    line: usize,
    heading: Heading,
}

/// A line split into its fields.
type Row = Map<String, Value>;

impl<'a> Reader<'a> {
    /// A reader of `text`, taking messages of at most `max_message_bytes`.
    pub fn new(text: &'a str, max_message_bytes: usize) -> Self {
        // A byte-order mark (an editor's) is not part of the first line.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        Reader {
            lines: text.lines().enumerate(),
            max_message_bytes,
            ids: HashMap::new(),
            messages: HashMap::new(),
            run: None,
            phase: Phase::Open,
            last_seq: 0,
            line: 0,
            heading: Heading {
                title: None,
                title_source: TitleSource::Default,
                first_line: None,
            },
        }
    }

    /// The next run, read whole; `None` after the last. An export with no run at all is an
    /// error at its end.
    pub fn next_run(&mut self) -> Result<Option<ExportedRun>, ReadError> {
        while let Some((index, raw)) = self.lines.next() {
            let line = index + 1;
            self.line = line;
            if raw.trim().is_empty() {
                continue;
            }
            let row: Row = serde_json::from_str(raw)
                .map_err(|e| fail(line, format!("not a JSON object ({e})")))?;
            let event = text_field(&row, "event")
                .or_else(|| text_field(&row, "type"))
                .ok_or_else(|| fail(line, "no \"event\"".into()))?
                .to_owned();
            if event == "user_message" {
                let next = self.begin(line, raw.len(), &row)?;
                if let Some(done) = self.run.replace(next) {
                    return Ok(Some(done));
                }
            } else {
                self.row(line, raw.len(), &event, row)?;
            }
        }
        match self.run.take() {
            Some(done) => Ok(Some(done)),
            None if self.ids.is_empty() => Err(fail(
                self.line.max(1),
                "no user_message line: this is not a conversation's JSON Lines export".into(),
            )),
            None => Ok(None),
        }
    }

    /// What the export says of its conversation (once every run is read).
    pub fn heading(self) -> Heading {
        self.heading
    }

    /// A run begins: its `user_message` line.
    fn begin(&mut self, line: usize, bytes: usize, row: &Row) -> Result<ExportedRun, ReadError> {
        let created_at = time_field(row, "created_at").map_err(|e| fail(line, e))?;
        let run_id = id_field(row, "run_id").map_err(|e| fail(line, e))?;
        if self.ids.len() == MAX_RUNS {
            return Err(too_large(line, format!("more than {MAX_RUNS} turns")));
        }
        if self.ids.contains_key(run_id) {
            return Err(fail(line, format!("run {run_id:?} appears twice")));
        }
        let parent = match row.get("parent_run_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(parent)) => Some(*self.ids.get(parent).ok_or_else(|| {
                fail(
                    line,
                    format!("parent_run_id {parent:?} names no run before it"),
                )
            })?),
            Some(_) => return Err(fail(line, "parent_run_id is not a string".into())),
        };
        let payload = object_field(row, "payload").map_err(|e| fail(line, e))?;
        let message_id =
            id_field(payload, "id").map_err(|e| fail(line, format!("payload: {e}")))?;
        let index = self.ids.len();
        let message = match self.messages.get(message_id) {
            Some(&first) => ExportedMessage::Of(first),
            None => {
                let content = text_field(payload, "content")
                    .ok_or_else(|| fail(line, "payload: no \"content\" text".into()))?;
                if content.len() > self.max_message_bytes {
                    return Err(too_large(
                        line,
                        format!(
                            "a message of {} bytes (the limit is {})",
                            content.len(),
                            self.max_message_bytes
                        ),
                    ));
                }
                if self.heading.first_line.is_none() {
                    self.heading.first_line = content
                        .lines()
                        .find(|l| !l.trim().is_empty())
                        .map(|l| l.trim().to_owned());
                }
                self.messages.insert(message_id.to_owned(), index);
                ExportedMessage::New {
                    id: message_id.to_owned(),
                    content: content.to_owned(),
                    created_at: time_field(payload, "created_at").unwrap_or(created_at),
                    attachments: attachment_ids(payload).map_err(|e| too_large(line, e))?,
                }
            }
        };
        if let Some(title) = text_field(row, "session_title").filter(|t| !t.trim().is_empty()) {
            self.heading.title = Some(title.to_owned());
            self.heading.title_source = TitleSource::Manual;
        }
        self.ids.insert(run_id.to_owned(), index);
        self.phase = Phase::Open;
        self.last_seq = 0;
        Ok(ExportedRun {
            id: run_id.to_owned(),
            parent,
            message,
            created_at,
            events: Vec::new(),
            terminal: None,
            settled: None,
            bytes,
        })
    }

    /// A row of the journal of the run being read.
    fn row(&mut self, line: usize, bytes: usize, event: &str, row: Row) -> Result<(), ReadError> {
        let created_at = time_field(&row, "created_at").map_err(|e| fail(line, e))?;
        let run_id = id_field(&row, "run_id").map_err(|e| fail(line, e))?;
        let Some(run) = self.run.as_mut().filter(|run| run.id == run_id) else {
            return Err(fail(
                line,
                format!("a row of run {run_id:?} that is not after that run's user_message line"),
            ));
        };
        let kind = EventKind::parse(event)
            .ok_or_else(|| fail(line, format!("unknown event {event:?}")))?;
        if self.phase == Phase::Closed {
            return Err(fail(line, format!("{event} after the run's stream_end")));
        }
        let expected = self.last_seq + 1;
        match row.get("seq").and_then(Value::as_u64) {
            Some(seq) if seq == expected => self.last_seq = seq,
            Some(seq) => return Err(fail(line, format!("seq {seq} where {expected} was due"))),
            None => return Err(fail(line, "no \"seq\" number".into())),
        }
        let terminal = row
            .get("terminal")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let terminal_state = row
            .get("terminal_state")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut row = row;
        let payload = match row.remove("payload") {
            Some(Value::Object(payload)) => payload,
            _ => return Err(fail(line, "no \"payload\" object".into())),
        };
        let mut new = NewEvent {
            kind,
            payload,
            terminal_state: None,
            created_at,
        };
        run.bytes += bytes;
        match (self.phase, kind, terminal) {
            (Phase::Open, _, true) => {
                let state = terminal_state
                    .as_deref()
                    .and_then(TerminalState::parse)
                    .ok_or_else(|| {
                        fail(line, "a terminal row with no known terminal_state".into())
                    })?;
                new.terminal_state = Some(state);
                run.terminal = Some(new);
                self.phase = Phase::Ended;
            }
            (Phase::Open, EventKind::SettledMessage | EventKind::StreamEnd, _) => {
                return Err(fail(line, format!("{event} before the run's end")));
            }
            (Phase::Open, ..) => {
                if kind == EventKind::Title && self.heading.title_source != TitleSource::Manual {
                    if let Some(title) = text_field(&new.payload, "title") {
                        self.heading.title = Some(title.to_owned());
                        self.heading.title_source = TitleSource::Agent;
                    }
                }
                run.events.push(new);
            }
            (Phase::Ended, EventKind::SettledMessage, false) if run.settled.is_none() => {
                text_field(&new.payload, "content")
                    .ok_or_else(|| fail(line, "settled_message: no \"content\" text".into()))?;
                run.settled = Some(new.payload);
            }
            (Phase::Ended, EventKind::StreamEnd, false) => self.phase = Phase::Closed,
            _ => return Err(fail(line, format!("{event} after the run's end"))),
        }
        Ok(())
    }
}

fn fail(line: usize, message: String) -> ReadError {
    ReadError {
        line,
        message,
        too_large: false,
    }
}

fn too_large(line: usize, message: String) -> ReadError {
    ReadError {
        line,
        message,
        too_large: true,
    }
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

/// The ids of the files a message names (at most [`MAX_FILES`]: more is past a limit, said
/// before any is looked at).
fn attachment_ids(payload: &Map<String, Value>) -> Result<Vec<String>, String> {
    let Some(list) = payload.get("attachments").and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    if list.len() > MAX_FILES {
        return Err(format!(
            "a message with {} files (a message carries at most {MAX_FILES})",
            list.len()
        ));
    }
    Ok(list
        .iter()
        .filter_map(|a| a.get("id").and_then(Value::as_str))
        .filter(|id| !id.is_empty() && id.len() <= MAX_ID)
        .map(str::to_owned)
        .collect())
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

    /// Every run of `text`, or the first error.
    fn read(text: &str, max: usize) -> Result<(Vec<ExportedRun>, Heading), ReadError> {
        let mut reader = Reader::new(text, max);
        let mut runs = Vec::new();
        while let Some(run) = reader.next_run()? {
            runs.push(run);
        }
        Ok((runs, reader.heading()))
    }

    #[test]
    fn a_byte_order_mark_and_windows_line_ends_are_read_past() {
        let text = format!("\u{feff}{}", OPEN_RUN.replace('\n', "\r\n"));
        let (runs, heading) = read(&text, 1024).unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].events.len(), 1);
        assert_eq!(runs[0].events[0].payload["text"], "yo");
        // Left open: whoever writes it ends it.
        assert!(runs[0].terminal.is_none());
        assert_eq!(heading.title, None);
        assert_eq!(heading.first_line.as_deref(), Some("hi"));
    }

    #[test]
    fn runs_come_one_at_a_time_each_whole() {
        let second = OPEN_RUN
            .replace("\"r1\"", "\"r2\"")
            .replace("\"m1\"", "\"m2\"")
            .replace("\"parent_run_id\":null", "\"parent_run_id\":\"r1\"");
        let text = format!("{OPEN_RUN}{second}");
        let mut reader = Reader::new(&text, 1024);
        let first = reader.next_run().unwrap().unwrap();
        assert_eq!((first.id.as_str(), first.events.len()), ("r1", 1));
        assert_eq!(
            first.bytes,
            OPEN_RUN.len() - 2,
            "its lines, without their ends"
        );
        let next = reader.next_run().unwrap().unwrap();
        assert_eq!((next.id.as_str(), next.parent), ("r2", Some(0)));
        assert_eq!(reader.next_run().unwrap(), None);
        assert_eq!(read("\n\n", 1024).unwrap_err().line, 2);
    }

    #[test]
    fn a_message_naming_too_many_files_is_refused_before_any_is_looked_at() {
        let ids: Vec<String> = (0..100_000)
            .map(|i| format!("{{\"id\":\"att-{i}\"}}"))
            .collect();
        let text = OPEN_RUN.replacen(
            "\"created_at\":1.0}}",
            &format!("\"created_at\":1.0,\"attachments\":[{}]}}}}", ids.join(",")),
            1,
        );
        let error = read(&text, 1024).unwrap_err();
        assert_eq!(error.line, 1);
        assert!(error.too_large);
        assert!(error.message.contains("100000 files"), "{error}");
        let twenty = OPEN_RUN.replacen(
            "\"created_at\":1.0}}",
            &format!(
                "\"created_at\":1.0,\"attachments\":[{}]}}}}",
                ids[..MAX_FILES].join(",")
            ),
            1,
        );
        let (runs, _) = read(&twenty, 1024).unwrap();
        assert!(
            matches!(&runs[0].message, ExportedMessage::New { attachments, .. } if attachments.len() == MAX_FILES)
        );
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
