//! Calls to the JSON API from the browser.

use gloo_net::http::Request;
use serde_json::Value;

/// A failed API call.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The HTTP status (0: no response).
    pub status: u16,
    /// The server's `error`, or what went wrong.
    pub message: String,
}

/// POSTs JSON and returns the JSON answer.
pub async fn post(path: &str, body: &Value) -> Result<Value, Failure> {
    let request = Request::post(path).json(body).map_err(|e| Failure {
        status: 0,
        message: e.to_string(),
    })?;
    answer(request.send().await).await
}

/// Uploads a file as an attachment (for `session`, when it exists) and returns the JSON
/// answer (`{"attachment": …}`).
pub async fn upload(file: &web_sys::File, session: Option<&str>) -> Result<Value, Failure> {
    let mut path = format!("/api/attachments?name={}", encode(&file.name()));
    if let Some(session) = session {
        path.push_str(&format!("&session_id={}", encode(session)));
    }
    let request = Request::post(&path)
        .header("content-type", "application/octet-stream")
        .body(file.clone())
        .map_err(|e| Failure {
            status: 0,
            message: e.to_string(),
        })?;
    answer(request.send().await).await
}

/// GETs JSON.
pub async fn get(path: &str) -> Result<Value, Failure> {
    answer(Request::get(path).send().await).await
}

async fn answer(
    response: Result<gloo_net::http::Response, gloo_net::Error>,
) -> Result<Value, Failure> {
    let response = response.map_err(|e| Failure {
        status: 0,
        message: format!("The server could not be reached ({e})."),
    })?;
    let status = response.status();
    if status == 401 {
        // Signed out meanwhile (elsewhere, by a password change, or expired): sign in again
        // and come back here. What was typed is kept as a draft.
        to_login(true);
    }
    let body: Value = response.json().await.unwrap_or(Value::Null);
    if (200..300).contains(&status) {
        Ok(body)
    } else {
        let message = body["error"]
            .as_str()
            .unwrap_or("request failed")
            .to_owned();
        Err(Failure { status, message })
    }
}

/// Goes to the sign-in page (coming back to this address after, when `come_back`).
pub fn to_login(come_back: bool) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let location = window.location();
    let mut target = "/login".to_owned();
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
