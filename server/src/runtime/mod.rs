//! The boundary to agent backends. A [`RuntimeAdapter`] runs one turn: it reads the request,
//! emits events through [`RunIo`] (journaled in order; see [`RunIo::emit`]), may wait for the
//! user's approval or clarification, and returns how the turn ended. It never touches the
//! journal, the store or HTTP itself.

use anchor::EventKind;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::journal::{self, Journal, JournalError, Queued};
use crate::store::{Interaction, Role, Store, TitleSource};

pub mod agui;
pub mod demo;
pub mod hermes;
pub mod openai;
pub mod sse;
pub mod tools;

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
    /// Allow for the rest of the session.
    Session,
    /// Always allow this pattern.
    Always,
    /// Do not allow.
    Deny,
}

impl ApprovalChoice {
    /// Whether the action may proceed.
    pub fn allows(self) -> bool {
        self != ApprovalChoice::Deny
    }
}

/// The run stopped (cancelled, or ended elsewhere); the adapter should return.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the run was stopped")]
pub struct Stopped;

/// Waiters for the user's answers, shared by a run and the HTTP handlers.
#[derive(Default)]
pub struct Waiters {
    pending: Mutex<HashMap<String, oneshot::Sender<Value>>>,
}

impl Waiters {
    fn register(&self, id: &str) -> oneshot::Receiver<Value> {
        let (tx, rx) = oneshot::channel();
        self.lock().insert(id.to_owned(), tx);
        rx
    }

