//! The provider's model list: asked for, kept a while, and read for a window size.

use super::context::MIN_WINDOW;
use super::*;

/// How long the provider's model list is used before it is asked for again.
pub(super) const MODELS_TTL: Duration = Duration::from_secs(600);

/// How often a refresh may ask the provider.
pub(super) const MODELS_REFRESH: Duration = Duration::from_secs(2);

/// The context window a model list entry states (vLLM's `max_model_len`, OpenRouter's and
/// LM Studio's `context_length`, llama.cpp's `meta.n_ctx`, …).
pub(super) fn listed_window(model: &Value) -> Option<u32> {
    let stated = [
        &model["context_length"],
        &model["context_window"],
        &model["max_model_len"],
        &model["max_context_length"],
        &model["loaded_context_length"],
        &model["meta"]["n_ctx"],
    ];
    stated
        .iter()
        .find_map(|v| v.as_u64())
        .and_then(|w| u32::try_from(w).ok())
        .filter(|w| *w >= MIN_WINDOW)
}

impl OpenAiAgent {
    pub(super) fn lock_models(
        &self,
    ) -> std::sync::MutexGuard<'_, Option<(std::time::Instant, Vec<String>)>> {
        self.models.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `GET {base}/models`: the ids of the provider's models, sorted.
    pub(super) async fn fetch_models(&self) -> Result<Vec<String>, String> {
        let url = format!("{}/models", self.settings.base_url.trim_end_matches('/'));
        let shown = crate::runtime::shown_url(&self.settings.base_url);
        let base = shown.trim_end_matches('/');
        let response = self
            .client
            .get(url)
            .bearer_auth(self.settings.api_key.expose())
            .timeout(Duration::from_secs(20))
            .send()
            .await
            .map_err(|e| format!("Cannot reach the model provider at {base}: {e}."))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!(
                "The model provider at {base} answered {} to GET /models.",
                status.as_u16()
            ));
        }
        let body = crate::runtime::json_body(response, crate::runtime::JSON_BODY_BYTES)
            .await
            .map_err(|e| format!("The model list of {base} is not the JSON expected ({e})."))?;
        let listed: Vec<(String, Option<u32>)> = body["data"]
            .as_array()
            .map(|models| {
                models
                    .iter()
                    .filter_map(|m| Some((m["id"].as_str()?, listed_window(m))))
                    .filter(|(id, _)| {
                        !id.trim().is_empty() && id.len() <= crate::runtime::MAX_MODEL_ID_BYTES
                    })
                    .take(MODELS_LIMIT)
                    .map(|(id, window)| (id.to_owned(), window))
                    .collect()
            })
            .unwrap_or_default();
        {
            let mut contexts = self.lock_contexts();
            for (id, window) in &listed {
                if window.is_some() && (contexts.len() < MODELS_LIMIT || contexts.contains_key(id))
                {
                    contexts.entry(id.clone()).or_default().listed = *window;
                }
            }
        }
        let mut ids: Vec<String> = listed.into_iter().map(|(id, _)| id).collect();
        ids.sort();
        ids.dedup();
        ids.truncate(MODELS_LIMIT);
        Ok(ids)
    }
}
