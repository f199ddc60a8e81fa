//! The boundary to agent backends. A [`RuntimeAdapter`] runs one turn: it reads the request,
//! emits events through [`RunIo`] (journaled in order; see [`RunIo::emit`]), may wait for the
//! user's approval or clarification, and returns how the turn ended. It never touches the
//! journal, the store or HTTP itself.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;

use crate::store::Role;

pub mod agent_state;
pub mod agui_client;
pub mod approvals;
pub mod browse;
pub mod demo;
pub mod demo_context;
pub mod hermes;
pub mod io;
pub mod openai;
pub mod redact;
pub mod sse;
pub mod tools;
pub mod workspaces;

pub use io::{RunIo, Stopped, TurnBudget, Waiters, IN_FLIGHT};
pub(crate) use redact::host_of;
pub use redact::{redact_secrets, shown_url};

/// The longest model id accepted, in bytes.
pub const MAX_MODEL_ID_BYTES: usize = 256;

/// A message of the conversation so far.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChatMessage {
    /// Who wrote it.
    pub role: Role,
    /// Its text.
    pub content: String,
    /// The files a user message carried (the bytes of the newest images only: see
    /// [`HISTORY_IMAGES`]).
    #[serde(skip)]
    pub attachments: Vec<AttachedFile>,
}

/// How many images of earlier messages a turn is given with their bytes (the newest); older
/// ones are named only.
pub const HISTORY_IMAGES: usize = 8;

/// A file a user message carries.
#[derive(Clone, Debug, PartialEq)]
pub struct AttachedFile {
    /// Its file name (no directories; see `routes::attachments::clean_name`).
    pub name: String,
    /// Its type: an `image/…` or `text/plain`.
    pub mime: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its bytes (`None`: not given to this turn).
    pub bytes: Option<Arc<[u8]>>,
}

impl AttachedFile {
    /// An image.
    pub fn is_image(&self) -> bool {
        self.mime.starts_with("image/")
    }

    /// Its text, for a text file given with its bytes.
    pub fn text(&self) -> Option<&str> {
        if self.is_image() {
            return None;
        }
        self.bytes
            .as_deref()
            .and_then(|b| std::str::from_utf8(b).ok())
    }

    /// "notes.txt (1.2 KB)".
    pub fn label(&self) -> String {
        format!("{} ({})", self.name, app::api::file_size(self.size))
    }
}

/// What a turn is asked to do.
#[derive(Clone, Debug)]
pub struct TurnRequest {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The user's message.
    pub message: String,
    /// The files it carries, with their bytes.
    pub attachments: Vec<AttachedFile>,
    /// Earlier messages of the session, oldest first.
    pub history: Vec<ChatMessage>,
    /// This is the session's first turn.
    pub first_turn: bool,
    /// Which version of its place in the conversation this turn is: 1 for the first answer
    /// to a message, then one more for each retry or edit of it.
    pub attempt: u32,
    /// The model the session asks for (`None`: the backend offers no choice; it answers
    /// with its own).
    pub model: Option<String>,
    /// The account the session belongs to (`None`: open mode). Permissions granted beyond
    /// one call ("always") are this account's.
    pub owner: Option<String>,
}

/// How a turn ended, as the adapter reports it.
#[derive(Clone, Debug, PartialEq)]
pub enum RunEnd {
    /// The agent answered.
    Completed {
        /// The final answer.
        answer: String,
        /// Token usage.
        usage: Option<Value>,
    },
    /// The agent stopped at its iteration limit.
    ToolLimitReached {
        /// Whatever answer it had.
        answer: String,
        /// Token usage.
        usage: Option<Value>,
    },
    /// The user stopped it.
    Cancelled,
    /// The provider produced no response.
    NoResponse,
    /// Context compression could not make room.
    CompressionExhausted,
    /// The request does not fit the model's context, even with the oldest turns left out.
    ContextOverflow {
        /// What does not fit, for the user.
        message: String,
        /// What they can do about it.
        hint: String,
    },
    /// The agent answered, but the provider stopped the answer at a length limit.
    CutOff {
        /// The answer as far as it got.
        answer: String,
        /// Token usage.
        usage: Option<Value>,
        /// The answer limit it reached (`None`: the end of the model's context).
        limit: Option<u32>,
    },
    /// The turn could only be partly carried out or reconstructed.
    Degraded {
        /// What is missing.
        message: String,
    },
    /// Nobody ran it to its end: the server running it stopped or went away (the runner
    /// says this of a run it finds abandoned; adapters do not).
    Interrupted,
    /// The run failed.
    Failed {
        /// What went wrong, for the user.
        message: String,
        /// What they can do about it.
        hint: Option<String>,
    },
}

