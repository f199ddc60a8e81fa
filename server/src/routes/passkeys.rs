//! Passkeys (WebAuthn): an account signed in adds them in Settings (after giving its password,
//! or another passkey, within the last few minutes: `devices::require_fresh`); the sign-in
//! page then offers "Sign in with a passkey". Each ceremony is two requests: `start` seals the
//! state webauthn-rs will check the browser's answer against and hands it to the browser as
//! the ceremony's id (`crate::ceremony`: nothing is kept per ceremony begun, so strangers
//! beginning many crowd out no one's), `finish` opens it, checks the answer, and records the
//! ceremony answered (once only, on any instance).
//!
//! Passkeys are discoverable (the authenticator keeps whose they are): signing in asks for no
//! name, and the server never says which names have passkeys. The key that answers names its
//! account; the signature proves it. Signing in with one counts against the address's sign-in
//! attempts as a password does; beginning one is counted per address too.
//!
//! The relying party is the address the browser is at: `--public-url`'s, else the request's
//! host (which the guard has admitted). A passkey is bound to that name; an IP address is no
//! name a browser accepts, so there the routes say to use `localhost` or the public address.

use app::api::{
    CeremonyStart, Done, PasskeyAnswer, PasskeyData, PasskeyFinishBody, PasskeyList,
    PasskeyRenameBody, RevokeBody,
};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use webauthn_rs::prelude::{
    DiscoverableAuthentication, DiscoverableKey, Passkey, PasskeyRegistration, PublicKeyCredential,
    RegisterPublicKeyCredential, Url, Uuid, Webauthn, WebauthnBuilder,
};

use crate::auth::{ClientIp, Viewer};
use crate::ceremony::{Sealed, Unsealed};
use crate::error::{ApiError, ApiJson};
use crate::routes::devices::{proved, require_fresh};
use crate::routes::sign_in::{signed_in, throttled_error, Way};
use crate::store::{StoreError, StoredPasskey, User};
use crate::AppState;

/// The most passkeys an account keeps (429 past it).
pub const MAX_PASSKEYS: u32 = 20;
/// How long a ceremony waits for the browser's answer (seconds).
const CEREMONY_SECS: f64 = 300.0;
/// The longest name a passkey is given (characters).
const MAX_NAME_CHARS: usize = 60;
const REGISTER: &str = "register";
const SIGN_IN: &str = "sign_in";

/// The relying party for a request: the site as the browser addresses it.
fn relying_party(state: &AppState, headers: &HeaderMap) -> Result<Webauthn, ApiError> {
    let origin = match &state.public_url {
        Some(public) => public.origin.clone(),
        None => {
            let host = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or_default();
            // A name and a port only: nothing else may shape the origin.
            let plain = host.split_once(':').map_or(host, |(name, port)| {
                if port.chars().all(|c| c.is_ascii_digit()) {
                    name
                } else {
                    ""
                }
            });
            let name_ok = !plain.is_empty()
                && plain
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
            if !name_ok {
                return Err(ApiError::bad_request(
                    "passkeys belong to a name, not an IP address: open Anchorage at localhost or at \
                     its public address to use them",
                ));
            }
            format!("http://{host}")
        }
    };
    let origin = Url::parse(&origin).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let Some(rp_id) = origin.domain().map(str::to_owned) else {
        return Err(ApiError::bad_request(
            "passkeys belong to a name, not an IP address: open Anchorage at localhost or at \
             its public address to use them",
        ));
    };
    WebauthnBuilder::new(&rp_id, &origin)
        .and_then(|b| b.rp_name("Anchorage").build())
        .map_err(|e| ApiError::bad_request(format!("passkeys are not available here: {e}")))
}

fn account(viewer: &Viewer) -> Result<&User, ApiError> {
    viewer.user().ok_or_else(|| {
        ApiError::bad_request(
            "passkeys belong to accounts, and this server has none: add one with `server user add`",
        )
    })
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::internal(&e)
}

fn data_of(p: &StoredPasskey) -> PasskeyData {
    PasskeyData {
        id: p.id.clone(),
        name: p.name.clone(),
        created_at: p.created_at,
        last_used_at: p.last_used_at,
        in_use: false,
    }
}

/// A passkey's name as given: trimmed, control characters out; refused empty or too long.
fn given_name(name: &str) -> Result<String, ApiError> {
    let name: String = name.trim().chars().filter(|c| !c.is_control()).collect();
    if name.is_empty() {
        return Err(ApiError::bad_request("a passkey needs a name"));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(ApiError::bad_request(format!(
            "a passkey's name is at most {MAX_NAME_CHARS} characters"
        ))
        .with("limit", "passkey_name"));
    }
    Ok(name)
}

