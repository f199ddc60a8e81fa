//! The agent loop: one turn, model call after model call, tool calls run and fed back, until
//! the model answers, the turn is stopped or the iteration limit is reached.

use super::content::*;
use super::context::*;
use super::models::*;
use super::*;
use tracing::Instrument as _;

/// The earlier messages as the model is sent them (empty ones left out).
fn history_messages(history: &[crate::runtime::ChatMessage]) -> Vec<Value> {
    history
        .iter()
        .filter(|m| !m.content.trim().is_empty() || !m.attachments.is_empty())
        .map(|m| {
            if m.role == Role::User && !m.attachments.is_empty() {
                json!({"role": "user", "content": user_content(&m.content, &m.attachments, &[])})
            } else {
                json!({"role": m.role, "content": m.content})
            }
        })
        .collect()
}

impl OpenAiAgent {
    /// Runs one turn to its end (or its failure).
    pub(super) async fn turn(&self, turn: &TurnRequest, io: &RunIo) -> Result<RunEnd, Fail> {
        let history = history_messages(&turn.history);
        let workspace = self
            .workspaces
            .of(turn.owner.as_deref())
            .map_err(|e| fail(e, None::<String>))?;
        let placed = self.place_files(turn, &workspace).await;
        let current = json!({
            "role": "user",
            "content": if turn.attachments.is_empty() {
                json!(turn.message)
            } else {
                user_content(&turn.message, &turn.attachments, &placed)
            },
        });
        let model = turn.model.as_deref().unwrap_or(&self.settings.model);
        let system = json!({"role": "system", "content": system_prompt()});
        // The conversation as far back as the model's context holds it; asked again with the
        // window an overflow error names, once, when it was not known before.
        let mut fitted = self
            .fit(model, &system, &history, &current)
            .map_err(|t| t.fail(false))?;
        let mut learned = false;
        let mut said_left_out = 0;
        let mut usage: Option<(u64, u64)> = None;
        let mut last_content = String::new();
        let mut iterations = 0;
        let mut messages = fitted.messages.clone();
        while iterations < self.settings.max_iterations.max(1) {
            if fitted.left_out > said_left_out {
                io.emit(EventKind::ContextStatus, fitted.status()).await?;
                said_left_out = fitted.left_out;
            }
            let sent_bytes = request_bytes(&messages);
            // The answer limit, lowered to what the window leaves room for (a provider that
            // checks prompt plus limit against its window would refuse the request).
            let limit = match (self.settings.max_tokens, fitted.room) {
                (Some(limit), Some(room)) => Some(limit.min(u32::try_from(room).unwrap_or(limit))),
                (limit, _) => limit,
            };
            // A span per call to the provider, within the turn's (see `telemetry`).
            let call = tracing::info_span!(
                crate::telemetry::SPAN_UPSTREAM,
                "gen_ai.request.model" = model,
                "server.address" = %crate::runtime::host_of(&self.settings.base_url),
                iteration = iterations + 1,
            );
            let step = match self
                .step(&messages, model, limit, io)
                .instrument(call)
                .await
            {
                Ok(step) => step,
                // The provider named a window smaller than the one the request was fitted
                // to (or none was known): fitted to that, the turn is asked again, once.
                Err(
                    overflow @ Fail::Overflow {
                        window: Some(window),
                        ..
                    },
                ) if !learned
                    && iterations == 0
                    && fitted.window.is_none_or(|w| u64::from(window) < w) =>
                {
                    learned = true;
                    self.learn_window(model, Some(window));
                    // Too long for the window it named: sent once, and refused.
                    let refitted = self
                        .fit(model, &system, &history, &current)
                        .map_err(|t| t.fail(true))?;
                    if refitted.left_out == fitted.left_out && refitted.room == fitted.room {
                        // The same request again would be refused again.
                        return Err(overflow);
                    }
                    fitted = refitted;
                    messages = fitted.messages.clone();
                    continue;
                }
                Err(e) => return Err(e),
            };
            iterations += 1;
            if let Some((i, o)) = step.usage {
                let (ti, to) = usage.unwrap_or_default();
                usage = Some((ti + i, to + o));
                self.learn_bytes_per_token(model, sent_bytes, i);
            }
            if !step.content.trim().is_empty() {
                last_content.clone_from(&step.content);
            }
            if step.calls.is_empty() || step.cut_off {
                let usage = self.report_usage(usage, io).await?;
                if step.content.trim().is_empty() && !step.cut_off {
                    return Ok(RunEnd::NoResponse);
                }
                if step.cut_off {
                    // Stopped at the configured limit, or by the room the context left.
                    let configured = self.settings.max_tokens;
                    let by_limit = configured.is_some()
                        && limit == configured
                        && step.usage.is_none_or(|(_, output)| {
                            configured.is_some_and(|c| output >= u64::from(c))
                        });
                    return Ok(RunEnd::CutOff {
                        answer: step.content,
                        usage,
                        limit: if by_limit { configured } else { None },
                    });
                }
                return Ok(RunEnd::Completed {
                    answer: step.content,
                    usage,
                });
            }
            let calls: Vec<Value> = step
                .calls
                .iter()
                .map(|c| {
                    // Arguments that are not JSON (cut off, or garbled) would make a strict
                    // server refuse the whole conversation from here on.
                    let arguments = if serde_json::from_str::<Value>(&c.arguments).is_ok() {
                        c.arguments.clone()
                    } else {
                        "{}".to_owned()
                    };
                    json!({"id": c.id, "type": "function",
                           "function": {"name": c.name, "arguments": arguments}})
                })
                .collect();
            let content = (!step.content.is_empty()).then_some(step.content.clone());
            messages.push(json!({"role": "assistant", "content": content, "tool_calls": calls}));
            for call in &step.calls {
                let output = self.call_tool(call, &workspace, io).await?;
                messages.push(json!({"role": "tool", "tool_call_id": call.id, "content": output}));
            }
        }
        let usage = self.report_usage(usage, io).await?;
        Ok(RunEnd::ToolLimitReached {
            answer: last_content,
            usage,
        })
    }
}

