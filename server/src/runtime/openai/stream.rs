//! Reading a streamed model response: text, reasoning (also `<think>` inside the text) and
//! tool calls as they arrive, each bounded.

use super::context::overflow_error;
use super::*;

/// The most bytes of arguments one tool call may stream.
pub(super) const MAX_ARGS_BYTES: usize = 1 << 20;
/// The longest tool name accepted, in bytes.
pub(super) const MAX_NAME_BYTES: usize = 256;

/// Separates `<think>…</think>` reasoning that some local servers put inside the content
/// (DeepSeek-R1 and Qwen through older Ollama or llama.cpp builds) from the answer, across
/// chunk boundaries. A `<think>` is only recognized before any visible answer text, so an
/// answer that talks about the tag keeps it.
#[derive(Debug, Default)]
pub(super) struct ThinkSplitter {
    inside: bool,
    answered: bool,
    pending: String,
}

impl ThinkSplitter {
    const OPEN: &'static str = "<think>";
    const CLOSE: &'static str = "</think>";

    /// Feeds content; returns `(is_reasoning, text)` pieces ready to show.
    fn push(&mut self, text: &str) -> Vec<(bool, String)> {
        self.pending.push_str(text);
        let mut out = Vec::new();
        loop {
            if !self.inside && !self.answered {
                // Before the answer, only whitespace may precede an opening tag.
                let t = self.pending.trim_start();
                if !t.is_empty() && !t.starts_with(Self::OPEN) && !Self::OPEN.starts_with(t) {
                    self.answered = true;
                }
            }
            if !self.inside && self.answered {
                if !self.pending.is_empty() {
                    out.push((false, std::mem::take(&mut self.pending)));
                }
                return out;
            }
            let tag = if self.inside { Self::CLOSE } else { Self::OPEN };
            if let Some(at) = self.pending.find(tag) {
                let before: String = self.pending[..at].to_owned();
                self.pending.drain(..at + tag.len());
                self.emit(&mut out, before);
                self.inside = !self.inside;
                continue;
            }
            // Hold back a tail that may be the start of the tag.
            let keep = (1..tag.len())
                .rev()
                .find(|k| self.pending.ends_with(&tag[..*k]))
                .unwrap_or(0);
            let ready: String = self.pending[..self.pending.len() - keep].to_owned();
            self.pending.drain(..self.pending.len() - keep);
            self.emit(&mut out, ready);
            return out;
        }
    }

    fn emit(&mut self, out: &mut Vec<(bool, String)>, text: String) {
        if text.is_empty() {
            return;
        }
        if !self.inside && !text.trim().is_empty() {
            self.answered = true;
        }
        // Whitespace before the opening tag is not an answer.
        if !self.inside && !self.answered {
            return;
        }
        out.push((self.inside, text));
    }

    /// What is left when the stream ends.
    fn finish(&mut self) -> Option<(bool, String)> {
        let rest = std::mem::take(&mut self.pending);
        (!rest.is_empty()).then_some((self.inside, rest))
    }
}