/// The name a new passkey gets when none is given: the browser and system that made it
/// ("Chrome on Android"), told apart from the account's others ("Chrome on Android (2)").
fn device_name(headers: &HeaderMap, taken: &[StoredPasskey]) -> String {
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let base: String = crate::routes::devices::device_of(agent)
        .chars()
        .take(MAX_NAME_CHARS - 5)
        .collect();
    let free = |name: &str| !taken.iter().any(|p| p.name == name);
    if free(&base) {
        return base;
    }
    (2..)
        .map(|n| format!("{base} ({n})"))
        .find(|name| free(name))
        .unwrap_or(base)
}

/// The answer to a ceremony that cannot be answered (expired, answered, not sealed here).
fn stale() -> ApiError {
    ApiError::bad_request("this passkey request expired or was answered already: start again")
}

/// The server's key for sealing ceremonies (read once).
async fn key(state: &AppState) -> Result<&[u8], ApiError> {
    state
        .ceremony_key
        .get_or_try_init(|| state.store.ceremony_key())
        .await
        .map(Vec::as_slice)
        .map_err(ApiError::from)
}

/// The ceremony `id` of `kind`, opened: whose it is and its state.
async fn open<T: serde::de::DeserializeOwned>(
    state: &AppState,
    id: &str,
    kind: &str,
) -> Result<(Sealed, T), ApiError> {
    let sealed = crate::ceremony::open(key(state).await?, id, kind, crate::clock::now()).map_err(
        |e| match e {
            Unsealed::Forged | Unsealed::Expired => stale(),
        },
    )?;
    let parsed = serde_json::from_value(sealed.state.clone()).map_err(internal)?;
    Ok((sealed, parsed))
}

/// Records the ceremony answered: a second answer to it is refused, on any instance.
async fn answered(state: &AppState, sealed: &Sealed) -> Result<(), ApiError> {
    state
        .store
        .answer_ceremony(&sealed.nonce, sealed.expires_at, crate::clock::now())
        .await
        .map_err(|e| match e {
            StoreError::NotFound => stale(),
            e => e.into(),
        })
}

/// A ceremony's id: its state sealed, with whose it is (if anyone's yet).
async fn keep(
    state: &AppState,
    user_id: Option<&str>,
    kind: &str,
    saved: &impl serde::Serialize,
) -> Result<String, ApiError> {
    let sealed = Sealed {
        kind: kind.to_owned(),
        user_id: user_id.map(str::to_owned),
        expires_at: crate::clock::now() + CEREMONY_SECS,
        nonce: Uuid::new_v4().simple().to_string(),
        state: serde_json::to_value(saved).map_err(internal)?,
    };
    Ok(crate::ceremony::seal(key(state).await?, &sealed))
}

fn parse_passkey(stored: &StoredPasskey) -> Result<Passkey, ApiError> {
    serde_json::from_str(&stored.passkey).map_err(internal)
}

/// `GET /api/passkeys`: the viewer's, the one this browser signed in with marked.
pub async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
) -> Result<Json<PasskeyList>, ApiError> {
    let Some(user) = viewer.user() else {
        return Ok(Json(PasskeyList {
            passkeys: Vec::new(),
        }));
    };
    let passkeys = state.store.passkeys(&user.id).await?;
    let current = crate::routes::devices::current_id(&headers);
    let in_use = state
        .store
        .sign_ins(&user.id, crate::clock::now())
        .await?
        .into_iter()
        .find(|s| current.as_deref() == Some(s.id.as_str()))
        .and_then(|s| s.passkey_id);
    Ok(Json(PasskeyList {
        passkeys: passkeys
            .iter()
            .map(|p| PasskeyData {
                in_use: in_use.as_deref() == Some(p.id.as_str()),
                ..data_of(p)
            })
            .collect(),
    }))
}

/// `POST /api/passkeys/rename {id, name}`: 404 for one that is not the viewer's, 400 for a
/// name empty or too long.
pub async fn rename(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<PasskeyRenameBody>,
) -> Result<Json<Done>, ApiError> {
    let user = account(&viewer)?;
    let name = given_name(&body.name)?;
    state
        .store
        .rename_passkey(&user.id, &body.id, &name)
        .await
        .map_err(|e| match e {
            StoreError::NotFound => ApiError::not_found("passkey"),
            e => e.into(),
        })?;
    Ok(Json(Done { ok: true }))
}

