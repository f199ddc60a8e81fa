//! The API's types, shared by the server and the browser: what the page loads (the sidebar's
//! sessions and the open session's turns, each with its journal; the server renders from it,
//! the browser hydrates from the same data), every request's body or query,
//! every answer, and every path ([`paths`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod answers;
pub mod paths;
mod requests;

pub use answers::*;
pub use requests::*;

/// A session in the sidebar.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Seconds since the epoch.
    pub updated_at: f64,
    /// The run in progress, if any.
    pub active_run_id: Option<String>,
    /// In search results: the turn of the newest matching message (its link opens there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit_turn_id: Option<String>,
    /// In search results: the matching message's words around the match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    /// Pinned to the top of the list.
    #[serde(default)]
    pub pinned: bool,
    /// When it was pinned (seconds since the epoch): the latest pinned comes first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_at: Option<f64>,
    /// Archived (out of the list).
    #[serde(default)]
    pub archived: bool,
}

impl SessionSummary {
    /// The sidebar's order, its one rule: the pinned first, the latest pinned at the top; then
    /// the most recently updated; then by id. The server's listing query sorts the same way
    /// (a test holds the two together) and the browser places a changed conversation by it.
    pub fn sidebar_order(a: &Self, b: &Self) -> std::cmp::Ordering {
        let pin = |s: &Self| s.pinned_at.filter(|_| s.pinned);
        b.pinned
            .cmp(&a.pinned)
            .then_with(|| pin(b).unwrap_or(0.0).total_cmp(&pin(a).unwrap_or(0.0)))
            .then_with(|| b.updated_at.total_cmp(&a.updated_at))
            .then_with(|| a.id.cmp(&b.id))
    }
}

/// A transcript message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MessageData {
    /// Its id.
    pub id: String,
    /// Its text.
    pub content: String,
    /// Seconds since the epoch.
    pub created_at: f64,
    /// The files it carries, in the order they were attached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<AttachmentData>,
}

/// A file attached to a message (its bytes are at [`AttachmentData::url`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AttachmentData {
    /// Its id.
    pub id: String,
    /// Its file name, as it was attached.
    pub name: String,
    /// What it is: `image/png`, `image/jpeg`, `image/gif`, `image/webp` or `text/plain`.
    pub mime: String,
    /// Its size in bytes.
    pub size: u64,
}

impl AttachmentData {
    /// An image (shown as a picture; the others are text files).
    pub fn is_image(&self) -> bool {
        self.mime.starts_with("image/")
    }

    /// Where its bytes are served (the browser's address: under the site's base).
    pub fn url(&self) -> String {
        crate::base::href(&url(
            paths::ATTACHMENT,
            &FileQuery {
                id: self.id.clone(),
            },
        ))
    }
}

/// The most files one message may carry.
pub const MAX_ATTACHMENTS: usize = 8;

/// A size for people: "812 B", "12.3 KB", "4.1 MB" (units of 1024).
pub fn file_size(bytes: u64) -> String {
    const KB: f64 = 1024.0;
    let b = bytes as f64;
    if bytes < 1024 {
        format!("{bytes} B")
    } else if b < KB * KB {
        format!("{:.1} KB", b / KB)
    } else if b < KB * KB * KB {
        format!("{:.1} MB", b / (KB * KB))
    } else {
        format!("{:.1} GB", b / (KB * KB * KB))
    }
}

/// One journaled event of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JournalEvent {
    /// Its position in the run.
    pub seq: u64,
    /// The event type.
    pub kind: String,
    /// Its data (carries `created_at`).
    pub payload: Value,
}

/// A user message and the assistant turn it started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnData {
    /// The user's message.
    pub user: MessageData,
    /// The run answering it.
    pub run_id: String,
    /// The assistant turn's id.
    pub turn_id: String,
    /// Its journal so far, in order (empty when `snapshot` stands for it).
    pub events: Vec<JournalEvent>,
    /// The run is still producing events.
    pub running: bool,
    /// A settled turn's view without its journal: what the page shows of it until the reader
    /// opens its steps (then `/api/chat/journal` brings the rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<TurnSnapshot>,
    /// Which version of its place in the conversation it is (retries and edits of a message
    /// are versions of the same place).
    #[serde(default, skip_serializing_if = "Versions::is_single")]
    pub versions: Versions,
    /// The model that answered it (`None`: a backend with no choice of model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Which of the versions of a place in a conversation a turn is: `index` of `count`, from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Versions {
    /// Its place among them, oldest first, from 1.
    pub index: u32,
    /// How many there are.
    pub count: u32,
}

