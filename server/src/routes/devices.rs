//! Where an account is signed in, and a fresh proof that it is its person asking: Settings
//! lists the browsers signed in (when, from where, which browser, with which passkey), ends
//! any of them or every one; what needs more than a cookie (adding a passkey) asks for the
//! password (or a passkey) given within [`crate::limits::Limits::fresh_proof`].

use std::time::Instant;

use app::api::{ConfirmBody, Done, RevokeBody, SignInData, SignInList};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::auth::{
    cleared_cookie, cookie_path, cookie_token, decoy_hash, secure, token_hash, verify_password,
    ClientIp, Viewer, MAX_PASSWORD_BYTES,
};
use crate::error::{ApiError, ApiJson};
use crate::store::{StoreError, User};
use crate::AppState;

fn account(viewer: &Viewer) -> Result<&User, ApiError> {
    viewer
        .user()
        .ok_or_else(|| ApiError::bad_request("this server has no accounts: nobody signs in"))
}

/// What a browser's `User-Agent` says it is, in a few words ("Firefox on Linux"); the
/// browser's own words where it says nothing known.
pub fn device_of(agent: &str) -> String {
    let has = |word: &str| agent.contains(word);
    let browser = if has("Edg/") {
        "Edge"
    } else if has("OPR/") || has("Opera") {
        "Opera"
    } else if has("Firefox/") || has("FxiOS/") {
        "Firefox"
    } else if has("CriOS/") || (has("Chrome/") && !has("Chromium/")) {
        "Chrome"
    } else if has("Chromium/") {
        "Chromium"
    } else if has("Safari/") && has("Version/") {
        "Safari"
    } else {
        ""
    };
    let system = if has("iPhone") {
        "iPhone"
    } else if has("iPad") {
        "iPad"
    } else if has("Android") {
        "Android"
    } else if has("Mac OS X") || has("Macintosh") {
        "macOS"
    } else if has("Windows") {
        "Windows"
    } else if has("CrOS") {
        "ChromeOS"
    } else if has("Linux") || has("X11") {
        "Linux"
    } else {
        ""
    };
    match (browser, system) {
        ("", "") if agent.trim().is_empty() => "A browser that did not say which".to_owned(),
        ("", "") => agent.chars().take(60).collect(),
        ("", system) => format!("A browser on {system}"),
        (browser, "") => browser.to_owned(),
        (browser, system) => format!("{browser} on {system}"),
    }
}

/// The id of the sign-in `headers` carry (see `SignIn::id`).
pub(crate) fn current_id(headers: &HeaderMap) -> Option<String> {
    cookie_token(headers).map(|token| token_hash(token)[..16].to_owned())
}

/// `GET /api/auth/sign-ins`: the browsers signed in to the viewer's account.
pub async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
) -> Result<Json<SignInList>, ApiError> {
    let user = account(&viewer)?;
    let current = current_id(&headers);
    let sign_ins = state
        .store
        .sign_ins(&user.id, crate::clock::now())
        .await?
        .into_iter()
        .map(|s| SignInData {
            current: current.as_deref() == Some(s.id.as_str()),
            device: device_of(&s.agent),
            id: s.id,
            ip: s.ip,
            created_at: s.created_at,
            last_seen_at: s.last_seen_at,
            passkey: s.passkey,
        })
        .collect();
    Ok(Json(SignInList { sign_ins }))
}

/// `response` with the sign-in cookie cleared.
fn signed_out(state: &AppState, mut response: Response) -> Response {
    if let Ok(value) = HeaderValue::from_str(&cleared_cookie(secure(state), cookie_path(state))) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

/// `POST /api/auth/sign-ins/end {id}`: that browser is signed out at its next request (this
/// one at once, its cookie cleared). 404 for one that is not the viewer's.
pub async fn end(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
    ApiJson(body): ApiJson<RevokeBody>,
) -> Result<Response, ApiError> {
    let user = account(&viewer)?;
    state
        .store
        .end_sign_in(&user.id, &body.id)
        .await
        .map_err(|e| match e {
            StoreError::NotFound => ApiError::not_found("sign-in"),
            e => e.into(),
        })?;
    let answer = Json(Done { ok: true }).into_response();
    Ok(
        if current_id(&headers).as_deref() == Some(body.id.as_str()) {
            signed_out(&state, answer)
        } else {
            answer
        },
    )
}

/// `POST /api/auth/sign-ins/end-all`: every browser of the account is signed out, this one
/// too.
pub async fn end_all(State(state): State<AppState>, viewer: Viewer) -> Result<Response, ApiError> {
    let user = account(&viewer)?;
    state.store.end_sign_ins(&user.id).await?;
    Ok(signed_out(&state, Json(Done { ok: true }).into_response()))
}

/// Whether the sign-in `headers` carry gave its proof (the password, a passkey) within the
/// server's window: 403 `{reauth: true}` if not, which the page answers by asking for it.
pub async fn require_fresh(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    let proved = match cookie_token(headers) {
        Some(token) => state.store.token_proved_at(&token_hash(token)).await?,
        None => None,
    };
    let window = state.limits.fresh_proof.as_secs_f64();
    if proved.is_some_and(|at| crate::clock::now() - at <= window) {
        Ok(())
    } else {
        Err(ApiError::refusal(
            StatusCode::FORBIDDEN,
            "confirm it is you: give your password (or use a passkey) first",
        )
        .with("reauth", true))
    }
}

/// Records the proof given now for the sign-in `headers` carry.
pub async fn proved(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    if let Some(token) = cookie_token(headers) {
        state
            .store
            .prove_token(&token_hash(token), crate::clock::now())
            .await?;
    }
    Ok(())
}

/// `POST /api/auth/confirm {password}`: the password given again, counted as a sign-in
/// attempt is (per name and address, before it is checked).
pub async fn confirm(
    State(state): State<AppState>,
    viewer: Viewer,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    ApiJson(body): ApiJson<ConfirmBody>,
) -> Result<Json<Done>, ApiError> {
    let user = account(&viewer)?.clone();
    let keys = crate::throttle::keys(&user.name, &ip);
    let reservation = state
        .throttle
        .reserve(&keys, Instant::now())
        .map_err(crate::routes::sign_in::throttled_error)?;
    let hash = match state.store.user_credentials(&user.name).await {
        Ok((_, hash)) => hash,
        Err(StoreError::NotFound) => decoy_hash().to_owned(),
        Err(e) => return Err(e.into()),
    };
    let password = body.password;
    let matches = password.len() <= MAX_PASSWORD_BYTES
        && state
            .throttle
            .hash(move || verify_password(&password, &hash))
            .await
            .map_err(crate::routes::sign_in::throttled_error)?;
    if !matches {
        // 403, not 401: the browser is still signed in (401 sends the page to sign in).
        return Err(ApiError::refusal(
            StatusCode::FORBIDDEN,
            "that is not the password",
        ));
    }
    state.throttle.succeeded(reservation);
    proved(&state, &headers).await?;
    Ok(Json(Done { ok: true }))
}

#[cfg(test)]
mod tests {
    use super::device_of;

    #[test]
    fn a_browser_is_named_by_what_it_says() {
        let cases = [
            ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36", "Chrome on Linux"),
            ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1", "Safari on iPhone"),
            ("Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Mobile Safari/537.36", "Chrome on Android"),
            ("Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0", "Firefox on Windows"),
            ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36 Edg/131.0", "Edge on macOS"),
            ("curl/8.5.0", "curl/8.5.0"),
            ("", "A browser that did not say which"),
        ];
        for (agent, said) in cases {
            assert_eq!(device_of(agent), said, "{agent}");
        }
    }
}
