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

/// URL-encodes a query value.
pub fn encode(value: &str) -> String {
    js_sys::encode_uri_component(value)
        .as_string()
        .unwrap_or_default()
}
