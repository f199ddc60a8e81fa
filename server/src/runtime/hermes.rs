//! A client for a Hermes Agent gateway's Runs API: the gateway owns the agent loop, tools and
//! approvals; this adapter starts a run, maps its event stream into our journal vocabulary and
//! forwards Stop and the user's approval answers.
//!
//! - `POST /v1/runs {model, input, instructions, conversation_history, session_id}` → `{run_id}`
//! - `GET /v1/runs/{id}/events` (SSE of `{"event": NAME, ...}` objects, then `[DONE]`)
//! - `POST /v1/runs/{id}/stop`
//! - `POST /v1/runs/{id}/approval {approval_id, choice}` when `GET /v1/capabilities` offers
//!   `run_approval_response`

use anchor::EventKind;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::approvals::Approval;
use super::sse::EventReader;
use super::{fail, ApprovalChoice, Fail, RunEnd, RunIo, RuntimeAdapter, TurnRequest};

/// How long a gateway run may stay silent before the turn fails, when nothing else says (the
/// server's own default is `--upstream-idle-secs`'s).
pub const DEFAULT_IDLE: Duration = Duration::from_secs(30 * 60);

/// Settings of the Hermes backend.
#[derive(Clone, Debug)]
pub struct HermesSettings {
    /// Gateway base URL (`http://127.0.0.1:8642`).
    pub url: String,
    /// Bearer key, if the gateway wants one.
    pub api_key: Option<crate::config::Secret>,
    /// Model name passed through.
    pub model: String,
    /// Silence allowed on the event stream, once it began (`--upstream-idle-secs`).
    pub idle: Duration,
    /// Silence allowed before its first bytes (`--upstream-first-token-secs`; at least
    /// `idle`).
    pub first_token: Duration,
}

/// The adapter.
pub struct HermesAgent {
    settings: HermesSettings,
    client: reqwest::Client,
}

