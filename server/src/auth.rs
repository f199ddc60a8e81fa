//! Accounts and who is asking.
//!
//! With no account the server is in *open mode*: whoever reaches it (loopback only, see
//! [`crate::security`]) uses it, and what they make belongs to nobody. Once an account exists,
//! every API route but sign-in needs a signed-in browser ([`require_api`]: 401 JSON) and the
//! chat pages send the browser to `/login` ([`require_page`]: 303). What a user makes belongs
//! to them; another user's ids answer as unknown ids do ([`owned_session`], [`owned_run`]).
//!
//! Signing in sets the `anchorage_session` cookie to a random 256-bit token; the database holds
//! only its SHA-256. A token lives 30 days from its last use (the expiry slides at most once an
//! hour, re-sending the cookie) and dies with sign-out (here, or from another device in
//! Settings), a password change, the removal of the passkey it signed in with, or the
//! account. Passwords are stored as argon2id hashes. Signing in, out, and the sign-in page are
//! `routes::sign_in`'s; Settings' list of signed-in devices is `routes::devices`'.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::OnceLock;

use argon2::password_hash::rand_core::{OsRng, RngCore as _};
use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};
use argon2::Argon2;
use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest as _, Sha256};

use crate::error::ApiError;
use crate::store::{Run, Session, StoreError, User};
use crate::AppState;

/// The sign-in cookie.
pub const COOKIE: &str = "anchorage_session";
/// How long a sign-in lasts after its last use, in seconds.
pub const TOKEN_LIFETIME_SECS: f64 = 30.0 * 86_400.0;
/// A used token's expiry moves when it last moved at least this long ago, in seconds.
const SLIDE_EVERY_SECS: f64 = 3_600.0;
/// The shortest password accepted, in characters.
pub const MIN_PASSWORD_CHARS: usize = 10;
/// The longest password accepted, in bytes (hashing is costly; nobody types more).
pub const MAX_PASSWORD_BYTES: usize = 1024;
/// The longest account name, in characters.
pub const MAX_NAME_CHARS: usize = 64;

/// Whether `name` can name an account: 1 to 64 letters, digits, `.`, `_` or `-`.
pub fn check_name(name: &str) -> Result<&str, String> {
    let name = name.trim();
    if name.is_empty() {
        return Err("the account name is empty".into());
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!(
            "the account name is too long (at most {MAX_NAME_CHARS} characters)"
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Err("an account name has only letters, digits, '.', '_' and '-'".into());
    }
    Ok(name)
}

/// Whether `password` is acceptable as a new password.
pub fn check_password(password: &str) -> Result<(), String> {
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(format!(
            "the password is too short: use at least {MIN_PASSWORD_CHARS} characters"
        ));
    }
    if password.len() > MAX_PASSWORD_BYTES {
        return Err(format!(
            "the password is too long (at most {MAX_PASSWORD_BYTES} bytes)"
        ));
    }
    Ok(())
}

/// The argon2id hash of a password (PHC string, random salt, the crate's default cost).
pub fn hash_password(password: &str) -> Result<String, String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| format!("cannot hash the password: {e}"))
}

/// Whether `password` matches `hash` (a hash that does not parse matches nothing).
pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// A hash no password matches in practice, verified for unknown names so that they cost what
/// a wrong password costs.
pub(crate) fn decoy_hash() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| {
        let mut bytes = [0u8; 32];
        OsRng.fill_bytes(&mut bytes);
        hash_password(&hex::encode(bytes)).unwrap_or_default()
    })
}

/// A fresh sign-in token: 256 random bits, hex.
pub fn new_token() -> String {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// What the database keeps of a token.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The value of the cookie `name` a request carries, if any (empty counts as none).
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim())
        .filter(|v| !v.is_empty())
}

/// The sign-in token a request carries in its cookie, if any.
pub fn cookie_token(headers: &HeaderMap) -> Option<&str> {
    cookie(headers, COOKIE)
}

