//! An agent loop over any OpenAI-compatible `/chat/completions` endpoint (hosted APIs, Ollama,
//! llama.cpp, vLLM): streamed text becomes `token` events, reasoning deltas (`reasoning_content`
//! or `reasoning`) become `reasoning` events, and tool calls run against the workspace tools
//! and are fed back until the model answers or the iteration limit is reached.

use anchor::EventKind;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde_json::{json, Value};

use super::sse::EventReader;
use super::tools::Workspace;
use super::workspaces::Workspaces;
use super::{fail, AttachedFile, Fail, RunEnd, RunIo, RuntimeAdapter, Stopped, TurnRequest};
use crate::store::Role;

/// How long a model stream may stay silent before the turn fails (a local server can take
/// minutes to read a long prompt before its first byte).
pub const DEFAULT_IDLE: Duration = Duration::from_secs(300);
/// How long the provider's model list is used before it is asked for again.
const MODELS_TTL: Duration = Duration::from_secs(600);
/// How often a refresh may ask the provider.
const MODELS_REFRESH: Duration = Duration::from_secs(2);
/// The most models a list keeps (a provider may list thousands).
const MODELS_LIMIT: usize = 500;
/// The most bytes of arguments one tool call may stream.
const MAX_ARGS_BYTES: usize = 1 << 20;
/// The longest tool name accepted, in bytes.
const MAX_NAME_BYTES: usize = 256;
/// Tool output shown in the tool row (the model gets all of it).
const PREVIEW_LIMIT: usize = 4_000;
/// Bytes of request per token assumed until the provider's usage reports tell better: few
/// enough that the estimate errs on the side of a shorter request (English runs about four
/// bytes a token, most other scripts fewer).
const BYTES_PER_TOKEN: f64 = 3.0;
/// Tokens each message adds beyond its text (role markers, separators).
const MESSAGE_OVERHEAD: u64 = 8;

const SYSTEM_PROMPT: &str = "You are the assistant in Anchorage, a chat app. Answer clearly and \
concisely, in Markdown. You can work with files in the user's workspace through the tools \
list_files, read_file, search_text and write_file (paths are relative to the workspace root; \
writing needs the user's approval), and ask_user when you need the user to decide something.";

/// Settings of the OpenAI-compatible backend.
#[derive(Clone, Debug)]
pub struct OpenAiSettings {
    /// Base URL up to and including `/v1` (`https://api.openai.com/v1`,
    /// `http://127.0.0.1:11434/v1`, …).
    pub base_url: String,
    /// Bearer key.
    pub api_key: crate::config::Secret,
    /// Model name.
    pub model: String,
    /// Model calls per turn before `tool_limit_reached`.
    pub max_iterations: u32,
    /// Silence allowed on a stream.
    pub idle: Duration,
    /// The longest answer one model call may write, in tokens (sent as `max_tokens`; `None`:
    /// the provider decides).
    pub max_tokens: Option<u32>,
    /// The model's context window in tokens, prompt and answer together (`None`: what the
    /// provider reports, if it does). Requests are kept within it by leaving out the oldest
    /// turns.
    pub context_tokens: Option<u32>,
}

impl OpenAiSettings {
    /// Settings for `model` at `base_url` with the defaults for everything else.
    pub fn new(base_url: impl Into<String>, api_key: crate::config::Secret, model: &str) -> Self {
        OpenAiSettings {
            base_url: base_url.into(),
            api_key,
            model: model.to_owned(),
            max_iterations: 12,
            idle: DEFAULT_IDLE,
            max_tokens: Some(crate::config::DEFAULT_MAX_TOKENS),
            context_tokens: None,
        }
    }
}

/// The agent.
pub struct OpenAiAgent {
    settings: OpenAiSettings,
    workspaces: Workspaces,
    client: reqwest::Client,
    quirks: Mutex<Quirks>,
    // The provider's model list, and when it was asked for.
    models: Mutex<Option<(std::time::Instant, Vec<String>)>>,
    // What is known of each model's context: its window and how many bytes a token is.
    contexts: Mutex<std::collections::HashMap<String, ContextInfo>>,
}

/// What this provider told of a model's context.
#[derive(Clone, Copy, Debug, Default)]
struct ContextInfo {
    /// Its window in tokens as the model list states it.
    listed: Option<u32>,
    /// Its window in tokens as an overflow error named it.
    learned: Option<u32>,
    /// Request bytes per prompt token, from the usage of earlier requests.
    bytes_per_token: Option<f64>,
}

/// What this provider turned out not to accept.
#[derive(Default)]
struct Quirks {
    no_stream_options: bool,
    no_tools: bool,
    // Asks for `max_completion_tokens` (newer OpenAI models refuse `max_tokens`).
    completion_tokens_name: bool,
    // Models that refused a message with an image in it: they are told the images' names.
    no_images: std::collections::HashSet<String>,
}

/// One streamed model response.
#[derive(Default)]
struct Step {
    content: String,
    calls: Vec<Call>,
    usage: Option<(u64, u64)>,
    /// The provider stopped it at a length limit (`finish_reason: "length"`).
    cut_off: bool,
}

#[derive(Default)]
struct Call {
    id: String,
    name: String,
    arguments: String,
}

