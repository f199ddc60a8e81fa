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
//! hour, re-sending the cookie) and dies with sign-out, a password change or the account.
//! Passwords are stored as argon2id hashes. Failed sign-ins are counted per name and per client
//! address: the sixth within a minute answers 429 with `Retry-After`.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::OnceLock;
use std::time::Instant;

use argon2::password_hash::rand_core::{OsRng, RngCore as _};
use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};
use argon2::Argon2;
use axum::extract::{ConnectInfo, FromRequestParts, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest as _, Sha256};

use app::markdown::escape;

use crate::error::ApiError;
use crate::store::{Run, Session, StoreError, User};
use crate::throttle::Refused;
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
fn decoy_hash() -> &'static str {
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
                    .extend_token(&hash, now + TOKEN_LIFETIME_SECS)
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
fn secure(state: &AppState) -> bool {
    state
        .public_url
        .as_ref()
        .is_some_and(crate::security::PublicUrl::https)
}

/// The `Path` of the sign-in cookie: the site's.
fn cookie_path(state: &AppState) -> &str {
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

/// The gate of the API: 401 JSON without a sign-in once accounts exist.
pub async fn require_api(State(state): State<AppState>, request: Request, next: Next) -> Response {
    match resolve(&state, request.headers()).await {
        Ok((viewer, refreshed)) => run_as(&state, viewer, refreshed, request, next).await,
        Err(Denied::SignIn) => ApiError::unauthorized("sign in first").into_response(),
        Err(Denied::Store(e)) => ApiError::from(e).into_response(),
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
fn see_other(location: &str) -> Response {
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

/// The sign-in page with `status`.
fn login_page(
    status: StatusCode,
    error: Option<&str>,
    name: &str,
    next: &str,
    passkeys: bool,
    base: &str,
) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        login_html(error, name, next, passkeys, base),
    )
        .into_response()
}

/// Whether the sign-in page offers passkeys: once any account has one (a failed count
/// leaves the password alone on the page).
async fn offers_passkeys(state: &AppState) -> bool {
    state.store.count_passkeys().await.is_ok_and(|n| n > 0)
}

/// The sign-in page: a plain form that works without JavaScript; with `passkeys`, a button
/// that signs in with one (`/passkey.js`, which hides it where the browser has none).
/// Its addresses are under `base`, the site's path.
fn login_html(error: Option<&str>, name: &str, next: &str, passkeys: bool, base: &str) -> String {
    let error = error.map_or_else(String::new, |e| {
        format!(
            r#"<p class="login-error" role="alert" id="login-error">{}</p>"#,
            escape(e)
        )
    });
    let described = if error.is_empty() {
        ""
    } else {
        r#" aria-describedby="login-error""#
    };
    let passkey = if passkeys {
        PASSKEY_BUTTON.replace("{base}", base)
    } else {
        String::new()
    };
    let focus_name = if name.is_empty() { " autofocus" } else { "" };
    let focus_password = if name.is_empty() { "" } else { " autofocus" };
    let html = format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1, viewport-fit=cover">
<meta name="color-scheme" content="light dark">
<title>Sign in · Anchorage</title>
<link rel="stylesheet" href="{base}/pkg/anchorage.css">
<link rel="icon" href="{base}/favicon.svg" type="image/svg+xml">
</head>
<body class="login-body">
<main class="login">
<h1 class="brand">Anchorage</h1>
<form class="login-form" method="post" action="{base}/api/auth/login"{described}>
<h2>Sign in</h2>
{error}
<label for="username">Name</label>
<input id="username" name="username" type="text" value="{name}" autocomplete="username" autocapitalize="none" autocorrect="off" spellcheck="false" required maxlength="{MAX_NAME_CHARS}"{focus_name}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required{focus_password}>
<input type="hidden" name="next" value="{next}">
<button type="submit">Sign in</button>
{passkey}</form>
<p class="login-note">Accounts are made on the server: <code>server user add NAME</code>.</p>
</main>
</body>
</html>
"#,
        name = escape(name),
        next = escape(next),
    );
    html
}

/// The passkey part of the sign-in form (its script is on the site: the policy admits it).
const PASSKEY_BUTTON: &str = r#"<button type="button" class="passkey-button" id="passkey-button">Sign in with a passkey</button>
<p class="login-error" role="alert" id="passkey-problem" hidden></p>
<script src="{base}/passkey.js" defer></script>
"#;

/// The query of `GET /login`.
#[derive(Debug, Default, Deserialize)]
pub struct LoginQuery {
    next: Option<String>,
}

/// `GET /login?next=`: the sign-in form (a signed-in browser, or a server without accounts,
/// goes on to `next`).
pub async fn login_form(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<LoginQuery>,
) -> Response {
    let next = safe_next(q.next.as_deref(), state.base());
    match resolve(&state, &headers).await {
        Ok(_) => see_other(&next),
        Err(Denied::SignIn) => login_page(
            StatusCode::OK,
            None,
            "",
            &next,
            offers_passkeys(&state).await,
            state.base(),
        ),
        Err(Denied::Store(e)) => ApiError::from(e).into_response(),
    }
}

/// `POST /api/auth/login` body (JSON, or the form's fields).
#[derive(Debug, Deserialize)]
pub struct LoginBody {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    next: Option<String>,
}

/// The answer to a sign-in held back: 429 for a name or address that tried too often, 503
/// for a server too busy to check; both say when to come back.
/// A throttled sign-in as an API error (429 or 503, and when to come back).
pub(crate) fn throttled_error(refused: Refused) -> ApiError {
    let (status, wait) = match refused {
        Refused::TooMany(wait) => (StatusCode::TOO_MANY_REQUESTS, wait),
        Refused::Busy(wait) => (StatusCode::SERVICE_UNAVAILABLE, wait),
    };
    let secs = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
    ApiError::refusal(status, format!("too many sign-ins: try again in {secs} s"))
        .with("retry_after", secs)
}

fn throttled(refused: Refused, refuse: impl Fn(StatusCode, &str) -> Response) -> Response {
    let (status, wait, message) = match refused {
        Refused::TooMany(wait) => (
            StatusCode::TOO_MANY_REQUESTS,
            wait,
            "too many failed sign-ins: try again in",
        ),
        Refused::Busy(wait) => (
            StatusCode::SERVICE_UNAVAILABLE,
            wait,
            "too many sign-ins at once: try again in",
        ),
    };
    let secs = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
    let mut response = refuse(status, &format!("{message} {secs} s"));
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    response
}

/// One message for an unknown name and a wrong password.
const WRONG: &str = "wrong name or password";

/// `POST /api/auth/login {username, password}`: signs in. JSON answers `{user}` and sets the
/// cookie; the sign-in form's post goes on (303) to its `next`, or shows the form again.
pub async fn login(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let parsed: Result<LoginBody, String> = if form {
        serde_urlencoded::from_bytes(&body).map_err(|e| e.to_string())
    } else {
        serde_json::from_slice(&body).map_err(|e| e.to_string())
    };
    let body = match parsed {
        Ok(body) => body,
        Err(e) if form => {
            return login_page(
                StatusCode::BAD_REQUEST,
                Some(&e),
                "",
                &safe_next(None, state.base()),
                offers_passkeys(&state).await,
                state.base(),
            );
        }
        Err(e) => return ApiError::bad_request(format!("malformed JSON: {e}")).into_response(),
    };
    let next = safe_next(body.next.as_deref(), state.base());
    let name = body.username.trim();
    let passkeys = form && offers_passkeys(&state).await;
    let refuse = |status: StatusCode, message: &str| {
        if form {
            login_page(status, Some(message), name, &next, passkeys, state.base())
        } else {
            ApiError::refusal(status, message).into_response()
        }
    };
    // Counted before the password is checked; a success gives the place back.
    let keys = crate::throttle::keys(name, &ip);
    let reservation = match state.throttle.reserve(&keys, Instant::now()) {
        Ok(reservation) => reservation,
        Err(refused) => return throttled(refused, refuse),
    };
    let found = if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        None
    } else {
        match state.store.user_credentials(name).await {
            Ok(found) => Some(found),
            Err(StoreError::NotFound) => None,
            Err(e) => return ApiError::from(e).into_response(),
        }
    };
    let password = body.password;
    let hash = found
        .as_ref()
        .map_or_else(|| decoy_hash().to_owned(), |(_, h)| h.clone());
    let matches = if password.len() <= MAX_PASSWORD_BYTES {
        match state
            .throttle
            .hash(move || verify_password(&password, &hash))
            .await
        {
            Ok(matches) => matches,
            Err(refused) => return throttled(refused, refuse),
        }
    } else {
        false
    };
    let user = match found {
        Some((user, _)) if matches => user,
        _ => return refuse(StatusCode::UNAUTHORIZED, WRONG),
    };
    state.throttle.succeeded(reservation);
    let response = if form {
        see_other(&next)
    } else {
        axum::Json(json!({ "user": user })).into_response()
    };
    signed_in(&state, &user, response).await
}