#[async_trait]
impl RuntimeAdapter for OpenAiAgent {
    fn workspaces(&self) -> Option<&super::super::workspaces::Workspaces> {
        Some(&self.workspaces)
    }

    fn name(&self) -> &'static str {
        "openai"
    }

    fn label(&self) -> String {
        format!(
            "{} · {}",
            app::api::model_name(&self.settings.model),
            crate::runtime::host_of(&self.settings.base_url)
        )
    }

    fn default_model(&self) -> Option<String> {
        Some(self.settings.model.clone())
    }

    async fn models(&self, refresh: bool) -> Result<Vec<String>, String> {
        {
            // A refresh asks the provider again, at most once every few seconds.
            let cached = self.lock_models();
            if let Some((at, models)) = cached.as_ref() {
                let fresh = if refresh { MODELS_REFRESH } else { MODELS_TTL };
                if at.elapsed() < fresh {
                    return Ok(models.clone());
                }
            }
        }
        let models = self.fetch_models().await?;
        *self.lock_models() = Some((std::time::Instant::now(), models.clone()));
        Ok(models)
    }

    fn context_use(
        &self,
        model: Option<&str>,
        history: &[crate::runtime::ChatMessage],
        draft_bytes: usize,
    ) -> app::api::ContextUse {
        let model = model.unwrap_or(&self.settings.model);
        let system = json!({"role": "system", "content": system_prompt()});
        let current = json!({"role": "user", "content": "x".repeat(draft_bytes)});
        let history = history_messages(history);
        let messages = history.len() as u64;
        match self.fit(model, &system, &history, &current) {
            Ok(fitted) => app::api::ContextUse {
                window: fitted.window,
                used: fitted.used,
                reserve: fitted.reserve,
                messages,
                left_out: fitted.left_out as u64,
                too_long: false,
            },
            Err(too_long) => app::api::ContextUse {
                window: Some(too_long.window),
                used: too_long.needed,
                reserve: 0,
                messages,
                left_out: messages,
                too_long: true,
            },
        }
    }

    async fn run(&self, turn: TurnRequest, io: RunIo) -> RunEnd {
        crate::runtime::end_of(self.turn(&turn, &io).await)
    }
}