/// The `Set-Cookie` value that signs a browser in with `token`.
/// `path` is the site's (`--public-url`'s path, else `/`): another site on the same host
/// under another path never gets it.
pub fn session_cookie(token: &str, secure: bool, path: &str) -> String {
    let mut cookie = format!(
        "{COOKIE}={token}; HttpOnly; SameSite=Lax; Path={path}; Max-Age={}",
        TOKEN_LIFETIME_SECS as u64
    );
    if secure {
        cookie.push_str("; Secure");
    }
    cookie
}

/// The `Set-Cookie` value that removes the sign-in cookie.
pub fn cleared_cookie(secure: bool, path: &str) -> String {
    let mut cookie = format!("{COOKIE}=; HttpOnly; SameSite=Lax; Path={path}; Max-Age=0");
    if secure {
        cookie.push_str("; Secure");
    }
    cookie
}

/// Who is asking.
#[derive(Clone, Debug, PartialEq)]
pub enum Viewer {
    /// Nobody in particular: the server has no account.
    Open,
    /// A signed-in account.
    User(User),
}

impl Viewer {
    /// The owner id of what this viewer makes and sees (`None` in open mode).
    pub fn owner(&self) -> Option<&str> {
        match self {
            Viewer::Open => None,
            Viewer::User(user) => Some(&user.id),
        }
    }

    /// The account, when signed in.
    pub fn user(&self) -> Option<&User> {
        match self {
            Viewer::Open => None,
            Viewer::User(user) => Some(user),
        }
    }
}

/// Why a request has no viewer.
#[derive(Debug)]
pub enum Denied {
    /// Accounts exist and the request is not signed in.
    SignIn,
    /// The database failed.
    Store(StoreError),
}

impl From<StoreError> for Denied {
    fn from(e: StoreError) -> Self {
        Denied::Store(e)
    }
}

