//! Any AG-UI agent as the backend: a turn POSTs a `RunAgentInput` (the session as the thread,
//! its messages, the run's id) with `Accept: text/event-stream` and maps the agent's events
//! into the turn.
//!
//! - `TEXT_MESSAGE_*` → answer tokens; `REASONING_*` (and the older `THINKING_*`) → reasoning
//! - `TOOL_CALL_START/ARGS/END` → a tool row with its assembled arguments;
//!   `TOOL_CALL_RESULT` → its result
//! - `STATE_SNAPSHOT`/`STATE_DELTA` → the agent's state, whose `todos` feed the task list
//! - `RUN_FINISHED` → completed (an `interrupt` outcome ends the turn saying what the agent
//!   waits for); `RUN_ERROR` → failed
//! - anything else (`CUSTOM`, `RAW`, steps, activities, message snapshots) is kept in the
//!   journal as a `state_saved` row, shown nowhere
//!
//! Stop drops the request, which closes the connection to the agent.

use anchor::EventKind;
use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::agent_state::{AgentState, TooLarge};
use super::sse::EventReader;
use super::{fail, Fail, RunEnd, RunIo, RuntimeAdapter, TurnRequest};

/// Settings of the AG-UI backend.
#[derive(Clone, Debug)]
pub struct AguiSettings {
    /// Where `RunAgentInput` is POSTed.
    pub url: String,
    /// Bearer key, if the agent wants one.
    pub api_key: Option<crate::config::Secret>,
    /// Silence allowed on the event stream, once it began (`--upstream-idle-secs`).
    pub idle: Duration,
    /// Silence allowed before its first bytes (`--upstream-first-token-secs`; at least
    /// `idle`).
    pub first_token: Duration,
}

/// The adapter.
pub struct AguiAgent {
    settings: AguiSettings,
    client: reqwest::Client,
}

/// The most bytes of arguments one tool call may stream.
const MAX_ARGS_BYTES: usize = 1024 * 1024;
/// The most tool calls one turn may have open at once.
const MAX_OPEN_CALLS: usize = 256;
/// The most tool calls one turn may make.
const MAX_CALLS: usize = 1_000;
/// The most text messages (or reasoning messages) one turn may have open at once.
const MAX_OPEN_MESSAGES: usize = 256;
/// The most operations one state delta may carry.
const MAX_DELTA_OPS: usize = 1_000;
/// The most bytes of a tool's result the tool row keeps.
const MAX_RESULT_BYTES: usize = 64 * 1024;
/// The most events of other kinds one turn keeps, and the largest kept.
const MAX_KEPT: u32 = 500;
const MAX_KEPT_BYTES: usize = 16 * 1024;

impl AguiAgent {
    /// A client for the agent in `settings`.
    pub fn new(settings: AguiSettings) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            // A connection a NAT or proxy dropped without a word is found out.
            .tcp_keepalive(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(AguiAgent { settings, client })
    }