/// `response`, signing this browser in as `user`: a new token on the server, its cookie here.
pub(crate) async fn signed_in(state: &AppState, user: &User, mut response: Response) -> Response {
    let token = new_token();
    let now = crate::clock::now();
    if let Err(e) = state
        .store
        .create_token(
            &token_hash(&token),
            &user.id,
            now,
            now + TOKEN_LIFETIME_SECS,
        )
        .await
    {
        return ApiError::from(e).into_response();
    }
    if let Ok(value) =
        HeaderValue::from_str(&session_cookie(&token, secure(state), cookie_path(state)))
    {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

/// `POST /api/auth/logout`: ends this browser's sign-in on the server and clears its cookie.
pub async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(token) = cookie_token(&headers) {
        if let Err(e) = state.store.revoke_token(&token_hash(token)).await {
            return ApiError::from(e).into_response();
        }
    }
    let mut response = axum::Json(json!({"ok": true})).into_response();
    if let Ok(value) = HeaderValue::from_str(&cleared_cookie(secure(&state), cookie_path(&state))) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

/// `GET /api/auth/me`: the signed-in account, or 401 (also in open mode, which has none).
pub async fn me(viewer: Viewer) -> Response {
    match viewer {
        Viewer::User(user) => axum::Json(json!({ "user": user })).into_response(),
        Viewer::Open => ApiError::unauthorized("no accounts: nobody signs in")
            .with("open", true)
            .into_response(),
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

    #[test]
    fn the_sign_in_page_escapes_what_it_repeats() {
        let page = login_html(Some("<b>bad</b>"), "\"><script>x", "/s/1\"x", false, "");
        assert!(!page.contains("<b>bad"), "{page}");
        assert!(page.contains("&lt;b&gt;bad&lt;/b&gt;"));
        assert!(!page.contains("<script>"));
        assert!(page.contains(r#"value="&quot;&gt;&lt;script&gt;x""#));
        assert!(page.contains(r#"value="/s/1&quot;x""#));
        assert!(
            !page.contains("<script"),
            "no script: it works without JavaScript"
        );
        // With passkeys on the server, their button and its script (the form works without).
        let page = login_html(None, "", "/", true, "");
        assert!(page.contains("Sign in with a passkey"));
        assert!(page.contains(r#"<script src="/passkey.js" defer></script>"#));
        // Under a path, every address of the page is under it.
        let page = login_html(None, "", "/chat/", true, "/chat");
        for address in [
            r#"href="/chat/pkg/anchorage.css""#,
            r#"action="/chat/api/auth/login""#,
            r#"src="/chat/passkey.js""#,
        ] {
            assert!(page.contains(address), "{address} in {page}");
        }
        assert!(page.contains(r#"<button type="submit">Sign in</button>"#));
    }
}
