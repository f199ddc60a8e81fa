//! A run's journal as the AI SDK's UI message stream (`x-vercel-ai-ui-message-stream: v1`):
//! what `POST /api/ai-sdk/chat` and its resume, `GET /api/ai-sdk/chat/{id}/stream`, send.
//!
//! `start` names the message the run settles into; text and reasoning go in parts between
//! their start and end; a tool call is its input, then its output (or error); the stream
//! ends with `finish` (or `abort` after Stop, `error` on failure) and `[DONE]`.

use anchor::EventKind;
use serde_json::{json, Value};

use super::{Closing, Framing, Part, Turn};
use crate::store::JournalRow;

/// Turns a run's journal rows, in order, into UI message chunks.
pub struct UiChunks {
    turn: Turn,
    // The provider stopped the answer at a length limit.
    cut_off: bool,
}

struct Chunks;

impl Framing for Chunks {
    fn start(part: Part, id: &str, out: &mut Vec<Value>) {
        let kind = if part == Part::Text {
            "text-start"
        } else {
            "reasoning-start"
        };
        out.push(json!({"type": kind, "id": id}));
    }

    fn end(part: Part, id: &str, out: &mut Vec<Value>) {
        let kind = if part == Part::Text {
            "text-end"
        } else {
            "reasoning-end"
        };
        out.push(json!({"type": kind, "id": id}));
    }
}

impl UiChunks {
    /// Chunks of `run_id`.
    pub fn new(run_id: String) -> Self {
        UiChunks {
            turn: Turn::new(run_id),
            cut_off: false,
        }
    }

    /// What opens the stream: the assistant message, by the id it settles into.
    pub fn opening(&self, session_id: &str) -> Value {
        json!({
            "type": "start",
            "messageId": crate::runner::answer_id(&self.turn.run_id),
            "messageMetadata": {"runId": self.turn.run_id, "sessionId": session_id},
        })
    }

    /// The chunks one journal row becomes (none for most bookkeeping rows).
    pub fn row(&mut self, row: &JournalRow) -> Vec<Value> {
        let mut out = Vec::new();
        let p = &row.payload;
        let text = |key: &str| p.get(key).and_then(Value::as_str).unwrap_or_default();
        match EventKind::parse(&row.kind) {
            Some(EventKind::Token) => {
                let delta = text("text");
                if !delta.is_empty() {
                    let id = self.turn.open::<Chunks>(Part::Text, &mut out);
                    out.push(json!({"type": "text-delta", "id": id, "delta": delta}));
                    self.turn.streamed_text = true;
                }
            }
            Some(EventKind::Reasoning) => {
                let delta = text("text");
                if !delta.is_empty() {
                    let id = self.turn.open::<Chunks>(Part::Reasoning, &mut out);
                    out.push(json!({"type": "reasoning-delta", "id": id, "delta": delta}));
                }
            }
            Some(EventKind::Tool) => {
                self.turn.close_all::<Chunks>(&mut out);
                self.start_tool(p, &mut out);
            }
            Some(EventKind::ToolComplete) => {
                self.turn.close_all::<Chunks>(&mut out);
                let tid = self.start_tool(p, &mut out);
                let failed = p.get("is_error").and_then(Value::as_bool) == Some(true);
                let output = p.get("preview").cloned().unwrap_or(Value::Null);
                out.push(if failed {
                    let error = match &output {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    json!({"type": "tool-output-error", "toolCallId": tid, "errorText": error})
                } else {
                    json!({"type": "tool-output-available", "toolCallId": tid, "output": output})
                });
            }
            Some(EventKind::TodoState) => {
                let todos = p.get("todos").cloned().unwrap_or(Value::Array(Vec::new()));
                out.push(json!({"type": "data-todos", "id": "todos", "data": todos}));
            }
            Some(EventKind::SettledMessage) => {
                let content = text("content");
                if !self.turn.streamed_text && !content.is_empty() && self.turn.completed() {
                    let id = self.turn.open::<Chunks>(Part::Text, &mut out);
                    out.push(json!({"type": "text-delta", "id": id, "delta": content}));
                    self.turn.streamed_text = true;
                }
            }
            Some(EventKind::StreamEnd) => {
                self.turn.close_all::<Chunks>(&mut out);
                match self.turn.closing() {
                    Closing::Finished(state) if state == "cancelled" => {
                        out.push(json!({"type": "abort", "reason": "Stopped by the user"}));
                    }
                    Closing::Finished(state) => {
                        let reason = if state == "tool_limit_reached" || self.cut_off {
                            "length"
                        } else {
                            "stop"
                        };
                        out.push(json!({"type": "finish", "finishReason": reason}));
                    }
                    Closing::Failed { message, .. } => {
                        out.push(json!({"type": "error", "errorText": message}));
                    }
                }
            }
            _ if row.terminal => {
                self.cut_off = p.get("cut_off").is_some_and(Value::is_object);
                self.turn.end(row);
            }
            _ => {}
        }
        out
    }

    fn start_tool(&mut self, p: &serde_json::Map<String, Value>, out: &mut Vec<Value>) -> String {
        let (tid, fresh) = self.turn.tool_call(p);
        if fresh {
            let name = p.get("name").and_then(Value::as_str).unwrap_or("tool");
            let input = p.get("args").cloned().unwrap_or_else(|| json!({}));
            out.push(json!({"type": "tool-input-start", "toolCallId": tid, "toolName": name, "providerExecuted": true}));
            out.push(json!({"type": "tool-input-available", "toolCallId": tid, "toolName": name, "input": input, "providerExecuted": true}));
        }
        tid
    }
}
