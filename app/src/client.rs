//! Calls to the JSON API from the browser: one typed function per route, with the request
//! and answer types of [`crate::api`] and the paths of [`crate::api::paths`]. Components call
//! these; none of them names a path.

use gloo_net::http::Request;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::api::{self, paths};
use crate::api::{
    ApprovalBody, BranchBody, Branched, Cancelled, CeremonyStart, ClarifyBody, ConfirmBody,
    ContextQuery, ContextUse, Done, DuplicateBody, EditBody, GrantList, ImportQuery, JournalPage,
    JournalQuery, ListQuery, ModelBody, ModelChosen, ModelList, ModelsQuery, NewSessionBody,
    PageQuery, PasskeyAnswer, PasskeyFinishBody, PasskeyList, PlaceBody, Queued, RenameBody,
    RevokeBody, RunBody, SearchQuery, SendBody, SessionAnswer, SessionBody, SessionList,
    SessionPage, ShareAnswer, ShareBody, ShareList, SignInList, Started, StorageData, StreamQuery,
    Transferred, UploadQuery, Uploaded, WorkspaceFileQuery, WorkspaceListing, WorkspaceQuery,
};
use crate::base::href;

/// A failed API call.
#[derive(Clone, Debug, Default)]
pub struct Failure {
    /// The HTTP status (0: no response).
    pub status: u16,
    /// The server's `error`, or what went wrong.
    pub message: String,
    /// The browser is signed in as another account than the one this page was shown to:
    /// nothing was done (see [`set_account`]).
    pub account_changed: bool,
    /// What was asked needs the password (or a passkey) given again first.
    pub reauth: bool,
}

impl Failure {
    /// A failure with `status` saying `message`.
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        Failure {
            status,
            message: message.into(),
            ..Failure::default()
        }
    }
}