impl OpenAiAgent {
    /// An agent over `settings` whose tools work in the workspace of the account a turn is
    /// for, one of `workspaces`.
    pub fn new(settings: OpenAiSettings, workspaces: Workspaces) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .build()?;
        Ok(OpenAiAgent {
            settings,
            workspaces,
            client,
            quirks: Mutex::default(),
            models: Mutex::default(),
            contexts: Mutex::default(),
        })
    }

    fn lock_models(&self) -> std::sync::MutexGuard<'_, Option<(std::time::Instant, Vec<String>)>> {
        self.models.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `GET {base}/models`: the ids of the provider's models, sorted.
    async fn fetch_models(&self) -> Result<Vec<String>, String> {
        let url = format!("{}/models", self.settings.base_url.trim_end_matches('/'));
        let shown = super::shown_url(&self.settings.base_url);
        let base = shown.trim_end_matches('/');
        let response = self
            .client
            .get(url)
            .bearer_auth(self.settings.api_key.expose())
            .timeout(Duration::from_secs(20))
            .send()
            .await
            .map_err(|e| format!("Cannot reach the model provider at {base}: {e}."))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!(
                "The model provider at {base} answered {} to GET /models.",
                status.as_u16()
            ));
        }
        let body = super::json_body(response, super::JSON_BODY_BYTES)
            .await
            .map_err(|e| format!("The model list of {base} is not the JSON expected ({e})."))?;
        let listed: Vec<(String, Option<u32>)> = body["data"]
            .as_array()
            .map(|models| {
                models
                    .iter()
                    .filter_map(|m| Some((m["id"].as_str()?, listed_window(m))))
                    .filter(|(id, _)| {
                        !id.trim().is_empty() && id.len() <= super::MAX_MODEL_ID_BYTES
                    })
                    .take(MODELS_LIMIT)
                    .map(|(id, window)| (id.to_owned(), window))
                    .collect()
            })
            .unwrap_or_default();
        {
            let mut contexts = self.lock_contexts();
            for (id, window) in &listed {
                if window.is_some() && (contexts.len() < MODELS_LIMIT || contexts.contains_key(id))
                {
                    contexts.entry(id.clone()).or_default().listed = *window;
                }
            }
        }
        let mut ids: Vec<String> = listed.into_iter().map(|(id, _)| id).collect();
        ids.sort();
        ids.dedup();
        ids.truncate(MODELS_LIMIT);
        Ok(ids)
    }

    fn url(&self) -> String {
        format!(
            "{}/chat/completions",
            self.settings.base_url.trim_end_matches('/')
        )
    }

    async fn turn(&self, turn: &TurnRequest, io: &RunIo) -> Result<RunEnd, Fail> {
        if turn.first_turn {
            io.emit(
                EventKind::Title,
                json!({ "title": super::demo::title_for(&turn.message) }),
            )
            .await?;
        }
        let history: Vec<Value> = turn
            .history
            .iter()
            .filter(|m| !m.content.trim().is_empty() || !m.attachments.is_empty())
            .map(|m| {
                if m.role == Role::User && !m.attachments.is_empty() {
                    json!({"role": "user", "content": user_content(&m.content, &m.attachments, &[])})
                } else {
                    json!({"role": m.role, "content": m.content})
                }
            })
            .collect();
        let workspace = self
            .workspaces
            .of(turn.owner.as_deref())
            .map_err(|e| fail(e, None::<String>))?;
        let placed = self.place_files(turn, &workspace).await;
        let current = json!({
            "role": "user",
            "content": if turn.attachments.is_empty() {
                json!(turn.message)
            } else {
                user_content(&turn.message, &turn.attachments, &placed)
            },
        });
        let model = turn.model.as_deref().unwrap_or(&self.settings.model);
        let system = json!({"role": "system", "content": SYSTEM_PROMPT});
        // The conversation as far back as the model's context holds it; asked again with the
        // window an overflow error names, once, when it was not known before.
        let mut fitted = self
            .fit(model, &system, &history, &current)
            .map_err(|t| t.fail(false))?;
        let mut learned = false;
        let mut said_left_out = 0;
        let mut usage: Option<(u64, u64)> = None;
        let mut last_content = String::new();
        let mut iterations = 0;
        let mut messages = fitted.messages.clone();
        while iterations < self.settings.max_iterations.max(1) {
            if fitted.left_out > said_left_out {
                io.emit(EventKind::ContextStatus, fitted.status()).await?;
                said_left_out = fitted.left_out;
            }
            let sent_bytes = request_bytes(&messages);
            // The answer limit, lowered to what the window leaves room for (a provider that
            // checks prompt plus limit against its window would refuse the request).
            let limit = match (self.settings.max_tokens, fitted.room) {
                (Some(limit), Some(room)) => Some(limit.min(u32::try_from(room).unwrap_or(limit))),
                (limit, _) => limit,
            };
            let step = match self.step(&messages, model, limit, io).await {
                Ok(step) => step,
                // The provider named a window smaller than the one the request was fitted
                // to (or none was known): fitted to that, the turn is asked again, once.
                Err(
                    overflow @ Fail::Overflow {
                        window: Some(window),
                        ..
                    },
                ) if !learned
                    && iterations == 0
                    && fitted.window.is_none_or(|w| u64::from(window) < w) =>
                {
                    learned = true;
                    self.learn_window(model, Some(window));
                    // Too long for the window it named: sent once, and refused.
                    let refitted = self
                        .fit(model, &system, &history, &current)
                        .map_err(|t| t.fail(true))?;
                    if refitted.left_out == fitted.left_out && refitted.room == fitted.room {
                        // The same request again would be refused again.
                        return Err(overflow);
                    }
                    fitted = refitted;
                    messages = fitted.messages.clone();
                    continue;
                }
                Err(e) => return Err(e),
            };
            iterations += 1;
            if let Some((i, o)) = step.usage {
                let (ti, to) = usage.unwrap_or_default();
                usage = Some((ti + i, to + o));
                self.learn_bytes_per_token(model, sent_bytes, i);
            }
            if !step.content.trim().is_empty() {
                last_content.clone_from(&step.content);
            }
            if step.calls.is_empty() || step.cut_off {
                let usage = self.report_usage(usage, io).await?;
                if step.content.trim().is_empty() && !step.cut_off {
                    return Ok(RunEnd::NoResponse);
                }
                if step.cut_off {
                    // Stopped at the configured limit, or by the room the context left.
                    let configured = self.settings.max_tokens;
                    let by_limit = configured.is_some()
                        && limit == configured
                        && step.usage.is_none_or(|(_, output)| {
                            configured.is_some_and(|c| output >= u64::from(c))
                        });
                    return Ok(RunEnd::CutOff {
                        answer: step.content,
                        usage,
                        limit: if by_limit { configured } else { None },
                    });
                }
                return Ok(RunEnd::Completed {
                    answer: step.content,
                    usage,
                });
            }
            let calls: Vec<Value> = step
                .calls
                .iter()
                .map(|c| {
                    // Arguments that are not JSON (cut off, or garbled) would make a strict
                    // server refuse the whole conversation from here on.
                    let arguments = if serde_json::from_str::<Value>(&c.arguments).is_ok() {
                        c.arguments.clone()
                    } else {
                        "{}".to_owned()
                    };
                    json!({"id": c.id, "type": "function",
                           "function": {"name": c.name, "arguments": arguments}})
                })
                .collect();
            let content = (!step.content.is_empty()).then_some(step.content.clone());
            messages.push(json!({"role": "assistant", "content": content, "tool_calls": calls}));
            for call in &step.calls {
                let output = self.call_tool(call, &workspace, io).await?;
                messages.push(json!({"role": "tool", "tool_call_id": call.id, "content": output}));
            }
        }
        let usage = self.report_usage(usage, io).await?;
        Ok(RunEnd::ToolLimitReached {
            answer: last_content,
            usage,
        })
    }

    fn lock_contexts(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, ContextInfo>> {
        self.contexts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The context window of `model`: the configured one, or what the provider told (the
    /// smaller, when both are known).
    fn window(&self, model: &str) -> Option<u32> {
        let (listed, learned) = self
            .lock_contexts()
            .get(model)
            .map_or((None, None), |c| (c.listed, c.learned));
        [self.settings.context_tokens, listed, learned]
            .into_iter()
            .flatten()
            .min()
    }

    fn learn_window(&self, model: &str, window: Option<u32>) {
        if let Some(window) = window.filter(|w| *w >= MIN_WINDOW) {
            let mut contexts = self.lock_contexts();
            if contexts.len() < MODELS_LIMIT || contexts.contains_key(model) {
                contexts.entry(model.to_owned()).or_default().learned = Some(window);
            }
        }
    }

    /// Keeps how many bytes of request a prompt token was, from a usage report (for
    /// requests large enough to tell).
    fn learn_bytes_per_token(&self, model: &str, bytes: u64, prompt_tokens: u64) {
        // Only from requests whose messages far outweigh the tools (which a provider may or
        // may not count): their ratio is the text's, give or take a fifth.
        let tools = tool_schemas().to_string().len() as u64;
        if prompt_tokens < 32 || bytes < 4 * tools {
            return;
        }
        let ratio = (bytes as f64 / prompt_tokens as f64).clamp(2.0, 5.0);
        let mut contexts = self.lock_contexts();
        if contexts.len() < MODELS_LIMIT || contexts.contains_key(model) {
            contexts
                .entry(model.to_owned())
                .or_default()
                .bytes_per_token = Some(ratio);
        }
    }

    /// The request for a turn: the system prompt, as many of the latest earlier messages as
    /// fit the model's context with room left for the answer, and the user's message. The
    /// oldest go first, a turn (a user message and what answered it) at a time. A message
    /// that does not fit even alone is refused before the provider is asked.
    fn fit(
        &self,
        model: &str,
        system: &Value,
        history: &[Value],
        current: &Value,
    ) -> Result<Fitted, TooLong> {
        let mut messages = Vec::with_capacity(history.len() + 2);
        messages.push(system.clone());
        let Some(window) = self.window(model) else {
            messages.extend(history.iter().cloned());
            messages.push(current.clone());
            return Ok(Fitted {
                messages,
                room: None,
                left_out: 0,
                window: None,
            });
        };
        let per_byte = 1.0
            / self
                .lock_contexts()
                .get(model)
                .and_then(|c| c.bytes_per_token)
                .unwrap_or(BYTES_PER_TOKEN);
        let tokens = |m: &Value| -> u64 {
            (message_bytes(m) as f64 * per_byte).ceil() as u64 + MESSAGE_OVERHEAD
        };
        let tools = (tool_schemas().to_string().len() as f64 * per_byte).ceil() as u64;
        let window = u64::from(window);
        // Room kept for the answer: the answer limit, at most half of the window.
        let reserve = self
            .settings
            .max_tokens
            .map_or(window / 4, u64::from)
            .min(window / 2);
        let needed = tokens(system) + tokens(current) + tools;
        if needed + MIN_ANSWER > window {
            return Err(TooLong { needed, window });
        }
        let budget = window.saturating_sub(reserve).max(needed);
        let mut used = needed;
        let mut kept = needed;
        // Walk back from the newest earlier message; keep whole turns.
        let mut start = history.len();
        let mut at = history.len();
        loop {
            if at == 0 {
                start = 0;
                break;
            }
            at -= 1;
            used += tokens(&history[at]);
            if used > budget {
                break;
            }
            if history[at]["role"] == "user" {
                start = at;
                kept = used;
            }
        }
        if start == 0 {
            kept = used.min(budget);
        }
        messages.extend(history[start..].iter().cloned());
        messages.push(current.clone());
        Ok(Fitted {
            messages,
            room: Some(window.saturating_sub(kept).max(MIN_ANSWER)),
            left_out: start,
            window: Some(window),
        })
    }

    async fn report_usage(
        &self,
        usage: Option<(u64, u64)>,
        io: &RunIo,
    ) -> Result<Option<Value>, Stopped> {
        let Some((input, output)) = usage else {
            return Ok(None);
        };
        let usage = json!({"input_tokens": input, "output_tokens": output});
        io.emit(EventKind::Usage, usage.clone()).await?;
        Ok(Some(usage))
    }

    /// Sends one streaming request. A provider that rejects `stream_options` or `tools` with
    /// HTTP 400 (older local servers, models without tool support) is asked again without
    /// them, and remembered.
    async fn request(
        &self,
        messages: &[Value],
        model: &str,
        limit: Option<u32>,
        io: &RunIo,
    ) -> Result<reqwest::Response, Fail> {
        let with_images = messages.iter().any(has_image);
        loop {
            let (no_usage, no_tools, no_images, completion_tokens_name) = {
                let q = self.lock_quirks();
                (
                    q.no_stream_options,
                    q.no_tools,
                    q.no_images.contains(model),
                    q.completion_tokens_name,
                )
            };
            let named_only;
            let sent = if with_images && no_images {
                named_only = messages.iter().map(without_images).collect::<Vec<_>>();
                &named_only[..]
            } else {
                messages
            };
            let mut body = json!({
                "model": model,
                "messages": sent,
                "stream": true,
            });
            if !no_tools {
                body["tools"] = tool_schemas();
            }
            if !no_usage {
                body["stream_options"] = json!({"include_usage": true});
            }
            if let Some(limit) = limit {
                let name = if completion_tokens_name {
                    "max_completion_tokens"
                } else {
                    "max_tokens"
                };
                body[name] = json!(limit);
            }
            let request = self
                .client
                .post(self.url())
                .bearer_auth(self.settings.api_key.expose())
                .json(&body)
                .send();
            let response = io
                .unless_stopped(tokio::time::timeout(self.settings.idle, request))
                .await?;
            let Ok(response) = response else {
                return Err(fail(
                    "The model provider accepted the connection but did not answer.",
                    format!(
                        "No response within {} s. Check that the server at {} is healthy.",
                        self.settings.idle.as_secs(),
                        super::shown_url(&self.settings.base_url)
                    ),
                ));
            };
            let response = response.map_err(|e| {
                fail(
                    format!(
                        "Cannot reach the model provider at {}.",
                        super::shown_url(&self.settings.base_url)
                    ),
                    format!("{e}. Check --openai-base-url and that the server is running."),
                )
            })?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            let text = io
                .unless_stopped(tokio::time::timeout(
                    Duration::from_secs(10),
                    super::body_prefix(response, super::ERROR_BODY_BYTES),
                ))
                .await?
                .unwrap_or_default();
            if matches!(status.as_u16(), 400 | 413 | 422 | 500) {
                let error = serde_json::from_str::<Value>(&text)
                    .map(|v| v["error"].clone())
                    .unwrap_or(Value::Null);
                if let Some(overflow) = overflow_error(&text, &error) {
                    return Err(overflow);
                }
            }
            if status.as_u16() == 400 {
                let lower = text.to_lowercase();
                let mut q = self.lock_quirks();
                if !q.no_stream_options && lower.contains("stream_options") {
                    tracing::warn!("the provider rejects stream_options; asking without it");
                    q.no_stream_options = true;
                    continue;
                }
                if !q.completion_tokens_name
                    && self.settings.max_tokens.is_some()
                    && lower.contains("max_completion_tokens")
                    && (lower.contains("unsupported") || lower.contains("instead"))
                {
                    tracing::warn!("the provider wants max_completion_tokens; asking with it");
                    q.completion_tokens_name = true;
                    continue;
                }
                let rejects_tools = [
                    "does not support tools",
                    "tools are not supported",
                    "tool use is not supported",
                    "tool_choice",
                    "enable-auto-tool-choice",
                    "unrecognized request argument supplied: tools",
                    "unknown field `tools`",
                ]
                .iter()
                .any(|p| lower.contains(p));
                let rejects_images = [
                    "image",
                    "vision",
                    "multimodal",
                    "content part",
                    "content type",
                    "array",
                ]
                .iter()
                .any(|p| lower.contains(p));
                if with_images && !no_images && rejects_images {
                    tracing::warn!(model, "the model refuses images; naming them instead");
                    q.no_images.insert(model.to_owned());
                    continue;
                }
                let used_tools = messages.iter().any(|m| m["role"] == "tool");
                if !q.no_tools && rejects_tools && !used_tools {
                    tracing::warn!("the provider rejects tools; asking without them");
                    q.no_tools = true;
                    continue;
                }
            }
            return Err(http_error(status.as_u16(), &text));
        }
    }

    /// One streamed call to the model.
    async fn step(
        &self,
        messages: &[Value],
        model: &str,
        limit: Option<u32>,
        io: &RunIo,
    ) -> Result<Step, Fail> {
        let response = self.request(messages, model, limit, io).await?;
        let mut reader = EventReader::new(response, self.settings.idle);
        let mut step = Step::default();
        let mut think = ThinkSplitter::default();
        let mut finished = false;
        // Whether anything of the answer (reasoning included) came.
        let mut said = false;
        loop {
            let next = io.unless_stopped(reader.next()).await?;
            let event = match next {
                Ok(Some(event)) => event,
                Ok(None) if finished => break,
                Ok(None) if !said => {
                    return Err(fail(
                        "The model provider closed the stream before it answered.",
                        "A local server does this when the request does not fit the model's \
                         context. Set --context-tokens to the model's context size so that \
                         older turns are left out, or start a new conversation."
                            .to_owned(),
                    ))
                }
                Ok(None) => {
                    return Err(fail(
                        "The model's answer was cut off: the provider closed the stream early.",
                        "The partial answer is kept; send the message again to retry.".to_owned(),
                    ))
                }
                Err(super::sse::ReadError::Decode(e)) => {
                    return Err(fail(
                        format!("The model provider sent more than this server takes: {e}."),
                        "The partial answer is kept.".to_owned(),
                    ))
                }
                Err(e) => {
                    return Err(fail(
                        "The connection to the model provider was lost mid-answer.",
                        format!(
                            "{e}. The partial answer is kept; send the message again to retry."
                        ),
                    ))
                }
            };
            let data = event.data.trim();
            if data == "[DONE]" {
                break;
            }
            if data.is_empty() {
                continue;
            }
            let chunk: Value = serde_json::from_str(data).map_err(|e| {
                let shown: String = data.chars().take(120).collect();
                fail(
                    "The model provider sent a malformed stream chunk.",
                    format!("{e} in `{shown}`"),
                )
            })?;
            if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
                let message = error["message"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| error.to_string());
                if !said {
                    if let Some(overflow) = overflow_error(&message, error) {
                        return Err(overflow);
                    }
                }
                return Err(fail(
                    format!("The model provider reported an error: {message}"),
                    "The partial answer is kept; send the message again to retry.".to_owned(),
                ));
            }
            if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
                let (input, output) = super::token_counts(u);
                step.usage = Some((input.unwrap_or(0), output.unwrap_or(0)));
            }
            let Some(choice) = chunk["choices"].get(0) else {
                continue;
            };
            let delta = &choice["delta"];
            let reasoning = delta["reasoning_content"]
                .as_str()
                .or_else(|| delta["reasoning"].as_str())
                .unwrap_or_default();
            if !reasoning.is_empty() {
                said = true;
                io.emit(EventKind::Reasoning, json!({ "text": reasoning }))
                    .await?;
            }
            if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
                said = true;
                for (reasoning, piece) in think.push(text) {
                    self.emit_text(&mut step, reasoning, &piece, io).await?;
                }
            }
            if let Some(calls) = delta["tool_calls"].as_array() {
                said |= !calls.is_empty();
                for piece in calls {
                    let piece_id = piece["id"].as_str().filter(|s| !s.is_empty());
                    let index = match piece["index"].as_u64() {
                        // Ollama numbers every call 0 and tells them apart by id only.
                        Some(i)
                            if piece_id.is_some_and(|id| {
                                step.calls
                                    .get(i as usize)
                                    .is_some_and(|c| !c.id.is_empty() && c.id != id)
                            }) =>
                        {
                            step.calls
                                .iter()
                                .position(|c| Some(c.id.as_str()) == piece_id)
                                .unwrap_or(step.calls.len())
                        }
                        Some(i) => (i as usize).min(63),
                        // Without an index (some local servers send each call whole): a new
                        // id is a new call, no id continues the newest one.
                        None => match piece_id {
                            Some(id) => step
                                .calls
                                .iter()
                                .position(|c| c.id == id)
                                .unwrap_or(step.calls.len()),
                            None => step.calls.len().saturating_sub(1),
                        },
                    };
                    let index = index.min(63);
                    while step.calls.len() <= index {
                        step.calls.push(Call::default());
                    }
                    let call = &mut step.calls[index];
                    if let Some(id) = piece["id"].as_str().filter(|s| !s.is_empty()) {
                        call.id = id.to_owned();
                    }
                    let function = &piece["function"];
                    if let Some(name) = function["name"].as_str() {
                        call.name.push_str(name);
                    }
                    match &function["arguments"] {
                        Value::String(args) => call.arguments.push_str(args),
                        // Some servers send the arguments as an object rather than JSON text.
                        args @ Value::Object(_) => call.arguments = args.to_string(),
                        _ => {}
                    }
                    if call.arguments.len() > MAX_ARGS_BYTES || call.name.len() > MAX_NAME_BYTES {
                        return Err(fail(
                            format!(
                                "The model sent a tool call larger than {} MiB, the most one \
                                 call may be.",
                                MAX_ARGS_BYTES >> 20
                            ),
                            "The partial answer is kept.".to_owned(),
                        ));
                    }
                }
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                finished = true;
                step.cut_off = reason == "length";
            }
        }
        if let Some((reasoning, piece)) = think.finish() {
            self.emit_text(&mut step, reasoning, &piece, io).await?;
        }
        step.calls.retain(|c| !c.name.is_empty());
        for (n, call) in step.calls.iter_mut().enumerate() {
            if call.id.is_empty() {
                call.id = format!("call_{}_{n}", uuid::Uuid::new_v4().simple());
            }
        }
        Ok(step)
    }

    /// Streams a piece of the model's text: reasoning, or answer prose.
    async fn emit_text(
        &self,
        step: &mut Step,
        reasoning: bool,
        text: &str,
        io: &RunIo,
    ) -> Result<(), Stopped> {
        if reasoning {
            io.emit(EventKind::Reasoning, json!({ "text": text })).await
        } else {
            step.content.push_str(text);
            io.emit(EventKind::Token, json!({ "text": text })).await
        }
    }

    /// Runs one tool call with its `tool` / `tool_complete` events; returns what the model
    /// reads.
    async fn call_tool(
        &self,
        call: &Call,
        workspace: &Workspace,
        io: &RunIo,
    ) -> Result<String, Stopped> {
        let parsed: Result<Value, String> = if call.arguments.trim().is_empty() {
            Ok(json!({}))
        } else {
            serde_json::from_str(&call.arguments)
                .map_err(|e| format!("The tool arguments were not valid JSON ({e})."))
        };
        let args = parsed
            .clone()
            .unwrap_or_else(|_| json!({ "raw": call.arguments }));
        io.emit(
            EventKind::Tool,
            json!({"event_type": "tool.started", "name": call.name, "args": args,
                   "tid": call.id, "preview": null}),
        )
        .await?;
        let started = std::time::Instant::now();
        let result = match parsed {
            Ok(args) => self.run_tool(&call.name, &args, workspace, io).await?,
            Err(e) => Err(e),
        };
        let (text, is_error) = match &result {
            Ok(text) => (text.clone(), false),
            Err(e) => (e.clone(), true),
        };
        io.emit(
            EventKind::ToolComplete,
            json!({"event_type": "tool.completed", "name": call.name, "args": args,
                   "tid": call.id, "preview": preview(&text), "is_error": is_error,
                   "duration": started.elapsed().as_secs_f64()}),
        )
        .await?;
        Ok(if is_error {
            format!("Error: {text}")
        } else {
            text
        })
    }

    async fn run_tool(
        &self,
        name: &str,
        args: &Value,
        workspace: &Workspace,
        io: &RunIo,
    ) -> Result<Result<String, String>, Stopped> {
        let text = |k: &str| args[k].as_str().unwrap_or_default().to_owned();
        let path = |default: &str| {
            args["path"]
                .as_str()
                .filter(|p| !p.trim().is_empty())
                .unwrap_or(default)
                .to_owned()
        };
        let ws = workspace.clone();
        let blocking = |f: Box<dyn FnOnce() -> Result<String, String> + Send>| async move {
            tokio::task::spawn_blocking(f)
                .await
                .unwrap_or_else(|e| Err(format!("The tool failed: {e}")))
        };
        Ok(match name {
            "list_files" => {
                let p = path(".");
                blocking(Box::new(move || ws.list_files(&p))).await
            }
            "read_file" => {
                let p = path("");
                blocking(Box::new(move || ws.read_file(&p))).await
            }
            "search_text" => {
                let (q, p) = (text("query"), path("."));
                blocking(Box::new(move || ws.search_text(&q, &p))).await
            }
            "write_file" => {
                let (p, content) = (path(""), text("content"));
                if let Err(e) = ws.resolve(&p) {
                    return Ok(Err(e));
                }
                if io.permitted("write_file").await.is_none() {
                    let choice = io
                        .ask_approval(
                            &format!("write_file {p}"),
                            &format!("Write {} bytes to {p} in the workspace", content.len()),
                            "write_file",
                        )
                        .await?;
                    if !choice.allows() {
                        return Ok(Err(format!("The user denied writing `{p}`.")));
                    }
                }
                let all = self.workspaces.clone();
                blocking(Box::new(move || all.write(&ws, &p, &content))).await
            }
            "ask_user" => {
                let question = text("question");
                let choices: Vec<String> = args["choices"]
                    .as_array()
                    .map(|c| {
                        c.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                let choices: Vec<&str> = choices.iter().map(String::as_str).collect();
                let answer = io.ask_clarify(&question, &choices).await?;
                if answer.trim().is_empty() {
                    Ok("(The user gave no answer.)".to_owned())
                } else {
                    Ok(answer)
                }
            }
            other => Err(format!("There is no tool named `{other}`.")),
        })
    }

    /// Puts the text files of the turn's message into the account's workspace for the model
    /// to read (see [`Workspaces::place`]): where each went (`None`: an image, or a file that
    /// could not be placed, which the model is told by name only).
    async fn place_files(&self, turn: &TurnRequest, workspace: &Workspace) -> Vec<Option<String>> {
        let mut placed = Vec::with_capacity(turn.attachments.len());
        for file in &turn.attachments {
            let Some(text) = file.text() else {
                placed.push(None);
                continue;
            };
            let (all, ws) = (self.workspaces.clone(), workspace.clone());
            let (name, text) = (file.name.clone(), text.to_owned());
            let written = tokio::task::spawn_blocking(move || all.place(&ws, &name, &text)).await;
            match written {
                Ok(Ok(rel)) => placed.push(Some(rel)),
                Ok(Err(e)) => {
                    tracing::warn!(file = %file.name, "attachment not placed in the workspace: {e}");
                    placed.push(None);
                }
                Err(e) => {
                    tracing::warn!(file = %file.name, "attachment not placed in the workspace: {e}");
                    placed.push(None);
                }
            }
        }
        placed
    }

    fn lock_quirks(&self) -> std::sync::MutexGuard<'_, Quirks> {
        self.quirks.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl RuntimeAdapter for OpenAiAgent {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn label(&self) -> String {
        format!(
            "{} · {}",
            app::api::model_name(&self.settings.model),
            super::host_of(&self.settings.base_url)
        )
    }

    fn default_model(&self) -> Option<String> {
        Some(self.settings.model.clone())
    }

    async fn models(&self, refresh: bool) -> Result<Vec<String>, String> {
        {
            // A refresh asks the provider again, at most once every few seconds.
            let cached = self.lock_models();
            if let Some((at, models)) = cached.as_ref() {
                let fresh = if refresh { MODELS_REFRESH } else { MODELS_TTL };
                if at.elapsed() < fresh {
                    return Ok(models.clone());
                }
            }
        }
        let models = self.fetch_models().await?;
        *self.lock_models() = Some((std::time::Instant::now(), models.clone()));
        Ok(models)
    }

    async fn run(&self, turn: TurnRequest, io: RunIo) -> RunEnd {
        super::end_of(self.turn(&turn, &io).await)
    }
}

/// Separates `<think>…</think>` reasoning that some local servers put inside the content
/// (DeepSeek-R1 and Qwen through older Ollama or llama.cpp builds) from the answer, across
/// chunk boundaries. A `<think>` is only recognized before any visible answer text, so an
/// answer that talks about the tag keeps it.
#[derive(Debug, Default)]
struct ThinkSplitter {
    inside: bool,
    answered: bool,
    pending: String,
}

impl ThinkSplitter {
    const OPEN: &'static str = "<think>";
    const CLOSE: &'static str = "</think>";

    /// Feeds content; returns `(is_reasoning, text)` pieces ready to show.
    fn push(&mut self, text: &str) -> Vec<(bool, String)> {
        self.pending.push_str(text);
        let mut out = Vec::new();
        loop {
            if !self.inside && !self.answered {
                // Before the answer, only whitespace may precede an opening tag.
                let t = self.pending.trim_start();
                if !t.is_empty() && !t.starts_with(Self::OPEN) && !Self::OPEN.starts_with(t) {
                    self.answered = true;
                }
            }
            if !self.inside && self.answered {
                if !self.pending.is_empty() {
                    out.push((false, std::mem::take(&mut self.pending)));
                }
                return out;
            }
            let tag = if self.inside { Self::CLOSE } else { Self::OPEN };
            if let Some(at) = self.pending.find(tag) {
                let before: String = self.pending[..at].to_owned();
                self.pending.drain(..at + tag.len());
                self.emit(&mut out, before);
                self.inside = !self.inside;
                continue;
            }
            // Hold back a tail that may be the start of the tag.
            let keep = (1..tag.len())
                .rev()
                .find(|k| self.pending.ends_with(&tag[..*k]))
                .unwrap_or(0);
            let ready: String = self.pending[..self.pending.len() - keep].to_owned();
            self.pending.drain(..self.pending.len() - keep);
            self.emit(&mut out, ready);
            return out;
        }
    }

    fn emit(&mut self, out: &mut Vec<(bool, String)>, text: String) {
        if text.is_empty() {
            return;
        }
        if !self.inside && !text.trim().is_empty() {
            self.answered = true;
        }
        // Whitespace before the opening tag is not an answer.
        if !self.inside && !self.answered {
            return;
        }
        out.push((self.inside, text));
    }

    /// What is left when the stream ends.
    fn finish(&mut self) -> Option<(bool, String)> {
        let rest = std::mem::take(&mut self.pending);
        (!rest.is_empty()).then_some((self.inside, rest))
    }
}

/// The smallest context window believed (a smaller number in an error is not one).
const MIN_WINDOW: u32 = 256;
/// The fewest tokens of answer a request must leave room for.
const MIN_ANSWER: u64 = 16;

/// A turn's request within the model's context.
struct Fitted {
    messages: Vec<Value>,
    /// The tokens of answer the window leaves room for, by the estimate.
    room: Option<u64>,
    /// How many of the earlier messages were left out (the oldest).
    left_out: usize,
    /// The window they were fitted to.
    window: Option<u64>,
}

impl Fitted {
    /// The `context_status` event that says earlier messages were left out.
    fn status(&self) -> Value {
        let kept = self.messages.len().saturating_sub(2);
        let window = self.window.unwrap_or_default();
        let turns = if self.left_out == 1 {
            "message".to_owned()
        } else {
            format!("{} messages", self.left_out)
        };
        json!({
            "status": "trimmed",
            "left_out": self.left_out,
            "kept": kept,
            "context_tokens": window,
            "message": format!(
                "Earlier context left out: the oldest {turns} of this conversation did not fit \
                 the model's context ({} tokens), so the model did not see them.",
                app::api::grouped(window)
            ),
        })
    }
}

/// The bytes of text a message carries (images count as a fixed amount).
fn message_bytes(message: &Value) -> u64 {
    let content = &message["content"];
    let text = match content {
        Value::String(s) => s.len() as u64,
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p["text"].as_str() {
                Some(t) => t.len() as u64,
                // An image part: providers count a few hundred to a thousand tokens.
                None => 3_000,
            })
            .sum(),
        _ => 0,
    };
    let calls = message
        .get("tool_calls")
        .map_or(0, |c| c.to_string().len() as u64);
    text + calls
}

/// The bytes of a request's messages, as [`message_bytes`] counts them (its tools left out:
/// not every provider counts them in the prompt, and a ratio that included them could make a
/// later estimate too small).
fn request_bytes(messages: &[Value]) -> u64 {
    messages.iter().map(message_bytes).sum()
}

/// The context window a model list entry states (vLLM's `max_model_len`, OpenRouter's and
/// LM Studio's `context_length`, llama.cpp's `meta.n_ctx`, …).
fn listed_window(model: &Value) -> Option<u32> {
    let stated = [
        &model["context_length"],
        &model["context_window"],
        &model["max_model_len"],
        &model["max_context_length"],
        &model["loaded_context_length"],
        &model["meta"]["n_ctx"],
    ];
    stated
        .iter()
        .find_map(|v| v.as_u64())
        .and_then(|w| u32::try_from(w).ok())
        .filter(|w| *w >= MIN_WINDOW)
}

/// A message that does not fit the model's context even alone: about `needed` tokens, for a
/// context of `window`.
struct TooLong {
    needed: u64,
    window: u64,
}

impl TooLong {
    /// The failure that ends the turn; `refused`: the provider was sent it once and refused
    /// it (otherwise nothing was sent).
    fn fail(self, refused: bool) -> Fail {
        let advice = "Shorten the message, or send it in parts over several messages.";
        Fail::Overflow {
            message: format!(
                "Your message is too long for this model: it comes to about {} tokens, and the \
                 model's context holds {} in all, for the message and the answer together.",
                app::api::grouped(self.needed),
                app::api::grouped(self.window)
            ),
            hint: if refused {
                format!("The model refused it as too long. {advice}")
            } else {
                format!("{advice} Nothing was sent to the model.")
            },
            window: None,
        }
    }
}

/// A provider's "the request does not fit the context" error, read from its message and
/// error object (OpenAI's `context_length_exceeded`, llama.cpp's `exceed_context_size_error`,
/// vLLM's and llama-cpp-python's wording); `None` for any other error.
fn overflow_error(text: &str, error: &Value) -> Option<Fail> {
    let lower = text.to_lowercase();
    let code = error["code"].as_str().unwrap_or_default();
    let kind = error["type"].as_str().unwrap_or_default();
    let phrases = [
        "context window",
        "context length",
        "context size",
        "context_length_exceeded",
        "exceed_context_size",
        "prompt is too long",
    ];
    let matched = code == "context_length_exceeded"
        || kind == "exceed_context_size_error"
        || phrases.iter().any(|p| lower.contains(p));
    if !matched {
        return None;
    }
    let named = ["n_ctx", "context_length", "max_context_length"]
        .iter()
        .find_map(|k| error[*k].as_u64())
        .or_else(|| {
            [
                "context window of ",
                "maximum context length is ",
                "context size (",
                "context length of ",
                "context length is ",
            ]
            .iter()
            .find_map(|p| {
                let at = lower.find(p)? + p.len();
                // The number right after the phrase (a space or a parenthesis between).
                let rest = lower[at..].trim_start_matches([' ', '(']);
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                digits.parse().ok()
            })
        })
        .and_then(|w| u32::try_from(w).ok())
        .filter(|w| *w >= MIN_WINDOW);
    let detail: String = error["message"]
        .as_str()
        .unwrap_or(text)
        .trim()
        .chars()
        .take(300)
        .collect();
    let size = named.map_or_else(String::new, |w| {
        format!(" of {} tokens", app::api::grouped(u64::from(w)))
    });
    Some(Fail::Overflow {
        message: format!(
            "The conversation no longer fits the model's context{size}. The provider said: \
             {detail}"
        ),
        hint: "Shorten your last message, or start a new conversation. With --context-tokens \
               set to the model's context size, Anchorage leaves the oldest turns out by itself."
            .to_owned(),
        window: named,
    })
}

/// The content of a user message that carries files: its text with a line per file (where a
/// text file is in the workspace), then the images as image parts (those given with their
/// bytes; the others are named only). `placed` is where each file went (see `place_files`).
fn user_content(text: &str, files: &[AttachedFile], placed: &[Option<String>]) -> Value {
    let mut note = String::from(text.trim());
    if !note.is_empty() {
        note.push_str("\n\n");
    }
    note.push_str("Attached files:");
    let mut parts = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let label = file.label();
        match (
            file.is_image(),
            &file.bytes,
            placed.get(i).and_then(Option::as_ref),
        ) {
            (true, Some(bytes), _) => {
                note.push_str(&format!("\n- {label}: an image"));
                parts.push(json!({"type": "text", "text": format!("Image: {label}")}));
                parts.push(json!({"type": "image_url", "image_url": {
                    "url": format!("data:{};base64,{}", file.mime, BASE64.encode(bytes)),
                }}));
            }
            (true, None, _) => note.push_str(&format!("\n- {label}: an image (no longer shown)")),
            (false, _, Some(path)) => note.push_str(&format!(
                "\n- {label}: a text file, in the workspace at `{path}` (read it with read_file)"
            )),
            (false, _, None) => note.push_str(&format!("\n- {label}: a text file")),
        }
    }
    let mut content = vec![json!({"type": "text", "text": note})];
    content.extend(parts);
    Value::Array(content)
}