impl HermesAgent {
    /// A client for the gateway in `settings`.
    pub fn new(settings: HermesSettings) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            // A connection a NAT or proxy dropped without a word is found out.
            .tcp_keepalive(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(HermesAgent { settings, client })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.settings.url.trim_end_matches('/'))
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let builder = self.client.request(method, self.url(path));
        match &self.settings.api_key {
            Some(key) => builder.bearer_auth(key.expose()),
            None => builder,
        }
    }

    /// Whether the gateway accepts approval answers over the API.
    async fn accepts_approvals(&self) -> bool {
        let response = self
            .request(reqwest::Method::GET, "/v1/capabilities")
            .timeout(Duration::from_secs(10))
            .send()
            .await;
        let Ok(response) = response else {
            return false;
        };
        let caps = super::json_body(response, super::ERROR_BODY_BYTES)
            .await
            .unwrap_or(Value::Null);
        caps["features"]["run_approval_response"].as_bool() == Some(true)
    }

    async fn stop(&self, run_id: &str) {
        let path = format!("/v1/runs/{run_id}/stop");
        let sent = self
            .request(reqwest::Method::POST, &path)
            .timeout(Duration::from_secs(10))
            .send()
            .await;
        if let Err(e) = sent {
            tracing::warn!(
                run_id,
                "could not stop the gateway run: {}",
                super::redact_secrets(&e.to_string())
            );
        }
    }

    async fn turn(&self, turn: &TurnRequest, io: &RunIo) -> Result<RunEnd, Fail> {
        let approvals = self.accepts_approvals().await;
        // The account, so that the gateway's agent can keep users apart (opaque and stable).
        let account = super::account_tag(turn.owner.as_deref());
        let body = json!({
            "model": self.settings.model,
            "input": turn.message,
            "conversation_history": turn.history,
            "session_id": turn.session_id,
            "user": account,
        });
        let started = io
            .unless_stopped(
                self.request(reqwest::Method::POST, "/v1/runs")
                    .header(super::ACCOUNT_HEADER, &account)
                    .json(&body)
                    .send(),
            )
            .await?;
        let started = started.map_err(|e| {
            fail(
                format!(
                    "Cannot reach the Hermes gateway at {}.",
                    super::shown_url(&self.settings.url)
                ),
                format!("{e}. Start it with `hermes gateway run`, or check --hermes-url."),
            )
        })?;
        let status = started.status().as_u16();
        let reply = super::json_body(started, super::JSON_BODY_BYTES)
            .await
            .unwrap_or(Value::Null);
        if !(200..300).contains(&status) {
            return Err(gateway_error(status, &reply));
        }
        let Some(run_id) = reply["run_id"].as_str().map(str::to_owned) else {
            return Err(fail(
                "The Hermes gateway did not return a run id.",
                None::<String>,
            ));
        };
        match self.follow(&run_id, approvals, io).await {
            Ok(end) => Ok(end),
            // Stopped here, or lost track of it: the gateway's run must not go on alone
            // (running tools, or waiting for an approval nobody will give).
            Err(e) => {
                self.stop(&run_id).await;
                Err(e)
            }
        }
    }

    async fn follow(&self, run_id: &str, approvals: bool, io: &RunIo) -> Result<RunEnd, Fail> {
        let path = format!("/v1/runs/{run_id}/events");
        let response = io
            .unless_stopped(
                self.request(reqwest::Method::GET, &path)
                    .header("accept", "text/event-stream")
                    .send(),
            )
            .await?;
        let response = response.map_err(|e| {
            fail(
                "Lost the Hermes gateway before the run's events arrived.",
                e.to_string(),
            )
        })?;
        if !response.status().is_success() {
            let status = response.status().as_u16();
            let body = super::json_body(response, super::ERROR_BODY_BYTES)
                .await
                .unwrap_or(Value::Null);
            return Err(gateway_error(status, &body));
        }
        let mut reader =
            EventReader::new(response, self.settings.idle).first_within(self.settings.first_token);
        let mut answer = String::new();
        loop {
            let event = super::next_event(&mut reader, io, "the Hermes gateway").await?;
            let data = event.data.trim();
            if data == "[DONE]" {
                return Err(fail(
                    "The Hermes run ended without a result.",
                    None::<String>,
                ));
            }
            let Ok(payload) = serde_json::from_str::<Value>(data) else {
                let shown: String = data.chars().take(120).collect();
                return Err(fail(
                    "The Hermes gateway sent a malformed event.",
                    format!("`{shown}`"),
                ));
            };
            let name = payload["event"]
                .as_str()
                .map(str::to_owned)
                .or(event.event)
                .unwrap_or_default();
            match name.as_str() {
                "message.delta" | "assistant.delta" => {
                    let delta = str_of(&payload, &["delta", "text", "content"]);
                    if !delta.is_empty() {
                        answer.push_str(&delta);
                        io.emit(EventKind::Token, json!({ "text": delta })).await?;
                    }
                }
                "reasoning.available" | "reasoning.delta" => {
                    let text = str_of(&payload, &["text", "delta", "content"]);
                    if !text.is_empty() {
                        io.emit(EventKind::Reasoning, json!({ "text": text }))
                            .await?;
                    }
                }
                "tool.started" | "tool.completed" => {
                    let done = name == "tool.completed";
                    let tool = str_of(&payload, &["tool", "name"]);
                    let tid = str_of(&payload, &["tool_call_id", "id"]);
                    let status = str_of(&payload, &["status"]);
                    let is_error = payload["is_error"].as_bool().unwrap_or(false)
                        || matches!(status.as_str(), "error" | "failed");
                    let mut out = json!({
                        "event_type": name,
                        "name": tool,
                        "tid": if tid.is_empty() { Value::Null } else { json!(tid) },
                        "args": payload.get("args").cloned().unwrap_or(json!({})),
                        "preview": payload.get("preview").cloned().unwrap_or(Value::Null),
                    });
                    if done {
                        out["is_error"] = json!(is_error);
                        if let Some(d) = payload.get("duration") {
                            out["duration"] = d.clone();
                        }
                    }
                    io.emit(
                        if done {
                            EventKind::ToolComplete
                        } else {
                            EventKind::Tool
                        },
                        out,
                    )
                    .await?;
                }
                "approval.request" => self.approval(run_id, &payload, approvals, io).await?,
                "run.completed" => {
                    let output = str_of(&payload, &["output"]);
                    let answer = if output.trim().is_empty() {
                        answer
                    } else {
                        output
                    };
                    let usage = payload.get("usage").and_then(usage_of);
                    if let Some(u) = &usage {
                        io.emit(EventKind::Usage, u.clone()).await?;
                    }
                    if answer.trim().is_empty() {
                        return Ok(RunEnd::NoResponse);
                    }
                    return Ok(RunEnd::Completed { answer, usage });
                }
                "run.failed" => {
                    let error = match &payload["error"] {
                        Value::String(s) => s.clone(),
                        Value::Object(o) => o
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("unknown error")
                            .to_owned(),
                        _ => "unknown error".to_owned(),
                    };
                    // The run ended on the gateway: nothing to stop.
                    return Ok(RunEnd::Failed {
                        message: format!("The Hermes agent failed: {error}"),
                        hint: Some(
                            "The partial answer is kept; send the message again to retry."
                                .to_owned(),
                        ),
                    });
                }
                "run.cancelled" => return Ok(RunEnd::Cancelled),
                _ => {}
            }
        }
    }

    async fn approval(
        &self,
        run_id: &str,
        payload: &Value,
        approvals: bool,
        io: &RunIo,
    ) -> Result<(), Fail> {
        let command = str_of(payload, &["command", "tool", "preview"]);
        let description = str_of(payload, &["description", "reason"]);
        let pattern = payload["pattern_keys"]
            .get(0)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| str_of(payload, &["pattern_key", "pattern"]));
        if !approvals {
            return Err(fail(
                "The Hermes agent asked for approval, but this gateway does not accept answers over its API.",
                "Answer it where the gateway runs, or enable run_approval_response on the gateway.".to_owned(),
            ));
        }
        let choice = io
            .ask_approval(&Approval::gateway(&command, &description, &pattern))
            .await?;
        // The gateway keeps its own permission for its pattern: "this conversation" and
        // "every conversation" are its session and always.
        let upstream = match choice {
            ApprovalChoice::Session | ApprovalChoice::SessionWide => "session",
            ApprovalChoice::Always | ApprovalChoice::AlwaysWide => "always",
            ApprovalChoice::Once => "once",
            ApprovalChoice::Deny => "deny",
        };
        let mut body = json!({ "choice": upstream });
        if let Some(id) = payload.get("approval_id").filter(|v| !v.is_null()) {
            body["approval_id"] = id.clone();
        }
        let path = format!("/v1/runs/{run_id}/approval");
        let sent = self
            .request(reqwest::Method::POST, &path)
            .timeout(Duration::from_secs(15))
            .json(&body)
            .send()
            .await;
        match sent {
            Ok(r) if r.status().is_success() => Ok(()),
            Ok(r) => Err(fail(
                format!(
                    "The Hermes gateway refused the approval answer (HTTP {}).",
                    r.status().as_u16()
                ),
                None::<String>,
            )),
            Err(e) => Err(fail(
                "Could not send the approval answer to the Hermes gateway.",
                e.to_string(),
            )),
        }
    }
}