thread_local! {
    /// The account this page was shown to, as the page data tags it (`""`: nobody's, open
    /// mode; `None`: not known yet).
    static ACCOUNT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// The account this page was shown to: every request names it, and the server refuses one
/// when the browser is signed in as someone else by then (a shared device), so that nothing
/// one person did goes out as another's.
pub fn set_account(tag: Option<String>) {
    ACCOUNT.with(|a| *a.borrow_mut() = tag);
}

/// The account this page was shown to (`None`: not known).
pub fn account() -> Option<String> {
    ACCOUNT.with(|a| a.borrow().clone())
}

/// `request` naming the account this page was shown to.
fn as_shown(request: gloo_net::http::RequestBuilder) -> gloo_net::http::RequestBuilder {
    match account() {
        Some(tag) => request.header(api::ACCOUNT_HEADER, &tag),
        None => request,
    }
}

/// POSTs `body` to `path` and reads the answer as `A`.
async fn post<B: Serialize, A: DeserializeOwned>(path: &str, body: &B) -> Result<A, Failure> {
    let request = as_shown(Request::post(&href(path)))
        .json(body)
        .map_err(|e| Failure::new(0, e.to_string()))?;
    answer(request.send().await).await
}

/// GETs `path` with `query` and reads the answer as `A`.
async fn get<Q: Serialize, A: DeserializeOwned>(path: &str, query: &Q) -> Result<A, Failure> {
    answer(
        as_shown(Request::get(&href(&api::url(path, query))))
            .send()
            .await,
    )
    .await
}

/// A new conversation.
pub async fn new_session() -> Result<SessionAnswer, Failure> {
    post(paths::SESSION_NEW, &NewSessionBody::default()).await
}

/// A page of the conversation list (or the archived ones).
pub async fn sessions(query: &ListQuery) -> Result<SessionList, Failure> {
    get(paths::SESSIONS, query).await
}

/// Conversations whose title or messages hold `q`.
pub async fn search(q: &str) -> Result<SessionList, Failure> {
    get(paths::SESSIONS_SEARCH, &SearchQuery { q: q.to_owned() }).await
}

/// Renames a conversation.
pub async fn rename(body: &RenameBody) -> Result<SessionAnswer, Failure> {
    post(paths::SESSION_RENAME, body).await
}

/// Deletes a conversation (undoable for a while: [`restore`]).
pub async fn delete(session_id: &str) -> Result<Done, Failure> {
    let body = SessionBody {
        session_id: session_id.to_owned(),
    };
    post(paths::SESSION_DELETE, &body).await
}

/// Undoes a delete.
pub async fn restore(session_id: &str) -> Result<SessionAnswer, Failure> {
    let body = SessionBody {
        session_id: session_id.to_owned(),
    };
    post(paths::SESSION_RESTORE, &body).await
}

/// Pins a conversation (`on`) or unpins it.
pub async fn pin(body: &PlaceBody) -> Result<SessionAnswer, Failure> {
    post(paths::SESSION_PIN, body).await
}

/// Archives a conversation (`on`) or brings it back.
pub async fn archive(body: &PlaceBody) -> Result<SessionAnswer, Failure> {
    post(paths::SESSION_ARCHIVE, body).await
}

/// The models the provider offers (`refresh`: ask it again).
pub async fn models(refresh: bool) -> Result<ModelList, Failure> {
    get(paths::MODELS, &ModelsQuery { refresh }).await
}

/// How much of the model's context the conversation's next turn would use.
pub async fn context_use(query: &ContextQuery) -> Result<ContextUse, Failure> {
    get(paths::SESSION_CONTEXT, query).await
}

/// The model a conversation asks for from now on.
pub async fn choose_model(body: &ModelBody) -> Result<ModelChosen, Failure> {
    post(paths::SESSION_MODEL, body).await
}

/// The standing permissions.
pub async fn grants() -> Result<GrantList, Failure> {
    get(paths::GRANTS, &()).await
}

/// Revokes a standing permission.
pub async fn revoke_grant(id: &str) -> Result<Done, Failure> {
    post(paths::GRANTS_REVOKE, &RevokeBody { id: id.to_owned() }).await
}

/// Makes a read-only link to a conversation.
pub async fn share(session_id: &str) -> Result<ShareAnswer, Failure> {
    let body = ShareBody {
        session_id: session_id.to_owned(),
    };
    post(paths::SHARE, &body).await
}

/// The viewer's share links.
pub async fn shares() -> Result<ShareList, Failure> {
    get(paths::SHARES, &()).await
}

/// Revokes a share link.
pub async fn revoke_share(id: &str) -> Result<Done, Failure> {
    post(paths::SHARE_REVOKE, &RevokeBody { id: id.to_owned() }).await
}

/// The viewer's passkeys.
pub async fn passkeys() -> Result<PasskeyList, Failure> {
    get(paths::PASSKEYS, &()).await
}

/// Begins adding a passkey: the options for the browser.
pub async fn passkey_start() -> Result<CeremonyStart, Failure> {
    post(paths::PASSKEY_REGISTER_START, &serde_json::json!({})).await
}

/// Hands the server the browser's new credential.
pub async fn passkey_finish(body: &PasskeyFinishBody) -> Result<PasskeyAnswer, Failure> {
    post(paths::PASSKEY_REGISTER_FINISH, body).await
}

/// Removes a passkey.
pub async fn remove_passkey(id: &str) -> Result<Done, Failure> {
    post(paths::PASSKEY_REMOVE, &RevokeBody { id: id.to_owned() }).await
}

/// Gives one of the viewer's passkeys a new name.
pub async fn rename_passkey(id: &str, name: &str) -> Result<Done, Failure> {
    let body = crate::api::PasskeyRenameBody {
        id: id.to_owned(),
        name: name.to_owned(),
    };
    post(paths::PASSKEY_RENAME, &body).await
}

/// Sends a message and starts a turn (409 while one runs).
pub async fn start(body: &SendBody) -> Result<Started, Failure> {
    post(paths::CHAT_START, body).await
}

/// Sends a follow-up for when the running turn ends (started at once when none runs).
pub async fn queue(body: &SendBody) -> Result<Queued, Failure> {
    post(paths::CHAT_QUEUE, body).await
}

/// Stops a run.
pub async fn cancel(run_id: &str) -> Result<Cancelled, Failure> {
    let body = RunBody {
        run_id: run_id.to_owned(),
    };
    post(paths::CHAT_CANCEL, &body).await
}

/// Answers a turn's message again, as its next version.
pub async fn retry(run_id: &str) -> Result<Started, Failure> {
    let body = RunBody {
        run_id: run_id.to_owned(),
    };
    post(paths::CHAT_RETRY, &body).await
}

/// Sends another message in the place of a turn's.
pub async fn edit(body: &EditBody) -> Result<Started, Failure> {
    post(paths::CHAT_EDIT, body).await
}

/// Shows another version of a turn, or the branch a run is on.
pub async fn branch(body: &BranchBody) -> Result<Branched, Failure> {
    post(paths::CHAT_BRANCH, body).await
}

/// Answers an approval request.
pub async fn respond_approval(body: &ApprovalBody) -> Result<Done, Failure> {
    post(paths::APPROVAL_RESPOND, body).await
}

/// Answers a question.
pub async fn respond_clarify(body: &ClarifyBody) -> Result<Done, Failure> {
    post(paths::CLARIFY_RESPOND, body).await
}

/// A conversation's page data (or a window of it).
pub async fn page(query: &PageQuery) -> Result<SessionPage, Failure> {
    get(paths::PAGE, query).await
}

/// A page of a run's journal.
pub async fn journal(query: &JournalQuery) -> Result<JournalPage, Failure> {
    get(paths::CHAT_JOURNAL, query).await
}

/// The page data for a session (`None`: the newest), with only the turns after `after_run`
/// when one is given.
pub async fn session_page(
    session_id: Option<&str>,
    after_run: Option<&str>,
) -> Result<SessionPage, Failure> {
    page(&PageQuery {
        session_id: session_id.map(str::to_owned),
        after_run_id: after_run.map(str::to_owned),
        before_run_id: None,
    })
    .await
}

/// Every journal row of a run (a settled turn shown as its snapshot, whose steps the reader
/// opened), page after page.
pub async fn whole_journal(run_id: &str) -> Result<Vec<api::JournalEvent>, Failure> {
    let mut events = Vec::new();
    let mut after = 0;
    loop {
        let query = JournalQuery {
            run_id: run_id.to_owned(),
            after,
        };
        let page = journal(&query).await?;
        events.extend(page.events);
        match page.next {
            Some(next) if next > after => after = next,
            _ => return Ok(events),
        }
    }
}

/// The window of turns of `session_id` before the run `before_run` ("Show earlier").
pub async fn earlier_turns(session_id: &str, before_run: &str) -> Result<SessionPage, Failure> {
    page(&PageQuery {
        session_id: Some(session_id.to_owned()),
        after_run_id: None,
        before_run_id: Some(before_run.to_owned()),
    })
    .await
}

/// Signs out.
pub async fn logout() -> Result<Done, Failure> {
    post(paths::AUTH_LOGOUT, &serde_json::json!({})).await
}

/// Gives the password again, for what needs a fresh proof.
pub async fn confirm(password: &str) -> Result<Done, Failure> {
    let body = ConfirmBody {
        password: password.to_owned(),
    };
    post(paths::AUTH_CONFIRM, &body).await
}

/// Begins a passkey's answer (a sign-in ceremony), for a fresh proof.
pub async fn passkey_sign_in_start() -> Result<CeremonyStart, Failure> {
    post(paths::AUTH_PASSKEY_START, &serde_json::json!({})).await
}

/// A passkey's answer as the fresh proof.
pub async fn confirm_passkey(body: &PasskeyFinishBody) -> Result<Done, Failure> {
    post(paths::AUTH_CONFIRM_PASSKEY, body).await
}

/// The browsers signed in to the account.
pub async fn sign_ins() -> Result<SignInList, Failure> {
    get(paths::SIGN_INS, &()).await
}

/// Signs one of them out.
pub async fn end_sign_in(id: &str) -> Result<Done, Failure> {
    post(paths::SIGN_IN_END, &RevokeBody { id: id.to_owned() }).await
}

/// Signs every one of them out, this one too.
pub async fn end_sign_ins() -> Result<Done, Failure> {
    post(paths::SIGN_INS_END_ALL, &serde_json::json!({})).await
}

/// What the account keeps, and its quota.
pub async fn storage() -> Result<StorageData, Failure> {
    get(paths::STORAGE, &()).await
}

/// Whether the server answers.
pub async fn health() -> Result<(), Failure> {
    get::<_, Value>(paths::HEALTH, &()).await.map(drop)
}

/// Why the server cannot save now (`the disk is full`, `writes are failing`), if it cannot.
pub async fn store_trouble() -> Result<Option<String>, Failure> {
    let health: Value = get(paths::HEALTH, &()).await?;
    Ok(health["store"].as_str().map(str::to_owned))
}

/// The address of a run's event stream, from after `after_seq`.
pub fn stream_url(run_id: &str, after_seq: u64) -> String {
    let query = StreamQuery {
        run_id: Some(run_id.to_owned()),
        stream_id: None,
        after_seq: Some(after_seq.to_string()),
    };
    href(&api::url(paths::CHAT_STREAM, &query))
}

/// Uploads a file as an attachment (for `session`, when it exists).
pub async fn upload(file: &web_sys::File, session: Option<&str>) -> Result<Uploaded, Failure> {
    let query = UploadQuery {
        name: file.name(),
        session_id: session.map(str::to_owned),
    };
    let request = as_shown(Request::post(&href(&api::url(paths::ATTACHMENTS, &query))))
        .header("content-type", "application/octet-stream")
        .body(file.clone())
        .map_err(|e| Failure::new(0, e.to_string()))?;
    answer(request.send().await).await
}

/// Imports a conversation from its JSONL export, the file as it is; titled after the file when
/// the file names no title.
pub async fn import(file: &web_sys::File) -> Result<Transferred, Failure> {
    let name = file.name();
    let title = name
        .strip_suffix(".jsonl")
        .or_else(|| name.strip_suffix(".json"))
        .unwrap_or(&name);
    let query = ImportQuery {
        title: Some(title.to_owned()).filter(|t| !t.is_empty()),
    };
    let request = as_shown(Request::post(&href(&api::url(
        paths::SESSION_IMPORT,
        &query,
    ))))
    .header("content-type", "application/x-ndjson")
    .body(file.clone())
    .map_err(|e| Failure::new(0, e.to_string()))?;
    answer(request.send().await).await
}

/// A directory of the caller's workspace.
pub async fn workspace(path: &str) -> Result<WorkspaceListing, Failure> {
    let query = WorkspaceQuery {
        path: Some(path.to_owned()),
    };
    get(paths::WORKSPACE, &query).await
}

/// The address of a file of the caller's workspace (shown, or as a download).
pub fn workspace_file(path: &str, download: bool) -> String {
    let query = WorkspaceFileQuery {
        path: path.to_owned(),
        download,
    };
    href(&api::url(paths::WORKSPACE_FILE, &query))
}

/// A text file of the caller's workspace, as text.
pub async fn workspace_text(path: &str) -> Result<String, Failure> {
    let failed = Failure::new;
    let response = as_shown(Request::get(&workspace_file(path, false)))
        .send()
        .await
        .map_err(|e| failed(0, format!("The server could not be reached ({e}).")))?;
    let status = response.status();
    if !(200..300).contains(&status) {
        let body: Value = response.json().await.unwrap_or(Value::Null);
        let message = body["error"]
            .as_str()
            .unwrap_or("request failed")
            .to_owned();
        return Err(failed(status, message));
    }
    response
        .text()
        .await
        .map_err(|e| failed(status, e.to_string()))
}

/// Copies a conversation: the branch it shows, or every branch.
pub async fn duplicate(body: &DuplicateBody) -> Result<Transferred, Failure> {
    post(paths::SESSION_DUPLICATE, body).await
}

async fn answer<A: DeserializeOwned>(
    response: Result<gloo_net::http::Response, gloo_net::Error>,
) -> Result<A, Failure> {
    let response =
        response.map_err(|e| Failure::new(0, format!("The server could not be reached ({e}).")))?;
    let status = response.status();
    if status == 401 {
        // Signed out meanwhile (elsewhere, by a password change, or expired): sign in again
        // and come back here. What was typed is kept as a draft of this account's.
        to_login(true);
    }
    let body: Value = response.json().await.unwrap_or(Value::Null);
    if (200..300).contains(&status) {
        serde_json::from_value(body).map_err(|e| {
            Failure::new(
                status,
                format!("The server's answer could not be read ({e})."),
            )
        })
    } else {
        let message = body["error"]
            .as_str()
            .unwrap_or("request failed")
            .to_owned();
        Err(Failure {
            account_changed: body["account_changed"] == Value::Bool(true),
            reauth: body["reauth"] == Value::Bool(true),
            ..Failure::new(status, message)
        })
    }
}

/// Goes to the sign-in page (coming back to this address after, when `come_back`).
pub fn to_login(come_back: bool) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let location = window.location();
    // `next` is the browser's address, base and all (the server checks it is on this site).
    let mut target = href(paths::LOGIN_PAGE);
    if come_back {
        let here = format!(
            "{}{}",
            location.pathname().unwrap_or_default(),
            location.search().unwrap_or_default()
        );
        target.push_str(&format!("?next={}", encode(&here)));
    }
    let _ = location.assign(&target);
}

/// URL-encodes a query value.
pub fn encode(value: &str) -> String {
    js_sys::encode_uri_component(value)
        .as_string()
        .unwrap_or_default()
}

/// Resolves at the next animation frame: the page's updates are in the DOM, not yet painted.
pub async fn next_frame() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(window) = web_sys::window() {
            let _ = window.request_animation_frame(&resolve);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// Resolves after `ms` milliseconds.
pub async fn sleep(ms: u32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(window) = web_sys::window() {
            let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(
                &resolve,
                i32::try_from(ms).unwrap_or(i32::MAX),
            );
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// A fresh id for a message the browser sends (the server starts each id once).
pub fn client_id() -> String {
    let random = || (js_sys::Math::random() * 4_294_967_296.0) as u64;
    format!("c-{:08x}{:08x}{:08x}", random(), random(), random())
}
