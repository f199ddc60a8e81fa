//! Every path, named once: the server's router mounts its handlers at these, and the
//! browser's client (`crate::client`) and links use them. Nothing else spells a path.

/// `POST`: a new conversation ([`super::NewSessionBody`] → [`super::NewSession`]).
pub const SESSION_NEW: &str = "/api/session/new";
/// `GET`: a page of the conversation list ([`super::ListQuery`] → [`super::SessionList`]).
pub const SESSIONS: &str = "/api/sessions";
/// `GET`: one conversation ([`super::SessionQuery`]).
pub const SESSION: &str = "/api/session";
/// `POST`: rename ([`super::RenameBody`]).
pub const SESSION_RENAME: &str = "/api/session/rename";
/// `POST`: delete, undoable for a while ([`super::SessionBody`]).
pub const SESSION_DELETE: &str = "/api/session/delete";
/// `POST`: undo a delete ([`super::SessionBody`]).
pub const SESSION_RESTORE: &str = "/api/session/restore";
/// `POST`: pin or unpin ([`super::PlaceBody`]).
pub const SESSION_PIN: &str = "/api/session/pin";
/// `POST`: archive or bring back ([`super::PlaceBody`]).
pub const SESSION_ARCHIVE: &str = "/api/session/archive";
/// `GET`: search titles and messages ([`super::SearchQuery`] → [`super::SessionList`]).
pub const SESSIONS_SEARCH: &str = "/api/sessions/search";
/// `GET`: a conversation as Markdown or JSONL ([`super::ExportQuery`]).
pub const SESSION_EXPORT: &str = "/api/session/export";
/// `POST`: a conversation from its JSONL export, the file as the body ([`super::ImportQuery`]
/// → [`super::Transferred`]).
pub const SESSION_IMPORT: &str = "/api/session/import";
/// `POST`: a copy of a conversation ([`super::DuplicateBody`] → [`super::Transferred`]).
pub const SESSION_DUPLICATE: &str = "/api/session/duplicate";
/// `GET`: a directory of the caller's workspace ([`super::WorkspaceQuery`] →
/// [`super::WorkspaceListing`]).
pub const WORKSPACE: &str = "/api/workspace";
/// `GET`: a file of the caller's workspace, its bytes ([`super::WorkspaceFileQuery`]).
pub const WORKSPACE_FILE: &str = "/api/workspace/file";
/// `POST`: the model a conversation asks for ([`super::ModelBody`]).
pub const SESSION_MODEL: &str = "/api/session/model";
/// `GET`: how much of the model's context the next message would use ([`super::ContextQuery`]
/// → [`super::ContextUse`]).
pub const SESSION_CONTEXT: &str = "/api/session/context";
/// `GET`: the provider's models ([`super::ModelsQuery`] → [`super::ModelList`]).
pub const MODELS: &str = "/api/models";
/// `GET`: the standing permissions ([`super::GrantList`]).
pub const GRANTS: &str = "/api/grants";
/// `POST`: revoke one ([`super::RevokeBody`]).
pub const GRANTS_REVOKE: &str = "/api/grants/revoke";
/// `POST`: upload a file, its bytes as the body ([`super::UploadQuery`] → [`super::Uploaded`]).
pub const ATTACHMENTS: &str = "/api/attachments";
/// `GET`: a file's bytes ([`super::FileQuery`]).
pub const ATTACHMENT: &str = "/api/attachment";
/// `POST`: send a message and start a turn ([`super::SendBody`] → [`super::Started`]).
pub const CHAT_START: &str = "/api/chat/start";
/// `POST`: stop a run ([`super::RunBody`]).
pub const CHAT_CANCEL: &str = "/api/chat/cancel";
/// `POST`: a follow-up for when the run ends ([`super::SendBody`] → [`super::Queued`]).
pub const CHAT_QUEUE: &str = "/api/chat/queue";
/// `POST`: answer a turn's message again ([`super::RunBody`] → [`super::Started`]).
pub const CHAT_RETRY: &str = "/api/chat/retry";
/// `POST`: send another message in a turn's place ([`super::EditBody`] → [`super::Started`]).
pub const CHAT_EDIT: &str = "/api/chat/edit";
/// `POST`: show another version of a turn ([`super::BranchBody`] → [`super::Branched`]).
pub const CHAT_BRANCH: &str = "/api/chat/branch";
/// `GET`: a run's events as SSE ([`super::StreamQuery`]).
pub const CHAT_STREAM: &str = "/api/chat/stream";
/// `GET`: whether a run still runs ([`super::StreamQuery`]).
pub const CHAT_STREAM_STATUS: &str = "/api/chat/stream/status";
/// `POST`: answer an approval ([`super::ApprovalBody`]).
pub const APPROVAL_RESPOND: &str = "/api/approval/respond";
/// `POST`: answer a question ([`super::ClarifyBody`]).
pub const CLARIFY_RESPOND: &str = "/api/clarify/respond";
/// `GET`: a conversation's page data ([`super::PageQuery`] → [`super::SessionPage`]).
pub const PAGE: &str = "/api/page";
/// `GET`: a page of a run's journal ([`super::JournalQuery`] → [`super::JournalPage`]).
pub const CHAT_JOURNAL: &str = "/api/chat/journal";
/// `POST`: sign out.
pub const AUTH_LOGOUT: &str = "/api/auth/logout";
/// `GET`: who is signed in.
pub const AUTH_ME: &str = "/api/auth/me";
/// `POST`: run a turn as an AG-UI agent (a `RunAgentInput` in, AG-UI events out).
pub const AGUI: &str = "/api/agui";
/// `GET`: a run as AG-UI events.
pub const AGUI_RUN: &str = "/api/runs/{run_id}/agui";
/// `POST`: a turn as an AI SDK chat endpoint (its chat body in, a UI message stream out).
pub const AI_SDK_CHAT: &str = "/api/ai-sdk/chat";
/// `GET`: the running turn of an AI SDK chat, resumed (204 when none runs).
pub const AI_SDK_RESUME: &str = "/api/ai-sdk/chat/{id}/stream";
/// `POST`: a read-only link to a conversation ([`super::ShareBody`] → [`super::ShareAnswer`]).
pub const SHARE: &str = "/api/share";
/// `GET`: the viewer's share links ([`super::ShareList`]).
pub const SHARES: &str = "/api/shares";
/// `POST`: revoke a share link ([`super::RevokeBody`]); its address answers 404 from then on.
pub const SHARE_REVOKE: &str = "/api/share/revoke";
/// `GET`: the viewer's passkeys ([`super::PasskeyList`]).
pub const PASSKEYS: &str = "/api/passkeys";
/// `POST`: begin adding a passkey (→ [`super::CeremonyStart`]).
pub const PASSKEY_REGISTER_START: &str = "/api/passkeys/register/start";
/// `POST`: the browser's new credential ([`super::PasskeyFinishBody`] → [`super::PasskeyAnswer`]).
pub const PASSKEY_REGISTER_FINISH: &str = "/api/passkeys/register/finish";
/// `POST`: remove a passkey ([`super::RevokeBody`]).
pub const PASSKEY_REMOVE: &str = "/api/passkeys/remove";
/// `GET`: a file an agent handed over whole in its journal, as a download
/// ([`super::ArtifactQuery`]).
pub const ARTIFACT: &str = "/api/artifact";
/// `POST`: rename one of the viewer's passkeys ([`super::PasskeyRenameBody`]).
pub const PASSKEY_RENAME: &str = "/api/passkeys/rename";
/// `POST`: give the password again ([`super::ConfirmBody`]) for what needs a fresh proof
/// (adding a passkey).
pub const AUTH_CONFIRM: &str = "/api/auth/confirm";
/// `POST`: a passkey's signed challenge ([`super::PasskeyFinishBody`], a sign-in ceremony)
/// as the fresh proof instead of the password.
pub const AUTH_CONFIRM_PASSKEY: &str = "/api/auth/confirm/passkey";
/// `GET`: what the viewer's account keeps, and its quota ([`super::StorageData`]).
pub const STORAGE: &str = "/api/storage";
/// `GET`: the browsers signed in to the viewer's account ([`super::SignInList`]).
pub const SIGN_INS: &str = "/api/auth/sign-ins";
/// `POST`: end one of them ([`super::RevokeBody`]).
pub const SIGN_IN_END: &str = "/api/auth/sign-ins/end";
/// `POST`: end every one of them, this one too.
pub const SIGN_INS_END_ALL: &str = "/api/auth/sign-ins/end-all";
/// `POST`: begin signing in with a passkey (outside the sign-in gate; `{username}`).
pub const AUTH_PASSKEY_START: &str = "/api/auth/passkey/start";
/// `POST`: the browser's signed challenge (outside the sign-in gate): signs in.
pub const AUTH_PASSKEY_FINISH: &str = "/api/auth/passkey/finish";
/// `GET`: the server answers (outside the sign-in gate).
pub const HEALTH: &str = "/healthz";