/// The user's answer to an approval request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalChoice {
    /// Allow this once.
    Once,
    /// Allow this very action in this conversation.
    Session,
    /// Allow the wider kind the card named (its file's folder) in this conversation.
    SessionWide,
    /// Allow this very action in every conversation.
    Always,
    /// Allow the wider kind the card named in every conversation.
    AlwaysWide,
    /// Do not allow.
    Deny,
}

impl ApprovalChoice {
    /// Whether the action may proceed.
    pub fn allows(self) -> bool {
        self != ApprovalChoice::Deny
    }
}

/// Why a backend's turn did not end normally: stopped by the user, or an error to report.
pub(crate) enum Fail {
    Stopped,
    Error {
        message: String,
        hint: Option<String>,
    },
    /// The request does not fit the model's context (`window`: its size, when the provider
    /// named it).
    Overflow {
        message: String,
        hint: String,
        window: Option<u32>,
    },
}

impl From<Stopped> for Fail {
    fn from(_: Stopped) -> Self {
        Fail::Stopped
    }
}

/// A [`Fail::Error`].
pub(crate) fn fail(message: impl Into<String>, hint: impl Into<Option<String>>) -> Fail {
    Fail::Error {
        message: message.into(),
        hint: hint.into(),
    }
}

/// The next event of an agent's event stream, or why the turn ends: stopped, the stream closed
/// before the run finished, or the connection lost. `who` names the other side ("the Hermes
/// gateway").
pub(crate) async fn next_event(
    reader: &mut sse::EventReader,
    io: &RunIo,
    who: &str,
) -> Result<sse::SseEvent, Fail> {
    let mut capitalized = who.to_owned();
    if let Some(first) = capitalized.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    match io.unless_stopped(reader.next()).await? {
        Ok(Some(event)) => Ok(event),
        Ok(None) => Err(fail(
            format!("{capitalized} closed the event stream before the run finished."),
            "The partial answer is kept; send the message again to retry.".to_owned(),
        )),
        Err(sse::ReadError::Decode(e)) => Err(fail(
            format!("{capitalized} sent more than this server takes: {e}."),
            "The partial answer is kept.".to_owned(),
        )),
        Err(e) => Err(fail(
            format!("The connection to {who} was lost mid-run."),
            format!("{e}. The partial answer is kept."),
        )),
    }
}

/// The most bytes of an upstream's error body read for what it says (the rest is dropped).
pub(crate) const ERROR_BODY_BYTES: usize = 64 * 1024;
/// The most bytes of an upstream's JSON answer (a model list, a started run) accepted.
pub(crate) const JSON_BODY_BYTES: usize = 8 << 20;