/// Whether a message carries an image part.
fn has_image(message: &Value) -> bool {
    message["content"]
        .as_array()
        .is_some_and(|parts| parts.iter().any(|p| p["type"] == "image_url"))
}

/// The message for a model that takes no images: its text parts only, saying so.
fn without_images(message: &Value) -> Value {
    if !has_image(message) {
        return message.clone();
    }
    let mut text: Vec<&str> = message["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect();
    text.push("(The images are not shown: this model does not take images.)");
    json!({"role": message["role"], "content": text.join("\n")})
}

/// A readable error for a non-2xx response.
fn http_error(status: u16, body: &str) -> Fail {
    let detail = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v["error"]["message"]
                .as_str()
                .or_else(|| v["error"].as_str())
                .or_else(|| v["message"].as_str())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| body.trim().chars().take(200).collect());
    let detail = if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    };
    match status {
        401 | 403 => fail(
            format!("The model provider rejected the API key (HTTP {status}){detail}"),
            "Check OPENAI_API_KEY.".to_owned(),
        ),
        404 => fail(
            format!("The model provider has no such endpoint or model (HTTP 404){detail}"),
            "Check --model and --openai-base-url (it usually ends in /v1).".to_owned(),
        ),
        429 => fail(
            format!("The model provider is rate limiting requests (HTTP 429){detail}"),
            "Wait a moment and send the message again, or check your plan's quota.".to_owned(),
        ),
        500..=599 => fail(
            format!("The model provider had a server error (HTTP {status}){detail}"),
            "This is usually temporary: send the message again in a moment.".to_owned(),
        ),
        _ => fail(
            format!("The model provider refused the request (HTTP {status}){detail}"),
            None,
        ),
    }
}