impl OpenAiAgent {
    /// One streamed call to the model.
    pub(super) async fn step(
        &self,
        messages: &[Value],
        model: &str,
        limit: Option<u32>,
        io: &RunIo,
    ) -> Result<Step, Fail> {
        let response = self.request(messages, model, limit, io).await?;
        let mut reader =
            EventReader::new(response, self.settings.idle).first_within(self.settings.first_token);
        let mut step = Step::default();
        let mut think = ThinkSplitter::default();
        let mut finished = false;
        // Whether anything of the answer (reasoning included) came.
        let mut said = false;
        loop {
            let next = io.unless_stopped(reader.next()).await?;
            let event = match next {
                Ok(Some(event)) => event,
                Ok(None) if finished => break,
                Ok(None) if !said => {
                    return Err(fail(
                        "The model provider closed the stream before it answered.",
                        "A local server does this when the request does not fit the model's \
                         context. Set --context-tokens to the model's context size so that \
                         older turns are left out, or start a new conversation."
                            .to_owned(),
                    ))
                }
                Ok(None) => {
                    return Err(fail(
                        "The model's answer was cut off: the provider closed the stream early.",
                        "The partial answer is kept; send the message again to retry.".to_owned(),
                    ))
                }
                Err(crate::runtime::sse::ReadError::Decode(e)) => {
                    return Err(fail(
                        format!("The model provider sent more than this server takes: {e}."),
                        "The partial answer is kept.".to_owned(),
                    ))
                }
                // Silent with the connection open (a stuck server, a proxy or NAT that
                // dropped it without a word): ended, never left looking live.
                Err(e @ crate::runtime::sse::ReadError::Idle(_)) => {
                    return Err(fail(
                        "The model stopped responding.",
                        format!("{e}. What it sent is kept; Retry asks again."),
                    ))
                }
                Err(e) => {
                    return Err(fail(
                        "The connection to the model provider was lost mid-answer.",
                        format!(
                            "{e}. The partial answer is kept; send the message again to retry."
                        ),
                    ))
                }
            };
            let data = event.data.trim();
            if data == "[DONE]" {
                break;
            }
            if data.is_empty() {
                continue;
            }
            let chunk: Value = serde_json::from_str(data).map_err(|e| {
                let shown: String = data.chars().take(120).collect();
                fail(
                    "The model provider sent a malformed stream chunk.",
                    format!("{e} in `{shown}`"),
                )
            })?;
            if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
                let message = error["message"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| error.to_string());
                if !said {
                    if let Some(overflow) = overflow_error(&message, error) {
                        return Err(overflow);
                    }
                }
                return Err(fail(
                    format!("The model provider reported an error: {message}"),
                    "The partial answer is kept; send the message again to retry.".to_owned(),
                ));
            }
            if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
                let (input, output) = crate::runtime::token_counts(u);
                step.usage = Some((input.unwrap_or(0), output.unwrap_or(0)));
            }
            let Some(choice) = chunk["choices"].get(0) else {
                continue;
            };
            let delta = &choice["delta"];
            let reasoning = delta["reasoning_content"]
                .as_str()
                .or_else(|| delta["reasoning"].as_str())
                .unwrap_or_default();
            if !reasoning.is_empty() {
                said = true;
                io.emit(EventKind::Reasoning, json!({ "text": reasoning }))
                    .await?;
            }
            if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
                said = true;
                for (reasoning, piece) in think.push(text) {
                    self.emit_text(&mut step, reasoning, &piece, io).await?;
                }
            }
            if let Some(calls) = delta["tool_calls"].as_array() {
                said |= !calls.is_empty();
                for piece in calls {
                    let piece_id = piece["id"].as_str().filter(|s| !s.is_empty());
                    let index = match piece["index"].as_u64() {
                        // Ollama numbers every call 0 and tells them apart by id only.
                        Some(i)
                            if piece_id.is_some_and(|id| {
                                step.calls
                                    .get(i as usize)
                                    .is_some_and(|c| !c.id.is_empty() && c.id != id)
                            }) =>
                        {
                            step.calls
                                .iter()
                                .position(|c| Some(c.id.as_str()) == piece_id)
                                .unwrap_or(step.calls.len())
                        }
                        Some(i) => (i as usize).min(63),
                        // Without an index (some local servers send each call whole): a new
                        // id is a new call, no id continues the newest one.
                        None => match piece_id {
                            Some(id) => step
                                .calls
                                .iter()
                                .position(|c| c.id == id)
                                .unwrap_or(step.calls.len()),
                            None => step.calls.len().saturating_sub(1),
                        },
                    };
                    let index = index.min(63);
                    while step.calls.len() <= index {
                        step.calls.push(Call::default());
                    }
                    let call = &mut step.calls[index];
                    if let Some(id) = piece["id"].as_str().filter(|s| !s.is_empty()) {
                        call.id = id.to_owned();
                    }
                    let function = &piece["function"];
                    if let Some(name) = function["name"].as_str() {
                        call.name.push_str(name);
                    }
                    match &function["arguments"] {
                        Value::String(args) => call.arguments.push_str(args),
                        // Some servers send the arguments as an object rather than JSON text.
                        args @ Value::Object(_) => call.arguments = args.to_string(),
                        _ => {}
                    }
                    if call.arguments.len() > MAX_ARGS_BYTES || call.name.len() > MAX_NAME_BYTES {
                        return Err(fail(
                            format!(
                                "The model sent a tool call larger than {} MiB, the most one \
                                 call may be.",
                                MAX_ARGS_BYTES >> 20
                            ),
                            "The partial answer is kept.".to_owned(),
                        ));
                    }
                }
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                finished = true;
                step.cut_off = reason == "length";
            }
        }
        if let Some((reasoning, piece)) = think.finish() {
            self.emit_text(&mut step, reasoning, &piece, io).await?;
        }
        step.calls.retain(|c| !c.name.is_empty());
        for (n, call) in step.calls.iter_mut().enumerate() {
            if call.id.is_empty() {
                call.id = format!("call_{}_{n}", uuid::Uuid::new_v4().simple());
            }
        }
        Ok(step)
    }

    /// Streams a piece of the model's text: reasoning, or answer prose.
    pub(super) async fn emit_text(
        &self,
        step: &mut Step,
        reasoning: bool,
        text: &str,
        io: &RunIo,
    ) -> Result<(), Stopped> {
        if reasoning {
            io.emit(EventKind::Reasoning, json!({ "text": text })).await
        } else {
            step.content.push_str(text);
            io.emit(EventKind::Token, json!({ "text": text })).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(pieces: &[&str]) -> Vec<(bool, String)> {
        let mut t = ThinkSplitter::default();
        let mut out: Vec<(bool, String)> = Vec::new();
        for p in pieces {
            out.extend(t.push(p));
        }
        out.extend(t.finish());
        // Merge neighbours of the same kind, as a reader sees them.
        let mut merged: Vec<(bool, String)> = Vec::new();
        for (r, text) in out {
            match merged.last_mut() {
                Some((last, acc)) if *last == r => acc.push_str(&text),
                _ => merged.push((r, text)),
            }
        }
        merged
    }

    #[test]
    fn think_tags_become_reasoning_even_when_split_across_chunks() {
        assert_eq!(
            split(&[
                "<thi",
                "nk>Let me ",
                "think.</th",
                "ink>\n\nThe answer",
                " is 4."
            ]),
            vec![
                (true, "Let me think.".to_owned()),
                (false, "\n\nThe answer is 4.".to_owned())
            ]
        );
        assert_eq!(
            split(&["  \n<think>x</think>y"]),
            vec![(true, "x".to_owned()), (false, "y".to_owned())]
        );
        // No tags: everything is answer, nothing held back at the end.
        assert_eq!(
            split(&["Hello <", "b>"]),
            vec![(false, "Hello <b>".to_owned())]
        );
        // A tag after the answer started is text.
        assert_eq!(
            split(&["Use the <think> tag"]),
            vec![(false, "Use the <think> tag".to_owned())]
        );
        // A stream cut inside the reasoning keeps it as reasoning.
        assert_eq!(
            split(&["<think>unfinished"]),
            vec![(true, "unfinished".to_owned())]
        );
    }
}
