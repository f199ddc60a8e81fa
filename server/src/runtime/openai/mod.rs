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

mod agent;
mod calls;
mod content;
mod context;
mod models;
mod request;
mod stream;

pub use calls::tool_schemas;

/// The most models a list keeps (a provider may list thousands).
const MODELS_LIMIT: usize = 500;
/// How long a model stream may stay silent once it began before the turn fails ("the model
/// stopped responding").
pub const DEFAULT_IDLE: Duration = Duration::from_secs(120);
/// Silence allowed before a model call's first bytes (a local server can take minutes to
/// read a long prompt, a model to think), when nothing else says.
pub const DEFAULT_FIRST_TOKEN: Duration = Duration::from_secs(600);

/// What the model is told it is and can do.
fn system_prompt() -> String {
    use super::tools::names::{ASK_USER, LIST_FILES, READ_FILE, SEARCH_TEXT, WRITE_FILE};
    format!(
        "You are the assistant in Anchorage, a chat app. Answer clearly and concisely, in \
         Markdown. You can work with files in the user's workspace through the tools \
         {LIST_FILES}, {READ_FILE}, {SEARCH_TEXT} and {WRITE_FILE} (paths are relative to the \
         workspace root; writing needs the user's approval), and {ASK_USER} when you need the \
         user to decide something."
    )
}

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
    /// Silence allowed on a stream, once it began (`--upstream-idle-secs`).
    pub idle: Duration,
    /// Silence allowed before a call's first bytes, a model thinking before it answers
    /// (`--upstream-first-token-secs`; at least `idle`).
    pub first_token: Duration,
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
            first_token: DEFAULT_FIRST_TOKEN,
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
            // A connection a NAT or proxy dropped without a word is found out.
            .tcp_keepalive(Duration::from_secs(30))
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

    fn url(&self) -> String {
        format!(
            "{}/chat/completions",
            self.settings.base_url.trim_end_matches('/')
        )
    }
}
