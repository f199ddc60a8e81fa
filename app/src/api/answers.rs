//! What the JSON API answers, as one type per answer shared by the server's handlers (which
//! fill it) and the browser's client (which reads it). Where the server answers with its own
//! record (a stored session or message), the type is generic over it: the server sends the
//! record whole, the browser reads it as the part it shows ([`SessionSummary`],
//! [`MessageData`]), and the shape on the wire is one.

use serde::{Deserialize, Serialize};

use super::{
    AttachmentData, GrantData, MessageData, ModelInfo, PasskeyData, SessionSummary, ShareData,
    SignInData, Versions,
};

/// A session: `POST /api/session/new`, `rename`, `delete`, `restore`, `pin`, `archive`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionAnswer<S = SessionSummary> {
    /// The session as it is now.
    pub session: S,
}

/// A conversation written whole: `POST /api/session/import` and `/api/session/duplicate`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Transferred<S = SessionSummary> {
    /// The new session.
    pub session: S,
    /// Files the conversation named that did not come with it (not the account's, or gone).
    pub attachments_left_out: u64,
}

/// A directory of the caller's workspace: `GET /api/workspace`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceListing {
    /// The directory, relative to the workspace (`""`: its top).
    pub path: String,
    /// Its directories, then its files, by name.
    pub entries: Vec<WorkspaceEntry>,
    /// Some were left out (a listing shows 500 at most).
    pub more: bool,
}

/// A directory or a file of a [`WorkspaceListing`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceEntry {
    /// Its name.
    pub name: String,
    /// Its path, relative to the workspace.
    pub path: String,
    /// A directory (else a file).
    pub dir: bool,
    /// A file's size in bytes (0 for a directory).
    pub size: u64,
}

/// A page of sessions: `GET /api/sessions`, `GET /api/sessions/search`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionList<S = SessionSummary> {
    /// The sessions, newest first (pinned first in the list).
    pub sessions: Vec<S>,
    /// Whether there are more after these.
    #[serde(default)]
    pub more: bool,
}

/// A turn started: `POST /api/chat/start`, `/retry` and `/edit` (and a queued message that
/// started at once).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Started<M = MessageData> {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// Its stream (the run id).
    pub stream_id: String,
    /// The assistant turn.
    pub turn_id: String,
    /// The stored user message.
    pub user_message: Option<M>,
    /// The message was sent before (same client id): this is the run it started then.
    pub duplicate: bool,
    /// The model that answers (`None`: the backend offers no choice).
    pub model: Option<String>,
    /// A retry or an edit: where the new turn stands among its place's versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions: Option<Versions>,
}

/// A follow-up: `POST /api/chat/queue`. Either waiting (`queued`, with its `item`) or, when
/// the conversation was idle, `started` at once.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Queued<Q = QueuedItem, M = MessageData> {
    /// Whether it waits for the running turn to end.
    pub queued: bool,
    /// What waits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<Q>,
    /// The turn it started instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<Started<M>>,
}

/// A waiting follow-up, as the browser reads it from [`Queued`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct QueuedItem {
    /// Its id.
    pub id: String,
    /// Its text.
    pub content: String,
}

/// Another version shown: `POST /api/chat/branch`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Branched {
    /// Always `true`.
    pub ok: bool,
    /// The version shown now.
    pub run_id: String,
    /// Its turn.
    pub turn_id: String,
    /// The newest run of the branch it is on.
    pub head_run_id: String,
    /// Whether the conversation shows another branch than before.
    pub changed: bool,
}

/// A stop: `POST /api/chat/cancel`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Cancelled {
    /// Always `true`.
    pub ok: bool,
    /// Whether the run was still running (a second Stop changes nothing).
    pub cancelled: bool,
    /// The run.
    pub run_id: String,
}

/// How much of the model's context the conversation's next request would use, by the same
/// estimate that trims a turn's history: `GET /api/session/context`. `window: None`: the
/// window is not known (or who answers has none), and nothing is estimated.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextUse {
    /// The model's context, in tokens.
    pub window: Option<u64>,
    /// The estimated tokens of the next request: the instructions, the tools, the earlier
    /// messages it keeps and the message typed.
    pub used: u64,
    /// The tokens kept free for the answer (the estimate trims history before it reaches
    /// them).
    pub reserve: u64,
    /// The earlier messages of the branch shown.
    pub messages: u64,
    /// How many of them (the oldest) the next request would leave out.
    pub left_out: u64,
    /// The message typed does not fit the context even alone.
    #[serde(default)]
    pub too_long: bool,
}

/// The models a conversation may ask for: `GET /api/models`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ModelList {
    /// The server's default (`None`: the backend offers no choice).
    pub default: Option<String>,
    /// The models, the default among them.
    pub models: Vec<ModelInfo>,
    /// Why the provider could not be asked (the default alone is offered then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A conversation's model: `POST /api/session/model`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ModelChosen {
    /// The model it asks for now (`None`: the default).
    pub model: Option<String>,
}

/// The standing permissions: `GET /api/grants`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GrantList<G = GrantData> {
    /// Newest first.
    pub grants: Vec<G>,
}

/// A passkey ceremony begun: what to hand the browser's `navigator.credentials`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CeremonyStart {
    /// Names the ceremony for its `finish`.
    pub ceremony: String,
    /// The options (`{publicKey: …}`, in the JSON form `PublicKeyCredential.parse…FromJSON`
    /// reads).
    pub options: serde_json::Value,
}

/// A passkey added: `POST /api/passkeys/register/finish`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PasskeyAnswer {
    /// It.
    pub passkey: PasskeyData,
}

/// The viewer's passkeys: `GET /api/passkeys`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PasskeyList {
    /// Oldest first.
    pub passkeys: Vec<PasskeyData>,
}

/// The browsers signed in to the viewer's account: `GET /api/auth/sign-ins`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SignInList {
    /// The last seen first.
    pub sign_ins: Vec<SignInData>,
}

/// A share link made: `POST /api/share`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShareAnswer {
    /// The link.
    pub share: ShareData,
}

/// The viewer's share links: `GET /api/shares`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShareList {
    /// Newest first.
    pub shares: Vec<ShareData>,
}

/// A file kept: `POST /api/attachments`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Uploaded {
    /// What the message will carry.
    pub attachment: AttachmentData,
}

/// A request that answers nothing but success: `POST /api/grants/revoke`,
/// `/api/approval/respond`, `/api/clarify/respond`, `/api/auth/logout`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Done {
    /// Always `true`.
    #[serde(default)]
    pub ok: bool,
}