/// Who sent `headers`; with a token whose expiry moved, the token (to send its cookie again).
pub async fn resolve(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<(Viewer, Option<String>), Denied> {
    if let Some(token) = cookie_token(headers) {
        let hash = token_hash(token);
        let now = crate::clock::now();
        if let Some((user, expires_at)) = state.store.token_user(&hash, now).await? {
            let refreshed = if expires_at < now + TOKEN_LIFETIME_SECS - SLIDE_EVERY_SECS {
                state
                    .store
                    .extend_token(&hash, now + TOKEN_LIFETIME_SECS, now)
                    .await?;
                Some(token.to_owned())
            } else {
                None
            };
            return Ok((Viewer::User(user), refreshed));
        }
    }
    if state.store.count_users().await? == 0 {
        Ok((Viewer::Open, None))
    } else {
        Err(Denied::SignIn)
    }
}

/// Whether the sign-in cookie is sent over TLS only (behind an https `--public-url`).
pub(crate) fn secure(state: &AppState) -> bool {
    state
        .public_url
        .as_ref()
        .is_some_and(crate::security::PublicUrl::https)
}

/// The `Path` of the sign-in cookie: the site's.
pub(crate) fn cookie_path(state: &AppState) -> &str {
    match state.base() {
        "" => "/",
        base => base,
    }
}

/// Runs `next` as `viewer`, sending the sign-in cookie again when its expiry moved.
async fn run_as(
    state: &AppState,
    viewer: Viewer,
    refreshed: Option<String>,
    mut request: Request,
    next: Next,
) -> Response {
    request.extensions_mut().insert(viewer);
    let mut response = next.run(request).await;
    if let Some(token) = refreshed {
        if let Ok(value) =
            HeaderValue::from_str(&session_cookie(&token, secure(state), cookie_path(state)))
        {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    response
}

pub use app::api::ACCOUNT_HEADER;

/// What a page calls the account it shows (`""`: open mode): an opaque tag of its id, which
/// the page's requests carry in [`ACCOUNT_HEADER`]. A request whose tag is not the viewer's
/// came from a page shown to someone else (on a shared device, the one signed in before):
/// it is refused ([`require_api`]), so that what that person typed never goes out as another's.
pub fn account_tag(user: Option<&User>) -> String {
    user.map_or_else(String::new, |user| {
        hex::encode(&Sha256::digest(format!("account:{}", user.id).as_bytes())[..8])
    })
}

/// The gate of the API: 401 JSON without a sign-in once accounts exist; 409 for a request
/// from a page shown to another account than the one signed in now.
pub async fn require_api(State(state): State<AppState>, request: Request, next: Next) -> Response {
    match resolve(&state, request.headers()).await {
        Ok((viewer, _)) if !shown_to(request.headers(), &viewer) => ApiError::conflict(
            "this browser is signed in as another account now: nothing was sent; reload the page",
        )
        .with("account_changed", true)
        .into_response(),
        Ok((viewer, refreshed)) => run_as(&state, viewer, refreshed, request, next).await,
        Err(Denied::SignIn) => ApiError::unauthorized("sign in first").into_response(),
        Err(Denied::Store(e)) => ApiError::from(e).into_response(),
    }
}

/// Whether a request that names the account its page was shown to names `viewer` (one that
/// names none, as a script of the operator's, is not held to it).
fn shown_to(headers: &HeaderMap, viewer: &Viewer) -> bool {
    match headers.get(ACCOUNT_HEADER).map(HeaderValue::to_str) {
        None => true,
        Some(Ok(tag)) => tag.trim() == account_tag(viewer.user()),
        Some(Err(_)) => false,
    }
}

/// The gate of the chat pages: to `/login?next=…` without a sign-in once accounts exist.
pub async fn require_page(State(state): State<AppState>, request: Request, next: Next) -> Response {
    match resolve(&state, request.headers()).await {
        Ok((viewer, refreshed)) => run_as(&state, viewer, refreshed, request, next).await,
        Err(Denied::SignIn) => {
            // The browser's address: the site's base, then the path the router saw.
            let here = format!(
                "{}{}",
                state.base(),
                request.uri().path_and_query().map_or("/", |p| p.as_str())
            );
            see_other(&format!(
                "{}{}?next={}",
                state.base(),
                app::api::paths::LOGIN_PAGE,
                query_encode(&here)
            ))
        }
        Err(Denied::Store(e)) => ApiError::from(e).into_response(),
    }
}

impl FromRequestParts<AppState> for Viewer {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if let Some(viewer) = parts.extensions.get::<Viewer>() {
            return Ok(viewer.clone());
        }
        match resolve(state, &parts.headers).await {
            Ok((viewer, _)) => Ok(viewer),
            Err(Denied::SignIn) => Err(ApiError::unauthorized("sign in first")),
            Err(Denied::Store(e)) => Err(e.into()),
        }
    }
}

/// The session `id` if `viewer` owns it; `NotFound` otherwise, as for an id that does not exist.
pub async fn owned_session(
    state: &AppState,
    viewer: &Viewer,
    id: &str,
) -> Result<Session, StoreError> {
    let session = state.store.session(id).await?;
    if session.owner_id.as_deref() == viewer.owner() {
        Ok(session)
    } else {
        Err(StoreError::NotFound)
    }
}

/// The run `id` if `viewer` owns its session; `NotFound` otherwise.
pub async fn owned_run(state: &AppState, viewer: &Viewer, id: &str) -> Result<Run, StoreError> {
    let run = state.store.run(id).await?;
    owned_session(state, viewer, &run.session_id).await?;
    Ok(run)
}

/// The address a request comes from: the peer, or behind a proxy on this machine (with
/// `--public-url` set), the last address the proxy put in `X-Forwarded-For`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientIp(pub String);

impl FromRequestParts<AppState> for ClientIp {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Infallible> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0.ip());
        let forwarded = || {
            parts
                .headers
                .get_all("x-forwarded-for")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .next_back()
                .and_then(|a| a.trim().parse::<IpAddr>().ok())
        };
        let ip = match peer {
            Some(peer) if peer.is_loopback() && state.public_url.is_some() => {
                forwarded().unwrap_or(peer)
            }
            Some(peer) => peer,
            None => return Ok(ClientIp("unknown".into())),
        };
        Ok(ClientIp(ip.to_string()))
    }
}

