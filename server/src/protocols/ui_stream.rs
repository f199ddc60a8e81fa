//! A run's journal as the AI SDK's UI message stream (`x-vercel-ai-ui-message-stream: v1`):
//! what `POST /api/ai-sdk/chat` and its resume, `GET /api/ai-sdk/chat/{id}/stream`, send.
//!
//! `start` names the message the run settles into; text and reasoning go in parts between
//! their start and end; a tool call is its input, then its output (or error); the stream
//! ends with `finish` (or `abort` after Stop, `error` on failure) and `[DONE]`.

use anchor::EventKind;
use serde_json::{json, Value};

use super::{Closing, Turn};
use crate::store::JournalRow;

/// Turns a run's journal rows, in order, into UI message chunks.
pub struct UiChunks {
    turn: Turn,
    segment: u32,
}

impl UiChunks {
    /// Chunks of `run_id`.
    pub fn new(run_id: String) -> Self {
        UiChunks {
            turn: Turn::new(run_id),
            segment: 0,
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
                    self.close_reasoning(&mut out);
                    let id = self.open_text(&mut out);
                    out.push(json!({"type": "text-delta", "id": id, "delta": delta}));
                    self.turn.streamed_text = true;
                }
            }
            Some(EventKind::Reasoning) => {
                let delta = text("text");
                if !delta.is_empty() {
                    self.close_text(&mut out);
                    let id = match &self.turn.reasoning {
                        Some(id) => id.clone(),
                        None => {
                            let id = self.next_id("reasoning");
                            out.push(json!({"type": "reasoning-start", "id": id}));
                            self.turn.reasoning = Some(id.clone());
                            id
                        }
                    };
                    out.push(json!({"type": "reasoning-delta", "id": id, "delta": delta}));
                }
            }
            Some(EventKind::Tool) => {
                self.close_text(&mut out);
                self.close_reasoning(&mut out);
                self.start_tool(p, &mut out);
            }
            Some(EventKind::ToolComplete) => {
                self.close_text(&mut out);
                self.close_reasoning(&mut out);
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
                    let id = self.open_text(&mut out);
                    out.push(json!({"type": "text-delta", "id": id, "delta": content}));
                    self.turn.streamed_text = true;
                }
            }
            Some(EventKind::StreamEnd) => {
                self.close_text(&mut out);
                self.close_reasoning(&mut out);
                match self.turn.closing() {
                    Closing::Finished(state) if state == "cancelled" => {
                        out.push(json!({"type": "abort", "reason": "Stopped by the user"}));
                    }
                    Closing::Finished(state) => {
                        let reason = if state == "tool_limit_reached" {
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
            _ if row.terminal => self.turn.end(row),
            _ => {}
        }
        out
    }

    fn next_id(&mut self, what: &str) -> String {
        self.segment += 1;
        format!("{what}-{}", self.segment)
    }

    fn open_text(&mut self, out: &mut Vec<Value>) -> String {
        if let Some(id) = &self.turn.text {
            return id.clone();
        }
        let id = self.next_id("text");
        out.push(json!({"type": "text-start", "id": id}));
        self.turn.text = Some(id.clone());
        id
    }

    fn close_text(&mut self, out: &mut Vec<Value>) {
        if let Some(id) = self.turn.text.take() {
            out.push(json!({"type": "text-end", "id": id}));
        }
    }

    fn close_reasoning(&mut self, out: &mut Vec<Value>) {
        if let Some(id) = self.turn.reasoning.take() {
            out.push(json!({"type": "reasoning-end", "id": id}));
        }
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