impl Default for Versions {
    fn default() -> Self {
        Versions { index: 1, count: 1 }
    }
}

impl Versions {
    /// The turn has no other version.
    pub fn is_single(&self) -> bool {
        self.count <= 1
    }
}

/// What a settled turn shows folded, computed from its journal by the same model the page
/// runs ([`crate::model::TurnState::snapshot`]) and stored when the turn settles.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnSnapshot {
    /// The answer as shown (the settled final answer, or what was streamed of it).
    pub answer: String,
    /// `answer` is the settled final answer.
    pub settled: bool,
    /// How the turn ended.
    pub terminal: Option<anchor::TerminalState>,
    /// The terminal note's message and hint (for an ending other than completion).
    pub note: (String, String),
    /// Input and output tokens.
    pub usage: Option<(u64, u64)>,
    /// The worklog's steps (one per thing the turn did).
    pub steps: usize,
    /// The stream's rows and tool calls (stored snapshots name it `trace`).
    #[serde(alias = "trace")]
    pub stream: (usize, usize),
    /// The anchor's scene rows.
    pub rows: usize,
    /// The last journal seq.
    pub last_seq: u64,
    /// When the first and the last event happened.
    pub span: (Option<f64>, Option<f64>),
    /// Seconds of `span` the turn waited for the person (approvals, questions).
    #[serde(default)]
    pub waited: f64,
    /// What the turn says beside its answer.
    #[serde(default)]
    pub notices: TurnNotices,
    /// The files the turn made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<ArtifactRef>,
}

/// A file a turn made, as the turn names it (an `artifact_reference` event).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactRef {
    /// Where it is, as the agent says (relative to its workspace).
    pub path: String,
    /// What was done to it ("created", "updated"; may be empty).
    #[serde(default)]
    pub action: String,
    /// The journal row that names it (its download, when handed over).
    pub seq: u64,
    /// The agent handed the file over whole, in the journal: it can be downloaded from there.
    #[serde(default)]
    pub handed_over: bool,
}

/// What a turn says beside its answer, apart from how it ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnNotices {
    /// The oldest messages of the conversation were left out of the model's request (they did
    /// not fit its context): what to tell the reader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_out: Option<String>,
    /// The provider stopped the answer at a length limit: what to tell the reader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_off: Option<String>,
}

/// A settled turn of at most this many journal rows comes with them (not as its snapshot)
/// when the first view shows its rows: in the Transparent Stream, or when its worklog opens by
/// itself (the turn failed). Larger ones load their rows when the reader asks.
pub const INLINE_ROWS: u64 = 400;

/// The rows of one run's journal (`GET /api/chat/journal?run_id=&after=`): a page of them,
/// and the seq to ask after for the next page (`None`: that was the last).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JournalPage {
    /// The run.
    pub run_id: String,
    /// Rows after the asked seq, in order.
    pub events: Vec<JournalEvent>,
    /// Ask again after this seq for more.
    pub next: Option<u64>,
}

/// A follow-up waiting for the run to end.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueuedData {
    /// Its id.
    pub id: String,
    /// The message.
    pub content: String,
    /// The files it will carry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<AttachmentData>,
}

