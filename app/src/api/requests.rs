//! What the browser sends: the body or query of every JSON API call, as the server's handlers
//! read it and the browser's client (`crate::client`) writes it. Paths are in
//! [`super::paths`].

use serde::{Deserialize, Serialize};

/// `POST /api/session/new`: an empty body, or a title.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct NewSessionBody {
    /// Its title (absent: "New chat" until the first message names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// `GET /api/sessions?offset=&limit=&archived=`: a page of the list (no limit: the first
/// page).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ListQuery {
    /// How many to skip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// How many at most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// The archived sessions instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived: Option<bool>,
}

/// A query naming a session.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionQuery {
    /// The session.
    pub session_id: String,
}

/// `POST /api/session/rename`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RenameBody {
    /// The session.
    pub session_id: String,
    /// Its new title.
    pub title: String,
}

/// A body naming a session: `POST /api/session/delete` and `/api/session/restore`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionBody {
    /// The session.
    pub session_id: String,
}

/// `POST /api/session/pin` and `/api/session/archive`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PlaceBody {
    /// The session.
    pub session_id: String,
    /// Pin (archive), or unpin (bring back).
    pub on: bool,
}

/// `GET /api/sessions/search?q=`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SearchQuery {
    /// What to look for in titles and messages.
    pub q: String,
}

/// `GET /api/session/export?session_id=&format=`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExportQuery {
    /// The session.
    pub session_id: String,
    /// `markdown` (the default) or `jsonl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
}

/// `POST /api/session/import?title=`: the title to give the conversation when the file does not
/// name one (the file's name).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ImportQuery {
    /// The title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// `GET /api/workspace?path=`: a directory of the caller's workspace (`""` or none: its top).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WorkspaceQuery {
    /// The directory, relative to the workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// `GET /api/workspace/file?path=&download=`: a file of the caller's workspace.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WorkspaceFileQuery {
    /// The file, relative to the workspace.
    pub path: String,
    /// As a download (else shown, where the browser can: text and images).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub download: bool,
}

/// `POST /api/session/duplicate`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DuplicateBody {
    /// The session to copy.
    pub session_id: String,
    /// Every branch; else the branch the session shows.
    #[serde(default)]
    pub all: bool,
}

/// `GET /api/session/context?session_id=&draft_bytes=`: the conversation's next request with a
/// message of `draft_bytes` bytes (what is typed; at most a message's limit is counted).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ContextQuery {
    /// The conversation.
    pub session_id: String,
    /// The length of the message being typed, in bytes.
    #[serde(default)]
    pub draft_bytes: u64,
}

/// `GET /api/models?refresh=`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ModelsQuery {
    /// Ask the provider again rather than answer from what it said last.
    #[serde(default)]
    pub refresh: bool,
}

/// `POST /api/session/model`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ModelBody {
    /// The session.
    pub session_id: String,
    /// `null` or `""`: the server's default.
    pub model: Option<String>,
}

/// `POST /api/grants/revoke`, `POST /api/share/revoke`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RevokeBody {
    /// The grant, or the share link.
    pub id: String,
}

/// `GET /api/artifact?run_id=&seq=`: a file the agent handed over in its journal.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ArtifactQuery {
    /// The run.
    pub run_id: String,
    /// The journal row that carries the file.
    pub seq: u64,
}

/// `POST /api/passkeys/rename`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PasskeyRenameBody {
    /// The passkey.
    pub id: String,
    /// What to call it from now on.
    pub name: String,
}

/// `POST /api/auth/confirm`: the password, given again.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConfirmBody {
    /// The account's password.
    pub password: String,
}

/// `POST /api/passkeys/register/finish`, `POST /api/auth/passkey/finish`: what the browser's
/// authenticator answered (`PublicKeyCredential.toJSON()`) to the ceremony `ceremony`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PasskeyFinishBody {
    /// The ceremony begun by the matching `start`.
    pub ceremony: String,
    /// The credential, as the browser writes it.
    pub credential: serde_json::Value,
    /// What to call a new passkey (registering only; "Passkey N" without).
    #[serde(default)]
    pub name: Option<String>,
}

/// `POST /api/share`: share the branch of the conversation shown.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShareBody {
    /// The conversation.
    pub session_id: String,
}

/// `POST /api/attachments?name=&session_id=` (the file's bytes are the body).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UploadQuery {
    /// The file's name.
    pub name: String,
    /// The conversation it is for (absent: a conversation not made yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// `GET /api/attachment?id=`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FileQuery {
    /// The file.
    pub id: String,
}

/// `POST /api/chat/start` and `POST /api/chat/queue`: a message.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SendBody {
    /// The session.
    pub session_id: String,
    /// The text (may be empty when files go with it).
    pub message: String,
    /// The browser's id for the message: a retry of the same send makes nothing new.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The files it carries (ids from `POST /api/attachments`), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<String>,
    /// For a start: the model the conversation asks for from this turn on (absent: as it
    /// is; see `POST /api/session/model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// A body naming a run: `POST /api/chat/cancel` and `/api/chat/retry`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunBody {
    /// The run.
    pub run_id: String,
}

/// `POST /api/chat/edit`: another message in the place of a run's.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EditBody {
    /// The run whose message is replaced.
    pub run_id: String,
    /// The new text.
    pub message: String,
    /// The browser's id for the new message: a retry of the same edit makes nothing new.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
}

/// `POST /api/chat/branch`: show version `version` (from 1) of the place of `run_id`;
/// without a version, the branch `run_id` is on.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BranchBody {
    /// The run.
    pub run_id: String,
    /// Which version of its place (from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
}

/// `POST /api/approval/respond`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ApprovalBody {
    /// The run that asks.
    pub run_id: String,
    /// The request.
    pub approval_id: String,
    /// `once`, `session`, `always` or `deny`.
    pub choice: String,
}

/// `POST /api/clarify/respond`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClarifyBody {
    /// The run that asks.
    pub run_id: String,
    /// The question.
    pub clarify_id: String,
    /// The answer.
    pub response: String,
}

/// `GET /api/chat/stream` and `/api/chat/stream/status`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StreamQuery {
    /// The run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Or its stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_id: Option<String>,
    /// Events after this seq (else `Last-Event-ID`, else from the start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_seq: Option<String>,
}

/// `GET /api/page?session_id=&after_run_id=&before_run_id=`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PageQuery {
    /// The session to open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Only the turns after this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_run_id: Option<String>,
    /// The window of turns before this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_run_id: Option<String>,
}

/// `GET /api/chat/journal?run_id=&after=`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JournalQuery {
    /// The run.
    pub run_id: String,
    /// Rows after this seq (0: from the start).
    #[serde(default)]
    pub after: u64,
}