    async fn turn(&self, turn: &TurnRequest, io: &RunIo) -> Result<RunEnd, Fail> {
        let mut messages: Vec<Value> = turn
            .history
            .iter()
            .enumerate()
            .map(|(i, m)| json!({"id": format!("{}-h{i}", turn.session_id), "role": m.role.as_str(), "content": m.content}))
            .collect();
        messages.push(
            json!({"id": format!("{}-user", turn.run_id), "role": "user", "content": turn.message}),
        );
        // The account, so that the agent can keep users apart (opaque and stable).
        let account = super::account_tag(turn.owner.as_deref());
        let input = json!({
            "threadId": turn.session_id,
            "runId": turn.run_id,
            "state": {},
            "messages": messages,
            "tools": [],
            "context": [],
            "forwardedProps": {"anchorage": {"account": account}},
        });
        let mut request = self
            .client
            .post(&self.settings.url)
            .header("accept", "text/event-stream")
            .header(super::ACCOUNT_HEADER, &account)
            .json(&input);
        if let Some(key) = &self.settings.api_key {
            request = request.bearer_auth(key.expose());
        }
        let response = io.unless_stopped(request.send()).await?.map_err(|e| {
            fail(
                format!(
                    "Cannot reach the AG-UI agent at {}.",
                    super::shown_url(&self.settings.url)
                ),
                format!("{e}. Start the agent, or check --agui-url."),
            )
        })?;
        let status = response.status().as_u16();
        if !response.status().is_success() {
            let body = super::body_prefix(response, super::ERROR_BODY_BYTES).await;
            let shown: String = body.trim().chars().take(200).collect();
            let hint = match status {
                401 | 403 => Some("Check AGUI_API_KEY.".to_owned()),
                404 => Some("Check --agui-url: it names the agent's endpoint itself.".to_owned()),
                _ => None,
            };
            let detail = if shown.is_empty() {
                String::new()
            } else {
                format!(": {shown}")
            };
            return Err(fail(
                format!("The AG-UI agent refused the run (HTTP {status}){detail}"),
                hint,
            ));
        }
        let mut reader =
            EventReader::new(response, self.settings.idle).first_within(self.settings.first_token);
        let mut run = AguiTurn::new();
        loop {
            let event = super::next_event(&mut reader, io, "the AG-UI agent").await?;
            let data = event.data.trim();
            if data.is_empty() {
                continue;
            }
            let Ok(Value::Object(event)) = serde_json::from_str::<Value>(data) else {
                let shown: String = data.chars().take(120).collect();
                return Err(fail(
                    "The AG-UI agent sent a malformed event.",
                    format!("`{shown}`"),
                ));
            };
            if let Some(end) = run.apply(&event, io).await? {
                return Ok(end);
            }
        }
    }
}

/// A tool call whose arguments are still arriving.
#[derive(Default)]
struct OpenCall {
    name: String,
    args: String,
}

/// What a turn keeps of the agent's events.
#[derive(Default)]
struct AguiTurn {
    answer: String,
    calls: HashMap<String, OpenCall>,
    /// Calls journaled (so a result finds its name and arguments).
    started: HashMap<String, (String, Value)>,
    /// Calls opened by `TOOL_CALL_CHUNK`s: they end when another kind of event arrives.
    chunked: Vec<String>,
    state: AgentState,
    todos: Option<Value>,
    kept: u32,
    /// Text and reasoning messages started and not yet ended.
    open_messages: std::collections::HashSet<String>,
}

impl AguiTurn {
    fn new() -> Self {
        AguiTurn::default()
    }
}

fn str_field<'a>(event: &'a Map<String, Value>, key: &str) -> &'a str {
    event.get(key).and_then(Value::as_str).unwrap_or_default()
}