/// The open session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionDetail {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its turns, oldest first.
    pub turns: Vec<TurnData>,
    /// Queued follow-ups.
    pub queued: Vec<QueuedData>,
    /// Older turns exist than these (the page shows a window; "Show earlier" loads the one
    /// before, through `/api/page?before_run_id=`). Fetched with `after_run_id`: more turns
    /// came after that run than a window holds, and these are the latest window, to be shown
    /// in place of the page's turns.
    #[serde(default)]
    pub earlier: bool,
    /// The model it asks for (`None`: the server's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Everything the chat page shows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionPage {
    /// The sidebar, newest first: its first page.
    pub sessions: Vec<SessionSummary>,
    /// More sessions follow those (`/api/sessions?offset=&limit=` lists them).
    #[serde(default)]
    pub more_sessions: bool,
    /// The open session (`None`: the empty state).
    pub session: Option<SessionDetail>,
    /// A session was asked for by id and does not exist.
    pub missing: bool,
    /// Who answers ("gpt-4o-mini · api.openai.com", "Demo agent (no model)").
    #[serde(default)]
    pub agent: String,
    /// Who is signed in (`None`: the server has no accounts).
    #[serde(default)]
    pub user: Option<UserData>,
    /// The display mode this browser chose (its `anchorage_mode` cookie), so that the first
    /// HTML is already in it; `None`: the default, or a page loaded in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Prompts an empty conversation offers to try, from who answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Example>,
    /// The agent's own slash commands (`/demo tools`: its prompt is the command, its label
    /// what it does), which the message box's `/` menu offers with the page's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<Example>,
    /// The agent keeps files on this server (its workspace, which the Files panel shows).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub files: bool,
    /// The model a conversation gets unless it asks for another; `None`: who answers offers
    /// no choice of model (the composer then shows no picker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// Who answers knows its model's context window: the composer shows how much of it the
    /// next message would use.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub context_meter: bool,
    /// The colour theme this browser chose (its `anchorage_theme` cookie: `light` or `dark`);
    /// `None`: the system's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
    /// When the page was made (seconds since the epoch): times are shown relative to it
    /// until the browser's clock takes over.
    #[serde(default)]
    pub now: f64,
    /// The browser's time zone, in minutes east of UTC (its `anchorage_tz` cookie), so that
    /// the first HTML shows local times; `None`: not known yet (UTC until the page runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tz_offset: Option<i32>,
    /// Every event kind the server may send. The browser listens for each, so that a kind
    /// this page's code does not know (a newer server's) is shown rather than dropped; empty:
    /// a page made in the browser, which keeps the list it has.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub event_kinds: Vec<String>,
}

impl SessionPage {
    /// The page opens on a conversation with turns: the browser needs the turns' part before
    /// it takes over what the server drew (`components::turns`), and the page's head names it.
    pub fn has_turns(&self) -> bool {
        self.session.as_ref().is_some_and(|s| !s.turns.is_empty())
    }
}

/// The cookie with the browser's time zone offset, in minutes east of UTC.
pub const TZ_COOKIE: &str = "anchorage_tz";

/// A model a conversation may ask for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// What the provider calls it (sent back as the choice).
    pub id: String,
    /// What people read.
    pub name: String,
}

impl ModelInfo {
    /// A model by its id, named by [`model_name`].
    pub fn new(id: &str) -> Self {
        ModelInfo {
            id: id.to_owned(),
            name: model_name(id).to_owned(),
        }
    }
}

/// `n` with thousands separated ("12,345").
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// A model's readable name: a local server that names its model by the file it loaded
/// (`/models/gemma-3-270m-it-Q4_K_M.gguf`) is shown by the file's stem; any other id as it is
/// (`gpt-4o-mini`, `meta-llama/Llama-3.1-8B-Instruct`).
pub fn model_name(id: &str) -> &str {
    const FILES: [&str; 5] = [".gguf", ".ggml", ".bin", ".safetensors", ".llamafile"];
    let file = id.rsplit(['/', '\\']).next().unwrap_or(id);
    let lower = file.to_ascii_lowercase();
    match FILES.iter().find(|ext| lower.ends_with(*ext)) {
        Some(ext) if file.len() > ext.len() => &file[..file.len() - ext.len()],
        _ => id,
    }
}

/// A prompt to try: what the button says, and the message it sends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Example {
    /// What the button says.
    pub label: String,
    /// The message it sends.
    pub prompt: String,
}

impl Example {
    /// An example from its label and prompt.
    pub fn new(label: &str, prompt: &str) -> Self {
        Example {
            label: label.to_owned(),
            prompt: prompt.to_owned(),
        }
    }
}

