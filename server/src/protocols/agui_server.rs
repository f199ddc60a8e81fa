//! A run's journal as AG-UI events (`@ag-ui/core`): what `POST /api/agui` and
//! `GET /api/runs/{run_id}/agui` send, one `data: <json>` frame each.
//!
//! The order is the one the official client's verifier enforces: `RUN_STARTED` first; every
//! text, reasoning and tool-call event inside its start and end; `RUN_FINISHED` or `RUN_ERROR`
//! last, with nothing open. The journal's `seq` rides in each event's
//! `metadata.anchorage.seq`.

use anchor::EventKind;
use serde_json::{json, Map, Value};

use super::{Closing, Framing, Part, Turn};
use crate::store::JournalRow;

/// Turns a run's journal rows, in order, into AG-UI events.
pub struct AguiEvents {
    turn: Turn,
    /// The thread and run ids the client knows the run by.
    thread_id: String,
    run_id: String,
}

struct Frames;

impl Framing for Frames {
    fn start(part: Part, id: &str, out: &mut Vec<Value>) {
        match part {
            Part::Text => out
                .push(json!({"type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant"})),
            Part::Reasoning => {
                out.push(json!({"type": "REASONING_START", "messageId": id}));
                out.push(json!({"type": "REASONING_MESSAGE_START", "messageId": id, "role": "reasoning"}));
            }
        }
    }

    fn end(part: Part, id: &str, out: &mut Vec<Value>) {
        match part {
            Part::Text => out.push(json!({"type": "TEXT_MESSAGE_END", "messageId": id})),
            Part::Reasoning => {
                out.push(json!({"type": "REASONING_MESSAGE_END", "messageId": id}));
                out.push(json!({"type": "REASONING_END", "messageId": id}));
            }
        }
    }
}

impl AguiEvents {
    /// Events of `our_run` for a client that calls it `run_id` in thread `thread_id`.
    pub fn new(thread_id: String, run_id: String, our_run: String) -> Self {
        AguiEvents {
            turn: Turn::new(our_run),
            thread_id,
            run_id,
        }
    }

    fn meta(&self, seq: Option<u64>) -> Value {
        let mut ours = Map::new();
        ours.insert("run_id".into(), Value::from(self.turn.run_id.clone()));
        if let Some(seq) = seq {
            ours.insert("seq".into(), Value::from(seq));
        }
        json!({ "anchorage": ours })
    }

    /// What opens the stream.
    pub fn opening(&self) -> Value {
        json!({
            "type": "RUN_STARTED",
            "threadId": self.thread_id,
            "runId": self.run_id,
            "metadata": self.meta(None),
        })
    }

    /// The events one journal row becomes (none for some).
    pub fn row(&mut self, row: &JournalRow) -> Vec<Value> {
        let mut out = Vec::new();
        let p = &row.payload;
        let text = |key: &str| p.get(key).and_then(Value::as_str).unwrap_or_default();
        match EventKind::parse(&row.kind) {
            Some(EventKind::Token) => {
                let delta = text("text");
                if !delta.is_empty() {
                    let id = self.turn.open::<Frames>(Part::Text, &mut out);
                    out.push(
                        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": delta}),
                    );
                    self.turn.streamed_text = true;
                }
            }
            Some(EventKind::Reasoning) => {
                let delta = text("text");
                if !delta.is_empty() {
                    let id = self.turn.open::<Frames>(Part::Reasoning, &mut out);
                    out.push(json!({"type": "REASONING_MESSAGE_CONTENT", "messageId": id, "delta": delta}));
                }
            }
            Some(EventKind::Tool) => {
                let parent = self.turn.close_all::<Frames>(&mut out);
                self.start_tool(p, parent, &mut out);
            }
            Some(EventKind::ToolComplete) => {
                let parent = self.turn.close_all::<Frames>(&mut out);
                let tid = self.start_tool(p, parent, &mut out);
                let content = match p.get("preview") {
                    Some(Value::String(s)) => s.clone(),
                    None | Some(Value::Null) => String::new(),
                    Some(other) => other.to_string(),
                };
                out.push(json!({
                    "type": "TOOL_CALL_RESULT",
                    "messageId": format!("{tid}-result"),
                    "toolCallId": tid,
                    "content": content,
                    "role": "tool",
                }));
            }
            Some(EventKind::TodoState) => {
                let todos = p.get("todos").cloned().unwrap_or(Value::Array(Vec::new()));
                out.push(json!({"type": "STATE_SNAPSHOT", "snapshot": {"todos": todos}}));
            }
            Some(EventKind::SettledMessage) => {
                // A backend that streamed no text still answered: its answer is one message.
                let content = text("content");
                if !self.turn.streamed_text && !content.is_empty() && self.turn.completed() {
                    let id = self.turn.open::<Frames>(Part::Text, &mut out);
                    out.push(
                        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": content}),
                    );
                    self.turn.streamed_text = true;
                }
            }
            Some(EventKind::StreamEnd) => {
                self.turn.close_all::<Frames>(&mut out);
                out.push(match self.turn.closing() {
                    Closing::Finished(state) => json!({
                        "type": "RUN_FINISHED",
                        "threadId": self.thread_id,
                        "runId": self.run_id,
                        // A stopped run's open calls are not the client's to answer.
                        "outcome": {"type": if state == "cancelled" { "cancelled" } else { "success" }},
                        "result": {"terminal_state": state},
                    }),
                    Closing::Failed { state, message } => json!({
                        "type": "RUN_ERROR",
                        "message": message,
                        "code": state,
                    }),
                });
            }
            _ if row.terminal => self.turn.end(row),
            _ => out.push(
                json!({"type": "CUSTOM", "name": row.kind, "value": Value::Object(p.clone())}),
            ),
        }
        let meta = self.meta(Some(row.seq));
        let timestamp = (row.created_at * 1000.0).round() as i64;
        for event in &mut out {
            event["timestamp"] = Value::from(timestamp);
            event["metadata"] = meta.clone();
        }
        out
    }

    /// Starts, argues and ends the tool call a row names, unless it was already; its id.
    fn start_tool(
        &mut self,
        p: &Map<String, Value>,
        parent: Option<String>,
        out: &mut Vec<Value>,
    ) -> String {
        let (tid, fresh) = self.turn.tool_call(p);
        if fresh {
            let name = p.get("name").and_then(Value::as_str).unwrap_or("tool");
            let mut start =
                json!({"type": "TOOL_CALL_START", "toolCallId": tid, "toolCallName": name});
            if let Some(parent) = parent {
                start["parentMessageId"] = Value::from(parent);
            }
            out.push(start);
            let args = p.get("args").cloned().unwrap_or_else(|| json!({}));
            out.push(
                json!({"type": "TOOL_CALL_ARGS", "toolCallId": tid, "delta": args.to_string()}),
            );
            out.push(json!({"type": "TOOL_CALL_END", "toolCallId": tid}));
        }
        tid
    }
}