fn preview(text: &str) -> String {
    if text.len() <= PREVIEW_LIMIT {
        return text.to_owned();
    }
    let mut end = PREVIEW_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… ({} bytes in all)", &text[..end], text.len())
}

/// The tools offered to the model.
pub fn tool_schemas() -> Value {
    let tool = |name: &str, description: &str, properties: Value, required: &[&str]| {
        json!({"type": "function", "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        }})
    };
    let path = json!({"type": "string", "description": "Path relative to the workspace root"});
    json!([
        tool(
            "list_files",
            "List the files and directories in a workspace directory.",
            json!({ "path": path }),
            &[]
        ),
        tool(
            "read_file",
            "Read a text file from the workspace.",
            json!({ "path": path }),
            &["path"]
        ),
        tool(
            "search_text",
            "Find lines containing a text (case-insensitive) in the workspace.",
            json!({"query": {"type": "string"}, "path": path}),
            &["query"]
        ),
        tool(
            "write_file",
            "Create or overwrite a text file in the workspace. The user must approve it.",
            json!({"path": path, "content": {"type": "string"}}),
            &["path", "content"]
        ),
        tool(
            "ask_user",
            "Ask the user a question and wait for the answer.",
            json!({"question": {"type": "string"},
                   "choices": {"type": "array", "items": {"type": "string"}}}),
            &["question"]
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(f: Fail) -> (String, Option<String>) {
        match f {
            Fail::Error { message, hint } => (message, hint),
            Fail::Overflow { message, hint, .. } => (message, Some(hint)),
            Fail::Stopped => panic!("not an error"),
        }
    }

    #[test]
    fn http_errors_read_like_advice() {
        let (m, h) = message(http_error(
            401,
            r#"{"error":{"message":"Incorrect API key provided"}}"#,
        ));
        assert!(m.contains("rejected the API key (HTTP 401): Incorrect API key"));
        assert_eq!(h.as_deref(), Some("Check OPENAI_API_KEY."));
        let (m, h) = message(http_error(429, "slow down"));
        assert!(m.contains("HTTP 429): slow down"));
        assert!(h.unwrap().contains("Wait a moment"));
        let (m, _) = message(http_error(503, ""));
        assert!(m.ends_with("(HTTP 503)"));
    }

    fn split(pieces: &[&str]) -> Vec<(bool, String)> {
        let mut t = ThinkSplitter::default();
        let mut out: Vec<(bool, String)> = Vec::new();
        for p in pieces {
            out.extend(t.push(p));
        }
        out.extend(t.finish());
        // Merge neighbours of the same kind, as a reader sees them.
        let mut merged: Vec<(bool, String)> = Vec::new();
        for (r, text) in out {
            match merged.last_mut() {
                Some((last, acc)) if *last == r => acc.push_str(&text),
                _ => merged.push((r, text)),
            }
        }
        merged
    }

    #[test]
    fn think_tags_become_reasoning_even_when_split_across_chunks() {
        assert_eq!(
            split(&[
                "<thi",
                "nk>Let me ",
                "think.</th",
                "ink>\n\nThe answer",
                " is 4."
            ]),
            vec![
                (true, "Let me think.".to_owned()),
                (false, "\n\nThe answer is 4.".to_owned())
            ]
        );
        assert_eq!(
            split(&["  \n<think>x</think>y"]),
            vec![(true, "x".to_owned()), (false, "y".to_owned())]
        );
        // No tags: everything is answer, nothing held back at the end.
        assert_eq!(
            split(&["Hello <", "b>"]),
            vec![(false, "Hello <b>".to_owned())]
        );
        // A tag after the answer started is text.
        assert_eq!(
            split(&["Use the <think> tag"]),
            vec![(false, "Use the <think> tag".to_owned())]
        );
        // A stream cut inside the reasoning keeps it as reasoning.
        assert_eq!(
            split(&["<think>unfinished"]),
            vec![(true, "unfinished".to_owned())]
        );
    }

    #[test]
    fn previews_cut_on_a_character_boundary() {
        let long = "é".repeat(PREVIEW_LIMIT);
        let p = preview(&long);
        assert!(p.len() < PREVIEW_LIMIT + 40);
        assert!(p.ends_with("bytes in all)"));
        assert_eq!(preview("short"), "short");
    }

    #[test]
    fn every_tool_has_a_schema() {
        let names: Vec<String> = tool_schemas()
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            names,
            [
                "list_files",
                "read_file",
                "search_text",
                "write_file",
                "ask_user"
            ]
        );
    }
}
