//! Keeping a request within the model's context: what is known of each model's window, the
//! estimate of a request's tokens, and which of the oldest messages to leave out.

use super::*;

/// Bytes of request per token assumed until the provider's usage reports tell better: few
/// enough that the estimate errs on the side of a shorter request (English runs about four
/// bytes a token, most other scripts fewer).
pub(super) const BYTES_PER_TOKEN: f64 = 3.0;

/// Tokens each message adds beyond its text (role markers, separators).
pub(super) const MESSAGE_OVERHEAD: u64 = 8;

/// The smallest context window believed (a smaller number in an error is not one).
pub(super) const MIN_WINDOW: u32 = 256;
/// The fewest tokens of answer a request must leave room for.
pub(super) const MIN_ANSWER: u64 = 16;

/// A turn's request within the model's context.
pub(super) struct Fitted {
    pub(super) messages: Vec<Value>,
    /// The tokens of answer the window leaves room for, by the estimate.
    pub(super) room: Option<u64>,
    /// How many of the earlier messages were left out (the oldest).
    pub(super) left_out: usize,
    /// The window they were fitted to.
    pub(super) window: Option<u64>,
    /// The request's estimated tokens (0 when no window is known).
    pub(super) used: u64,
    /// The tokens kept for the answer.
    pub(super) reserve: u64,
}

impl Fitted {
    /// The `context_status` event that says earlier messages were left out.
    pub(super) fn status(&self) -> Value {
        let kept = self.messages.len().saturating_sub(2);
        let window = self.window.unwrap_or_default();
        let turns = if self.left_out == 1 {
            "message".to_owned()
        } else {
            format!("{} messages", self.left_out)
        };
        json!({
            "status": "trimmed",
            "left_out": self.left_out,
            "kept": kept,
            "context_tokens": window,
            "message": format!(
                "Earlier context left out: the oldest {turns} of this conversation did not fit \
                 the model's context ({} tokens), so the model did not see them.",
                app::api::grouped(window)
            ),
        })
    }
}

/// The bytes of text a message carries (images count as a fixed amount).
pub(super) fn message_bytes(message: &Value) -> u64 {
    let content = &message["content"];
    let text = match content {
        Value::String(s) => s.len() as u64,
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p["text"].as_str() {
                Some(t) => t.len() as u64,
                // An image part: providers count a few hundred to a thousand tokens.
                None => 3_000,
            })
            .sum(),
        _ => 0,
    };
    let calls = message
        .get("tool_calls")
        .map_or(0, |c| c.to_string().len() as u64);
    text + calls
}

/// The bytes of a request's messages, as [`message_bytes`] counts them (its tools left out:
/// not every provider counts them in the prompt, and a ratio that included them could make a
/// later estimate too small).
pub(super) fn request_bytes(messages: &[Value]) -> u64 {
    messages.iter().map(message_bytes).sum()
}

/// A message that does not fit the model's context even alone: about `needed` tokens, for a
/// context of `window`.
pub(super) struct TooLong {
    pub(super) needed: u64,
    pub(super) window: u64,
}

impl TooLong {
    /// The failure that ends the turn; `refused`: the provider was sent it once and refused
    /// it (otherwise nothing was sent).
    pub(super) fn fail(self, refused: bool) -> Fail {
        let advice = "Shorten the message, or send it in parts over several messages.";
        Fail::Overflow {
            message: format!(
                "Your message is too long for this model: it comes to about {} tokens, and the \
                 model's context holds {} in all, for the message and the answer together.",
                app::api::grouped(self.needed),
                app::api::grouped(self.window)
            ),
            hint: if refused {
                format!("The model refused it as too long. {advice}")
            } else {
                format!("{advice} Nothing was sent to the model.")
            },
            window: None,
        }
    }
}

/// A provider's "the request does not fit the context" error, read from its message and
/// error object (OpenAI's `context_length_exceeded`, llama.cpp's `exceed_context_size_error`,
/// vLLM's and llama-cpp-python's wording); `None` for any other error.
pub(super) fn overflow_error(text: &str, error: &Value) -> Option<Fail> {
    let lower = text.to_lowercase();
    let code = error["code"].as_str().unwrap_or_default();
    let kind = error["type"].as_str().unwrap_or_default();
    let phrases = [
        "context window",
        "context length",
        "context size",
        "context_length_exceeded",
        "exceed_context_size",
        "prompt is too long",
    ];
    let matched = code == "context_length_exceeded"
        || kind == "exceed_context_size_error"
        || phrases.iter().any(|p| lower.contains(p));
    if !matched {
        return None;
    }
    let named = ["n_ctx", "context_length", "max_context_length"]
        .iter()
        .find_map(|k| error[*k].as_u64())
        .or_else(|| {
            [
                "context window of ",
                "maximum context length is ",
                "context size (",
                "context length of ",
                "context length is ",
            ]
            .iter()
            .find_map(|p| {
                let at = lower.find(p)? + p.len();
                // The number right after the phrase (a space or a parenthesis between).
                let rest = lower[at..].trim_start_matches([' ', '(']);
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                digits.parse().ok()
            })
        })
        .and_then(|w| u32::try_from(w).ok())
        .filter(|w| *w >= MIN_WINDOW);
    let detail: String = error["message"]
        .as_str()
        .unwrap_or(text)
        .trim()
        .chars()
        .take(300)
        .collect();
    let size = named.map_or_else(String::new, |w| {
        format!(" of {} tokens", app::api::grouped(u64::from(w)))
    });
    Some(Fail::Overflow {
        message: format!(
            "The conversation no longer fits the model's context{size}. The provider said: \
             {detail}"
        ),
        hint: "Shorten your last message, or start a new conversation. With --context-tokens \
               set to the model's context size, Anchorage leaves the oldest turns out by itself."
            .to_owned(),
        window: named,
    })
}

