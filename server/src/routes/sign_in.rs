//! Signing in and out: the sign-in page (a plain form that works without JavaScript), the
//! password's sign-in (counted before it is checked: `throttle`), the cookie a sign-in sets
//! (recording where it came from and how), signing out, and who is signed in.

use std::time::Instant;

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;

use app::markdown::escape;

use crate::auth::{
    cleared_cookie, cookie_path, cookie_token, decoy_hash, new_token, resolve, safe_next, secure,
    see_other, session_cookie, token_hash, verify_password, ClientIp, Denied, Viewer,
    MAX_NAME_CHARS, MAX_PASSWORD_BYTES, TOKEN_LIFETIME_SECS,
};
use crate::error::ApiError;
use crate::store::{NewSignIn, StoreError, User};
use crate::throttle::Refused;
use crate::AppState;

/// The longest browser description kept of a sign-in (its `User-Agent`), in characters.
const MAX_AGENT_CHARS: usize = 256;

/// How a sign-in came: from which address and browser, with which passkey (`None`: the
/// password).
#[derive(Clone, Debug)]
pub(crate) struct Way {
    /// The address.
    pub ip: String,
    /// The browser's `User-Agent`, shortened.
    pub agent: String,
    /// The passkey that signed in.
    pub passkey_id: Option<String>,
}

impl Way {
    /// A sign-in from `ip` by the browser that sent `headers`.
    pub(crate) fn from(ip: &str, headers: &HeaderMap, passkey_id: Option<String>) -> Self {
        let agent = headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .chars()
            .filter(|c| !c.is_control())
            .take(MAX_AGENT_CHARS)
            .collect();
        Way {
            ip: ip.to_owned(),
            agent,
            passkey_id,
        }
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
<form class="login-form" method="post" action="{base}/login"{described}>
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
    signed_in(&state, &user, Way::from(&ip, &headers, None), response).await
}

/// `response`, signing this browser in as `user` the `way` it came: a new token on the
/// server (which records the way, and that the proof was given now), its cookie here.
pub(crate) async fn signed_in(
    state: &AppState,
    user: &User,
    way: Way,
    mut response: Response,
) -> Response {
    let token = new_token();
    let now = crate::clock::now();
    let sign_in = NewSignIn {
        token_hash: token_hash(&token),
        user_id: user.id.clone(),
        now,
        expires_at: now + TOKEN_LIFETIME_SECS,
        ip: way.ip,
        agent: way.agent,
        passkey_id: way.passkey_id,
    };
    if let Err(e) = state.store.create_token(&sign_in).await {
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
        Viewer::User(user) => {
            let account = crate::auth::account_tag(Some(&user));
            axum::Json(json!({ "user": user, "account": account })).into_response()
        }
        Viewer::Open => ApiError::unauthorized("no accounts: nobody signs in")
            .with("open", true)
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            r#"action="/chat/login""#,
            r#"src="/chat/passkey.js""#,
        ] {
            assert!(page.contains(address), "{address} in {page}");
        }
        assert!(page.contains(r#"<button type="submit">Sign in</button>"#));
    }
}