    /// Delivers an answer to the waiting agent, if it still waits.
    pub fn deliver(&self, id: &str, answer: Value) {
        if let Some(tx) = self.lock().remove(id) {
            let _ = tx.send(answer);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Value>>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What an adapter can do while it runs a turn.
#[derive(Clone)]
pub struct RunIo {
    pub(crate) session_id: String,
    pub(crate) run_id: String,
    // The account the session belongs to (`None`: open mode); standing permissions are its.
    pub(crate) owner: Option<String>,
    pub(crate) journal: Journal,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) cancel: CancellationToken,
    pub(crate) waiters: Arc<Waiters>,
    // What was emitted and is not yet known to be committed, oldest first.
    pub(crate) pending: Arc<tokio::sync::Mutex<VecDeque<Queued>>>,
}

/// The most events of one turn that wait to be committed at once.
pub const IN_FLIGHT: usize = 256;

impl RunIo {
    /// Journals an event of the turn, in order after the ones before it. It returns once the
    /// event is queued, not committed, so that an agent streaming faster than one commit per
    /// token is not slowed to it: what it queues meanwhile is committed together. At most
    /// [`IN_FLIGHT`] events wait; a refused one (the run ended, the store failed) stops the
    /// turn at a later call or at [`RunIo::flush`].
    pub async fn emit(&self, kind: EventKind, payload: Value) -> Result<(), Stopped> {
        if self.cancel.is_cancelled() {
            return Err(Stopped);
        }
        let title = (kind == EventKind::Title)
            .then(|| payload["title"].as_str().map(str::trim).map(str::to_owned))
            .flatten()
            .filter(|t| !t.is_empty());
        let mut pending = self.pending.lock().await;
        while let Some(front) = pending.front_mut() {
            let Some(outcome) = front.try_outcome() else {
                break;
            };
            pending.pop_front();
            self.check(outcome)?;
        }
        if pending.len() >= IN_FLIGHT {
            if let Some(oldest) = pending.pop_front() {
                self.check(oldest.outcome().await)?;
            }
        }
        let queued = self
            .journal
            .enqueue(&self.run_id, journal::event(kind, payload, None))
            .await;
        pending.push_back(queued.map_err(|e| self.stopped_by(e))?);
        if let Some(title) = title {
            while let Some(queued) = pending.pop_front() {
                self.check(queued.outcome().await)?;
            }
            // The agent's title replaces a default or prompt title, never the user's.
            let _ = self
                .store
                .rename_session(&self.session_id, &title, TitleSource::Agent, journal::now())
                .await;
        }
        Ok(())
    }

    /// Waits until everything emitted so far is committed.
    pub async fn flush(&self) -> Result<(), Stopped> {
        let mut pending = self.pending.lock().await;
        while let Some(queued) = pending.pop_front() {
            self.check(queued.outcome().await)?;
        }
        Ok(())
    }

    fn check(&self, outcome: Result<(), JournalError>) -> Result<(), Stopped> {
        outcome.map_err(|e| self.stopped_by(e))
    }

    fn stopped_by(&self, e: JournalError) -> Stopped {
        if !matches!(e, JournalError::Finished | JournalError::Closed) {
            tracing::error!(run_id = %self.run_id, "journal append failed: {e}");
        }
        Stopped
    }

    /// Waits, unless the run is stopped first.
    pub async fn sleep(&self, duration: Duration) -> Result<(), Stopped> {
        tokio::select! {
            () = tokio::time::sleep(duration) => Ok(()),
            () = self.cancel.cancelled() => Err(Stopped),
        }
    }

    /// Whether the run was stopped.
    pub fn is_stopped(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Resolves when the run is stopped.
    pub async fn stopped(&self) {
        self.cancel.cancelled().await;
    }

    /// `work`'s output, or [`Stopped`] as soon as the run is stopped (dropping `work`, which
    /// aborts an upstream request in flight).
    pub async fn unless_stopped<F: std::future::Future>(
        &self,
        work: F,
    ) -> Result<F::Output, Stopped> {
        tokio::select! {
            out = work => Ok(out),
            () = self.cancel.cancelled() => Err(Stopped),
        }
    }

    async fn ask(&self, kind: EventKind, id: String, payload: Value) -> Result<Value, Stopped> {
        let interaction = Interaction {
            run_id: self.run_id.clone(),
            id: id.clone(),
            kind: kind.name().to_owned(),
            status: "pending".into(),
            request: payload.clone(),
            response: None,
        };
        self.store
            .open_interaction(&interaction)
            .await
            .map_err(|_| Stopped)?;
        let answer = self.waiters.register(&id);
        self.emit(kind, payload).await?;
        // Asked only once the person can see the question.
        self.flush().await?;
        tokio::select! {
            answer = answer => answer.map_err(|_| Stopped),
            () = self.cancel.cancelled() => Err(Stopped),
        }
    }

    /// Whether a standing permission lets actions of kind `pattern` go ahead in this run's
    /// session without asking: `Session` or `Always` (how it was given), `None` to ask.
    pub async fn permitted(&self, pattern: &str) -> Option<ApprovalChoice> {
        match self
            .store
            .granted(self.owner.as_deref(), &self.session_id, pattern)
            .await
        {
            Ok(Some("always")) => Some(ApprovalChoice::Always),
            Ok(Some(_)) => Some(ApprovalChoice::Session),
            Ok(None) => None,
            Err(e) => {
                // Asking again is the safe side.
                tracing::warn!(run_id = %self.run_id, "reading grants failed: {e}");
                None
            }
        }
    }

    /// Asks the user to approve an action and waits for the answer. "This session" and
    /// "always" are kept as standing permissions for `pattern` (see [`RunIo::permitted`];
    /// Settings lists and revokes them).
    pub async fn ask_approval(
        &self,
        command: &str,
        description: &str,
        pattern: &str,
    ) -> Result<ApprovalChoice, Stopped> {
        let id = format!("apr-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let payload = json!({
            "approval_id": id,
            "command": command,
            "description": description,
            "pattern_keys": [pattern],
            "choices": ["once", "session", "always", "deny"],
            "status": "pending",
        });
        let answer = self.ask(EventKind::Approval, id, payload).await?;
        let choice =
            serde_json::from_value(answer["choice"].clone()).unwrap_or(ApprovalChoice::Deny);
        let scope = match choice {
            ApprovalChoice::Session => Some(Some(self.session_id.as_str())),
            ApprovalChoice::Always => Some(None),
            ApprovalChoice::Once | ApprovalChoice::Deny => None,
        };
        if let Some(session) = scope {
            if let Err(e) = self
                .store
                .add_grant(self.owner.as_deref(), session, pattern, journal::now())
                .await
            {
                tracing::warn!(run_id = %self.run_id, "keeping a grant failed: {e}");
            }
        }
        Ok(choice)
    }

    /// Asks the user a question (with optional choices) and waits for the answer.
    pub async fn ask_clarify(&self, question: &str, choices: &[&str]) -> Result<String, Stopped> {
        let id = format!("clr-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let payload = json!({
            "clarify_id": id,
            "question": question,
            "choices_offered": choices,
            "kind": "clarify",
            "status": "pending",
        });
        let answer = self.ask(EventKind::Clarify, id, payload).await?;
        Ok(answer["response"].as_str().unwrap_or_default().to_owned())
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
        Err(e) => Err(fail(
            format!("The connection to {who} was lost mid-run."),
            format!("{e}. The partial answer is kept."),
        )),
    }
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

/// `text` (an upstream error, a hint built from one) with anything that looks like a credential
/// replaced by `[redacted]`: a bearer token, an `sk-…` key, a `key=`/`token=` parameter, or a
/// long run of letters and digits (a hex or base64 key). Such text is journaled into the turn
/// and shown to whoever reads the conversation.
pub fn redact_secrets(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let token_char =
        |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | '+' | '=');
    while !rest.is_empty() {
        let lower = rest.to_ascii_lowercase();
        // A bearer token or a key parameter: keep the label, drop what follows it.
        let label = [
            "bearer ",
            "api_key=",
            "apikey=",
            "key=",
            "token=",
            "access_token=",
        ]
        .iter()
        .find(|l| lower.starts_with(**l))
        .filter(|_| {
            out.chars()
                .last()
                .is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_')
        });
        if let Some(label) = label {
            let (head, tail) = rest.split_at(label.len());
            let end = tail.find(|c: char| !token_char(c)).unwrap_or(tail.len());
            out.push_str(head);
            if end > 0 {
                out.push_str("[redacted]");
            }
            rest = &tail[end..];
            continue;
        }
        let end = rest.find(|c: char| !token_char(c)).unwrap_or(rest.len());
        if end == 0 {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let word = &rest[..end];
        let looks_like_key = (word.starts_with("sk-") || word.starts_with("sk_"))
            && word.len() >= 11
            || (word.len() >= 32
                && word.chars().any(|c| c.is_ascii_digit())
                && word.chars().any(|c| c.is_ascii_alphabetic())
                && !word.contains('/'));
        out.push_str(if looks_like_key { "[redacted]" } else { word });
        rest = &rest[end..];
    }
    out
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

/// The adapter the configuration asks for, or why it cannot start (a missing key, a workspace
/// that cannot be created).
pub fn build_adapter(config: &crate::Config) -> anyhow::Result<Arc<dyn RuntimeAdapter>> {
    use crate::config::Backend;
    use anyhow::Context as _;
    Ok(match config.backend {
        Backend::Demo => Arc::new(demo::DemoAgent {
            delay: Duration::from_millis(config.demo_delay_ms),
        }),
        Backend::Openai => {
            let Some(api_key) = config.openai_api_key.clone() else {
                anyhow::bail!(
                    "--backend openai needs an API key: set OPENAI_API_KEY (a local server \
                     that takes no key accepts any value, e.g. OPENAI_API_KEY=local)"
                );
            };
            let workspace = tools::Workspace::open(&config.workspace)
                .with_context(|| format!("opening the workspace {}", config.workspace.display()))?;
            Arc::new(openai::OpenAiAgent::new(
                openai::OpenAiSettings {
                    base_url: config.openai_base_url.clone(),
                    api_key,
                    model: config
                        .model
                        .clone()
                        .unwrap_or_else(|| "gpt-4o-mini".to_owned()),
                    max_iterations: config.max_iterations,
                    idle: openai::DEFAULT_IDLE,
                    max_tokens: (config.max_tokens > 0).then_some(config.max_tokens),
                    context_tokens: config.context_tokens.filter(|t| *t > 0),
                },
                workspace,
            )?)
        }
        Backend::Hermes => Arc::new(hermes::HermesAgent::new(hermes::HermesSettings {
            url: config.hermes_url.clone(),
            api_key: config.hermes_api_key.clone(),
            model: config
                .model
                .clone()
                .unwrap_or_else(|| "hermes-agent".to_owned()),
            idle: hermes::DEFAULT_IDLE,
        })?),
        Backend::Agui => Arc::new(agui::AguiAgent::new(agui::AguiSettings {
            url: config.agui_url.clone(),
            api_key: config.agui_api_key.clone(),
            idle: hermes::DEFAULT_IDLE,
        })?),
    })
}

/// `host[:port]` of a URL, for labels.
pub(crate) fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split(['/', '?', '#']).next().unwrap_or(rest)
}

#[cfg(test)]
mod tests {
    use super::{host_of, redact_secrets};

    #[test]
    fn credentials_never_reach_a_turn() {
        assert_eq!(
            redact_secrets(
                "401 Unauthorized: Incorrect API key provided: sk-proj-abc123DEF456ghi."
            ),
            "401 Unauthorized: Incorrect API key provided: [redacted]"
        );
        assert_eq!(
            redact_secrets("sent Authorization: Bearer eyJhbGciOi.J9x-y_z and failed"),
            "sent Authorization: Bearer [redacted] and failed"
        );
        assert_eq!(
            redact_secrets("GET https://host/v1?key=AIzaSyA1b2C3&x=1 gave 403"),
            "GET https://host/v1?key=[redacted]&x=1 gave 403"
        );
        assert_eq!(
            redact_secrets("token 0123456789abcdef0123456789abcdef01 rejected"),
            "token [redacted] rejected"
        );
        // Ordinary text, paths and short ids stay.
        for plain in [
            "The provider returned 500 Internal Server Error.",
            "model gpt-4o-mini not found at http://127.0.0.1:11434/v1/chat/completions",
            "monkey=1 donkey=2",
            "Try again in a moment; the partial answer is kept.",
        ] {
            assert_eq!(redact_secrets(plain), plain);
        }
    }

    #[test]
    fn labels_name_the_host_of_a_url() {
        assert_eq!(host_of("https://api.openai.com/v1"), "api.openai.com");
        assert_eq!(host_of("http://127.0.0.1:11434/v1/"), "127.0.0.1:11434");
        assert_eq!(host_of("http://localhost:8642"), "localhost:8642");
        assert_eq!(host_of("gateway.local?x=1"), "gateway.local");
    }
}