impl OpenAiAgent {
    pub(super) fn lock_contexts(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, ContextInfo>> {
        self.contexts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The context window of `model`: the configured one, or what the provider told (the
    /// smaller, when both are known).
    pub(super) fn window(&self, model: &str) -> Option<u32> {
        let (listed, learned) = self
            .lock_contexts()
            .get(model)
            .map_or((None, None), |c| (c.listed, c.learned));
        [self.settings.context_tokens, listed, learned]
            .into_iter()
            .flatten()
            .min()
    }

    pub(super) fn learn_window(&self, model: &str, window: Option<u32>) {
        if let Some(window) = window.filter(|w| *w >= MIN_WINDOW) {
            let mut contexts = self.lock_contexts();
            if contexts.len() < MODELS_LIMIT || contexts.contains_key(model) {
                contexts.entry(model.to_owned()).or_default().learned = Some(window);
            }
        }
    }

    /// Keeps how many bytes of request a prompt token was, from a usage report (for
    /// requests large enough to tell).
    pub(super) fn learn_bytes_per_token(&self, model: &str, bytes: u64, prompt_tokens: u64) {
        // Only from requests whose messages far outweigh the tools (which a provider may or
        // may not count): their ratio is the text's, give or take a fifth.
        let tools = tool_schemas().to_string().len() as u64;
        if prompt_tokens < 32 || bytes < 4 * tools {
            return;
        }
        let ratio = (bytes as f64 / prompt_tokens as f64).clamp(2.0, 5.0);
        let mut contexts = self.lock_contexts();
        if contexts.len() < MODELS_LIMIT || contexts.contains_key(model) {
            contexts
                .entry(model.to_owned())
                .or_default()
                .bytes_per_token = Some(ratio);
        }
    }

    /// The request for a turn: the system prompt, as many of the latest earlier messages as
    /// fit the model's context with room left for the answer, and the user's message. The
    /// oldest go first, a turn (a user message and what answered it) at a time. A message
    /// that does not fit even alone is refused before the provider is asked.
    pub(super) fn fit(
        &self,
        model: &str,
        system: &Value,
        history: &[Value],
        current: &Value,
    ) -> Result<Fitted, TooLong> {
        let mut messages = Vec::with_capacity(history.len() + 2);
        messages.push(system.clone());
        let Some(window) = self.window(model) else {
            messages.extend(history.iter().cloned());
            messages.push(current.clone());
            return Ok(Fitted {
                messages,
                room: None,
                left_out: 0,
                window: None,
                used: 0,
                reserve: 0,
            });
        };
        let per_byte = 1.0
            / self
                .lock_contexts()
                .get(model)
                .and_then(|c| c.bytes_per_token)
                .unwrap_or(BYTES_PER_TOKEN);
        let tokens = |m: &Value| -> u64 {
            (message_bytes(m) as f64 * per_byte).ceil() as u64 + MESSAGE_OVERHEAD
        };
        let tools = (tool_schemas().to_string().len() as f64 * per_byte).ceil() as u64;
        let window = u64::from(window);
        // Room kept for the answer: the answer limit, at most half of the window.
        let reserve = self
            .settings
            .max_tokens
            .map_or(window / 4, u64::from)
            .min(window / 2);
        let needed = tokens(system) + tokens(current) + tools;
        if needed + MIN_ANSWER > window {
            return Err(TooLong { needed, window });
        }
        let budget = window.saturating_sub(reserve).max(needed);
        let mut used = needed;
        let mut kept = needed;
        // Walk back from the newest earlier message; keep whole turns.
        let mut start = history.len();
        let mut at = history.len();
        loop {
            if at == 0 {
                start = 0;
                break;
            }
            at -= 1;
            used += tokens(&history[at]);
            if used > budget {
                break;
            }
            if history[at]["role"] == "user" {
                start = at;
                kept = used;
            }
        }
        if start == 0 {
            kept = used.min(budget);
        }
        messages.extend(history[start..].iter().cloned());
        messages.push(current.clone());
        Ok(Fitted {
            messages,
            room: Some(window.saturating_sub(kept).max(MIN_ANSWER)),
            left_out: start,
            window: Some(window),
            used: kept,
            reserve,
        })
    }

    pub(super) async fn report_usage(
        &self,
        usage: Option<(u64, u64)>,
        io: &RunIo,
    ) -> Result<Option<Value>, Stopped> {
        let Some((input, output)) = usage else {
            return Ok(None);
        };
        let usage = json!({"input_tokens": input, "output_tokens": output});
        io.emit(EventKind::Usage, usage.clone()).await?;
        Ok(Some(usage))
    }
}