/// The first `limit` bytes of a response's body, as text (an error's body, read for what it
/// says; what lies beyond is never read into memory).
pub(crate) async fn body_prefix(mut response: reqwest::Response, limit: usize) -> String {
    let mut bytes = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = limit - bytes.len();
        bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if bytes.len() >= limit {
            break;
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A response's body as JSON; refused once it passes `limit` bytes.
pub(crate) async fn json_body(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Value, String> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        if bytes.len() + chunk.len() > limit {
            return Err(format!("the answer passed {} KiB", limit >> 10));
        }
        bytes.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&bytes).map_err(|e| e.to_string())
}

/// How a turn that returned `result` ended.
pub(crate) fn end_of(result: Result<RunEnd, Fail>) -> RunEnd {
    match result {
        Ok(end) => end,
        Err(Fail::Stopped) => RunEnd::Cancelled,
        Err(Fail::Error { message, hint }) => RunEnd::Failed { message, hint },
        Err(Fail::Overflow { message, hint, .. }) => RunEnd::ContextOverflow { message, hint },
    }
}

/// (input, output) token counts of a provider's usage object, under either naming
/// (`input_tokens`/`output_tokens` or OpenAI's `prompt_tokens`/`completion_tokens`).
pub(crate) fn token_counts(usage: &Value) -> (Option<u64>, Option<u64>) {
    let get = |a: &str, b: &str| usage[a].as_u64().or_else(|| usage[b].as_u64());
    (
        get("input_tokens", "prompt_tokens"),
        get("output_tokens", "completion_tokens"),
    )
}

/// An agent backend.
#[async_trait]
pub trait RuntimeAdapter: Send + Sync + 'static {
    /// A short name for logs and `/healthz`.
    fn name(&self) -> &'static str;
    /// Who answers, for people: shown in the sidebar ("gpt-4o-mini · api.openai.com").
    fn label(&self) -> String {
        self.name().to_owned()
    }
    /// Prompts an empty conversation offers to try: what this agent does well.
    fn examples(&self) -> Vec<app::api::Example> {
        use app::api::Example;
        vec![
            Example::new(
                "Explain an idea",
                "Explain how a hash map works, with a short example.",
            ),
            Example::new(
                "Look around the workspace",
                "List the files in the workspace and tell me what this project is.",
            ),
            Example::new(
                "Plan a task",
                "Plan the steps to add a dark mode to a web app, as a short checklist.",
            ),
        ]
    }
    /// The workspaces its tools work in, one per account (`None`, the default: an agent that
    /// keeps no files here). People see theirs, read-only ([`browse`]).
    fn workspaces(&self) -> Option<&workspaces::Workspaces> {
        None
    }
    /// The agent's own slash commands, offered by the message box's `/` menu: each example's
    /// prompt is the command, sent as typed (none by default).
    fn commands(&self) -> Vec<app::api::Example> {
        Vec::new()
    }
    /// The title a conversation that starts with `message` gets, when the agent knows better
    /// than the message's first words (its own slash commands); `None`, the default: those.
    fn title_for(&self, message: &str) -> Option<String> {
        let _ = message;
        None
    }
    /// How much of the model's context a turn with `history` and a message of `draft_bytes`
    /// bytes would use, by the estimate that trims the turn's history (`window: None`, the
    /// default: not known here).
    fn context_use(
        &self,
        model: Option<&str>,
        history: &[ChatMessage],
        draft_bytes: usize,
    ) -> app::api::ContextUse {
        let _ = (model, history, draft_bytes);
        app::api::ContextUse::default()
    }
    /// The model a turn gets when its session asks for none; `None` (the default): this
    /// backend offers no choice of model, and turns record none.
    fn default_model(&self) -> Option<String> {
        None
    }
    /// The models a session may choose from, by id (empty: no choice). `refresh` asks the
    /// provider again instead of answering from what it said last. `Err`: why the list
    /// cannot be had, for people.
    async fn models(&self, refresh: bool) -> Result<Vec<String>, String> {
        let _ = refresh;
        Ok(Vec::new())
    }
    /// Runs one turn to its end.
    async fn run(&self, turn: TurnRequest, io: RunIo) -> RunEnd;
}

/// The header that tells an agent gateway which account a turn is for (see [`account_tag`]).
pub const ACCOUNT_HEADER: &str = "x-anchorage-account";

/// An opaque, stable name of the account a turn is for, sent to agent gateways (Hermes,
/// AG-UI) so that their agents can keep each account's files and memory apart: the same for
/// every turn of an account, and telling nothing of its id or its name. `"open"` with no
/// accounts (one user on loopback).
pub fn account_tag(owner: Option<&str>) -> String {
    use sha2::Digest as _;
    match owner {
        Some(id) => {
            let digest = sha2::Sha256::digest(format!("anchorage account {id}").as_bytes());
            format!("acct-{}", &hex::encode(digest)[..32])
        }
        None => "open".to_owned(),
    }
}