/// The cookie that tells the server which display mode this browser shows.
pub const MODE_COOKIE: &str = "anchorage_mode";

/// The cookie that tells the server which colour theme this browser shows (absent: the
/// system's).
pub const THEME_COOKIE: &str = "anchorage_theme";

/// The colour theme: the system's, or one chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Theme {
    /// Light or dark as the system is.
    #[default]
    System,
    /// Always light.
    Light,
    /// Always dark.
    Dark,
}

impl Theme {
    /// Every theme, in the order Settings offers them.
    pub const ALL: [Theme; 3] = [Theme::System, Theme::Light, Theme::Dark];

    /// Its name in the cookie and on `<html data-theme>` (`system` is never written there).
    pub fn as_str(self) -> &'static str {
        match self {
            Theme::System => "system",
            Theme::Light => "light",
            Theme::Dark => "dark",
        }
    }

    /// What Settings calls it.
    pub fn label(self) -> &'static str {
        match self {
            Theme::System => "System",
            Theme::Light => "Light",
            Theme::Dark => "Dark",
        }
    }

    /// A theme by name; anything else is the system's.
    pub fn parse(name: &str) -> Theme {
        match name {
            "light" => Theme::Light,
            "dark" => Theme::Dark,
            _ => Theme::System,
        }
    }
}

/// A standing permission, as Settings lists it (`GET /api/grants`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GrantData {
    /// Its id (for `POST /api/grants/revoke`).
    pub id: String,
    /// `session` or `always`.
    pub scope: String,
    /// The kind of action it lets go ahead.
    pub pattern: String,
    /// The conversation it holds in (`None`: all).
    #[serde(default)]
    pub session_id: Option<String>,
    /// That conversation's title.
    #[serde(default)]
    pub session_title: Option<String>,
}

/// A passkey, as Settings lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PasskeyData {
    /// Its id (for `POST /api/passkeys/remove`).
    pub id: String,
    /// What its owner calls it.
    pub name: String,
    /// Seconds since the epoch.
    pub created_at: f64,
    /// When it last signed in.
    #[serde(default)]
    pub last_used_at: Option<f64>,
    /// The browser asking signed in with it (removing it signs that browser out).
    #[serde(default)]
    pub in_use: bool,
}

/// What the viewer's account keeps, in bytes, and what it may: `GET /api/storage`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StorageData {
    /// Its conversations' journals.
    pub conversations: u64,
    /// The snapshots its share links keep.
    pub shares: u64,
    /// Its attached files.
    pub files: u64,
    /// The most it may keep (`--max-storage-per-user`).
    pub quota: u64,
}

/// A browser signed in to the viewer's account, as Settings lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SignInData {
    /// Its id (for `POST /api/auth/sign-ins/end`).
    pub id: String,
    /// Which browser on which system ("Chrome on Android"), as far as it says.
    pub device: String,
    /// The address it signed in from.
    pub ip: String,
    /// Seconds since the epoch: when it signed in.
    pub created_at: f64,
    /// When it was last seen (within the hour).
    pub last_seen_at: f64,
    /// The passkey it signed in with (`None`: the password).
    #[serde(default)]
    pub passkey: Option<String>,
    /// It is the browser asking.
    #[serde(default)]
    pub current: bool,
}

/// A read-only link to a conversation, as Settings lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShareData {
    /// Its id (for `POST /api/share/revoke`).
    pub id: String,
    /// Its address on this server (`/share/{token}`).
    pub path: String,
    /// The conversation's title when it was shared.
    pub title: String,
    /// Seconds since the epoch.
    pub created_at: f64,
}

/// The header in which a page's requests name the account it was shown to
/// ([`UserData::account`]; empty in open mode).
pub const ACCOUNT_HEADER: &str = "x-anchorage-account";

/// A signed-in account, as the sidebar shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UserData {
    /// Its name.
    pub name: String,
    /// May manage the server.
    pub admin: bool,
    /// An opaque tag of the account: the page's requests carry it, and the server refuses
    /// one from a page shown to another account than the one signed in now (a shared device).
    #[serde(default)]
    pub account: String,
}