/// `POST /api/passkeys/register/start`: the options for `navigator.credentials.create`.
pub async fn register_start(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
) -> Result<Json<CeremonyStart>, ApiError> {
    let user = account(&viewer)?;
    // A cookie alone (borrowed, stolen) adds no lasting way in.
    require_fresh(&state, &headers).await?;
    let rp = relying_party(&state, &headers)?;
    let handle = Uuid::parse_str(&user.id).map_err(internal)?;
    // The authenticator is told which of its keys this account has already.
    let existing = state
        .store
        .passkeys(&user.id)
        .await?
        .iter()
        .map(|p| parse_passkey(p).map(|k| k.cred_id().clone()))
        .collect::<Result<Vec<_>, _>>()?;
    let (options, registration) = rp
        .start_passkey_registration(handle, &user.name, &user.name, Some(existing))
        .map_err(|e| ApiError::bad_request(format!("cannot begin adding a passkey: {e}")))?;
    let ceremony = keep(&state, Some(&user.id), REGISTER, &registration).await?;
    let mut options = serde_json::to_value(options).map_err(internal)?;
    discoverable(&mut options);
    Ok(Json(CeremonyStart { ceremony, options }))
}

/// Asks the authenticator to keep whose the new passkey is (a discoverable credential), so
/// that signing in needs no name. webauthn-rs's passkey registration leaves it to the
/// authenticator (phones and password managers keep it anyway; security keys may not).
fn discoverable(options: &mut serde_json::Value) {
    if let Some(selection) = options
        .pointer_mut("/publicKey/authenticatorSelection")
        .and_then(serde_json::Value::as_object_mut)
    {
        selection.insert("residentKey".into(), json!("required"));
        selection.insert("requireResidentKey".into(), json!(true));
    }
}

/// `POST /api/passkeys/register/finish`: keeps the new passkey.
pub async fn register_finish(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
    ApiJson(body): ApiJson<PasskeyFinishBody>,
) -> Result<Json<PasskeyAnswer>, ApiError> {
    let user = account(&viewer)?;
    let rp = relying_party(&state, &headers)?;
    let (sealed, registration): (Sealed, PasskeyRegistration) =
        open(&state, &body.ceremony, REGISTER).await?;
    if sealed.user_id.as_deref() != Some(user.id.as_str()) {
        return Err(stale());
    }
    let credential: RegisterPublicKeyCredential = serde_json::from_value(body.credential)
        .map_err(|e| ApiError::bad_request(format!("not a credential: {e}")))?;
    let passkey = rp
        .finish_passkey_registration(&credential, &registration)
        .map_err(|e| ApiError::bad_request(format!("the passkey was not accepted: {e}")))?;
    answered(&state, &sealed).await?;
    let held = state.store.passkeys(&user.id).await?;
    let name = body
        .name
        .map(|n| n.trim().chars().take(MAX_NAME_CHARS).collect::<String>())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| device_name(&headers, &held));
    let stored = StoredPasskey {
        id: format!("passkey-{}", Uuid::new_v4().simple()),
        user_id: user.id.clone(),
        credential_id: serde_json::to_value(passkey.cred_id())
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        name,
        passkey: serde_json::to_string(&passkey).map_err(internal)?,
        created_at: crate::clock::now(),
        last_used_at: None,
    };
    state
        .store
        .add_passkey(&stored, MAX_PASSKEYS)
        .await
        .map_err(|e| match e {
            StoreError::Database(sqlx::Error::Database(d)) if d.is_unique_violation() => {
                ApiError::conflict("this passkey is added already")
            }
            e => e.into(),
        })?;
    Ok(Json(PasskeyAnswer {
        passkey: data_of(&stored),
    }))
}

/// `POST /api/passkeys/remove {id}`: 404 for one that is not the viewer's.
pub async fn remove(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(body): ApiJson<RevokeBody>,
) -> Result<Json<Done>, ApiError> {
    let user = account(&viewer)?;
    state
        .store
        .remove_passkey(&user.id, &body.id)
        .await
        .map_err(|e| match e {
            StoreError::NotFound => ApiError::not_found("passkey"),
            e => e.into(),
        })?;
    Ok(Json(Done { ok: true }))
}

/// `POST /api/auth/passkey/start`: the options for `navigator.credentials.get`, for any
/// passkey of this site (no name: which names have passkeys is nobody's business). Counted
/// per address; an address held back for failed sign-ins is held back here too.
pub async fn sign_in_start(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
) -> Result<Json<CeremonyStart>, ApiError> {
    let rp = relying_party(&state, &headers)?;
    let address = [crate::throttle::address_key(&ip)];
    let now = std::time::Instant::now();
    state
        .throttle
        .sign_ins
        .check(&address, now)
        .map_err(throttled_error)?;
    state
        .throttle
        .ceremonies
        .reserve(&address, now)
        .map_err(throttled_error)?;
    let (options, authentication) = rp
        .start_discoverable_authentication()
        .map_err(|e| ApiError::bad_request(format!("cannot begin: {e}")))?;
    // Nobody's yet: the key that answers says whose it is.
    let ceremony = keep(&state, None, SIGN_IN, &authentication).await?;
    let mut options = serde_json::to_value(options).map_err(internal)?;
    // A button asks, not the name field's autofill: the browser's own dialog, at once.
    if let Some(fields) = options.as_object_mut() {
        fields.remove("mediation");
    }
    Ok(Json(CeremonyStart { ceremony, options }))
}