impl AguiTurn {
    /// Applies one event; how the turn ended, once it has.
    async fn apply(
        &mut self,
        event: &Map<String, Value>,
        io: &RunIo,
    ) -> Result<Option<RunEnd>, Fail> {
        let kind = str_field(event, "type");
        if kind != "TOOL_CALL_CHUNK" {
            for id in std::mem::take(&mut self.chunked) {
                self.end_call(&id, io).await?;
            }
        }
        match kind {
            "TEXT_MESSAGE_CONTENT" | "TEXT_MESSAGE_CHUNK" => {
                let role = str_field(event, "role");
                let delta = str_field(event, "delta");
                if !delta.is_empty() && (role.is_empty() || role == "assistant") {
                    self.answer.push_str(delta);
                    io.emit(EventKind::Token, json!({ "text": delta })).await?;
                }
            }
            "REASONING_MESSAGE_CONTENT"
            | "REASONING_MESSAGE_CHUNK"
            | "THINKING_TEXT_MESSAGE_CONTENT" => {
                let delta = str_field(event, "delta");
                if !delta.is_empty() {
                    io.emit(EventKind::Reasoning, json!({ "text": delta }))
                        .await?;
                }
            }
            "TOOL_CALL_START" => {
                let id = str_field(event, "toolCallId").to_owned();
                let name = str_field(event, "toolCallName").to_owned();
                self.open_call(id, name)?;
            }
            "TOOL_CALL_ARGS" => {
                let id = str_field(event, "toolCallId");
                self.add_args(id, str_field(event, "delta"))?;
            }
            "TOOL_CALL_CHUNK" => {
                let id = str_field(event, "toolCallId").to_owned();
                let id = match (id.is_empty(), self.chunked.last()) {
                    (true, Some(last)) => last.clone(),
                    _ => id,
                };
                if !self.calls.contains_key(&id) && !self.started.contains_key(&id) {
                    let name = str_field(event, "toolCallName").to_owned();
                    self.open_call(id.clone(), name)?;
                    self.chunked.push(id.clone());
                }
                self.add_args(&id, str_field(event, "delta"))?;
            }
            "TOOL_CALL_END" => {
                let id = str_field(event, "toolCallId").to_owned();
                self.end_call(&id, io).await?;
            }
            "TOOL_CALL_RESULT" => {
                let id = str_field(event, "toolCallId").to_owned();
                if self.calls.contains_key(&id) {
                    self.end_call(&id, io).await?;
                }
                let (name, args) = self
                    .started
                    .get(&id)
                    .cloned()
                    .unwrap_or_else(|| ("tool".to_owned(), json!({})));
                let mut content = match event.get("content") {
                    Some(Value::String(s)) => s.clone(),
                    None | Some(Value::Null) => String::new(),
                    Some(other) => other.to_string(),
                };
                if content.len() > MAX_RESULT_BYTES {
                    let mut cut = MAX_RESULT_BYTES;
                    while !content.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    content.truncate(cut);
                    content.push_str(" …");
                }
                io.emit(
                    EventKind::ToolComplete,
                    json!({"event_type": "tool.completed", "name": name, "tid": id, "args": args,
                           "preview": content, "is_error": false}),
                )
                .await?;
            }
            "STATE_SNAPSHOT" => {
                let snapshot = event.get("snapshot").unwrap_or(&Value::Null);
                self.state.replace(snapshot).map_err(state_too_large)?;
                self.state_changed(io).await?;
            }
            "STATE_DELTA" => {
                let ops = event.get("delta").and_then(Value::as_array);
                let ops = ops.map_or(&[][..], Vec::as_slice);
                if ops.len() > MAX_DELTA_OPS {
                    return Err(too_much(format!(
                        "sent a state delta of {} operations, more than {MAX_DELTA_OPS}",
                        ops.len()
                    )));
                }
                for op in ops {
                    self.state.patch(op).map_err(state_too_large)?;
                }
                self.state_changed(io).await?;
            }
            "RUN_FINISHED" => return Ok(Some(self.finished(event))),
            "RUN_ERROR" => {
                let message = str_field(event, "message");
                let code = str_field(event, "code");
                return Ok(Some(RunEnd::Failed {
                    message: format!(
                        "The AG-UI agent failed: {}",
                        if message.is_empty() {
                            "no reason given"
                        } else {
                            message
                        }
                    ),
                    hint: Some(if code.is_empty() {
                        "The partial answer is kept; send the message again to retry.".to_owned()
                    } else {
                        format!("Error code {code}. The partial answer is kept.")
                    }),
                }));
            }
            "TEXT_MESSAGE_START" | "REASONING_MESSAGE_START" => {
                let id = str_field(event, "messageId");
                if self.open_messages.len() >= MAX_OPEN_MESSAGES && !self.open_messages.contains(id)
                {
                    return Err(too_much(format!(
                        "opened more than {MAX_OPEN_MESSAGES} messages at once"
                    )));
                }
                self.open_messages.insert(id.to_owned());
            }
            "TEXT_MESSAGE_END" | "REASONING_MESSAGE_END" => {
                self.open_messages.remove(str_field(event, "messageId"));
            }
            "RUN_STARTED"
            | "REASONING_START"
            | "REASONING_END"
            | "THINKING_START"
            | "THINKING_END"
            | "THINKING_TEXT_MESSAGE_START"
            | "THINKING_TEXT_MESSAGE_END" => {}
            _ => self.keep(event, io).await?,
        }
        Ok(None)
    }