/// A 303 to `location`.
pub(crate) fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

/// Percent-encodes a query value.
fn query_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Where to go after signing in: an address of this site (under its `base`), never another
/// site (`//evil`, `/\evil`, `https://…`), another path of the host, or the sign-in page.
pub fn safe_next(next: Option<&str>, base: &str) -> String {
    let home = format!("{base}/");
    let Some(next) = next.map(str::trim) else {
        return home;
    };
    let on_site = next == base || next.starts_with(&home);
    let ok = on_site
        && next.starts_with('/')
        && !next.starts_with("//")
        && !next.contains('\\')
        && !next.chars().any(char::is_control)
        && next.len() <= 2048
        && !next[base.len()..].starts_with(app::api::paths::LOGIN_PAGE);
    if ok {
        next.to_owned()
    } else {
        home
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_passwords_follow_the_rules() {
        assert_eq!(check_name("  alice "), Ok("alice"));
        assert_eq!(check_name("Zoë.b_2-x"), Ok("Zoë.b_2-x"));
        for bad in ["", "  ", "a b", "a/b", "<x>", &"a".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_password("123456789").is_err());
        assert!(check_password("1234567890").is_ok());
        assert!(
            check_password("ééééééééé").is_err(),
            "characters, not bytes"
        );
        assert!(check_password(&"x".repeat(1025)).is_err());
    }

    #[test]
    fn a_hash_verifies_its_password_only() {
        let hash = hash_password("correct horse battery").unwrap();
        assert!(hash.starts_with("$argon2id$"), "{hash}");
        assert!(verify_password("correct horse battery", &hash));
        assert!(!verify_password("correct horse battery!", &hash));
        assert!(!verify_password("anything", "not a hash"));
        assert_ne!(
            hash,
            hash_password("correct horse battery").unwrap(),
            "salted"
        );
    }

    #[test]
    fn tokens_are_random_and_stored_hashed() {
        let (a, b) = (new_token(), new_token());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert_eq!(token_hash(&a), token_hash(&a));
        assert_ne!(token_hash(&a), a);
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("theme=dark; {COOKIE}={a}; x=1")).unwrap(),
        );
        assert_eq!(cookie_token(&headers), Some(a.as_str()));
        let cookie = session_cookie(&a, true, "/");
        for part in [
            "HttpOnly",
            "SameSite=Lax",
            "Path=/",
            "Secure",
            "Max-Age=2592000",
        ] {
            assert!(cookie.contains(part), "{cookie}");
        }
        assert!(!session_cookie(&a, false, "/").contains("Secure"));
        assert!(session_cookie(&a, false, "/chat").contains("; Path=/chat;"));
        assert!(cleared_cookie(false, "/chat").contains("; Path=/chat;"));
    }

    #[test]
    fn next_stays_on_this_site() {
        assert_eq!(safe_next(Some("/s/abc?x=1"), ""), "/s/abc?x=1");
        for bad in [
            "//evil.example",
            "/\\evil.example",
            "https://evil.example",
            "javascript:alert(1)",
            "/login?next=/login",
            "evil",
            "/a\nb",
        ] {
            assert_eq!(safe_next(Some(bad), ""), "/", "{bad:?}");
        }
        assert_eq!(safe_next(None, ""), "/");
        // Under a path: only its addresses, and home is its root.
        assert_eq!(safe_next(Some("/chat/s/abc"), "/chat"), "/chat/s/abc");
        assert_eq!(safe_next(Some("/chat"), "/chat"), "/chat");
        for bad in [
            "/s/abc",
            "/chatter/s/1",
            "/other",
            "/chat/login?next=/chat/",
            "//chat/x",
        ] {
            assert_eq!(safe_next(Some(bad), "/chat"), "/chat/", "{bad:?}");
        }
        assert_eq!(safe_next(None, "/chat"), "/chat/");
    }
}