/// The page data as JSON for a `<script type="application/json">`: every `<` is written as
/// `\u003c` (it can only occur inside strings), so no text in it can end the element.
pub fn page_json(page: &SessionPage) -> String {
    serde_json::to_string(page)
        .unwrap_or_else(|_| "null".to_owned())
        .replace('<', "\\u003c")
}

/// `path` with `query` (one of the query types of this module) as its query string: every
/// field that is not `null`, in key order, its value percent-encoded.
pub fn url<Q: Serialize>(path: &str, query: &Q) -> String {
    let mut url = path.to_owned();
    if let Ok(Value::Object(fields)) = serde_json::to_value(query) {
        for (key, value) in fields {
            let value = match value {
                Value::Null => continue,
                Value::String(s) => s,
                other => other.to_string(),
            };
            url.push(if url.len() == path.len() { '?' } else { '&' });
            url.push_str(&key);
            url.push('=');
            url.push_str(&percent_encoded(&value));
        }
    }
    url
}

/// `value` with every byte but the unreserved ones (letters, digits, `-._~`) as `%XX`.
fn percent_encoded(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_goes_into_the_url_encoded_and_without_absent_fields() {
        let query = PageQuery {
            session_id: Some("a b&c/é".into()),
            after_run_id: None,
            before_run_id: Some("r-1".into()),
        };
        assert_eq!(
            url(paths::PAGE, &query),
            "/api/page?before_run_id=r-1&session_id=a%20b%26c%2F%C3%A9"
        );
        assert_eq!(
            url(paths::MODELS, &ModelsQuery { refresh: true }),
            "/api/models?refresh=true"
        );
        assert_eq!(url(paths::SESSIONS, &ListQuery::default()), "/api/sessions");
        let file = AttachmentData {
            id: "f 1".into(),
            name: "n".into(),
            mime: "text/plain".into(),
            size: 1,
        };
        assert_eq!(file.url(), "/api/attachment?id=f%201");
    }

    #[test]
    fn page_json_cannot_close_its_script_element_and_reads_back_the_same() {
        let page = SessionPage {
            sessions: vec![SessionSummary {
                id: "s1".into(),
                title: "</script><script>alert(1)</script>".into(),
                updated_at: 1.5,
                active_run_id: None,
                hit_turn_id: None,
                snippet: None,
                pinned: true,
                pinned_at: Some(1.0),
                archived: false,
            }],
            more_sessions: true,
            session: None,
            missing: false,
            agent: "<!-- x".into(),
            user: Some(UserData {
                name: "</script>".into(),
                admin: false,
                account: String::new(),
            }),
            mode: Some("transparent_stream".into()),
            examples: vec![Example::new("</script>", "<!--")],
            commands: Vec::new(),
            files: true,
            default_model: Some("</script>".into()),
            context_meter: true,
            theme: Some("dark".into()),
            now: 1.5,
            event_kinds: vec!["</script>".into()],
            tz_offset: Some(-300),
        };
        let json = page_json(&page);
        assert!(!json.contains('<'), "{json}");
        let back: SessionPage = serde_json::from_str(&json).unwrap();
        assert_eq!(back, page);
    }

    #[test]
    fn a_model_served_from_a_file_is_named_by_the_file() {
        let cases = [
            (
                "/models/gemma-3-270m-it-Q4_K_M.gguf",
                "gemma-3-270m-it-Q4_K_M",
            ),
            ("C:\\models\\llama.GGUF", "llama"),
            ("phi-3.bin", "phi-3"),
            ("gpt-4o-mini", "gpt-4o-mini"),
            (
                "meta-llama/Llama-3.1-8B-Instruct",
                "meta-llama/Llama-3.1-8B-Instruct",
            ),
            ("qwen2.5:7b", "qwen2.5:7b"),
            (".gguf", ".gguf"),
            ("/models/.gguf", "/models/.gguf"),
        ];
        for (id, name) in cases {
            assert_eq!(model_name(id), name, "{id}");
            assert_eq!(ModelInfo::new(id).name, name);
        }
    }
}