    fn open_call(&mut self, id: String, name: String) -> Result<(), Fail> {
        if id.is_empty() {
            return Err(fail(
                "The AG-UI agent started a tool call without an id.",
                None::<String>,
            ));
        }
        if self.calls.len() >= MAX_OPEN_CALLS {
            return Err(fail(
                format!("The AG-UI agent opened more than {MAX_OPEN_CALLS} tool calls at once."),
                None::<String>,
            ));
        }
        self.calls.insert(
            id,
            OpenCall {
                name,
                args: String::new(),
            },
        );
        Ok(())
    }

    fn add_args(&mut self, id: &str, delta: &str) -> Result<(), Fail> {
        let Some(call) = self.calls.get_mut(id) else {
            // Arguments of a call never started (or already ended): nothing to add them to.
            return Ok(());
        };
        if call.args.len() + delta.len() > MAX_ARGS_BYTES {
            return Err(fail(
                "A tool call's arguments from the AG-UI agent exceeded 1 MiB.",
                None::<String>,
            ));
        }
        call.args.push_str(delta);
        Ok(())
    }

    /// Journals a call whose arguments are complete.
    async fn end_call(&mut self, id: &str, io: &RunIo) -> Result<(), Fail> {
        let Some(call) = self.calls.remove(id) else {
            return Ok(());
        };
        let args = if call.args.trim().is_empty() {
            json!({})
        } else {
            serde_json::from_str(&call.args).unwrap_or(Value::String(call.args))
        };
        let name = if call.name.is_empty() {
            "tool".to_owned()
        } else {
            call.name
        };
        if self.started.len() >= MAX_CALLS {
            return Err(too_much(format!(
                "made more than {MAX_CALLS} tool calls in one turn"
            )));
        }
        io.emit(
            EventKind::Tool,
            json!({"event_type": "tool.started", "name": name, "tid": id, "args": args, "preview": null}),
        )
        .await?;
        self.started.insert(id.to_owned(), (name, args));
        Ok(())
    }

    /// Feeds the task list when the state's `todos` changed.
    async fn state_changed(&mut self, io: &RunIo) -> Result<(), Fail> {
        let todos = self
            .state
            .value()
            .get("todos")
            .filter(|t| t.is_array())
            .cloned();
        if todos.is_some() && todos != self.todos {
            let list: Vec<Value> = todos
                .iter()
                .flat_map(|t| t.as_array().into_iter().flatten())
                .enumerate()
                .map(|(i, t)| todo_of(i, t))
                .collect();
            io.emit(
                EventKind::TodoState,
                json!({"source": "agui", "todos": list}),
            )
            .await?;
            self.todos = todos;
        }
        Ok(())
    }

    async fn keep(&mut self, event: &Map<String, Value>, io: &RunIo) -> Result<(), Fail> {
        if self.kept >= MAX_KEPT {
            return Ok(());
        }
        let text = Value::Object(event.clone()).to_string();
        if text.len() > MAX_KEPT_BYTES {
            return Ok(());
        }
        self.kept += 1;
        io.emit(
            EventKind::StateSaved,
            json!({"source": "agui", "type": str_field(event, "type"), "event": event}),
        )
        .await?;
        Ok(())
    }