#[async_trait]
impl RuntimeAdapter for HermesAgent {
    fn name(&self) -> &'static str {
        "hermes"
    }

    fn label(&self) -> String {
        format!("Hermes agent · {}", super::host_of(&self.settings.url))
    }

    async fn run(&self, turn: TurnRequest, io: RunIo) -> RunEnd {
        super::end_of(self.turn(&turn, &io).await)
    }
}

/// The first non-empty string among `keys`.
fn str_of(payload: &Value, keys: &[&str]) -> String {
    keys.iter()
        .find_map(|k| payload[*k].as_str().filter(|s| !s.is_empty()))
        .unwrap_or_default()
        .to_owned()
}

/// Usage in our shape (`input_tokens`, `output_tokens`).
fn usage_of(u: &Value) -> Option<Value> {
    let (input, output) = super::token_counts(u);
    (input.is_some() || output.is_some())
        .then(|| json!({"input_tokens": input.unwrap_or(0), "output_tokens": output.unwrap_or(0)}))
}

fn gateway_error(status: u16, body: &Value) -> Fail {
    let detail = body["error"]["message"]
        .as_str()
        .or_else(|| body["error"].as_str())
        .or_else(|| body["detail"].as_str())
        .map(|d| format!(": {d}"))
        .unwrap_or_default();
    let hint = match status {
        401 | 403 => Some("Check HERMES_API_KEY.".to_owned()),
        429 => Some("Wait a moment and send the message again.".to_owned()),
        500..=599 => Some("Check the gateway's log, then send the message again.".to_owned()),
        _ => None,
    };
    fail(
        format!("The Hermes gateway refused the run (HTTP {status}){detail}"),
        hint,
    )
}