/// The service worker (`GET`, JavaScript; its scope is the whole site).
pub const WORKER: &str = "/sw.js";

/// The sign-in page (`GET`, HTML; `?next=` the address to go back to).
pub const LOGIN_PAGE: &str = "/login";
/// A new conversation's page (`GET`, HTML): nothing is stored until its first message.
pub const NEW_CHAT: &str = "/new";

/// The page of one conversation (`GET`, HTML), as the router mounts it.
pub const SESSION_PAGE: &str = "/s/{session_id}";

/// A shared conversation (`GET`, HTML without scripts; outside the sign-in gate).
pub const SHARE_PAGE: &str = "/share/{token}";

/// The address a share link carries.
pub fn share_page(token: &str) -> String {
    format!("/share/{token}")
}

/// The address of a conversation's page.
pub fn session_page(session_id: &str) -> String {
    format!("/s/{session_id}")
}

/// The session an address opens: `/s/{id}` names one, anything else is the newest.
pub fn session_in_path(path: &str) -> Option<&str> {
    path.strip_prefix("/s/")
        .filter(|id| !id.is_empty() && !id.contains('/'))
}

#[cfg(test)]
mod tests {
    use super::{session_in_path, session_page, SESSION_PAGE};

    #[test]
    fn only_a_session_address_names_a_session() {
        assert_eq!(session_in_path(&session_page("abc")), Some("abc"));
        assert_eq!(
            session_in_path("/s/abc/"),
            None,
            "the server has no such page either"
        );
        assert_eq!(session_in_path("/"), None);
        assert_eq!(session_in_path("/s/"), None);
        assert_eq!(session_in_path("/s/a/b"), None);
        assert_eq!(session_in_path("/x/abc"), None);
        assert_eq!(
            session_page("{session_id}"),
            SESSION_PAGE,
            "one shape for both"
        );
    }
}