    fn finished(&self, event: &Map<String, Value>) -> RunEnd {
        let outcome = event.get("outcome").unwrap_or(&Value::Null);
        if outcome["type"] == "interrupt" {
            let reasons: Vec<String> = outcome["interrupts"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|i| {
                    i.get("message")
                        .or_else(|| i.get("reason"))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .collect();
            let waits_for = if reasons.is_empty() {
                "input".to_owned()
            } else {
                reasons.join("; ")
            };
            return RunEnd::Failed {
                message: format!("The AG-UI agent paused, waiting for {waits_for}."),
                hint: Some(
                    "Anchorage cannot answer an AG-UI interrupt yet: answer it where the agent \
                     runs, or send a message to go on. The partial answer is kept."
                        .to_owned(),
                ),
            };
        }
        let usage = usage_of(event.get("usage"));
        if self.answer.trim().is_empty() {
            return RunEnd::NoResponse;
        }
        RunEnd::Completed {
            answer: self.answer.clone(),
            usage,
        }
    }
}

/// A turn that ends because the agent sent more than a turn takes.
fn too_much(what: String) -> Fail {
    fail(
        format!("The AG-UI agent {what}, more than this server takes."),
        "The partial answer is kept.".to_owned(),
    )
}

fn state_too_large(bound: TooLarge) -> Fail {
    too_much(format!("grew its state past {bound}"))
}

/// A task of the agent's state in our shape (`id`, `content`, `status`).
fn todo_of(index: usize, todo: &Value) -> Value {
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| todo.get(*k).and_then(Value::as_str))
            .map(str::to_owned)
    };
    let content = text(&["content", "title", "text", "description"])
        .or_else(|| todo.as_str().map(str::to_owned))
        .unwrap_or_default();
    let status = match todo.get("status").and_then(Value::as_str) {
        Some("completed" | "done" | "complete") => "completed",
        Some("in_progress" | "active" | "running") => "in_progress",
        Some("cancelled") => "cancelled",
        _ if todo.get("done").and_then(Value::as_bool) == Some(true) => "completed",
        _ => "pending",
    };
    let id = todo
        .get("id")
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_else(|| (index + 1).to_string());
    json!({"id": id, "content": content, "status": status})
}

/// Token counts of `RUN_FINISHED`'s usage (one entry per model, summed), in our shape.
fn usage_of(usage: Option<&Value>) -> Option<Value> {
    let usage = usage?;
    let entries: Vec<&Value> = match usage {
        Value::Array(list) => list.iter().collect(),
        Value::Object(_) => vec![usage],
        _ => return None,
    };
    let sum = |key: &str| entries.iter().filter_map(|e| e[key].as_u64()).sum::<u64>();
    let (input, output) = (sum("inputTokens"), sum("outputTokens"));
    (input > 0 || output > 0).then(|| json!({"input_tokens": input, "output_tokens": output}))
}

#[async_trait]
impl RuntimeAdapter for AguiAgent {
    fn name(&self) -> &'static str {
        "agui"
    }

    fn label(&self) -> String {
        format!("AG-UI agent · {}", super::host_of(&self.settings.url))
    }

    async fn run(&self, turn: TurnRequest, io: RunIo) -> RunEnd {
        super::end_of(self.turn(&turn, &io).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agents_tasks_become_ours() {
        assert_eq!(
            todo_of(0, &json!({"title": "Write", "status": "done"})),
            json!({"id": "1", "content": "Write", "status": "completed"})
        );
        assert_eq!(
            todo_of(1, &json!({"id": 7, "text": "Test", "status": "active"})),
            json!({"id": "7", "content": "Test", "status": "in_progress"})
        );
        assert_eq!(
            todo_of(2, &json!("Ship")),
            json!({"id": "3", "content": "Ship", "status": "pending"})
        );
    }

    #[test]
    fn usage_sums_the_models_of_a_run() {
        let usage =
            json!([{"inputTokens": 10, "outputTokens": 3}, {"inputTokens": 5, "outputTokens": 2}]);
        assert_eq!(
            usage_of(Some(&usage)),
            Some(json!({"input_tokens": 15, "output_tokens": 5}))
        );
        assert_eq!(usage_of(Some(&json!([]))), None);
        assert_eq!(usage_of(None), None);
    }
}
