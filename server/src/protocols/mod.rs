//! Other protocols' views of a run: AG-UI events ([`agui`]) and the AI SDK's UI message
//! stream ([`ui_stream`]). Both read the same journal rows, in order, and keep what is open.

pub mod agui_server;
pub mod ui_stream;

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::store::JournalRow;

/// What a translation keeps of a turn while it goes through its rows.
struct Turn {
    run_id: String,
    /// The open text part or message.
    text: Option<String>,
    /// The open reasoning part or message.
    reasoning: Option<String>,
    /// Parts opened so far (each part's id is the run's and its number).
    parts: u32,
    /// Some answer text was sent.
    streamed_text: bool,
    /// Tool calls started.
    tools: HashSet<String>,
    unnamed_tools: u32,
    /// How the run ended (its terminal row): the state, and its message.
    ending: Option<(String, String)>,
}

/// A part of the answer that opens and closes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Text,
    Reasoning,
}

/// How a protocol writes the start and the end of a part.
trait Framing {
    fn start(part: Part, id: &str, out: &mut Vec<Value>);
    fn end(part: Part, id: &str, out: &mut Vec<Value>);
}

/// How a stream closes.
enum Closing {
    /// The turn ended normally (`completed`, `tool_limit_reached`, `cancelled`).
    Finished(String),
    /// It failed: its state and what went wrong.
    Failed { state: String, message: String },
}

impl Turn {
    fn new(run_id: String) -> Self {
        Turn {
            run_id,
            text: None,
            reasoning: None,
            parts: 0,
            streamed_text: false,
            tools: HashSet::new(),
            unnamed_tools: 0,
            ending: None,
        }
    }

    fn slot(&mut self, part: Part) -> &mut Option<String> {
        match part {
            Part::Text => &mut self.text,
            Part::Reasoning => &mut self.reasoning,
        }
    }

    /// The id of the open `part`, started if none is (and the other kind ended first).
    fn open<F: Framing>(&mut self, part: Part, out: &mut Vec<Value>) -> String {
        let other = match part {
            Part::Text => Part::Reasoning,
            Part::Reasoning => Part::Text,
        };
        self.close::<F>(other, out);
        if let Some(id) = self.slot(part).clone() {
            return id;
        }
        self.parts += 1;
        let name = if part == Part::Text {
            "text"
        } else {
            "reasoning"
        };
        let id = format!("{}-{name}-{}", self.run_id, self.parts);
        F::start(part, &id, out);
        *self.slot(part) = Some(id.clone());
        id
    }

    /// Ends the open `part`, if any; its id.
    fn close<F: Framing>(&mut self, part: Part, out: &mut Vec<Value>) -> Option<String> {
        let id = self.slot(part).take()?;
        F::end(part, &id, out);
        Some(id)
    }

    /// Ends whatever is open; the id of the text part it ended.
    fn close_all<F: Framing>(&mut self, out: &mut Vec<Value>) -> Option<String> {
        let text = self.close::<F>(Part::Text, out);
        self.close::<F>(Part::Reasoning, out);
        text
    }

    fn end(&mut self, row: &JournalRow) {
        let state = row
            .terminal_state
            .clone()
            .unwrap_or_else(|| "error".to_owned());
        let message = row
            .payload
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        self.ending = Some((state, message));
    }

    fn completed(&self) -> bool {
        self.ending
            .as_ref()
            .is_some_and(|(state, _)| state == "completed" || state == "tool_limit_reached")
    }

    fn closing(&self) -> Closing {
        match &self.ending {
            Some((state, _))
                if matches!(
                    state.as_str(),
                    "completed" | "tool_limit_reached" | "cancelled"
                ) =>
            {
                Closing::Finished(state.clone())
            }
            Some((state, message)) => Closing::Failed {
                state: state.clone(),
                message: if message.is_empty() {
                    format!("The turn ended: {state}.")
                } else {
                    message.clone()
                },
            },
            None => Closing::Failed {
                state: "error".to_owned(),
                message: "The turn ended without a result.".to_owned(),
            },
        }
    }

    /// The tool call a row names, and whether it is new. Its id is the run's and the row's
    /// `tid` (a backend's ids repeat from turn to turn; a client's thread holds many turns).
    fn tool_call(&mut self, p: &Map<String, Value>) -> (String, bool) {
        let tid = match p
            .get("tid")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            Some(tid) => format!("{}-{tid}", self.run_id),
            None => {
                self.unnamed_tools += 1;
                format!("{}-tool-{}", self.run_id, self.unnamed_tools)
            }
        };
        let fresh = self.tools.insert(tid.clone());
        (tid, fresh)
    }
}

/// `data: <json>` and the blank line.
pub(crate) fn data_frame(event: &Value, out: &mut Vec<u8>) {
    out.extend_from_slice(b"data: ");
    // A `Value` always serializes.
    let _ = serde_json::to_writer(&mut *out, event);
    out.extend_from_slice(b"\n\n");
}
