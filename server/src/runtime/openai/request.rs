//! One request to the provider, and what it turned out not to accept (its quirks); an HTTP
//! error in words the reader can act on.

use super::content::{has_image, without_images};
use super::context::overflow_error;
use super::*;

/// A readable error for a non-2xx response.
pub(super) fn http_error(status: u16, body: &str) -> Fail {
    let detail = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v["error"]["message"]
                .as_str()
                .or_else(|| v["error"].as_str())
                .or_else(|| v["message"].as_str())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| body.trim().chars().take(200).collect());
    let detail = if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    };
    match status {
        401 | 403 => fail(
            format!("The model provider rejected the API key (HTTP {status}){detail}"),
            "Check OPENAI_API_KEY.".to_owned(),
        ),
        404 => fail(
            format!("The model provider has no such endpoint or model (HTTP 404){detail}"),
            "Check --model and --openai-base-url (it usually ends in /v1).".to_owned(),
        ),
        429 => fail(
            format!("The model provider is rate limiting requests (HTTP 429){detail}"),
            "Wait a moment and send the message again, or check your plan's quota.".to_owned(),
        ),
        500..=599 => fail(
            format!("The model provider had a server error (HTTP {status}){detail}"),
            "This is usually temporary: send the message again in a moment.".to_owned(),
        ),
        _ => fail(
            format!("The model provider refused the request (HTTP {status}){detail}"),
            None,
        ),
    }
}

impl OpenAiAgent {
    /// Sends one streaming request. A provider that rejects `stream_options` or `tools` with
    /// HTTP 400 (older local servers, models without tool support) is asked again without
    /// them, and remembered.
    pub(super) async fn request(
        &self,
        messages: &[Value],
        model: &str,
        limit: Option<u32>,
        io: &RunIo,
    ) -> Result<reqwest::Response, Fail> {
        let with_images = messages.iter().any(has_image);
        loop {
            let (no_usage, no_tools, no_images, completion_tokens_name) = {
                let q = self.lock_quirks();
                (
                    q.no_stream_options,
                    q.no_tools,
                    q.no_images.contains(model),
                    q.completion_tokens_name,
                )
            };
            let named_only;
            let sent = if with_images && no_images {
                named_only = messages.iter().map(without_images).collect::<Vec<_>>();
                &named_only[..]
            } else {
                messages
            };
            let mut body = json!({
                "model": model,
                "messages": sent,
                "stream": true,
            });
            if !no_tools {
                body["tools"] = tool_schemas();
            }
            if !no_usage {
                body["stream_options"] = json!({"include_usage": true});
            }
            if let Some(limit) = limit {
                let name = if completion_tokens_name {
                    "max_completion_tokens"
                } else {
                    "max_tokens"
                };
                body[name] = json!(limit);
            }
            let request = self
                .client
                .post(self.url())
                .bearer_auth(self.settings.api_key.expose())
                .json(&body)
                .send();
            // The answer's headers may wait for the model to think: the first bound.
            let first = self.settings.first_token.max(self.settings.idle);
            let response = io
                .unless_stopped(tokio::time::timeout(first, request))
                .await?;
            let Ok(response) = response else {
                return Err(fail(
                    "The model provider accepted the connection but did not answer.",
                    format!(
                        "No response within {} s. Check that the server at {} is healthy.",
                        first.as_secs(),
                        crate::runtime::shown_url(&self.settings.base_url)
                    ),
                ));
            };
            let response = response.map_err(|e| {
                fail(
                    format!(
                        "Cannot reach the model provider at {}.",
                        crate::runtime::shown_url(&self.settings.base_url)
                    ),
                    format!("{e}. Check --openai-base-url and that the server is running."),
                )
            })?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            let text = io
                .unless_stopped(tokio::time::timeout(
                    Duration::from_secs(10),
                    crate::runtime::body_prefix(response, crate::runtime::ERROR_BODY_BYTES),
                ))
                .await?
                .unwrap_or_default();
            if matches!(status.as_u16(), 400 | 413 | 422 | 500) {
                let error = serde_json::from_str::<Value>(&text)
                    .map(|v| v["error"].clone())
                    .unwrap_or(Value::Null);
                if let Some(overflow) = overflow_error(&text, &error) {
                    return Err(overflow);
                }
            }
            if status.as_u16() == 400 {
                let lower = text.to_lowercase();
                let mut q = self.lock_quirks();
                if !q.no_stream_options && lower.contains("stream_options") {
                    tracing::warn!("the provider rejects stream_options; asking without it");
                    q.no_stream_options = true;
                    continue;
                }
                if !q.completion_tokens_name
                    && self.settings.max_tokens.is_some()
                    && lower.contains("max_completion_tokens")
                    && (lower.contains("unsupported") || lower.contains("instead"))
                {
                    tracing::warn!("the provider wants max_completion_tokens; asking with it");
                    q.completion_tokens_name = true;
                    continue;
                }
                let rejects_tools = [
                    "does not support tools",
                    "tools are not supported",
                    "tool use is not supported",
                    "tool_choice",
                    "enable-auto-tool-choice",
                    "unrecognized request argument supplied: tools",
                    "unknown field `tools`",
                ]
                .iter()
                .any(|p| lower.contains(p));
                let rejects_images = [
                    "image",
                    "vision",
                    "multimodal",
                    "content part",
                    "content type",
                    "array",
                ]
                .iter()
                .any(|p| lower.contains(p));
                if with_images && !no_images && rejects_images {
                    tracing::warn!(model, "the model refuses images; naming them instead");
                    q.no_images.insert(model.to_owned());
                    continue;
                }
                let used_tools = messages.iter().any(|m| m["role"] == "tool");
                if !q.no_tools && rejects_tools && !used_tools {
                    tracing::warn!("the provider rejects tools; asking without them");
                    q.no_tools = true;
                    continue;
                }
            }
            return Err(http_error(status.as_u16(), &text));
        }
    }

    pub(super) fn lock_quirks(&self) -> std::sync::MutexGuard<'_, Quirks> {
        self.quirks.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(f: Fail) -> (String, Option<String>) {
        match f {
            Fail::Error { message, hint } => (message, hint),
            Fail::Overflow { message, hint, .. } => (message, Some(hint)),
            Fail::Stopped => panic!("not an error"),
        }
    }

    #[test]
    fn http_errors_read_like_advice() {
        let (m, h) = message(http_error(
            401,
            r#"{"error":{"message":"Incorrect API key provided"}}"#,
        ));
        assert!(m.contains("rejected the API key (HTTP 401): Incorrect API key"));
        assert_eq!(h.as_deref(), Some("Check OPENAI_API_KEY."));
        let (m, h) = message(http_error(429, "slow down"));
        assert!(m.contains("HTTP 429): slow down"));
        assert!(h.unwrap().contains("Wait a moment"));
        let (m, _) = message(http_error(503, ""));
        assert!(m.ends_with("(HTTP 503)"));
    }
}