/// `POST /api/auth/passkey/finish`: checks the signature and signs this browser in. Counted
/// against the address's sign-in attempts until it signs in.
pub async fn sign_in_finish(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    ApiJson(body): ApiJson<PasskeyFinishBody>,
) -> Response {
    let address = [crate::throttle::address_key(&ip)];
    let reservation = match state.throttle.reserve(&address, std::time::Instant::now()) {
        Ok(reservation) => reservation,
        Err(refused) => return throttled_error(refused).into_response(),
    };
    match finish_sign_in(&state, &headers, body).await {
        Ok((user, passkey_id)) => {
            state.throttle.succeeded(reservation);
            let answer = Json(json!({ "user": user })).into_response();
            let way = Way::from(&ip, &headers, Some(passkey_id));
            signed_in(&state, &user, way, answer).await
        }
        Err(e) => e.into_response(),
    }
}

/// `POST /api/auth/confirm/passkey`: a passkey of the viewer's account answers a sign-in
/// ceremony: the fresh proof, as the password would be. Counted as a sign-in attempt.
pub async fn confirm(
    State(state): State<AppState>,
    viewer: Viewer,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    ApiJson(body): ApiJson<PasskeyFinishBody>,
) -> Result<Json<Done>, ApiError> {
    let user = account(&viewer)?.clone();
    let keys = crate::throttle::keys(&user.name, &ip);
    let reservation = state
        .throttle
        .reserve(&keys, std::time::Instant::now())
        .map_err(throttled_error)?;
    // 403, not 401, when it proves nothing: the browser is still signed in.
    let not_you = || {
        ApiError::refusal(
            StatusCode::FORBIDDEN,
            "that passkey did not confirm it is you: use the password",
        )
    };
    let (signer, _) =
        finish_sign_in(&state, &headers, body)
            .await
            .map_err(|e| match e.status() {
                StatusCode::UNAUTHORIZED => not_you(),
                _ => e,
            })?;
    if signer.id != user.id {
        return Err(not_you());
    }
    state.throttle.succeeded(reservation);
    proved(&state, &headers).await?;
    Ok(Json(Done { ok: true }))
}

/// The account a sign-in ceremony's answer proves, and the passkey that signed.
async fn finish_sign_in(
    state: &AppState,
    headers: &HeaderMap,
    body: PasskeyFinishBody,
) -> Result<(User, String), ApiError> {
    let rp = relying_party(state, headers)?;
    let (sealed, authentication): (Sealed, DiscoverableAuthentication) =
        open(state, &body.ceremony, SIGN_IN).await?;
    let credential: PublicKeyCredential = serde_json::from_value(body.credential)
        .map_err(|e| ApiError::bad_request(format!("not a credential: {e}")))?;
    let refused = || {
        ApiError::refusal(
            StatusCode::UNAUTHORIZED,
            "the passkey did not sign in: use the password",
        )
    };
    // Whose the key says it is; its signature, checked against that account's keys, proves it.
    let (handle, _) = rp
        .identify_discoverable_authentication(&credential)
        .map_err(|_| refused())?;
    let user_id = handle.simple().to_string();
    let stored = state.store.passkeys(&user_id).await?;
    let keys = stored
        .iter()
        .map(|p| parse_passkey(p).map(|k| DiscoverableKey::from(&k)))
        .collect::<Result<Vec<_>, _>>()?;
    if keys.is_empty() {
        return Err(ApiError::refusal(
            StatusCode::UNAUTHORIZED,
            "that passkey was removed: use the password",
        ));
    }
    let result = rp
        .finish_discoverable_authentication(&credential, authentication, &keys)
        .map_err(|_| refused())?;
    // Once only: a signed answer seen again (replayed) signs nobody in.
    answered(state, &sealed).await?;
    // The key that signed must still be the account's (one removed since the ceremony began
    // signs nobody in); its counter (and backup state) moves on.
    let now = crate::clock::now();
    let mut signer = None;
    for stored in stored {
        let mut key = parse_passkey(&stored)?;
        if key.update_credential(&result).is_some() {
            let updated = serde_json::to_string(&key).map_err(internal)?;
            state.store.used_passkey(&stored.id, &updated, now).await?;
            signer = Some(stored.id);
        }
    }
    let Some(passkey_id) = signer else {
        return Err(ApiError::refusal(
            StatusCode::UNAUTHORIZED,
            "that passkey was removed: use the password",
        ));
    };
    let user = state
        .store
        .users()
        .await?
        .into_iter()
        .find(|u| u.id == user_id)
        .ok_or_else(|| ApiError::refusal(StatusCode::UNAUTHORIZED, "that account is gone"))?;
    Ok((user, passkey_id))
}
